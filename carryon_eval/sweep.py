"""`carryon-eval sweep PLAN.toml [--out DIR] [--dry-run]`: many target models under one fixed user simulator and
judge, side by side in one event loop, then one leaderboard over all of them.

    # PLAN.toml: the evaluate options as top-level keys (long options without dashes), shared by every run
    dataset = "org/carryonbench"
    user-endpoint = "https://sim.example/v1"
    user-model = "sim-model"
    judge-endpoint = "https://judge.example/v1"
    judge-model = "judge-model"
    concurrency = 16

    [[target]]                       # one table per target: name, endpoint, model and the target's own options
    name = "model-a"
    endpoint = "http://127.0.0.1:8000/v1"
    model = "org/model-a"
    target-temperature = 0.7

Each target runs into DIR/<name>/ (rerunning the same command resumes every run and pays nothing twice); its
run.json records the plan's hash and the target's place in it. A judge or simulator endpoint the targets share
(same base URL and model) has at most ``concurrency`` requests in flight over all the runs (one limiter,
app.session.Session's ``limits``). A target that fails does not stop the others; the exit code is the worst of
theirs. Then DIR/leaderboard.html and DIR/leaderboard.jsonl over every run that has a report.

The keys are read through the evaluate options' one table (carryon_eval.app.options.EVALUATE) and checked by the
Python API's reader (carryon_eval.api.evaluate_config); which of them only a target may set is ``target_only``.
"""
from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from carryon_eval.api import evaluate_config
from carryon_eval.app import commands
from carryon_eval.app import options
from carryon_eval.app.config import ConfigError, EvaluateConfig, KeyMissing, Output, resolve_judges, resolve_roles
from carryon_eval.app.phases import NothingScored, RunIncomplete
from carryon_eval.app.reports import ReportWorker
from carryon_eval.cli_common import os_error_line
from carryon_eval.model.pool import EndpointGone, RoleFailed
from carryon_eval.report.compare import OUT_FILES
from carryon_eval.option import Option
from carryon_eval.run.records import SweepRef

TARGET_TABLE = "target"
#: the sweep's own settings: never in a plan (the command line gives them)
SET_BY_SWEEP = {"out": "the sweep puts each run in DIR/<name> (give --out DIR)", "dry_run": "give --dry-run",
                "dry_run_json": "give --dry-run --json"}
#: plan keys that are no evaluate option
PLAN_ONLY = {"paper_rows": "Also show the paper's reported Table 2 rows beside the runs on the leaderboard "
                           "(a group of their own, never ranked with the measured runs)."}
ROLE_OF_KEY = {"user_model": "user simulator", "judge_model": "judge"}
MAX_NAME = 100          # a target's name: its run folder's (a file name takes 255 bytes; its row's label)


class PlanError(Exception):
    """A plan that cannot run: one line naming the file and the key (the command line's error, exit 2)."""


def target_only(option: Option) -> bool:
    """Whether only a ``[[target]]`` table may set the option: the target's endpoint, model, key and request
    options (``--target-*``, and their old spellings)."""
    return option.name in options.role_names("target") or option.name.startswith("target_")


def _plan_options() -> dict[str, Option]:
    """keyword -> option, of every evaluate option a plan may name (at the top or in a target)."""
    return {kw: o for kw, o in options.BY_KEYWORD.items() if o.name not in SET_BY_SWEEP and not (
        o.hidden and o.alias_of is None)}


def _suite_keys() -> dict[str, str]:
    from carryon_eval.suite import suite_options

    return {o.key: o.help for o in suite_options()}


def key_name(keyword: str) -> str:
    return keyword.replace("_", "-")


# ---------------------------------------------------------------- the plan
@dataclass(frozen=True)
class Target:
    name: str
    index: int
    config: EvaluateConfig


@dataclass(frozen=True)
class Plan:
    path: Path
    sha256: str
    out: Path
    targets: tuple[Target, ...]
    paper_rows: bool = False


