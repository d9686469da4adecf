"""The options of `carryon-eval`, in one table: each one's flag, name, default, choices and help.

The command line (carryon_eval.cli, through ``cli_common.click_option``), the Python API (carryon_eval.api: one
keyword per long option, dashes as underscores) and ``EvaluateConfig`` (its defaults) all read ``EVALUATE``, so
they cannot drift apart. Adding an option is one ``Option`` in ``EVALUATE`` (and the ``EvaluateConfig`` field
of the same name, whose default is read from here). The subcommands on a run folder take some of the same
options with "the run's" as default (``Option.of_run``).

The record itself (and a role's options, which the builder's CLI shares) is carryon_eval.option.
"""
from __future__ import annotations

from typing import Any

from carryon_eval import defaults
from carryon_eval.dataset.subset import SUBSETS
from carryon_eval.option import Option, alias, endpoint_options, request_options
from carryon_eval.run.records import JUDGE_FORMATS, JudgeSettings, setting_reader

# ---------------------------------------------------------------- the texts several options share
LOCAL_MAX_TOKENS = defaults.LOCAL_MAX_TOKENS      # token caps of roles on the embedded model (help texts)
JUDGE_FORMAT_HELP = ("How judges are asked to answer: a JSON schema with an enum answer (where the endpoint "
                     "rejects it, text), or text only.")
HTTP_CLIENT_HELP = ("HTTP transport of the endpoint client: aiohttp's (openai[aiohttp], the lighter one) or httpx's "
                    "(the openai library's own default); recorded per role in run.json.")

SUITE_OPTIONS = Option("--<suite options>", name="suite_options", hidden=True,
                       help="Where the registered suites' own options go (carryon_eval.suite.SuiteOption).")

CONCURRENCY = Option("--concurrency", kind="count", default=defaults.CONCURRENCY,
                     help="Conversations (and requests per endpoint) in flight.")
UTILITY_MODE = Option("--utility-mode", default="text", choices=("text", "logprob", "logprobs"),
                      read=setting_reader("utility_mode"),
                      help="How the utility judge answers: yes/no text, or P(yes) from logprobs.")
UTILITY = Option("--utility", default=None, choices=("benutil", "rubric"), read=setting_reader("utility"),
                 help="What utility is measured with: Ben-Util (the dataset's checklists), or, for datasets without "
                      "checklists, OpenSafeIntent's 1-4 helpfulness rubric (needs --opensafeintent DIR; reported as "
                      "rubric utility, (score - 1) / 3, never as Ben-Util) [default: the first the dataset supports: "
                      "Ben-Util when it has checklists, else the one its build records, e.g. rubric for an "
                      "OpenSafeIntent build; the run says which].")
UTILITY_JUDGE = Option("--utility-judge", default="per-item", choices=("per-item", "grouped"),
                       help="Ben-Util calls: one per (reply, item) as in the paper, or grouped: one per reply "
                            "returning a verdict per item (an item it leaves unscored is asked alone).")
UTILITY_GROUP_SIZE = Option("--utility-group-size", kind="count", default=defaults.UTILITY_GROUP_SIZE,
                            beside=("utility_judge", "grouped"),
                            help="Grouped: at most this many checklist items per call.")


def _replies(value: int) -> int:
    if value < 0:
        raise ValueError(f"expected a number of replies >= 0 (0: no calibration), got {value}")
    return value


CALIBRATE = Option("--calibrate", kind="int", default=0, metavar="N", read=_replies,
                   beside=("utility_judge", "grouped"),
                   help="Grouped: also judge N replies, drawn at random (seeded), per item; the report gives the "
                        "agreement of the two modes.")
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
EVALUATE: tuple[Option, ...] = (
    *endpoint_options(api_key_default=defaults.API_KEY_ENV, repeatable=True,
                      endpoint_help="Target model's OpenAI-compatible base URL (…/v1); 'local' or none: embedded "
                                    "model. Repeat it for a pool of servers of the same model (fewest in flight "
                                    "first; a dead one is taken out and tried again later).",
                      model_help="Target model name (required with an endpoint URL).",
                      key_help="Environment variable holding the target endpoint's API key (default for the other "
                               "roles too)."),
    *endpoint_options("user", repeatable=True,
                      endpoint_help="User simulator endpoint [default: the target's]; repeatable.",
                      model_help="User simulator model [default: the target's].",
                      key_help="API key variable for the user simulator [default: --api-key-env]."),
    *endpoint_options("judge", repeatable=True, endpoint_help="Judge endpoint [default: the target's]; repeatable.",
                      model_help="Judge model [default: the target's].",
                      key_help="API key variable for the judge [default: --api-key-env]."),
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
    Option("--seed", kind="int", default=defaults.SEED, help="Base seed of target and user simulator calls."),
    Option("--no-shared-turn1", name="shared_turn1", kind="flag", default=True, flag_value=False, show_default=False,
           help="Generate the first reply of every bc/nc conversation separately (default: one turn-1 reply "
                "per query, shared)."),
    Option("--fidelity", kind="flag", default=False, show_default=False,
           help="Also run the move-fidelity check (fidelity.json)."),
    UTILITY_MODE,
    UTILITY,
    UTILITY_JUDGE,
    UTILITY_GROUP_SIZE,
    CALIBRATE,
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

BY_NAME: dict[str, Option] = {o.name: o for o in EVALUATE if o.alias_of is None and o is not SUITE_OPTIONS}
BY_KEYWORD: dict[str, Option] = {o.keyword: o for o in EVALUATE if o is not SUITE_OPTIONS}


def default(name: str) -> Any:
    """The default of option ``name`` (EvaluateConfig's field default)."""
    return BY_NAME[name].default


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


__all__ = ["BY_KEYWORD", "BY_NAME", "EVALUATE", "Option", "default", "read_conditions", "role_names"]
