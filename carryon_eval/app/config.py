"""The records a command runs with (RoleChoice, EvaluateConfig, RunOptions, BootstrapChoice),
its one-line ConfigError, where its lines go (Output), and what the options of a new run resolve to: its roles,
its folder, its dataset and its run.json."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Protocol, Sequence

from carryon_eval import __version__, defaults
from carryon_eval.app import options
from carryon_eval.app.options import default
from carryon_eval.cli_common import is_local
from carryon_eval.codec import present
from carryon_eval.option import refused_alone
from carryon_eval.model.endpoint import EndpointConfig
from carryon_eval.model.keys import KeyChoice, KeyGiven, KeyRefused, assign_keys, same_endpoints
from carryon_eval.dataset.load import Benchmark, load_benchmark
from carryon_eval.dataset.subset import SubsetError, apply_subset
from carryon_eval.model.local import LOCAL_MODEL_NOTICE
from carryon_eval.run.records import (DatasetRef, Generation, JudgeSettings, RoleRecord, RunGeneration, RunMeta,
                                      BootstrapRef, SweepRef, self_status)
from carryon_eval.run.results import STATUS_LINES
from carryon_eval.suite import Configured, SuiteError, suites

ROLES = ("target", "user", "judge")


class ConfigError(Exception):
    """Options that cannot run together (e.g. an endpoint URL without a model); one line."""


class Output(Protocol):
    """Where the application's lines go: ``info`` for results (stdout), ``note`` for progress (stderr)."""

    def info(self, text: str) -> None: ...

    def note(self, text: str) -> None: ...


# ---------------------------------------------------------------- config records
@dataclass(frozen=True)
class RoleChoice:
    """One role as the command line gives it; None = not given (the target's, or the run's)."""
    endpoint: Optional[str] = None
    model: Optional[str] = None
    api_key_env: Optional[str] = None
    pool: tuple[str, ...] = ()        # more base URLs of the same model: an endpoint pool (carryon_eval.model.pool)
    reasoning_effort: Optional[str] = None     # the role's request options (EndpointConfig); None: not sent
    system_prompt: Optional[str] = None
    extra_body: Optional[dict[str, Any]] = None
    temperature: Any = None          # a judge role's own temperature (None: the judges'); the others' are fields

    def request(self) -> dict[str, Any]:
        return {"reasoning_effort": self.reasoning_effort, "system_prompt": self.system_prompt,
                "extra_body": self.extra_body}

    def given(self) -> bool:
        """Whether anything of the role was given."""
        return any(v not in (None, ()) for v in dataclasses.astuple(self))


@dataclass(frozen=True)
class EvaluateConfig:
    """Everything `carryon-eval [OPTIONS]` runs with; an option's default is its entry's in the table (app.options)."""
    target: RoleChoice = RoleChoice(api_key_env=default("api_key_env"))
    user: RoleChoice = RoleChoice()
    judge: RoleChoice = RoleChoice()
    dataset: Optional[str] = None
    revision: Optional[str] = None
    out: Optional[Path] = None
    limit: Optional[int] = None
    conditions: Sequence[str] = ("turn1", "oracle", "bc", "nc")   # the CLI gives the suites' default set
    concurrency: int = default("concurrency")
    max_tokens: Optional[int] = None
    judge_max_tokens: Optional[int] = None
    temperature: Any = defaults.TARGET_TEMPERATURE     # a number, or "default" (the provider's: not sent)
    user_max_tokens: Optional[int] = None
    user_temperature: Any = None                       # None: defaults.USER_TEMPERATURE
    judge_temperature: Any = None                      # None: 0
    seed: int = default("seed")
    shared_turn1: bool = default("shared_turn1")
    model_check: bool = default("model_check")      # False: --no-model-check (a server whose /models list is incomplete)
    judge_format: str = default("judge_format")
    dry_run: bool = default("dry_run")              # print the cost table and stop: nothing called, nothing written
    dry_run_json: bool = default("dry_run_json")    # with dry_run: the table as one JSON object on stdout
    prices: Sequence[str] = ()            # ROLE=IN/OUT, USD per 1M tokens (carryon_eval.app.cost)
    power_from: Sequence[Path] = ()       # with dry_run: finished runs whose spreads the power table reads
    detect: Optional[float] = None        # with dry_run: the difference (points) whose queries the table gives
    max_calls: Optional[int] = None       # calls that reach a server, all roles; then stop cleanly
    subset: Optional[str] = default("subset")       # "quick" (carryon_eval.dataset.subset); "full" or None: all
    bootstrap_resamples: int = default("bootstrap_resamples")
    bootstrap_seed: int = default("bootstrap_seed")
    give_up_after: Optional[float] = None  # seconds of silence from a role that end the run (None: the default)
    conditions_all: bool = False          # --conditions all: suites with inputs of their own join when given
    suite_options: dict[str, Any] = dataclasses.field(default_factory=dict)   # the suites' own options (Suite.load)
    http_client: str = default("http_client")   # the endpoints' HTTP transport, "aiohttp" or "httpx" (run.json roles)
    sweep: Optional[SweepRef] = None            # the sweep plan this run belongs to (run.json's sweep; app.sweep)
    #: the suites' judge settings by name (their options: Suite.judge_options; run.records.register_setting);
    #: one not given is its option's default
    scoring: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: a judge of its own for some scorers, by judge role (``ben_util_judge``: carryon_eval.suite.JudgeRole), as
    #: given; what a role does not set is the judge's (``resolve_judges``)
    judges: dict[str, RoleChoice] = dataclasses.field(default_factory=dict)
    #: the suites' checks asked for, by name (``--<name>``: carryon_eval.suite.Suite.checks)
    checks: tuple[str, ...] = ()

    def __getattr__(self, name: str) -> Any:
        """A suite's judge setting read as an attribute (``cfg.<setting>``, as the Python API has always read it);
        a check's name: whether it was asked for."""
        if not name.startswith("_") and name in options.check_names():
            return name in self.checks
        return _setting(self, name)


