"""CarryOnBench's section of results.json as a record: the conditions' numbers and breakdowns, the judges' part of
``judges``, and its further keys (``extra``: the run's power, the intent contrasts, the rubric run's companion),
each a key of results.json's top level (the one serializer, carryon_eval.run.results.Results, lifts it there).

    section = CarryOnBenchSection.from_json(summary)      # summarize_run's work
    section.conditions["bc"], section.extra.get("power")
    of(results)                                           # a run's section (None: it has none)

Its parts stay in the summary's shapes (a condition's block, Recovery%, the breakdowns); ``results`` is the run's
results it sits in (set when placed: its renderers read the frame's model, dataset and judges beside it), never
written.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from carryon_eval.run.results import TOP_LEVEL_SECTION
from carryon_eval.suite import Section

if TYPE_CHECKING:       # types only
    from carryon_eval.run.results import Results

SECTION = TOP_LEVEL_SECTION


@dataclass
class CarryOnBenchSection:
    n: Section = field(default_factory=dict)
    conditions: Section = field(default_factory=dict)
    recovery: Section = field(default_factory=dict)
    #: BC minus NC utility on the same queries and lengths ({} in results.json written before it)
    clarification_effect: Section = field(default_factory=dict)
    unscored: Section = field(default_factory=dict)
    by_turn: Section = field(default_factory=dict)
    move_effects: Section = field(default_factory=dict)
    turn1_bins: Section = field(default_factory=dict)
    by_domain: Section = field(default_factory=dict)
    bootstrap: Section = field(default_factory=dict)
    estimators: Section = field(default_factory=dict)
    null_meaning: str = ""
    #: its judges: ``utility`` and ``safety`` (who judged, with which prompts, in which mode), and ``complete``:
    #: False when replies lack a judgment
    judges: Section = field(default_factory=dict)
    judge_context: dict[str, str] = field(default_factory=dict)
    #: what the utilities measure: "benutil" (Ben-Util's checklists) or "rubric" (OpenSafeIntent's 1-4 helpfulness
    #: rubric as (score - 1) / 3); two runs of different measures are never compared in one column
    utility_measure: str = "benutil"
    #: its further keys, each a section of results.json of its own ("power", "intent", "rubric_helpful")
    extra: dict[str, Section] = field(default_factory=dict)
    results: Optional["Results"] = field(default=None, repr=False, compare=False)

    def placed_in(self, results: "Results") -> None:
        """Results.put_section's call: the run's results it sits in."""
        self.results = results

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("extra", "results")}
        return {**out, **self.extra}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "CarryOnBenchSection":
        names = {f.name for f in dataclasses.fields(cls)} - {"extra", "results"}
        return cls(**{k: v for k, v in d.items() if k in names},
                   extra={k: v for k, v in d.items() if k not in names and isinstance(v, dict)})


def of(results: "Results") -> Optional[CarryOnBenchSection]:
    """The run's CarryOnBench section (None: it has none)."""
    return results.section(SECTION)


def extra(results: "Results", name: str) -> Optional[Section]:
    """A further key of the run's CarryOnBench section (None: the run has none of it)."""
    section = of(results)
    return section.extra.get(name) if section is not None else None