def _load_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the project supports 3.10 through tomli
        import tomli as tomllib
    try:
        return tomllib.loads(path.read_text(encoding="utf-8-sig"))     # a byte-order mark (Windows editors) is no key
    except OSError as exc:
        raise PlanError(f"{path}: cannot read the plan ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise PlanError(f"{path}: not a TOML file ({exc})") from None


def plan_hash(plan: dict[str, Any]) -> str:
    """sha256 of the plan's content (its keys and values, not its comments or layout)."""
    return hashlib.sha256(json.dumps(plan, sort_keys=True, default=str).encode()).hexdigest()


def _keywords(table: dict[str, Any], where: str, *, top: bool) -> dict[str, Any]:
    """The keys of one table as the Python API's keywords; PlanError for a key not allowed there."""
    known, suites = _plan_options(), _suite_keys()
    out: dict[str, Any] = {}
    for key, value in table.items():
        kw = key.replace("-", "_")
        every = options.BY_KEYWORD.get(kw)
        if every is not None and every.name in SET_BY_SWEEP:
            raise PlanError(f"{where}key '{key}' is set by the sweep, not in a plan: {SET_BY_SWEEP[every.name]}")
        option = known.get(kw)
        if option is None and kw not in suites and kw not in PLAN_ONLY:
            raise PlanError(f"{where}unknown key '{key}'; `carryon-eval sweep --help` lists the keys")
        own = option is not None and target_only(option)      # suite and plan-only keys are shared
        if top and own:
            raise PlanError(f"{where}key '{key}' is a target's own: set it in each [[target]] table")
        if not top and not own:
            raise PlanError(f"{where}key '{key}' is shared by every run of the plan: set it at the top of the plan, "
                            "before the [[target]] tables")
        out[kw] = value
    return out


def _names_roles(shared: dict[str, Any], where: str) -> None:
    """A sweep is the tool for comparable numbers: its simulator and judge are named, the same for every run."""
    missing = [kw for kw in ROLE_OF_KEY if not shared.get(kw) and shared.get(kw.replace("model", "endpoint")) != "local"]
    if missing:
        raise PlanError(f"{where}names no {' and no '.join(ROLE_OF_KEY[k] for k in missing)} "
                        f"({', '.join(key_name(k) for k in missing)}): a sweep compares its targets under one fixed "
                        "user simulator and judge; set them at the top of the plan")


def _target_config(shared: dict[str, Any], table: Any, index: int, where: str, out: Path,
                   seen: set[str]) -> Target:
    if not isinstance(table, dict):
        raise PlanError(f"{where}[[target]] number {index + 1} is not a table")
    name = table.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise PlanError(f"{where}[[target]] number {index + 1}: key 'name' is missing or not a folder name "
                        f"(letters, digits, '.', '_', '-'), got {name!r}")
    if len(name) > MAX_NAME:
        raise PlanError(f"{where}[[target]] number {index + 1}: key 'name' is {len(name)} characters long; a run "
                        f"folder's name takes at most {MAX_NAME}")
    if name.casefold() in {f.casefold() for f in OUT_FILES}:
        raise PlanError(f"{where}[[target]] number {index + 1}: key 'name' {name!r} is a file the sweep's "
                        f"leaderboard writes beside the run folders ({', '.join(OUT_FILES)}); choose another name")
    if name in seen:
        raise PlanError(f"{where}key 'name': two targets are named {name!r}; each needs a name of its own")
    seen.add(name)
    here = f"{where}target {name!r}: "
    own = _keywords({k: v for k, v in table.items() if k != "name"}, here, top=False)
    if not own.get("endpoint"):
        raise PlanError(f"{here}key 'endpoint' is missing (the target's base URL, or 'local')")
    if not own.get("model") and own.get("endpoint") != "local":
        raise PlanError(f"{here}key 'model' is missing (the target's model name at {own['endpoint']})")
    try:
        cfg = evaluate_config(**shared, **own, out=out / name)
        roles, local = resolve_roles(cfg)      # a role without a model, a key variable not set: before anything runs
        resolve_judges(cfg.judges, roles, local, cfg.judge_temperature)
    except KeyMissing as exc:               # a simulator's or judge's key: the plan's, named as its key
        raise PlanError(f"{here}key '{key_name(exc.keyword)}' is missing at the top of the plan: {exc.reason}") \
            from None
    except ConfigError as exc:
        raise _naming_key(str(exc), here) from None
    return Target(name, index, cfg)


def _naming_key(text: str, here: str) -> PlanError:
    """A ConfigError of the Python API's reader ("keyword: what is wrong") as the plan's one line naming its key."""
    kw = text.split(":", 1)[0]
    return PlanError(here + (f"key '{key_name(kw)}':{text.split(':', 1)[1]}" if kw in _plan_options()
                             or kw in _suite_keys() else text))


def _check_shared(shared: dict[str, Any], where: str) -> None:
    """The values every run shares, checked once before any target starts: a bad one is the plan's, named by its
    key (not blamed on a target, nor failed once per target)."""
    from carryon_eval.app.cost import parse_prices

    try:
        cfg = evaluate_config(**shared)
    except ConfigError as exc:
        raise _naming_key(str(exc), where) from None
    try:
        parse_prices(cfg.prices)
    except ValueError as exc:
        raise PlanError(f"{where}key 'price': {str(exc).removeprefix('--price ')}") from None


def read_plan(path: Path, out: Optional[Path] = None) -> Plan:
    """The plan file as one EvaluateConfig per target (run folder OUT/<name>; default: carryon-runs/<plan
    name>); PlanError (one line naming the key) for a plan that cannot run."""
    path = Path(path)
    raw = _load_toml(path)
    where = f"{path}: "
    targets = raw.get(TARGET_TABLE)
    if not isinstance(targets, list) or not targets:
        raise PlanError(f"{where}no [[target]] table: a plan names its targets in [[target]] tables (name, "
                        "endpoint, model)")
    shared = _keywords({k: v for k, v in raw.items() if k != TARGET_TABLE}, where, top=True)
    paper_rows = shared.pop("paper_rows", False)
    if not isinstance(paper_rows, bool):
        raise PlanError(f"{where}key 'paper-rows': expected true or false, got {paper_rows!r}")
    _names_roles(shared, where)
    _check_shared(shared, where)
    out = Path(out) if out is not None else Path("carryon-runs") / f"sweep-{path.stem}"
    digest = plan_hash(raw)
    seen: set[str] = set()
    made = [_target_config(shared, t, i, where, out, seen) for i, t in enumerate(targets)]
    made = [dataclasses.replace(t, config=dataclasses.replace(t.config, sweep=SweepRef(
        path.name, digest, len(made), t.name, t.index))) for t in made]
    return Plan(path, digest, out, tuple(made), paper_rows)


def check_dataset(plan: Plan) -> None:
    """The plan's one dataset, read once before any target starts (PlanError naming the key): a missing or broken
    dataset is the plan's, not failed once per target."""
    from carryon_eval.app.config import load_bench
    from carryon_eval.dataset.load import DatasetError

    cfg = plan.targets[0].config
    try:
        load_bench(cfg.dataset, cfg.revision, cfg.limit, cfg.subset)
    except (DatasetError, ConfigError) as exc:
        raise PlanError(f"{plan.path}: key 'dataset': {exc}") from None


# ---------------------------------------------------------------- running it
class Prefixed:
    """app.Output of one target: its lines, prefixed with its name."""

    def __init__(self, out: Output, name: str) -> None:
        self.out, self.prefix = out, f"[{name}] "

    def info(self, text: str) -> None:
        self.out.info(self.prefix + text)

    def note(self, text: str) -> None:
        self.out.note(self.prefix + text)


class Captured:
    """app.Output that keeps the info lines (a dry run's JSON table) and drops the notes (said already)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, text: str) -> None:
        self.lines.append(text)

    def note(self, text: str) -> None:
        pass


@dataclass(frozen=True)
class Outcome:
    name: str
    code: int               # the exit code the run alone would have had (0: finished)
    message: str = ""


def outcome_of(name: str, exc: Optional[BaseException]) -> Outcome:
    """A run's exit code as `carryon-eval` alone would end: 3 nothing scored, 4 stopped before the end, 2 bad
    input or an endpoint error; an exception of no package module is a bug and goes on."""
    if exc is None:
        return Outcome(name, 0)
    if isinstance(exc, NothingScored):
        return Outcome(name, 3, str(exc))
    if isinstance(exc, (RunIncomplete, EndpointGone, RoleFailed)):
        return Outcome(name, 4, str(exc))
    if isinstance(exc, Exception) and type(exc).__module__.startswith("carryon_eval."):
        return Outcome(name, 2, str(exc))
    if isinstance(exc, OSError):          # a full disk, a file-size limit: the run's one line, as alone
        return Outcome(name, 2, os_error_line(exc))
    raise exc


async def run_plan(plan: Plan, out: Output, ended: Optional[dict[str, Outcome]] = None) -> list[Outcome]:
    """Every target's run side by side in this event loop, sharing one limiter per (endpoint URL, model), whose
    waiting requests go by the runs' order in the plan (so the runs end one after another); each run's report is
    written in a worker process (app.reports), never on this loop, while the later runs go on calling.
    ``ended``: filled with each run's outcome as it ends (what a sweep stopped half-way has finished)."""
    limits: dict[tuple[str, ...], Any] = {}
    ended = {} if ended is None else ended
    reports = ReportWorker().start()

    async def one(target: Target) -> Outcome:
        try:
            await commands.evaluate(target.config, Prefixed(out, target.name), limits, reports)
        except Exception as exc:               # one target's failure is its own; the others go on
            made = outcome_of(target.name, exc)
        else:
            made = Outcome(target.name, 0)
        if not ended and len(plan.targets) > 1:
            warm_leaderboard()
        ended[target.name] = made
        return made

    try:
        done = list(await asyncio.gather(*(one(t) for t in plan.targets)))
    except BaseException:
        reports.close(stop=True)
        raise
    reports.close()
    return done


def warm_leaderboard() -> threading.Thread:
    """Import what the sweep's leaderboard imports on first use (its pictures' matplotlib; the mixed models'
    statsmodels and pandas, where installed) in a thread, once the first run has ended and while the others still
    call: seconds of imports that would otherwise come after the sweep's last call."""
    def warm() -> None:
        from carryon_eval.metrics.stats import MIXED_MODELS_PACKAGES, missing_packages
        from carryon_eval.report.plots import PlotsUnavailable, figure

        if not missing_packages(MIXED_MODELS_PACKAGES):
            import statsmodels.formula.api  # noqa: F401
        try:
            figure()
        except PlotsUnavailable:
            pass

    thread = threading.Thread(target=warm, name="warm-leaderboard", daemon=True)
    thread.start()
    return thread


def stopped_line(plan: Plan, ended: dict[str, Outcome], why: str) -> str:
    """The one line of a sweep stopped by a signal: which runs had finished; every other one resumes."""
    done = [t.name for t in plan.targets if t.name in ended and not ended[t.name].code]
    rest = [t.name for t in plan.targets if t.name not in done]
    return (f"carryon-eval: sweep stopped ({why}): {len(done)} of {len(plan.targets)} runs finished"
            + (f" ({', '.join(done)})" if done else "") + f"; rerun the same command to resume {', '.join(rest)}")


ROLES = ("target", "user", "judge")
COUNTS = ("calls", "cached", "prompt_tokens", "completion_tokens")


async def dry_run(plan: Plan, out: Output, as_json: bool = False) -> dict[str, dict[str, int]]:
    """Print each target's cost table, then the whole plan's; returns the plan's totals per role. ``as_json``: one
    JSON object instead (``targets``: each target's table, ``plan``: the totals per role and the cost, ``power``:
    each target's power table, what its design can resolve)."""
    total = {role: dict.fromkeys(COUNTS, 0) for role in ROLES}
    usd: dict[str, float] = {}
    tables: dict[str, Any] = {}
    for target in plan.targets:
        if not as_json:
            out.info(f"== target {target.name} ({target.config.target.model or 'embedded model'}) ==")
            await commands.evaluate(dataclasses.replace(target.config, dry_run=True), out)
        table = Captured()
        await commands.evaluate(dataclasses.replace(target.config, dry_run=True, dry_run_json=True), table)
        data = tables[target.name] = json.loads(table.lines[-1])
        for role, rows in data["roles"].items():
            for count in COUNTS:
                total[role][count] += int(rows["all"][count])
        for role, cost in (data.get("usd") or {}).items():
            usd[role] = usd.get(role, 0.0) + float(cost)
    if as_json:
        out.info(json.dumps({"targets": tables, "plan": {"roles": total, **({"usd": usd} if usd else {})},
                             "power": {name: t.get("power") for name, t in tables.items()}}))
        return total
    out.info(f"== whole plan ({len(plan.targets)} targets) ==")
    out.info(f"{'role':<7} {'scope':<14} {'calls':>10} {'cached':>8} {'prompt tok':>13} {'compl. tok':>13}"
             + (f" {'USD':>10}" if usd else ""))
    for role, row in [*total.items(), ("all", {c: sum(r[c] for r in total.values()) for c in COUNTS})]:
        cost = sum(usd.values()) if role == "all" else usd.get(role)
        out.info(f"{role:<7} {'plan':<14} {row['calls']:>10,} {row['cached']:>8,} {row['prompt_tokens']:>13,} "
                 f"{row['completion_tokens']:>13,}" + (f" {cost:>10,.2f}" if usd and cost is not None else ""))
    return total


def summary(outcomes: Sequence[Outcome]) -> tuple[list[str], int]:
    """The sweep's last lines and its exit code (the worst of its runs')."""
    failed = [o for o in outcomes if o.code]
    done = [o.name for o in outcomes if not o.code]
    lines = [f"sweep: {len(done)} of {len(outcomes)} runs finished" + (f": {', '.join(done)}" if done else "")]
    lines += [f"sweep: {o.name} FAILED (exit {o.code}): {o.message}" for o in failed]
    if failed:
        lines.append(f"sweep: failed: {', '.join(o.name for o in failed)}; rerun the same command to resume them")
    return lines, max((o.code for o in failed), default=0)


def finished_runs(plan: Plan) -> list[Path]:
    """The run folders of the plan that have a report (results.json and its conversation rows)."""
    from carryon_eval.run.folder import RunFolder

    folders = [plan.out / t.name for t in plan.targets]
    return [f for f in folders if RunFolder(f).results_file.is_file() and RunFolder(f).scores_file.is_file()]


def keys_help(width: int = 24) -> str:
    """The plan's keys for `carryon-eval sweep --help`: the shared ones, then a target's, from the option table."""
    def line(key: str, text: str) -> str:
        first = re.split(r"(?<!e\.g)\. | \[default", text)[0].rstrip(".")
        return f"  {key:<{width}} {first if len(first) <= 90 else first[:89] + '…'}"

    known = _plan_options()
    shared = [line(key_name(kw), o.help) for kw, o in known.items() if not target_only(o) and o.alias_of is None]
    shared += [line(key_name(k), h) for k, h in _suite_keys().items()]
    shared += [line(key_name(k), h) for k, h in PLAN_ONLY.items()]
    own = [line("name", "The target's name: its run folder DIR/<name> and its row on the leaderboard (required)")]
    own += [line(key_name(kw), o.help) for kw, o in known.items() if target_only(o) and o.alias_of is None]
    return "\n".join(["\b", "Plan keys, at the top of the plan (shared by every run; user-model and judge-model "
                      "are required):", *shared, "", "\b", "Keys of each [[target]] table (name, endpoint and "
                      "model are required):", *own])


Echo = Callable[[str], None]