@dataclass(frozen=True)
class RunOptions:
    """A subcommand on an existing run folder; every None means "as the run's run.json says"."""
    rundir: Path
    target_endpoint: Optional[str] = None
    user_endpoint: Optional[str] = None
    target_api_key_env: Optional[str] = None      # rollout: the target's and the user's key variables (None: as
    user_api_key_env: Optional[str] = None        # given for their endpoints, app.config.run_role_key)
    judge: RoleChoice = RoleChoice()
    concurrency: int = defaults.CONCURRENCY
    judge_max_tokens: Optional[int] = None
    judge_temperature: Any = None                # None: the run's judge temperature
    model_check: bool = True
    judge_format: Optional[str] = None
    batch_export: Optional[Path] = None          # judge: write the uncached requests as Batch API files
    batch_import: Sequence[Path] = ()            # judge: fill the cache from Batch API result files first
    max_calls: Optional[int] = None              # calls that reach a server in this command; then stop cleanly
    give_up_after: Optional[float] = None        # seconds of silence from a role that end the command
    live_rest: bool = False                      # judge --batch-import: ask live what the result files lack
    http_client: Optional[str] = None            # the HTTP transport; None: the one run.json records per role
    #: the suites' judge settings given to this command by name (None or absent: the run's)
    scoring: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: judge roles' judges given to this command (``ben_util_judge``: what it changes of the run's)
    judges: dict[str, RoleChoice] = dataclasses.field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        return _setting(self, name, of_run=True)


def _setting(record: Any, name: str, of_run: bool = False) -> Any:
    """A suite's judge setting of a config record by name: as given, else its option's default (None on a run
    folder: the run's); AttributeError for any other name."""
    if name.startswith("_") or name == "scoring" or name not in options.judge_names():
        raise AttributeError(f"{type(record).__name__!r} object has no attribute {name!r}")
    scoring = record.__dict__.get("scoring") or {}
    return scoring[name] if name in scoring else None if of_run else default(name)


def config_of(values: dict[str, Any], *, conditions_all: bool = False) -> EvaluateConfig:
    """The EvaluateConfig of `carryon-eval`'s option values by name (app.options.EVALUATE's; None or absent: not
    given, the record's default). ``suite_options``: the suites' own options; ``conditions_all``: --conditions all.
    An option set where it means nothing is refused (carryon_eval.option.refused_alone)."""
    why = refused_alone(options.EVALUATE, {**{o.name: o.default for o in options.EVALUATE}, **values})
    if why:
        raise ConfigError(why)
    values = {name: value for name, value in values.items() if value is not None}
    roles = {}
    for role in ROLES:
        endpoint, model, key = (values.pop(name, None) for name in options.role_names(role))
        urls = (endpoint,) if isinstance(endpoint, (str, os.PathLike)) else tuple(endpoint or ())
        request = {name: values.pop(f"{role}_{name}", None) for name in ("reasoning_effort", "system_prompt",
                                                                          "extra_body")}
        roles[role] = RoleChoice(str(urls[0]) if urls else None, model, key, pool=tuple(str(u) for u in urls[1:]),
                                 **request)
    judged, checked = options.judge_names(), options.check_names()
    scoring = {name: values.pop(name) for name in list(values) if name in judged}
    checks = tuple(name for name in [n for n in list(values) if n in checked] if values.pop(name))
    judges = judge_choices(values)
    fields = {TARGET_FIELDS.get(name, name): value for name, value in values.items()}
    for name in ("conditions", "prices", "power_from"):
        if name in fields:
            fields[name] = tuple(fields[name])
    return EvaluateConfig(**roles, conditions_all=conditions_all, scoring=scoring, judges=judges, checks=checks,
                          **fields)


