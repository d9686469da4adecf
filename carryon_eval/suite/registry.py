"""The suite registry: the registered suites, in registration order, and what the application layer asks of
them (the conditions of a run, its jobs, its scorers, its suites' own inputs).

The built-in suites register themselves when ``suites()`` first runs (BUILTIN_SUITE_MODULES).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence

from carryon_eval.suite.records import Job, PlanSettings, ScorerUse, Skipped, Suite, SuiteError, SuiteOption

if TYPE_CHECKING:       # types only: this module sits below every layer
    from carryon_eval.dataset.load import Benchmark
    from carryon_eval.schema import Transcript

#: Modules whose suites register themselves on import, in this order (it is the order of results.json's
#: sections, table.md and report.html).
BUILTIN_SUITE_MODULES = ("carryon_eval.suites.carryonbench.record", "carryon_eval.suites.triplet.record",
                         "carryon_eval.suites.opensafeintent.record")
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
    _REGISTRY[suite.name] = suite
    return suite


def unregister_suite(name: str) -> None:
    _REGISTRY.pop(name, None)


def suites() -> list[Suite]:
    """Every registered suite, built-in ones first, in registration order."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in BUILTIN_SUITE_MODULES:
            importlib.import_module(module)
    return list(_REGISTRY.values())


def suite_options() -> list[SuiteOption]:
    """Every registered suite's command-line options."""
    return [o for s in suites() for o in s.options]


def exporters() -> dict[str, Callable[[Any, Any], dict[str, Any]]]:
    """Export formats: the suites whose report writes their reference's files, by suite name."""
    return {s.name: s.report.export for s in suites() if s.report is not None and s.report.export is not None}


def all_conditions() -> tuple[str, ...]:
    return tuple(c for s in suites() for c in s.conditions)


def default_conditions() -> tuple[str, ...]:
    return tuple(c for s in suites() if s.default for c in s.conditions)


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


def load_inputs(bench: "Benchmark", options: dict[str, Any], recorded: Optional[dict[str, Any]] = None, *,
                reopen: bool = False) -> dict[str, Any]:
    """Every suite's own inputs into ``bench.extras``; returns run.json's ``suites`` records of those loaded.
    ``recorded``: run.json's ``suites`` of a run already there (each suite refuses inputs changed since);
    ``reopen``: a folder reopened by a subcommand, each suite loading what its record names."""
    out: dict[str, Any] = {}
    for s in suites():
        if s.load is None:
            continue
        earlier = (recorded or {}).get(s.name)
        if reopen and earlier is None:
            continue
        mine = {**options, **((earlier or {}).get("options") or {})} if reopen else dict(options)
        record = s.load(bench, mine, earlier)
        if record is not None:
            out[s.name] = record
    return out


def without_inputs(conditions: Sequence[str]) -> list[str]:
    """``--conditions all`` before the inputs are read: the conditions of suites without inputs of their own."""
    return [c for c in conditions if suite_of(c).load is None]


def available(bench: "Benchmark", conditions: Sequence[str]) -> list[str]:
    """``--conditions all`` once the inputs are read: ``conditions`` and those of every suite whose own inputs
    were given (registration order)."""
    return [c for c in all_conditions() if c in conditions
            or (suite_of(c).load is not None and suite_of(c).missing(bench) is None)]


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
        """The suites' uses; ``swap``: scorer -> the scorer that takes its place in this run (e.g. the utility
        judge measured by a rubric instead of checklists: run.json's ``judge.utility``)."""
        uses = scorer_uses(conditions)
        if swap:
            uses = {c: tuple(replace(u, scorer=swap.get(u.scorer, u.scorer)) for u in us) for c, us in uses.items()}
        return cls(uses)

    @property
    def scorers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(u.scorer for uses in self.uses.values() for u in uses))

    def scorers_for(self, transcript: "Transcript") -> list[str]:
        return [u.scorer for u in self.uses.get(transcript.condition, ()) if u.judges(transcript)]
