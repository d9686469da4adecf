"""The options of `carryon-eval`, in one table: each one's flag, name, default, choices and help.

The command line (carryon_eval.cli, through ``cli_common.click_option``), the Python API (carryon_eval.api: one
keyword per long option, dashes as underscores) and ``EvaluateConfig`` (its defaults) all read ``EVALUATE``, so
they cannot drift apart. Adding an option is one ``Option`` in ``EVALUATE`` (and the ``EvaluateConfig`` field
of the same name, whose default is read from here). The subcommands on a run folder take some of the same
options with "the run's" as default (``Option.of_run``). A suite's own judge settings are options of its record
(``Suite.judge_options``): ``EVALUATE`` puts them where ``JUDGE_OPTIONS`` stands when it is first read, and the
config records keep their values in ``scoring``; a suite's checks are asked for by ``--<name>`` options, in
``CHECK_OPTIONS``' place, kept in ``checks``.

The record itself (and a role's options, which the builder's CLI shares) is carryon_eval.option.
"""
from __future__ import annotations

import dataclasses
import re

from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, overload

from carryon_eval import defaults
from carryon_eval.dataset.subset import SUBSETS
from carryon_eval.option import Option, alias, endpoint_options, request_options
from carryon_eval.run.records import JUDGE_FORMATS, JudgeSettings