def judge_choices(values: dict[str, Any]) -> dict[str, RoleChoice]:
    """The judge roles given in ``values`` (option names to values; taken out of it), by role."""
    from carryon_eval.suite import judge_roles

    out = {}
    for r in judge_roles():
        endpoint, model, key, *request = (values.pop(name, None) for name in options.judge_role_names(r.role))
        choice = RoleChoice(str(endpoint) if endpoint is not None else None, model, key,
                            **dict(zip(options.ROLE_REQUEST, request)))
        if choice.given():
            out[r.role] = choice
    return out


#: The target's request options set EvaluateConfig fields without the role's name (the other roles' keep theirs).
TARGET_FIELDS = {"target_max_tokens": "max_tokens", "target_temperature": "temperature"}


# ---------------------------------------------------------------- settings of a new run
def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "run"


def default_out(model: str, dataset: Optional[str], limit: Optional[int] = None, subset: Optional[str] = None,
                inputs: Sequence[str] = ()) -> Path:
    """Same command, same folder, so that rerunning a command resumes it. ``inputs``: the suites' own input
    folders (Suite.load's options), named in the folder too."""
    name = "sample" if dataset is None else Path(dataset.rstrip("/")).name
    name = "__".join([name, *(Path(str(i).rstrip("/")).name for i in inputs)])
    tail = (f"__limit{limit}" if limit else "") + (f"__{subset}" if subset and subset != "full" else "")
    return Path("carryon-runs") / f"{_slug(model)}__{_slug(name)}{tail}"


def load_bench(source: Optional[str], revision: Optional[str], limit: Optional[int],
               subset: Optional[str] = None) -> Benchmark:
    bench = load_benchmark(source, revision)
    try:
        return apply_subset(bench.limited(limit), subset)
    except SubsetError as exc:
        raise ConfigError(str(exc)) from None


def refuse_empty_conditions(bench: Benchmark, conditions: Sequence[str], jobs: Sequence[Any],
                            skipped: Sequence[Any]) -> None:
    """ConfigError (before any run folder is made) for a condition asked for that has nothing to run on this
    dataset: its inputs (triplets, benign intents, BC/NC conversations) are absent. The default set runs what
    the dataset has (run.json lists what it skipped)."""
    ran = {j.condition for j in jobs}
    from carryon_eval.suite import default_conditions

    for condition in conditions if tuple(conditions) != default_conditions() or not ran else ():
        if condition in ran:
            continue
        why = next((s.reason for s in skipped if s.condition == condition), None) or \
            f"the dataset has no {condition} conversations"
        raise ConfigError(f"--conditions {condition}: nothing to run on dataset {bench.source} ({why}); "
                          "leave it out of --conditions")


def configure(cfg: EvaluateConfig, bench: Benchmark, conditions: Sequence[str]) -> tuple[EvaluateConfig, list[Configured]]:
    """The run's settings as each registered suite takes them (Suite.configure, in the suites' order): the config
    with their judge settings, and what each said; a setting a suite cannot run is refused in one line."""
    said = []
    for s in suites():
        if s.configure is None:
            continue
        try:
            made = s.configure(dict(cfg.scoring), bench, conditions)
        except SuiteError as exc:
            raise ConfigError(str(exc)) from None
        cfg = dataclasses.replace(cfg, scoring=made.scoring)
        said.append(made)
    return cfg, said


