"""The suite registry: the registered suites, in registration order, and what the application layer asks of
them (the conditions of a run, its jobs, its scorers, its suites' own inputs).

Suites are found when ``suites()`` first runs: every wing of the ``carryon_eval.suites`` package (its ``suite.toml``,
its record as data, read without importing the wing: carryon_eval.suite.declared; else its ``record`` module, which
registers its suite on import), then every entry point of the group ``carryon_eval.suites`` (a module that registers
its suite on import, or a ``Suite``); ``register_suite`` adds one at any time. Their order (results.json's sections,
table.md, report.html) is their ``rank``, then their registration order.

A wing's record may be a light declaration whose hooks are named where they live (carryon_eval.suite.lazy): its
modules are imported when a hook is first called, or when its scorers or stages are asked for (``load_wings_of``,
``load_wings``). A run imports the wings it evaluates: the frame asks a suite only for the runs that have its
conditions or its section, and a suite's ``load`` reads nothing (imports nothing) without its inputs.
"""
from __future__ import annotations

import importlib
import os
import importlib.util
import pkgutil
from dataclasses import dataclass, field, replace
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Optional, Sequence

from carryon_eval.option import Option
from carryon_eval.run.folder import register_file
from carryon_eval.run.paths import local_path
from carryon_eval.run.results import use_section_types
from carryon_eval.suite.declared import DECLARATION, read_declaration
from carryon_eval.suite.inputs import RUN_FOLDER, InputsRecord, ReportInputs, SuiteOptions
from carryon_eval.suite.lazy import load_modules
from carryon_eval.suite.records import (Job, JudgeRole, PlanSettings, Probe, ScorerUse, Skipped, Suite, SuiteError,
                                        SuiteOption)

if TYPE_CHECKING:       # types only: this module sits below every layer
    from carryon_eval.dataset.load import Benchmark
    from carryon_eval.schema import Transcript

WINGS = "carryon_eval.suites"              # the package whose subpackages are the built-in suites
ENTRY_POINT_GROUP = "carryon_eval.suites"  # where an installed package names its suite
ALL = "all"             # --conditions all: every condition of every registered suite


_REGISTRY: dict[str, Suite] = {}
_loaded = False


def register_suite(suite: Suite) -> Suite:
    """Add a suite; its conditions must be new. Returns it (so a module can write ``X = register_suite(...)``)."""
    taken = {c: s.name for s in _REGISTRY.values() if s.name != suite.name for c in s.conditions}
    clash = [c for c in suite.conditions if c in taken]
    if clash or suite.conditions == () or ALL in suite.conditions:
        raise SuiteError(f"suite {suite.name!r}: condition(s) {clash or list(suite.conditions)} already taken "
                         f"or not allowed")
    for file in suite.files:
        try:
            register_file(replace(file, owner=f"suite {suite.name}"))
        except ValueError as e:
            raise SuiteError(str(e)) from None
    _REGISTRY[suite.name] = suite
    return suite


def unregister_suite(name: str) -> None:
    _REGISTRY.pop(name, None)


def discover() -> None:
    """Import every wing's ``record`` module and every entry point of ENTRY_POINT_GROUP (each registers its suite)."""
    for info in pkgutil.iter_modules(importlib.import_module(WINGS).__path__, f"{WINGS}."):
        if not info.ispkg:
            continue
        declared = Path(getattr(info.module_finder, "path", "")) / info.name.rpartition(".")[2] / DECLARATION
        if declared.is_file():          # its record as data: read, not imported (nor its package)
            suite = read_declaration(declared)
            if suite.name not in _REGISTRY:
                register_suite(suite)
        elif importlib.util.find_spec(f"{info.name}.record") is not None:
            importlib.import_module(f"{info.name}.record")
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            found = point.load()
        except Exception as e:          # a broken third-party suite: one line naming it
            raise SuiteError(f"suite entry point {point.name!r} ({point.value}) cannot be loaded: {e}") from None
        if isinstance(found, Suite) and found.name not in _REGISTRY:
            register_suite(found)


