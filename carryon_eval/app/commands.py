"""The application layer of `carryon-eval`: one async function per command, run in one event loop.

    asyncio.run(evaluate(EvaluateConfig(...), out))        # rollout -> [fidelity] -> judge -> report
    asyncio.run(continue_rollout(RunOptions(rundir), out))  # and judge_folder, fidelity_folder, report_folder

The CLI (carryon_eval.cli) parses options into these config records, makes the one ``asyncio.run`` and
turns the package's errors into its one-line error. Everything else is here: which roles run on the
embedded model and its lifetime (started on first need, stopped on any exit), the endpoint checks
before anything is spent, the order of the phases, closing every endpoint, and the lines a user reads
(through ``Output``: ``info`` to stdout, ``note`` to stderr).

Over 450 lines for a reason: it is the one place that orders the phases of every command (config
records, the session's resources, the checks, and the pipelining of rollout into judging); the logic of
each part lives in its own module (dry_run, subset, pipeline, pool, batch).
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Optional, Protocol, Sequence

from carryon_eval import __version__

from carryon_eval import defaults
from carryon_eval.human.annotate import sample_cases, strata_counts, write_annotation
from carryon_eval.model.cache import ResponseCache
from carryon_eval.cli_common import is_local
from carryon_eval.model.endpoint import EndpointConfig, UsageLedger
from carryon_eval.dataset.load import Benchmark, load_benchmark
from carryon_eval.dataset.subset import SubsetError, apply_subset
from carryon_eval.app.pipeline import judge_while_rolling_out
from carryon_eval.model.pool import EndpointGone, EndpointPool, RoleWatch
from carryon_eval.model.redact import register_key_of
from carryon_eval.judge.batch import (MANIFEST, BatchError, ExportingEndpoint, export_requests, import_results,
                                      pending_requests)
from carryon_eval.app.cost import run_cost_table
from carryon_eval.model.budget import CallBudget
from carryon_eval.model.endpoint import ChatEndpoint
from carryon_eval.judge.phase import UTILITY_MODES, JudgeError, judge_run
from carryon_eval.judge.store import judges_present
from carryon_eval.model.local import LOCAL_ENDPOINT, LOCAL_MODEL_ALIAS, LOCAL_MODEL_NOTICE, LocalModelServer
from carryon_eval.progress import Progress, human, tokens_by_role
from carryon_eval.schema import Transcript
from carryon_eval.run.records import DatasetRef, Generation, JudgePass, JudgeSettings, Results, RoleRecord, RunGeneration, RunMeta
from carryon_eval.report.writer import suite_inputs, write_report
from carryon_eval.rollout.play import rollout
from carryon_eval.run.folder import FIDELITY_FILE, RunFolder, add_usage, write_json_atomic
from carryon_eval.suite import (Job, PlanSettings, SuiteError, available, exporters, load_inputs, plan_jobs,
                                default_conditions, refuse_missing, selected, suites)
from carryon_eval.judge.fidelity import check_fidelity
from carryon_eval.rollout.simulator import UserSimulator

if TYPE_CHECKING:  # pragma: no cover
    from carryon_eval.model.client import Endpoint

ROLES = ("target", "user", "judge")
SAMPLE = "builtin:sample"          # run.json's dataset source when --dataset is not given
POOL_RETRIES = 0                   # a pool member's own retries: none, the pool fails over (then retries rounds)


JUDGMENT_NOUNS = {"utility": "utility verdicts", "safety": "safety scores", "response_mode": "response modes"}


@dataclass(frozen=True)
class ProbeContext:
    """What a suite's probe gets: the run folder, the endpoint of its role, the judge whose verdicts chose
    the replies, the concurrency and the dataset (with the suites' own inputs in ``bench.extras``)."""
    run: RunFolder
    target: ChatEndpoint
    judge_model: Optional[str]
    concurrency: int
    bench: Optional[Benchmark] = None


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

    def request(self) -> dict[str, Any]:
        return {"reasoning_effort": self.reasoning_effort, "system_prompt": self.system_prompt,
                "extra_body": self.extra_body}


@dataclass(frozen=True)
class EvaluateConfig:
    """Everything `carryon-eval [OPTIONS]` runs with."""
    target: RoleChoice = RoleChoice(api_key_env=defaults.API_KEY_ENV)
    user: RoleChoice = RoleChoice()
    judge: RoleChoice = RoleChoice()
    dataset: Optional[str] = None
    revision: Optional[str] = None
    out: Optional[Path] = None
    limit: Optional[int] = None
    conditions: Sequence[str] = ("turn1", "oracle", "bc", "nc")   # the CLI gives the suites' default set
    concurrency: int = defaults.CONCURRENCY
    max_tokens: Optional[int] = None
    judge_max_tokens: Optional[int] = None
    temperature: Any = defaults.TARGET_TEMPERATURE     # a number, or "default" (the provider's: not sent)
    user_max_tokens: Optional[int] = None
    user_temperature: Any = None                       # None: defaults.USER_TEMPERATURE
    judge_temperature: Any = None                      # None: 0
    seed: int = defaults.SEED
    shared_turn1: bool = True
    fidelity: bool = False
    utility_mode: str = "text"
    model_check: bool = True          # False: --no-model-check (a server whose /models list is incomplete)
    judge_format: str = "json_schema"
    dry_run: bool = False                 # print the cost table and stop: nothing called, nothing written
    dry_run_json: bool = False            # with dry_run: the table as one JSON object on stdout
    prices: Sequence[str] = ()            # ROLE=IN/OUT, USD per 1M tokens (carryon_eval.app.cost)
    max_calls: Optional[int] = None       # calls that reach a server, all roles; then stop cleanly
    subset: Optional[str] = None          # "quick" (carryon_eval.dataset.subset); None: every conversation
    bootstrap_resamples: int = defaults.BOOTSTRAP_RESAMPLES
    bootstrap_seed: int = defaults.BOOTSTRAP_SEED
    give_up_after: Optional[float] = None  # seconds of silence from a role that end the run (None: the default)
    conditions_all: bool = False          # --conditions all: suites with inputs of their own join when given
    suite_options: dict[str, Any] = dataclasses.field(default_factory=dict)   # the suites' own options (Suite.load)
    http_client: str = defaults.HTTP_CLIENT   # the endpoints' HTTP transport, "aiohttp" or "httpx" (run.json roles)


@dataclass(frozen=True)
class RunOptions:
    """A subcommand on an existing run folder; every None means "as the run's run.json says"."""
    rundir: Path
    target_endpoint: Optional[str] = None
    user_endpoint: Optional[str] = None
    judge: RoleChoice = RoleChoice()
    concurrency: int = defaults.CONCURRENCY
    utility_mode: Optional[str] = None
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


# ---------------------------------------------------------------- one command's resources
class Session:
    """What one command holds: the embedded model (started when a role first needs it), the endpoints
    it opened (closed at the end), and the token ledger. ``async with Session(...)`` releases all."""

    def __init__(self, out: Output, *, logprobs: bool = False, model_check: bool = True,
                 give_up_after: Optional[float] = None) -> None:
        self.out = out
        self.give_up_after = give_up_after    # None: GIVE_UP_AFTER, or 1.5 timeouts of a slow (local) endpoint
        self.logprobs = logprobs          # the logprob utility mode needs llama.cpp's logits_all
        self.model_check = model_check    # False: the endpoints' check() asks nothing
        self.usage = UsageLedger()
        self._stack = contextlib.ExitStack()
        self._server: Optional[LocalModelServer] = None
        self._opened: list[Endpoint] = []
        self._caches: dict[Path, ResponseCache] = {}
        self.by_role: dict[str, list[Endpoint]] = {}   # the endpoints opened for each role
        self._runs: dict[Path, None] = {}      # run folders whose usage.json gets this command's usage

    async def __aenter__(self) -> "Session":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        try:
            for path in self._runs:
                add_usage(path, self.usage.snapshot())
            for ep in self._opened:
                await ep.aclose()
        finally:
            try:
                for cache in self._caches.values():   # every queued cache entry on disk before we return
                    cache.close()
            finally:
                self._stack.close()

    def local_server(self) -> LocalModelServer:
        if self._server is None:
            self.out.note("starting the embedded model (Gemma 3 270M via llama.cpp) ...")
            self._server = self._stack.enter_context(LocalModelServer(logits_all=self.logprobs))
        return self._server

    def endpoint(self, config: EndpointConfig, run: RunFolder, role: Optional[str] = None) -> "Endpoint":
        """An endpoint that caches in the run folder and counts usage; closed when the session ends. The
        cache writes in a thread (fsyncs never stall the event loop) and is flushed when the session ends."""
        cache = self._caches.get(run.cache_dir)
        if cache is None:
            cache = self._caches[run.cache_dir] = ResponseCache(run.cache_dir, background=True)
        register_key_of(config.api_key_env)          # its value is masked in everything written
        from carryon_eval.model.client import Endpoint   # the openai library, only for a command that calls
        ep = Endpoint(config, cache=cache, usage=self.usage, model_check=self.model_check)
        self._opened.append(ep)
        if role is not None:
            self.by_role.setdefault(role, []).append(ep)
        self._runs.setdefault(run.path, None)
        return ep

    def role_endpoint(self, config: EndpointConfig, pool: Sequence[str], run: RunFolder,
                      role: str = "target") -> ChatEndpoint:
        """One endpoint, or a pool of it and the ``pool`` URLs (members retry once, then fail over), watched:
        a role that stops answering ends the phase (pool.RoleWatch)."""
        if not pool:
            return self.watched(self.endpoint(config, run, role), role)
        members = [dataclasses.replace(config, base_url=url, max_retries=min(config.max_retries, POOL_RETRIES))
                   for url in (config.base_url, *pool)]
        return self.watched(EndpointPool([self.endpoint(c, run, role) for c in members],
                                         rounds=1 + config.max_retries), role)

    def watched(self, endpoint: ChatEndpoint, role: str) -> ChatEndpoint:
        give_up = self.give_up_after
        if give_up is None:
            give_up = max(defaults.GIVE_UP_AFTER, 1.5 * endpoint.config.timeout)
        return RoleWatch(endpoint, role, give_up)

    def record_sent(self, run: RunFolder) -> None:
        """run.json's ``roles.ROLE.sent``: the parameters each role's endpoints refused and what was sent
        instead (learned during this command), so that the report can say so."""
        learned = {role: {k: v for ep in eps for k, v in ep.sent_params().items()}
                   for role, eps in self.by_role.items()}
        learned = {role: sent for role, sent in learned.items() if sent}
        if not learned or not run.run_file.exists():
            return
        meta = run.read_meta()
        changed = False
        for role, sent in learned.items():
            record = meta.roles.get(role)
            if record is not None and {**record.sent, **sent} != record.sent:
                meta.roles[role] = dataclasses.replace(record, sent={**record.sent, **sent})
                changed = True
        if changed:
            write_json_atomic(run.run_file, meta.to_json())
        for role, sent in learned.items():
            for name, how in sent.items():
                self.out.note(f"{role}: {self.by_role[role][0].config.model} refused {name}: {how} "
                              f"(recorded in {run.run_file})")

    def role_config(self, record: RoleRecord, *, endpoint: Optional[str] = None, model: Optional[str] = None,
                    api_key_env: Optional[str] = None, concurrency: Optional[int] = None,
                    **request: Any) -> EndpointConfig:
        """A role's config from run.json; the embedded model again if it ran there, unless overridden
        (``request``: request options given again; None keeps the recorded ones)."""
        check_url("--endpoint" if record is None else "endpoint", endpoint)
        if is_local(endpoint) if endpoint is not None else record.local:
            srv = self.local_server()
            return record.config(base_url=srv.base_url, model=srv.model, api_key_env=api_key_env,
                                 concurrency=concurrency, **request)
        return record.config(base_url=endpoint, model=model, api_key_env=api_key_env, concurrency=concurrency,
                             **request)

    def print_usage(self) -> None:
        tokens = tokens_by_role(self.usage)
        if tokens:
            self.out.info("tokens: " + ", ".join(f"{role} {human(n)}" for role, n in tokens.items()))


async def check_configs(configs: Sequence[EndpointConfig], model_check: bool = True) -> None:
    """Check endpoints before a run folder is touched: no cache, no usage, closed right after."""
    from carryon_eval.model.client import Endpoint
    probes = [Endpoint(c, model_check=model_check) for c in configs]
    try:
        await check_endpoints(probes)
    finally:
        for probe in probes:
            await probe.aclose()


async def check_endpoints(eps: Sequence[ChatEndpoint]) -> None:
    """Every endpoint answers and serves its model; one check per distinct (URL, model)."""
    seen: dict[tuple[str, str], ChatEndpoint] = {}
    for ep in eps:
        seen.setdefault((ep.config.base_url, ep.config.model), ep)
    results = await asyncio.gather(*(ep.check() for ep in seen.values()), return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r


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
    bench = load_benchmark(None if source in (None, SAMPLE) else source, revision)
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
    key = cfg.target.api_key_env or defaults.API_KEY_ENV
    roles = {"target": dataclasses.replace(cfg.target, api_key_env=key)}
    for name, choice in (("user", cfg.user), ("judge", cfg.judge)):
        own = choice.endpoint is not None
        roles[name] = RoleChoice(endpoint=choice.endpoint if own else cfg.target.endpoint,
                                 model=choice.model or cfg.target.model, api_key_env=choice.api_key_env or key,
                                 pool=choice.pool if own else cfg.target.pool, **choice.request())
    if any(choice.pool and is_local(choice.endpoint) for choice in roles.values()):
        raise ConfigError("an endpoint pool takes URLs only, not the embedded model ('local')")
    local = {name for name, choice in roles.items() if is_local(choice.endpoint)}
    for name, choice in roles.items():
        if name not in local and not choice.model:
            if name == "target":
                raise ConfigError(f"--model is required with --endpoint {choice.endpoint}")
            raise ConfigError(f"--{name}-model (or --model) is required with --{name}-endpoint {choice.endpoint}")
    return roles, local


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
        dataset=DatasetRef(source=SAMPLE if cfg.dataset is None else bench.source, revision=cfg.revision,
                           manifest_sha256=_manifest_sha(bench), content_sha256=bench.fingerprint()),
        roles={role: RoleRecord.of(c, local=role in local) for role, c in configs.items()},
        generation=RunGeneration(
            target=Generation(temperature=cfg.temperature, seed=cfg.seed, max_tokens=cfg.max_tokens or (
                caps["target"] if "target" in local else defaults.TARGET_MAX_TOKENS)),
            user=Generation(temperature=defaults.USER_TEMPERATURE if cfg.user_temperature is None
                            else cfg.user_temperature, seed=cfg.seed, max_tokens=cfg.user_max_tokens or (
                                caps["user"] if "user" in local else defaults.USER_MAX_TOKENS))),
        judge=JudgeSettings(utility_mode=cfg.utility_mode, max_tokens=cfg.judge_max_tokens or (
            caps["judge"] if "judge" in local else defaults.JUDGE_MAX_TOKENS), judge_format=cfg.judge_format),
        conditions=list(cfg.conditions), limit=cfg.limit, shared_turn1=cfg.shared_turn1,
        prompts={name: ref for s in suites() for name, ref in s.prompts().items()},
        notice=LOCAL_MODEL_NOTICE if local else None, skipped=list(skipped),
        subset=cfg.subset if cfg.subset != "full" else None,
        bootstrap={"n_resamples": cfg.bootstrap_resamples, "seed": cfg.bootstrap_seed})


# ---------------------------------------------------------------- phases
def run_jobs(bench: Benchmark, meta: RunMeta) -> list[Job]:
    """The jobs of a run: its suites' plans for its conditions (run.json's)."""
    return plan_jobs(bench, meta.conditions, PlanSettings(shared_turn1=meta.shared_turn1))[0]


async def rollout_phase(bench: Benchmark, run: RunFolder, meta: RunMeta, target: ChatEndpoint,
                        user: ChatEndpoint, concurrency: int, out: Output,
                        on_finished: Optional[Callable[[Transcript], None]] = None) -> None:
    simulator = UserSimulator(user, temperature=meta.generation.user.temperature,
                              max_tokens=meta.generation.user.max_tokens)
    summary = await rollout(run_jobs(bench, meta), bench, run, target, simulator, gen=meta.generation.target,
                            concurrency=concurrency, on_finished=on_finished)
    out.info(f"rollout: {summary.finished}/{summary.total} conversations in {run.transcripts_file} "
             f"({summary.new} new)")
    if meta.skipped:
        out.info(f"rollout: {len(meta.skipped)} conversation(s) skipped (listed in run.json 'skipped'): "
                 f"{meta.skipped[0].reason}")
    failures = run.failures()
    if failures:
        out.info(f"rollout: {len(failures)} conversation(s) failed (see {run.failures_file}; "
                 "a rerun tries them again)")


async def fidelity_phase(bench: Benchmark, run: RunFolder, judge: ChatEndpoint, concurrency: int,
                         out: Output) -> dict[str, Any]:
    transcripts = run.transcripts()
    n = sum(1 for t in transcripts for m in t.messages if m.role == "user" and m.move)
    with Progress(n, "fidelity", usage=judge.usage, unit="turn") as bar:
        result = await check_fidelity(transcripts, bench.queries, judge, concurrency=concurrency, progress=bar)
    write_json_atomic(run.path / FIDELITY_FILE, result)
    agree, leak = result["agreement"], result["intent_leak"]
    voiced = "".join(f"; {cond.upper()} turns not voicing their purpose ({'/'.join(v['flags_on'])}) "
                     f"{v['n_flagged_turns']}/{v['n_checked']}" for cond, v in result.get("voice", {}).items())
    out.info(f"fidelity: {result['n_turns']} user turns, move agreement "
             f"{'n/a' if agree is None else f'{agree:.0%}'}; NC intent leaks {leak['n_leaks']}/{leak['n_checked']}"
             f"{voiced} -> {run.path / FIDELITY_FILE}")
    return result


async def judge_phase(bench: Benchmark, run: RunFolder, judge: ChatEndpoint, settings: JudgeSettings,
                      concurrency: int, out: Output, incoming: Optional[AsyncIterator[Transcript]] = None,
                      conditions: Sequence[str] = ()) -> JudgePass:
    """The judge phase, awaited in this command's loop: the scorers the run's suites name. ``incoming``: the
    transcripts a rollout running beside it still finishes, of ``conditions`` (carryon_eval.app.pipeline)."""
    if settings.utility_mode not in UTILITY_MODES:
        raise JudgeError(f"unknown utility mode {settings.utility_mode!r}; expected one of {list(UTILITY_MODES)}")
    judged = await judge_run(run, bench, judge, settings=settings, concurrency=concurrency, incoming=incoming,
                             conditions=conditions,
                             show_progress=False if incoming is not None else None)   # the rollout's line is up
    counts = ", ".join(f"{t.records_written}/{t.records_total} {JUDGMENT_NOUNS.get(name, name + ' judgments')} "
                       f"({t.unscored} unscored)" for name, t in judged.tallies.items())
    out.info(f"judge ({judged.judge_model}): {counts}; obtained as "
             f"{_ways(*(t.via for t in judged.tallies.values()))}")
    if not judged.complete:
        out.note(f"judge: some judgments are missing after failed calls; `carryon-eval judge {run.path}` "
                 "asks for them again")
    return judged


def _ways(*tallies: dict[str, int]) -> str:
    """"12 json_schema, 3 text": how the judgments of this pass's judge were obtained."""
    total: dict[str, int] = {}
    for tally in tallies:
        for way, n in tally.items():
            total[way] = total.get(way, 0) + n
    return ", ".join(f"{n} {way}" for way, n in sorted(total.items())) or "nothing"


@dataclass(frozen=True)
class BootstrapChoice:
    """The report's bootstrap; None = as run.json records it, else the defaults."""
    n_resamples: Optional[int] = None
    seed: Optional[int] = None

    def resolve(self, meta: RunMeta) -> tuple[int, int]:
        recorded = meta.bootstrap or {}
        return (self.n_resamples or recorded.get("n_resamples") or defaults.BOOTSTRAP_RESAMPLES,
                self.seed if self.seed is not None else recorded.get("seed", defaults.BOOTSTRAP_SEED))


def report_phase(bench: Benchmark, run: RunFolder, out: Output, judge: Optional[str] = None,
                 bootstrap: BootstrapChoice = BootstrapChoice()) -> Results:
    """`judge`: whose judgments to report when several judge models judged the run (default: the run's)."""
    n_resamples, seed = bootstrap.resolve(run.read_meta())
    results = write_report(run.path, bench, judge=judge, n_resamples=n_resamples, seed=seed)
    out.info(f"results: {run.path / 'results.json'}")
    out.info(f"report:  {run.path / 'report.html'}")
    return results


def require_scored(results: Results, run: RunFolder) -> None:
    """Raises NothingScored (exit 3; everything is written by then) when a condition that ran has no
    scored number at all."""
    empty = conditions_without_numbers(results.conditions)
    if empty:
        raise NothingScored(f"judge answered nothing usable: no scored number for condition(s) {', '.join(empty)} "
                            f"(see {run.path / 'results.json'})", results)


class NothingScored(Exception):
    """Everything was written, but some condition that ran has no scored number at all (exit 3);
    ``results``: what was written to results.json."""

    def __init__(self, message: str, results: Optional[Results] = None) -> None:
        super().__init__(message)
        self.results = results


class RunIncomplete(Exception):
    """Everything there is was written (results.json and the report say incomplete), but judgments are
    missing: failed calls, or an endpoint that stopped answering (exit 4; the same command resumes)."""


def require_complete(results: Results, run: RunFolder) -> None:
    """Raises RunIncomplete when some reply of the run has no judgment (a judge call failed)."""
    u = results.unscored
    missing = (u.get("utility_items_not_judged") or 0) + (u.get("safety_not_judged") or 0)
    if missing or results.judges.complete is False:
        raise RunIncomplete(f"the run is incomplete: {missing} judgment(s) missing (judge calls that failed or were not made yet) "
                            f"(results.json and the report say so); rerun the same command to resume")


def conditions_without_numbers(conditions: dict[str, Any]) -> list[str]:
    """The conditions that ran (conversations > 0) whose headline numbers are all None."""
    return [name for name, block in conditions.items() if block.get("n_conversations")
            and all(block.get(m) is None for m in ("utility", "harm", "harm_mean_turns", "violation_rate"))]


# ---------------------------------------------------------------- commands
async def evaluate(cfg: EvaluateConfig, out: Output) -> Optional[Results]:
    """The whole pipeline on a new (or resumed) run folder: rollout -> [fidelity] -> judge -> report; returns
    the results (results.json's record), or None after a dry run and when no CarryOnBench condition ran (an
    OpenSafeIntent-only run writes its own files)."""
    roles, local = resolve_roles(cfg)
    if local:
        out.info(LOCAL_MODEL_NOTICE)
    async with Session(out, logprobs=cfg.utility_mode == "logprobs" and "judge" in local,
                       model_check=cfg.model_check, give_up_after=cfg.give_up_after) as session:
        bench = load_bench(cfg.dataset, cfg.revision, cfg.limit, cfg.subset)
        target_name = LOCAL_MODEL_ALIAS if "target" in local else str(roles["target"].model)
        given = [v for v in cfg.suite_options.values() if isinstance(v, Path)]     # the suites' input folders
        run = RunFolder(cfg.out or default_out(target_name, cfg.dataset, cfg.limit, cfg.subset, given))
        earlier = run.read_meta().suites if run.exists() else None
        records = load_inputs(bench, suite_options(cfg), earlier)      # the suites' own inputs, checked
        conditions = available(bench, cfg.conditions) if cfg.conditions_all else list(cfg.conditions)
        try:
            refuse_missing(bench, conditions)
        except SuiteError as exc:
            raise ConfigError(str(exc)) from None
        jobs, skipped = plan_jobs(bench, conditions, PlanSettings(shared_turn1=cfg.shared_turn1))
        if cfg.conditions_all:          # `all`: a condition left out of the default set joins where the dataset has it
            conditions = [c for c in conditions if c in default_conditions() or any(j.condition == c for j in jobs)]
            skipped = [k for k in skipped if k.condition in conditions]
        cfg = dataclasses.replace(cfg, conditions=tuple(conditions))
        refuse_empty_conditions(bench, conditions, jobs, skipped)
        say = out.note if cfg.dry_run_json else out.info       # --json: the table is stdout's only line
        say(f"run folder: {run.path}")
        subset = f", subset {cfg.subset}" if cfg.subset not in (None, "full") else ""
        say(f"dataset: {bench.source} ({len(bench.queries)} queries, {len(jobs)} conversations to run{subset})")
        for note in bench.notes:
            say(f"dataset note: {note}")
        for name, record in records.items():          # what each suite's own inputs hold, in its words
            if record.get("summary"):
                say(f"{name}: {record['summary']}")

        # Local roles get the embedded model's address once it runs; run.json records them as "local".
        configs = {role: EndpointConfig(base_url=LOCAL_ENDPOINT if role in local else str(c.endpoint),
                                        model=LOCAL_MODEL_ALIAS if role in local else str(c.model),
                                        api_key_env=str(c.api_key_env), concurrency=cfg.concurrency,
                                        http_client=cfg.http_client,
                                        temperature=cfg.judge_temperature if role == "judge" else None,
                                        **c.request())
                   for role, c in roles.items()}
        meta = new_run_meta(cfg, bench, configs, local, skipped)
        for role, choice in roles.items():
            if choice.pool:
                meta.roles[role] = dataclasses.replace(meta.roles[role],
                                                       pool=(configs[role].base_url, *choice.pool))
        meta.suites.update(records)
        try:                                 # what this run still has to do; reads, never writes
            table = run_cost_table(bench, jobs, meta, run if run.exists() else None, cfg.prices,
                                   as_json=cfg.dry_run_json)
        except ValueError as exc:            # a bad --price
            raise ConfigError(str(exc)) from None
        for line in [json.dumps(table)] if cfg.dry_run_json else table:
            out.info(line)
        if cfg.dry_run:
            return None
        run.check(meta)                      # an unusable folder fails before anything starts
        if local:
            srv = session.local_server()
            configs = {role: dataclasses.replace(c, base_url=srv.base_url, model=srv.model) if role in local else c
                       for role, c in configs.items()}
        # Every role, before anything is generated or written (no cache yet: nothing lands in RUNDIR).
        await check_configs([*configs.values(), *(dataclasses.replace(configs[role], base_url=url)
                                                  for role, choice in roles.items() for url in choice.pool)],
                            cfg.model_check)
        meta = run.start(meta)
        eps: dict[str, ChatEndpoint] = {role: session.role_endpoint(c, roles[role].pool, run, role)
                                        for role, c in configs.items()}
        budget = CallBudget(cfg.max_calls) if cfg.max_calls else None
        if budget is not None:
            eps = {role: budget.wrap(ep) for role, ep in eps.items()}

        results = await _phases(cfg, bench, run, meta, eps, jobs, out, lambda: session.record_sent(run))
        session.print_usage()
    require_scored(results, run)
    require_complete(results, run)
    return results


async def _phases(cfg: EvaluateConfig, bench: Benchmark, run: RunFolder, meta: RunMeta,
                  eps: dict[str, ChatEndpoint], jobs: Sequence[Any],
                  out: Output, before_report: Callable[[], None] = lambda: None) -> Results:
    """The planned suites' phases: rollout (judged while it runs), fidelity, judge, probes, report
    (``before_report``: e.g. run.json's record of what the endpoints refused, which the report states). A role
    that stops answering ends them; what there is is reported (marked incomplete) before the error goes on."""
    judged_by = eps["judge"].config.model      # the report shows the judge this command ran
    try:
        # The judge takes every conversation the rollout finishes, as it finishes (one pass, app.pipeline).
        conditions = list(dict.fromkeys(j.condition for j in jobs))
        await judge_while_rolling_out(
            lambda done: rollout_phase(bench, run, meta, eps["target"], eps["user"], cfg.concurrency, out, done),
            lambda incoming: judge_phase(bench, run, eps["judge"], meta.judge, cfg.concurrency, out, incoming,
                                         conditions))
        if cfg.fidelity:
            await fidelity_phase(bench, run, eps["judge"], cfg.concurrency, out)
    except EndpointGone:
        _report_what_there_is(bench, run, out, judged_by)
        raise
    for suite in selected(meta.conditions):
        for probe in suite.probes:             # calls that depend on the verdicts (e.g. the risk probe)
            out.info(await probe.run(ProbeContext(run, eps[probe.role], judged_by, cfg.concurrency, bench)))
    before_report()
    return report_phase(bench, run, out, judged_by if judged_by in judges_present(run.path) else None,
                        BootstrapChoice(cfg.bootstrap_resamples, cfg.bootstrap_seed))


def _report_what_there_is(bench: Benchmark, run: RunFolder, out: Output, judge: Optional[str]) -> None:
    """results.json and the report of a run that stopped (marked incomplete), when there is anything to report."""
    if not run.transcripts():
        return
    present = judges_present(run.path)
    report_phase(bench, run, out, judge if judge in present else (present[0] if len(present) == 1 else None))


def open_run(rundir: Path, out: Output) -> tuple[RunFolder, RunMeta, Benchmark]:
    run = RunFolder(rundir)
    meta = run.read_meta()
    if meta.notice:
        out.info(meta.notice)
    bench = load_bench(meta.dataset.source, meta.dataset.revision, meta.limit, meta.subset)
    run.check_dataset(meta, bench.fingerprint())
    load_inputs(bench, {"limit": meta.limit}, meta.suites, reopen=True)   # the suites' own inputs, checked
    return run, meta, bench


async def continue_rollout(opts: RunOptions, out: Output) -> None:
    """`carryon-eval rollout RUNDIR`: finish the rollout of a run folder with the settings in its run.json."""
    async with Session(out, model_check=opts.model_check, give_up_after=opts.give_up_after) as session:
        run, meta, bench = open_run(opts.rundir, out)
        target = session.role_config(meta.role("target"), endpoint=opts.target_endpoint, concurrency=opts.concurrency,
                                     http_client=opts.http_client)
        user = session.role_config(meta.role("user"), endpoint=opts.user_endpoint, concurrency=opts.concurrency,
                                   http_client=opts.http_client)
        run.prepare()
        eps: list[ChatEndpoint] = [session.watched(session.endpoint(target, run, "target"), "target"),
                                   session.watched(session.endpoint(user, run, "user"), "user")]
        await check_endpoints(eps)
        if opts.max_calls:
            budget = CallBudget(opts.max_calls)
            eps = [budget.wrap(ep) for ep in eps]
        await rollout_phase(bench, run, meta, eps[0], eps[1], opts.concurrency, out)
        session.record_sent(run)
        session.print_usage()


async def _checked_judge(session: Session, run: RunFolder, meta: RunMeta, opts: RunOptions) -> ChatEndpoint:
    cfg = session.role_config(meta.role("judge"), endpoint=opts.judge.endpoint, model=opts.judge.model,
                              api_key_env=opts.judge.api_key_env, concurrency=opts.concurrency,
                              http_client=opts.http_client, temperature=opts.judge_temperature,
                              **opts.judge.request())
    await check_configs([cfg], session.model_check)
    ep = session.watched(session.endpoint(cfg, run, "judge"), "judge")
    return CallBudget(opts.max_calls).wrap(ep) if opts.max_calls else ep


async def judge_folder(opts: RunOptions, out: Output) -> None:
    """`carryon-eval judge RUNDIR`: (re-)judge a run folder; cached verdicts are not asked again."""
    async with Session(out, model_check=opts.model_check, give_up_after=opts.give_up_after) as session:
        run, meta, bench = open_run(opts.rundir, out)
        mode = opts.utility_mode or meta.judge.utility_mode
        max_tokens = opts.judge_max_tokens or meta.judge.max_tokens
        if opts.batch_export is not None and opts.batch_import:
            raise ConfigError("--batch-export and --batch-import do not go together: export, run the batch, "
                              "then import its results in a second command")
        if opts.live_rest and not opts.batch_import:
            raise ConfigError("--live-rest goes with --batch-import (without it every judge call is live anyway)")
        if opts.batch_export is not None:
            model = opts.judge.model or meta.role("judge").model or LOCAL_MODEL_ALIAS
            exported = await export_requests(run.path, bench, model, opts.batch_export, settings=JudgeSettings(
                utility_mode=mode, max_tokens=max_tokens, judge_format=opts.judge_format or meta.judge.judge_format),
                config=meta.role("judge").config(base_url="batch", model=model, temperature=opts.judge_temperature,
                                                 **opts.judge.request()))
            out.info(f"batch: {exported.requests} judge request(s) not in the cache, in {len(exported.files)} "
                     f"file(s) in {exported.folder} ({MANIFEST}); run them, then `carryon-eval judge {run.path} "
                     "--batch-import RESULT.jsonl...`")
            return
        judge_format = opts.judge_format or meta.judge.judge_format
        model = opts.judge.model or meta.role("judge").model or LOCAL_MODEL_ALIAS
        cache_only: Optional[ChatEndpoint] = None
        settings = JudgeSettings(utility_mode=mode, max_tokens=max_tokens, judge_format=judge_format)
        if opts.batch_import:
            asks = dict(settings=settings, config=meta.role("judge").config(     # the export's keys
                base_url="batch", model=model, temperature=opts.judge_temperature, **opts.judge.request()))
            expected = set(await pending_requests(run.path, bench, model, **asks))
            cache = ResponseCache(run.cache_dir)
            imported = import_results(opts.batch_import, cache, expected)
            cache.close()
            left = len(await pending_requests(run.path, bench, model, **asks))
            out.info(f"batch: {imported.stored} answer(s) stored in the cache, {imported.failed} failed"
                     + (" (asked again now, live)" if opts.live_rest else ""))
            if left and not opts.live_rest:
                raise BatchError(f"{left} judge request(s) of this run have no answer in the result file(s) "
                                 "(failed lines, or not in them); export them with --batch-export and run that "
                                 "batch, or add --live-rest to ask them live")
            if not opts.live_rest:               # judged from the cache alone: nothing is asked live
                cache_only = ExportingEndpoint(EndpointConfig(base_url="batch", model=model), cache)
        session.logprobs = mode == "logprobs"
        judge = cache_only or await _checked_judge(session, run, meta, opts)
        judged = await judge_phase(bench, run, judge, settings, opts.concurrency, out)
        session.record_sent(run)
        session.print_usage()
    if not judged.complete:
        missing = sum(t.missing for t in judged.tallies.values())
        raise RunIncomplete(f"the judge phase is incomplete: {missing} judgment(s) missing after failed calls; "
                            "rerun the same command to resume")


async def fidelity_folder(opts: RunOptions, out: Output) -> None:
    """`carryon-eval fidelity RUNDIR`: does every simulated user turn realise its move; do NC turns leak?"""
    async with Session(out, model_check=opts.model_check, give_up_after=opts.give_up_after) as session:
        run, meta, bench = open_run(opts.rundir, out)
        judge = await _checked_judge(session, run, meta, opts)
        await fidelity_phase(bench, run, judge, opts.concurrency, out)
        session.print_usage()


@dataclass(frozen=True)
class AnnotateConfig:
    """`carryon-eval annotate RUNDIR`: which task, how many cases, the seed, where and in which format."""
    rundir: Path
    task: str
    sample: int
    seed: int = 0
    out: Optional[Path] = None
    fmt: str = "html"                  # or "label-studio"
    judge: Optional[str] = None


async def annotate_folder(cfg: AnnotateConfig, out: Output) -> None:
    """`carryon-eval annotate RUNDIR`: a stratified sample of one task's cases as an annotation page (or
    Label Studio's tasks and labeling config)."""
    run, _, bench = open_run(cfg.rundir, out)
    cases = sample_cases(run.path, bench, cfg.task, cfg.sample, cfg.seed, cfg.judge)
    default = (f"annotate-{cfg.task}-seed{cfg.seed}.html" if cfg.fmt == "html"
               else f"label-studio-{cfg.task}-seed{cfg.seed}.json")
    paths = write_annotation(cases, cfg.task, cfg.out or run.path / default, source=str(run.path), fmt=cfg.fmt)
    strata = ", ".join(f"{k} {n}" for k, n in strata_counts(cases).items())
    out.info(f"annotate: {len(cases)} {cfg.task} cases (by condition/answer: {strata})")
    for path in paths:
        out.info(f"wrote {path}")


async def export_folder(rundir: Path, dest: Path, out: Output, judge: Optional[str] = None,
                        fmt: Optional[str] = None) -> None:
    """`carryon-eval export RUNDIR --format NAME --out DIR`: a suite's replies and judgments in its reference's
    layout, read from the run's shared judgment files."""
    run, meta, bench = open_run(rundir, out)
    formats = exporters()
    name = fmt or next(iter(formats))
    if name not in formats:
        raise ConfigError(f"unknown export format {name!r}; expected one of {', '.join(formats)}")
    if name not in meta.suites and not any(c in meta.conditions for c in suites_named(name)):
        raise ConfigError(f"{run.path} has no {name} condition (run.json conditions: {', '.join(meta.conditions)})")
    try:
        written = formats[name](suite_inputs(run.path, bench, judge), dest)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    for path in written.values():
        out.info(f"wrote {path}")


def suites_named(name: str) -> tuple[str, ...]:
    return next((x.conditions for x in suites() if x.name == name), ())


async def report_folder(rundir: Path, out: Output, judge: Optional[str] = None,
                        bootstrap: BootstrapChoice = BootstrapChoice()) -> None:
    """`carryon-eval report RUNDIR [--judge NAME]`: results.json, table.md, plots and report.html from its
    judgments (those of judge model NAME when several judged the run)."""
    run, meta, bench = open_run(rundir, out)
    results = report_phase(bench, run, out, judge, bootstrap)
    require_scored(results, run)
    require_complete(results, run)


__all__ = ["AnnotateConfig", "BootstrapChoice", "EvaluateConfig", "export_folder", "NothingScored", "Output", "RoleChoice", "RunOptions", "Session", "annotate_folder", "continue_rollout", "evaluate",
           "fidelity_folder", "judge_folder", "report_folder"]