def leave_out_empty(bench: Benchmark, cfg: EvaluateConfig, conditions: Sequence[str], jobs: Sequence[Any]
                    ) -> tuple[list[str], list[str]]:
    """A condition of the default set (or of `all`) that has nothing to run on this dataset is left out of the run:
    (the conditions kept, one line for each left out; run.json's skipped still lists its conversations and why);
    a condition asked for by name is refused instead (refuse_empty_conditions)."""
    from carryon_eval.suite import default_conditions

    ran = {j.condition for j in jobs}
    if not ran or not (cfg.conditions_all or tuple(cfg.conditions) == default_conditions()):
        return list(conditions), []
    lines = [f"condition {c} left out: dataset {bench.source} cannot play it ({_why_left_out(bench, c)})"
             for c in conditions if c not in ran]
    return [c for c in conditions if c in ran], lines


def _why_left_out(bench: Benchmark, condition: str) -> str:
    """What the dataset lacks to play a condition, by its suite's word (Suite.unplayable)."""
    from carryon_eval.suite import suite_of

    hook = suite_of(condition).unplayable
    why = hook(bench, condition) if hook is not None else f"it has no {condition} inputs"
    return why or f"it has no {condition} conversation to run"


def check_url(option: str, url: Optional[str]) -> None:
    """ConfigError unless ``url`` is an http(s) base URL (or 'local'): a typo is a bad option, not an outage."""
    from urllib.parse import urlsplit

    if url is None or is_local(url):
        return
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{option} {url}: not an http(s) URL; expected a base URL like http://127.0.0.1:8000/v1")


def suite_options(cfg: "EvaluateConfig") -> dict[str, Any]:
    """What every suite's ``load`` is given: the CLI's suite options and the run's limit and target settings."""
    return {**cfg.suite_options, "limit": cfg.limit, "temperature": cfg.temperature, "max_tokens": cfg.max_tokens}


def resolve_roles(cfg: EvaluateConfig) -> tuple[dict[str, RoleChoice], set[str]]:
    """Each role's choice with the target's as default, and which roles run on the embedded model.
    Raises ConfigError when a remote role has no model."""
    for option, choice in (("--endpoint", cfg.target), ("--user-endpoint", cfg.user), ("--judge-endpoint", cfg.judge)):
        for url in (choice.endpoint, *choice.pool):
            check_url(option, url)
    key = defaults.API_KEY_ENV if cfg.target.api_key_env is None else cfg.target.api_key_env
    roles = {"target": dataclasses.replace(cfg.target, api_key_env=key)}
    for name, choice in (("user", cfg.user), ("judge", cfg.judge)):
        own = choice.endpoint is not None
        roles[name] = RoleChoice(endpoint=choice.endpoint if own else cfg.target.endpoint,
                                 model=choice.model or cfg.target.model, api_key_env=choice.api_key_env,
                                 pool=choice.pool if own else cfg.target.pool, **choice.request())
    if any(choice.pool and is_local(choice.endpoint) for choice in roles.values()):
        raise ConfigError("an endpoint pool takes URLs only, not the embedded model ('local')")
    local = {name for name, choice in roles.items() if is_local(choice.endpoint)}
    own = {"target": cfg.target, "user": cfg.user, "judge": cfg.judge}
    for name, choice in roles.items():
        flag = "--" if name == "target" else f"--{name}-"
        if name in local and own[name].model:      # the embedded model is one model: a name would be ignored
            raise ConfigError(f"{flag}model {own[name].model}: the {name} runs on the embedded model (its endpoint "
                              f"is 'local'), which serves no other model; give {flag}endpoint URL to use "
                              f"{own[name].model}")
        named = own[name].api_key_env
        if name not in local and named and named not in os.environ and (name, named) != ("target", defaults.API_KEY_ENV):
            raise ConfigError(f"{flag}api-key-env {named}: the environment variable {named} is not set")
    for name, choice in roles.items():
        if name not in local and not choice.model:
            if name == "target":
                raise ConfigError(f"--model is required with --endpoint {choice.endpoint}")
            raise ConfigError(f"--{name}-model (or --model) is required with --{name}-endpoint {choice.endpoint}")
    keys = role_keys(roles, local)
    return {name: dataclasses.replace(choice, api_key_env=keys[name]) for name, choice in roles.items()}, local


class KeyMissing(ConfigError):
    """A role on another endpoint with no key of its own (carryon_eval.model.keys): ``keyword`` names its key
    option, so that a plan reader names its own key."""

    def __init__(self, refused: KeyRefused) -> None:
        super().__init__(str(refused))
        self.keyword, self.reason = refused.keyword, refused.reason