def suites() -> list[Suite]:
    """Every registered suite, by rank, then in registration order."""
    global _loaded
    if not _loaded:
        _loaded = True
        discover()
    return sorted(_REGISTRY.values(), key=lambda s: s.rank)


def section_types() -> dict[str, object]:
    """Each registered suite's section key -> its record type (SuiteReport.record; None: its JSON), what
    Results.from_json reads the sections back as."""
    return {s.report.section: s.report.record for s in suites() if s.report is not None}


use_section_types(section_types)


def load_wings_of(scorer: str) -> None:
    """Import the hooks of the suites whose uses name ``scorer`` (a wing's hooks register its scorers and stages);
    of every suite when none names it (a scorer a wing registers beside its uses)."""
    named = [s for s in suites() if scorer in s.scorers]
    for s in named or suites():
        load_modules(s)


def load_wings() -> None:
    """Import every suite's hooks (what a stage or scorer no suite's record names needs)."""
    for s in suites():
        load_modules(s)


def suite_options() -> list[SuiteOption]:
    """Every registered suite's command-line options."""
    return [o for s in suites() for o in s.options]


def judge_options() -> list[Option]:
    """Every registered suite's options of `carryon-eval` that set its judge settings (Suite.judge_options)."""
    return [o for s in suites() for o in s.judge_options]


def checks() -> list[Probe]:
    """Every registered suite's checks (Suite.checks): each asked for by its name."""
    return [c for s in suites() for c in s.checks]


def check_options() -> list[Option]:
    """The options of `carryon-eval` that ask for the suites' checks: ``--<name>``, a flag."""
    return [Option(f"--{c.name}", kind="flag", default=False, show_default=False, help=f"Also run {c.help}")
            for c in checks()]


def run_judge_options() -> list[Option]:
    """The same on `carryon-eval judge RUNDIR`, "the run's" as default (Suite.run_judge_options)."""
    return [o for s in suites() for o in s.run_judge_options]


def judge_roles() -> list[JudgeRole]:
    """Every registered suite's judge roles (Suite.judge_roles): the scorers that may have a judge of their own."""
    return [r for s in suites() for r in s.judge_roles]


def judge_role_of(scorer: str) -> Optional[JudgeRole]:
    """The judge role whose judge asks ``scorer``; None: the run's judge."""
    return next((r for r in judge_roles() if scorer in r.scorers), None)


def exporters() -> dict[str, Callable[[ReportInputs, Path], dict[str, Path]]]:
    """Export formats: the suites whose report writes their reference's files, by suite name."""
    return {s.name: s.report.export for s in suites() if s.report is not None and s.report.export is not None}


def all_conditions() -> tuple[str, ...]:
    return tuple(c for s in suites() for c in s.conditions)


def default_conditions() -> tuple[str, ...]:
    return tuple(c for s in suites() if s.default for c in s.conditions if c not in s.optional)


def suite_of(condition: str) -> Suite:
    for s in suites():
        if condition in s.conditions:
            return s
    raise SuiteError(f"unknown condition {condition!r}; expected some of {list(all_conditions())}")


def selected(conditions: Sequence[str]) -> list[Suite]:
    """The suites that ``conditions`` select, in registration order."""
    names = {suite_of(c).name for c in conditions}
    return [s for s in suites() if s.name in names]


def resolve_conditions(names: Sequence[str]) -> list[str]:
    """``all`` expanded, unknown names refused, registration order kept, duplicates dropped."""
    known = all_conditions()
    wanted = set(known) if ALL in names else set(names)
    unknown = sorted(wanted - set(known))
    if unknown:
        raise SuiteError(f"unknown condition(s) {unknown}; expected some of {list(known)} or {ALL!r}")
    return [c for c in known if c in wanted]


def refuse_missing(bench: "Benchmark", conditions: Sequence[str]) -> None:
    """SuiteError naming the first selected suite whose inputs the dataset lacks."""
    for s in selected(conditions):
        why = s.missing(bench)
        if why:
            raise SuiteError(f"--conditions {','.join(c for c in conditions if c in s.conditions)}: {why}")