def _positive(value: Any) -> float:
    """--detect's difference: a number of points above 0."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"expected a difference in points above 0, got {value!r}") from None
    if not out > 0 or out != out or out == float("inf"):
        raise ValueError(f"expected a difference in points above 0, got {value!r}")
    return out


# ---------------------------------------------------------------- the texts several options share
LOCAL_MAX_TOKENS = defaults.LOCAL_MAX_TOKENS      # token caps of roles on the embedded model (help texts)
JUDGE_FORMAT_HELP = ("How judges are asked to answer: a JSON schema with an enum answer (where the endpoint "
                     "rejects it, text), or text only.")
HTTP_CLIENT_HELP = ("HTTP transport of the endpoint client: aiohttp's (openai[aiohttp], the lighter one) or httpx's "
                    "(the openai library's own default); recorded per role in run.json.")

SUITE_OPTIONS = Option("--<suite options>", name="suite_options", hidden=True,
                       help="Where the registered suites' own options go (carryon_eval.suite.SuiteOption).")
JUDGE_OPTIONS = Option("--<suite judge options>", name="scoring", hidden=True,
                       help="Where the registered suites' judge settings go (carryon_eval.suite.Suite.judge_options).")
CHECK_OPTIONS = Option("--<suite checks>", name="checks", hidden=True,
                       help="Where the registered suites' checks go (--NAME: carryon_eval.suite.Suite.checks).")
JUDGE_ROLE_OPTIONS = Option("--<judge role options>", name="judges", hidden=True,
                            help="Where the suites' judge roles' options go (--<role>-judge-model, ...: "
                                 "carryon_eval.suite.Suite.judge_roles).")
#: The places of the suites' options in the table (the CLI makes them late: importing it imports no wing).
PLACES = (SUITE_OPTIONS, CHECK_OPTIONS, JUDGE_OPTIONS, JUDGE_ROLE_OPTIONS)
#: The request options a judge role takes of its own (its token cap is the judges' one, --judge-max-tokens).
ROLE_REQUEST = ("temperature", "reasoning_effort", "system_prompt", "extra_body")

CONCURRENCY = Option("--concurrency", kind="count", default=defaults.CONCURRENCY,
                     help="Conversations (and requests per endpoint) in flight.")
NO_MODEL_CHECK = Option("--no-model-check", name="model_check", kind="flag", default=True, flag_value=False,
                        show_default=False, help="Do not ask the endpoints' /models whether they serve the model "
                                                 "(for servers whose list is incomplete).")
JUDGE_FORMAT = Option("--judge-format", default=JudgeSettings.judge_format, choices=JUDGE_FORMATS,
                      read=JudgeSettings.read_judge_format, help=JUDGE_FORMAT_HELP)
MAX_CALLS = Option("--max-calls", kind="count",
                   help="Stop cleanly after N model calls that reach a server (all roles); rerun to resume.")
GIVE_UP = Option("--give-up-after", kind="seconds", metavar="SECONDS",
                 help=f"End the phase when a role's endpoint(s) have not answered for this long "
                      f"[default: {defaults.GIVE_UP_AFTER:g}s, or 1.5 request timeouts if longer]; rerun to resume.")
HTTP_CLIENT = Option("--http-client", default=defaults.HTTP_CLIENT, choices=defaults.HTTP_CLIENTS,
                     help=HTTP_CLIENT_HELP)
BOOTSTRAP_RESAMPLES = Option("--bootstrap-resamples", kind="count", default=defaults.BOOTSTRAP_RESAMPLES,
                             help="Resamples of the query-cluster bootstrap behind every 95% CI (run.json records it).")
BOOTSTRAP_SEED = Option("--bootstrap-seed", kind="int", default=defaults.BOOTSTRAP_SEED,
                        help="Seed of the bootstrap resamples (run.json records it).")

# ---------------------------------------------------------------- `carryon-eval [OPTIONS]`, in --help's order
OWN: tuple[Option, ...] = (
    *endpoint_options(api_key_default=defaults.API_KEY_ENV, repeatable=True,
                      endpoint_help="Target model's OpenAI-compatible base URL (…/v1); 'local' or none: embedded "
                                    "model. Repeat it for a pool of servers of the same model (fewest in flight "
                                    "first; a dead one is taken out and tried again later).",
                      model_help="Target model name (required with an endpoint URL).",
                      key_help="Environment variable holding the target endpoint's API key (also sent by a role on "
                               "the target's URL; never to another endpoint)."),
    *endpoint_options("user", repeatable=True,
                      endpoint_help="User simulator endpoint [default: the target's]; repeatable.",
                      model_help="User simulator model [default: the target's].",
                      key_help="API key variable for the user simulator [default: the key given for its URL; a "
                               "simulator on another URL than the target's names its own; '' sends none]."),
    *endpoint_options("judge", repeatable=True, endpoint_help="Judge endpoint [default: the target's]; repeatable.",
                      model_help="Judge model [default: the target's].",
                      key_help="API key variable for the judge [default: the key given for its URL; a judge on "
                               "another URL than the target's names its own; '' sends none]."),
    Option("--dataset", help="Dataset folder or Hub id [default: the built-in sample]."),
    Option("--revision", help="Dataset revision (Hub)."),
    Option("--out", kind="path", help="Run folder [default: carryon-runs/<model>__<dataset>]; rerunning into it "
                                      "resumes."),
    Option("--limit", kind="count", help="Only the first N queries, with all their conversations."),
    Option("--conditions", kind="conditions",
           help="Comma-separated conditions to run [default: turn1,oracle,bc,nc]; 'triplet' (needs "
                "--opensafeintent DIR) is not in the default set; 'all' runs every condition of every suite "
                "whose inputs are given."),
    CONCURRENCY,
    *request_options("target", what="the target model",
                     max_tokens_help=f" [default: {defaults.TARGET_MAX_TOKENS}; {LOCAL_MAX_TOKENS['target']} on the "
                                     "embedded model]",
                     temperature_help=f" [default: {defaults.TARGET_TEMPERATURE:g}]"),
    alias("--max-tokens", "target_max_tokens", kind="count"),
    alias("--temperature", "target_temperature", kind="temperature"),
    *request_options("user", what="the user simulator",
                     max_tokens_help=f" [default: {defaults.USER_MAX_TOKENS}; {LOCAL_MAX_TOKENS['user']} on the "
                                     "embedded model]",
                     temperature_help=f" [default: {defaults.USER_TEMPERATURE:g}]"),
    *request_options("judge", what="the judges",
                     max_tokens_help=f", text mode [default: {defaults.JUDGE_MAX_TOKENS}; {LOCAL_MAX_TOKENS['judge']} "
                                     "on the embedded model]",
                     temperature_help=" [default: 0]"),
    JUDGE_ROLE_OPTIONS,
    Option("--seed", kind="int", default=defaults.SEED, help="Base seed of target and user simulator calls."),
    Option("--no-shared-turn1", name="shared_turn1", kind="flag", default=True, flag_value=False, show_default=False,
           help="Generate the first reply of every bc/nc conversation separately (default: one turn-1 reply "
                "per query, shared)."),
    CHECK_OPTIONS,
    JUDGE_OPTIONS,
    NO_MODEL_CHECK,
    JUDGE_FORMAT,
    Option("--subset", default="full", choices=SUBSETS,
           help="quick: every query for turn1/oracle and one BC + one NC conversation per query, stratified "
                "over lengths (carryon_eval/dataset/subset.py says how); about 1/5 of the calls."),
    SUITE_OPTIONS,
    Option("--dry-run", kind="flag", default=False, show_default=False,
           help="Print the calls and estimated tokens per role and condition (and the cost with --price), "
                "then stop: nothing is called, nothing is written."),
    Option("--json", name="dry_run_json", kind="flag", default=False, show_default=False,
           help="With --dry-run: print the table as one JSON object (per role and condition: calls, prompt and "
                "completion tokens, cached; outcome-dependent calls under up_to)."),
    Option("--power-from", name="power_from", kind="path", multiple=True, metavar="RUNDIR",
           help="With --dry-run: the power table's per-query spreads read from finished run folders (their "
                "results.json) instead of the shipped ones; repeatable."),
    Option("--detect", metavar="D", read=lambda v: _positive(v),
           help="With --dry-run: also print the queries each number of the power table needs to detect a "
                "difference of D points 80% of the time."),
    Option("--price", name="prices", multiple=True, metavar="ROLE=IN/OUT[/CACHED]",
           help="USD per 1M prompt/completion tokens of a role (target, user, judge), e.g. judge=0.15/0.60; a third "
                "rate prices the prompt tokens the provider served from its cache (judge=0.15/0.60/0.075). The "
                "estimate, the summary line and run.json's usage are priced; repeatable."),
    MAX_CALLS,
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    GIVE_UP,
    HTTP_CLIENT,
)



class OptionTable(Sequence[Option]):
    """``OWN`` with the registered suites' checks, judge options and judge roles' options in their places
    (CHECK_OPTIONS, JUDGE_OPTIONS, JUDGE_ROLE_OPTIONS), made when first read, so
    that importing the table imports no wing (carryon_eval.suite finds the wings when first asked)."""

    def __init__(self, own: tuple[Option, ...]) -> None:
        self.own = own
        self._made: Optional[tuple[Option, ...]] = None

    def _table(self) -> tuple[Option, ...]:
        if self._made is None:
            from carryon_eval.suite import check_options, judge_options

            made = self.own
            for place, more in ((CHECK_OPTIONS, check_options()), (JUDGE_OPTIONS, judge_options()),
                                (JUDGE_ROLE_OPTIONS, judge_role_options())):
                at = made.index(place)
                made = (*made[:at], place, *more, *made[at + 1:])
            self._made = made
        return self._made

    @overload
    def __getitem__(self, index: int) -> Option: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Option]: ...

    def __getitem__(self, index: Any) -> Any:
        return self._table()[index]

    def __len__(self) -> int:
        return len(self._table())


class _Index(Mapping[str, Option]):
    """An index of EVALUATE by ``key`` (made when first read, like the table)."""

    def __init__(self, key: Callable[[Option], str], aliases: bool) -> None:
        self.key, self.aliases = key, aliases
        self._made: Optional[dict[str, Option]] = None

    def _index(self) -> dict[str, Option]:
        if self._made is None:
            self._made = {self.key(o): o for o in EVALUATE if o not in PLACES and (self.aliases or o.alias_of is None)}
        return self._made

    def __getitem__(self, key: str) -> Option:
        return self._index()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._index())

    def __len__(self) -> int:
        return len(self._index())


EVALUATE: Sequence[Option] = OptionTable(OWN)
BY_NAME: Mapping[str, Option] = _Index(lambda o: o.name, aliases=False)
BY_KEYWORD: Mapping[str, Option] = _Index(lambda o: o.keyword, aliases=True)
_OWN_BY_NAME = {o.name: o for o in OWN if o.alias_of is None and o not in PLACES}


def default(name: str) -> Any:
    """The default of option ``name`` (EvaluateConfig's field default; a suite's judge option's default)."""
    return (_OWN_BY_NAME[name] if name in _OWN_BY_NAME else BY_NAME[name]).default


def judge_role_options(of_run: bool = False) -> list[Option]:
    """Each suite judge role's options (carryon_eval.suite.JudgeRole): ``--NAME-judge-endpoint``, ``-model``,
    ``-api-key-env`` and its request options, each "the run's judge's" where not given; ``of_run``: on a command on
    a run folder, where the default is what the run recorded for that judge."""
    from carryon_eval.suite import judge_roles

    made: list[Option] = []
    for r in judge_roles():
        fallback = "the run's" if of_run else "the judge's (--judge-*)"
        what = f"the {r.label} judge"
        made += endpoint_options(r.flag.lstrip("-"), role=what,
                                 endpoint_help=f"Endpoint of {what} [default: {fallback}].",
                                 model_help=f"Model of {what} [default: {fallback}].",
                                 key_help=f"API key variable of {what} [default: {fallback}].")
        made += [dataclasses.replace(o, help=re.sub(r"\[default: none\]|\[default: none sent\]",
                                                    f"[default: {fallback}]", o.help))
                 for o in request_options(r.role, what=what, skip=("max_tokens",),
                                          temperature_help=f" [default: {fallback}]")]
    return made


def judge_role_names(role: str) -> tuple[str, ...]:
    """The option names of one judge role (``ben_util_judge``): endpoint, model, api_key_env, then ROLE_REQUEST."""
    return (f"{role}_endpoint", f"{role}_model", f"{role}_api_key_env", *(f"{role}_{n}" for n in ROLE_REQUEST))


def judge_names() -> set[str]:
    """The names of the suites' judge options (their values travel in the config records' ``scoring``)."""
    from carryon_eval.suite import judge_options

    return {o.name for o in judge_options()}


def check_names() -> set[str]:
    """The names of the suites' checks' options (their values travel in EvaluateConfig's ``checks``)."""
    from carryon_eval.suite import check_options

    return {o.name for o in check_options()}


def read_conditions(value: Any) -> tuple[tuple[str, ...], bool]:
    """--conditions as given (a comma-separated text or a list; None: not given): the registered suites' default
    set, ``all``, or some of their conditions; and whether it was ``all`` (then suites with inputs of their own
    join only when those are given). ValueError saying what was expected."""
    from carryon_eval.suite import SuiteError, all_conditions, default_conditions, resolve_conditions, without_inputs

    if value is None:
        return tuple(default_conditions()), False
    items = [c.strip().lower() for c in (value.split(",") if isinstance(value, str) else value) if c.strip()]
    try:
        if not items:
            raise SuiteError("no condition given")
        resolved = resolve_conditions(items)
    except SuiteError:
        raise ValueError(f"expected 'all' or a subset of {','.join(all_conditions())} (comma-separated), "
                         f"got {value!r}") from None
    if "all" in items:
        return tuple(without_inputs(resolved)), True
    return tuple(resolved), False


def role_names(role: str) -> tuple[str, ...]:
    """The names of a role's endpoint options in EVALUATE: (endpoint, model, api_key_env)."""
    prefix = "" if role == "target" else f"{role}_"
    return (f"{prefix}endpoint", f"{prefix}model", f"{prefix}api_key_env")


__all__ = ["BY_KEYWORD", "BY_NAME", "EVALUATE", "OWN", "Option", "check_names", "default", "judge_names", "read_conditions", "role_names"]