ROLE_WORDS = {"target": "target", "user": "user simulator", "judge": "judge"}


def role_keys(roles: dict[str, RoleChoice], local: set[str]) -> dict[str, str]:
    """Each role's key variable ("" for none): a key goes only to the endpoint it was given for (model.keys);
    KeyMissing for a role on another endpoint than the target's with no key of its own."""
    urls = {name: () if name in local else (str(c.endpoint), *c.pool) for name, c in roles.items()}
    target = KeyGiven(str(roles["target"].api_key_env), urls["target"])
    choices = [KeyChoice(ROLE_WORDS[name], urls[name], c.api_key_env, f"--{'' if name == 'target' else name + '-'}"
                         "api-key-env", options.role_names(name)[2], borrows=target) for name, c in roles.items()]
    try:
        keys = assign_keys(choices, [target])
    except KeyRefused as exc:
        raise KeyMissing(exc) from None
    return {name: keys[ROLE_WORDS[name]] for name in roles}


def run_role_key(meta: RunMeta, role: str, endpoint: Optional[str], given: Optional[str], option: str) -> str:
    """The key variable role ``role`` of a run folder sends in a command on it ("" for none): ``given`` (its
    ``option``) when named; else the one given for its endpoint: run.json's variable of a role on that URL, where
    that role's own (a run started before keys went by endpoint recorded the target's for every role). KeyMissing
    for a role pointed at another URL (``endpoint``) with no key named while the key it would borrow is set."""
    record = meta.role(role)
    if is_local(endpoint) if endpoint is not None else record.local:
        return ""
    if given is not None:
        return given
    target = meta.role("target")
    target_urls = () if target.local else (target.pool or (target.base_url,))

    def recorded(name: str, r: RoleRecord) -> Optional[KeyGiven]:
        urls = () if r.local else (r.pool or (r.base_url,))
        own = name == "target" or r.api_key_env != target.api_key_env or same_endpoints(urls, target_urls)
        return KeyGiven(r.api_key_env, urls, f"the run's {ROLE_WORDS.get(name, name)}'s endpoint") if own and urls \
            else None

    known = [k for name, r in meta.roles.items() if (k := recorded(name, r)) is not None]
    borrows = recorded(role, record) or KeyGiven(record.api_key_env, target_urls, "the run's target's endpoint")
    urls = (endpoint,) if endpoint is not None else (record.pool or (record.base_url,))
    try:
        return assign_keys([KeyChoice(ROLE_WORDS.get(role, role), tuple(urls), None, option,
                                      borrows=borrows)], known)[ROLE_WORDS.get(role, role)]
    except KeyRefused as exc:
        raise KeyMissing(exc) from None


def resolve_judges(judges: dict[str, RoleChoice], roles: dict[str, RoleChoice], local: set[str],
                   temperature: Any = None) -> tuple[dict[str, RoleChoice], set[str]]:
    """Each judge role given (``judges``, as given) with what it does not set taken from the run's judge
    (``roles``, ``local``: resolve_roles's), and which of them run on the embedded model. A role's key: its own, else
    the one given for its endpoint (the judge's, or another role's on that URL); KeyMissing for a role on another
    endpoint with no key of its own while the judge's key variable is set (model.keys), keyless otherwise.
    ``temperature``: the judges' (--judge-temperature)."""
    from carryon_eval.suite import judge_roles

    by_role = {r.role: r for r in judge_roles()}
    judge, judge_local = roles["judge"], "judge" in local
    judge_urls = () if judge_local else (str(judge.endpoint), *judge.pool)
    lent = KeyGiven(str(judge.api_key_env or ""), judge_urls, "the judge's endpoint")
    known = [lent, *(KeyGiven(str(c.api_key_env), (str(c.endpoint), *c.pool), f"the {ROLE_WORDS[name]}'s endpoint")
                     for name, c in roles.items() if name != "judge" and name not in local
                     and c.api_key_env is not None)]
    out, local = {}, set()
    for role, own in judges.items():
        flag = by_role[role].flag
        check_url(f"{flag}-endpoint", own.endpoint)
        endpoint = own.endpoint if own.endpoint is not None else judge.endpoint
        on_local = is_local(endpoint) if own.endpoint is not None else judge_local
        if on_local and own.model:
            raise ConfigError(f"{flag}-model {own.model}: that judge runs on the embedded model (its endpoint "
                              f"is 'local'), which serves no other model; give {flag}-endpoint URL")
        if own.api_key_env and own.api_key_env not in os.environ:
            raise ConfigError(f"{flag}-api-key-env {own.api_key_env}: the environment variable "
                              f"{own.api_key_env} is not set")
        urls = () if on_local else ((str(own.endpoint),) if own.endpoint is not None else judge_urls)
        word = f"{by_role[role].label} judge"
        try:
            key = assign_keys([KeyChoice(word, urls, own.api_key_env, f"{flag}-api-key-env", f"{role}_api_key_env",
                                         borrows=lent)], known)[word]
        except KeyRefused as exc:
            raise KeyMissing(exc) from None
        request = {k: v if v is not None else getattr(judge, k) for k, v in own.request().items()}
        out[role] = RoleChoice(endpoint, own.model or judge.model, key, pool=() if own.endpoint else judge.pool,
                               temperature=own.temperature if own.temperature is not None else temperature, **request)
        if on_local:
            local.add(role)
    return out, local