def load_inputs(bench: "Benchmark", options: SuiteOptions, recorded: Optional[dict[str, InputsRecord]] = None, *,
                reopen: bool = False, base: Optional[str | os.PathLike] = None) -> dict[str, InputsRecord]:
    """Every suite's own inputs into ``bench.extras``; returns run.json's ``suites`` records of those loaded.
    ``recorded``: run.json's ``suites`` of a run already there (each suite refuses inputs changed since);
    ``reopen``: a folder reopened by a subcommand, each suite loading what its record names; ``base``: the run
    folder whose run.json holds the records (given to each ``load`` as ``options["run_folder"]``: a path its
    record names is written relative to it, carryon_eval.run.paths; a path read back from a record is resolved
    against it)."""
    out: dict[str, InputsRecord] = {}
    paths = {o.key for s in suites() for o in s.options if o.path}    # a suite may read another's folder option
    for s in suites():
        if s.load is None:
            continue
        earlier = (recorded or {}).get(s.name)
        if reopen and earlier is None:
            continue
        mine = {**options, **((earlier or {}).get("options") or {})} if reopen else dict(options)
        if base is not None:
            if reopen:          # a path the record names is relative to the run folder (an older one: absolute)
                mine.update({key: local_path(mine[key], base) for key in paths if isinstance(mine.get(key), str)})
            mine[RUN_FOLDER] = Path(base)
        record = s.load(bench, mine, earlier)
        if record is not None:
            out[s.name] = record
    return out


def without_inputs(conditions: Sequence[str]) -> list[str]:
    """``--conditions all`` before the inputs are read: the conditions of suites without inputs of their own."""
    return [c for c in conditions if suite_of(c).load is None]


def available(bench: "Benchmark", conditions: Sequence[str],
              loaded: Optional[Mapping[str, InputsRecord]] = None) -> list[str]:
    """``--conditions all`` once the inputs are read: ``conditions`` and those of every suite whose own inputs
    were given (registration order). ``loaded``: the records ``load_inputs`` returned (a suite not among them
    is not asked: its inputs were not given)."""
    def given(s: Suite) -> bool:
        return s.load is not None and (loaded is None or s.name in loaded) and s.missing(bench) is None

    return [c for c in all_conditions() if c in conditions or given(suite_of(c))]


def plan_jobs(bench: "Benchmark", conditions: Sequence[str],
              settings: PlanSettings = PlanSettings()) -> tuple[list[Job], list[Skipped]]:
    """Every selected suite's jobs and skipped conversations, suite by suite."""
    jobs: list[Job] = []
    skipped: list[Skipped] = []
    for s in selected(conditions):
        j, k = s.plan(bench, [c for c in conditions if c in s.conditions], settings)
        jobs += j
        skipped += k
    return jobs, skipped


def scorer_uses(conditions: Sequence[str]) -> dict[str, tuple[ScorerUse, ...]]:
    """condition -> the scorers that judge its replies."""
    return {c: suite_of(c).uses for c in conditions}


@dataclass
class ScoringPlan:
    """Which scorers judge which transcripts: what the judge phase and the cost table read from the suites."""
    uses: dict[str, tuple[ScorerUse, ...]] = field(default_factory=dict)    # condition -> uses

    @classmethod
    def of(cls, conditions: Sequence[str], swap: Optional[Mapping[str, str]] = None) -> "ScoringPlan":
        """The suites' uses; ``swap``: scorer -> the scorer that takes its place in this run."""
        uses = scorer_uses(conditions)
        if swap:
            uses = {c: tuple(replace(u, scorer=swap.get(u.scorer, u.scorer)) for u in us) for c, us in uses.items()}
        return cls(uses)

    @property
    def scorers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(u.scorer for uses in self.uses.values() for u in uses))

    def scorers_for(self, transcript: "Transcript") -> list[str]:
        return [u.scorer for u in self.uses.get(transcript.condition, ()) if u.judges(transcript)]