def self_notice(roles: dict[str, RoleChoice], local: set[str], user_turns: bool = True) -> list[str]:
    """The lines a run whose user simulator or judge is the target model itself says first (its status words
    ``self-simulated`` / ``self-judged``, run.results.self_status); ``user_turns``: False when no planned
    conversation has a simulated user turn (the user role then renders nothing)."""
    words = self_status(roles["target"].model, roles["user"].model if user_turns else None, roles["judge"].model,
                        sorted(local))
    fix = {"self-simulated": "--user-model (and --user-endpoint) of another model for a fixed simulator",
           "self-judged": "--judge-model (and --judge-endpoint) of another model for a fixed judge"}
    return [f"{STATUS_LINES[w]} Give {fix[w]}." for w in words]


def _manifest_sha(bench: Benchmark) -> Optional[str]:
    if bench.manifest is None:
        return None
    return hashlib.sha256(json.dumps(bench.manifest, sort_keys=True).encode()).hexdigest()


def new_run_meta(cfg: EvaluateConfig, bench: Benchmark, configs: dict[str, EndpointConfig], local: set[str],
                 skipped: list[Any]) -> RunMeta:
    """run.json of a new run; local roles get LOCAL_MAX_TOKENS unless a cap was given."""
    caps = defaults.LOCAL_MAX_TOKENS
    return RunMeta(
        carryonbench_version=__version__, created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        dataset=DatasetRef(source=bench.source, revision=cfg.revision, kind=bench.kind, commit=bench.commit,
                           manifest_sha256=_manifest_sha(bench), content_sha256=bench.fingerprint()),
        roles={role: RoleRecord.of(c, local=role in local) for role, c in configs.items()},
        generation=RunGeneration(
            target=Generation(temperature=cfg.temperature, seed=cfg.seed, max_tokens=cfg.max_tokens or (
                caps["target"] if "target" in local else defaults.TARGET_MAX_TOKENS)),
            user=Generation(temperature=defaults.USER_TEMPERATURE if cfg.user_temperature is None
                            else cfg.user_temperature, seed=cfg.seed, max_tokens=cfg.user_max_tokens or (
                                caps["user"] if "user" in local else defaults.USER_MAX_TOKENS))),
        judge=JudgeSettings.of(cfg.scoring, max_tokens=cfg.judge_max_tokens or (
            caps["judge"] if "judge" in local else defaults.JUDGE_MAX_TOKENS), judge_format=cfg.judge_format),
        conditions=list(cfg.conditions), limit=cfg.limit, shared_turn1=cfg.shared_turn1,
        prompts={name: ref for s in suites() for name, ref in s.prompts().items()},
        notice=LOCAL_MODEL_NOTICE if local else None, skipped=list(skipped),
        subset=cfg.subset if cfg.subset != "full" else None,
        bootstrap=BootstrapRef(cfg.bootstrap_resamples, cfg.bootstrap_seed), sweep=cfg.sweep)


@dataclass(frozen=True)
class BootstrapChoice:
    """The report's bootstrap; None = as run.json records it, else the defaults."""
    n_resamples: Optional[int] = None
    seed: Optional[int] = None

    def resolve(self, meta: RunMeta) -> tuple[int, int]:
        recorded = meta.bootstrap or BootstrapRef()
        seed = recorded.seed if present(recorded.seed) else defaults.BOOTSTRAP_SEED
        return (self.n_resamples or recorded.n_resamples or defaults.BOOTSTRAP_RESAMPLES,
                self.seed if self.seed is not None else seed)
