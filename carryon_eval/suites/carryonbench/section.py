"""CarryOnBench's section of results.json as a record of records: the conditions' blocks, Recovery%, the
clarification effect, the breakdowns (metrics/condition.py, metrics/breakdown_rows.py), the run's power, the intent contrasts and
the rubric run's companion (metrics/power.py, metrics/intent.py, metrics/rubric_helpful.py), each a key of results.json's top level (the one
serializer, carryon_eval.run.results.Results, lifts it there). ``to_json`` writes results.json's shape byte for byte.

    section = of(results)                                 # a run's section (None: it has none)
    section.conditions["bc"].number("utility")            # a Number, with its interval, bounds and scored share
    section.recovery.number, section.power.rows()

``judges``: who judged its numbers (``SectionJudges``: its utility and safety judges, the grouped mode's calibration),
written by the serializer into results.json's ``judges`` beside the frame's own keys; ``extra``: any further key a
file has that this version does not know (kept as it was). ``results`` is the run's results it sits in (set when placed: its
renderers read the frame's model, dataset and judges beside it), never written. Built from dicts (an older caller,
a test), each part is read into its record.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

from carryon_eval.codec import Record, absent, decode, encode, field_types, omit_if
from carryon_eval.run.results import TOP_LEVEL_SECTION, Results
from carryon_eval.suite import Section
from carryon_eval.suites.carryonbench.metrics.calibration import Calibration
from carryon_eval.suites.carryonbench.metrics.breakdown_rows import DomainRow, MoveEffects, TurnBins, TurnRow
from carryon_eval.suites.carryonbench.metrics.condition import (BootstrapInfo, ClarificationEffect, ConditionBlock, Counts,
                                                        Recovery, Unscored)
from carryon_eval.suites.carryonbench.metrics.intent import IntentSection
from carryon_eval.suites.carryonbench.metrics.power import RunPower
from carryon_eval.suites.carryonbench.metrics.rubric_helpful import RubricHelpful

SECTION = TOP_LEVEL_SECTION
#: the fields that are not results.json keys of the section
_NOT_KEYS = ("extra", "results")
#: the further keys a section may have, each a section of results.json of its own
FURTHER = ("power", "intent", "rubric_helpful")


#: Ben-Util's modes (--utility-judge): the paper's, one call per item; and one call per reply for all its items
PER_ITEM, GROUPED = "per-item", "grouped"


class _Named:
    """The judge models and prompts of a kind of judgment (its ``models`` and ``prompt_refs``), as lists (empty where
    a file lacks them)."""

    def model_names(self) -> list[str]:
        return list(self.models or [])  # type: ignore[attr-defined]

    def prompt_names(self) -> list[str]:
        return list(self.prompt_refs or [])  # type: ignore[attr-defined]


@dataclass
class JudgeKind(_Named, Record):
    """Who judged one kind of judgment (results.json's ``judges.safety``): the judge models, their prompts
    (name@version#hash) and what the judge saw. A key an older file lacks is ABSENT (written back as no key)."""
    models: list[str] = absent()
    prompt_refs: list[str] = absent()
    context: str = absent()


@dataclass
class UtilityJudges(_Named, Record):
    """Who judged the utilities (results.json's ``judges.utility``): as JudgeKind, and the utility judge's answer
    form (``mode``: text or logprobs), Ben-Util's mode (``utility_judge``: PER_ITEM or GROUPED; absent before there
    was a choice: per-item), the replies judged by logprobs and, grouped, its calibration."""
    models: list[str] = absent()
    prompt_refs: list[str] = absent()
    mode: Optional[str] = absent()
    utility_judge: str = absent()
    context: str = absent()
    logprob_verdicts: int = absent()
    calibration: Calibration = absent()

    @property
    def ben_util_mode(self) -> str:
        """PER_ITEM or GROUPED (PER_ITEM where the file does not say)."""
        return self.utility_judge or PER_ITEM


@dataclass
class SectionJudges(Record):
    """The section's judges: who judged its utilities and its harm (results.json's ``judges.utility`` and
    ``judges.safety``, beside the frame's own keys); ``complete`` False when some of its replies lack a judgment
    (the frame's JudgesInfo.complete takes it when the section is placed; never written)."""
    utility: UtilityJudges = field(default_factory=UtilityJudges)
    safety: JudgeKind = field(default_factory=JudgeKind)
    complete: Optional[bool] = field(default=None, metadata=omit_if(lambda _: True))


@dataclass
class CarryOnBenchSection:
    n: Counts = field(default_factory=Counts)
    conditions: dict[str, ConditionBlock] = field(default_factory=dict)
    recovery: Recovery = field(default_factory=Recovery)
    #: BC minus NC utility on the same queries and lengths ({} in results.json written before it)
    clarification_effect: ClarificationEffect = field(default_factory=ClarificationEffect)
    unscored: Unscored = field(default_factory=Unscored)
    by_turn: dict[str, list[TurnRow]] = field(default_factory=dict)
    move_effects: MoveEffects = field(default_factory=MoveEffects)
    turn1_bins: TurnBins = field(default_factory=TurnBins)
    by_domain: dict[str, DomainRow] = field(default_factory=dict)
    bootstrap: BootstrapInfo = field(default_factory=BootstrapInfo)
    estimators: dict[str, str] = field(default_factory=dict)
    null_meaning: str = ""
    #: its judges: ``utility`` and ``safety`` (who judged, with which prompts, in which mode), and ``complete``:
    #: False when replies lack a judgment
    judges: SectionJudges = field(default_factory=SectionJudges)
    judge_context: dict[str, str] = field(default_factory=dict)
    #: what the utilities measure: "benutil" (Ben-Util's checklists) or "rubric" (OpenSafeIntent's 1-4 helpfulness
    #: rubric as (score - 1) / 3); two runs of different measures are never compared in one column
    utility_measure: str = "benutil"
    #: the run's own smallest detectable differences (results.json's ``power``)
    power: Optional[RunPower] = None
    #: mc's contrasts with bc (``intent``; None: the run has no mc conversation)
    intent: Optional[IntentSection] = None
    #: a rubric run's spacing-free companion (``rubric_helpful``; None: a Ben-Util run)
    rubric_helpful: Optional[RubricHelpful] = None
    #: further keys this version does not know, kept as they were
    extra: dict[str, Section] = field(default_factory=dict)
    results: Optional[Results] = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Parts given as JSON (an older caller, a test) are read into their records."""
        for name in FURTHER:
            if name in self.extra:
                setattr(self, name, self.extra.pop(name))
        hints = field_types(type(self))
        for f in dataclasses.fields(self):
            if f.name not in _NOT_KEYS:
                setattr(self, f.name, decode(hints[f.name], getattr(self, f.name)))

    def placed_in(self, results: Results) -> None:
        """Results.put_section's call: the run's results it sits in."""
        self.results = results

    def to_json(self) -> dict[str, Any]:
        out = {f.name: encode(getattr(self, f.name)) for f in dataclasses.fields(self) if f.name not in _NOT_KEYS}
        for name in FURTHER:
            if out[name] is None:
                del out[name]
        return {**out, **self.extra}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "CarryOnBenchSection":
        names = {f.name for f in dataclasses.fields(cls)} - set(_NOT_KEYS)
        return cls(**{k: v for k, v in d.items() if k in names},
                   extra={k: v for k, v in d.items() if k not in names and isinstance(v, dict)})

    def further(self, name: str) -> Optional[Section]:
        """A further key's JSON (``power``, ``intent``, ``rubric_helpful`` or one this version does not know)."""
        if name in FURTHER:
            value = getattr(self, name)
            return None if value is None else value.to_json()
        return self.extra.get(name)


def of(results: Results) -> Optional[CarryOnBenchSection]:
    """The run's CarryOnBench section (None: it has none)."""
    return results.section(SECTION)


def read(results: Results) -> CarryOnBenchSection:
    """The run's CarryOnBench section, or an empty one (a run without it reads as one whose numbers are missing)."""
    section = of(results)
    return section if section is not None else CarryOnBenchSection()


def extra(results: Results, name: str) -> Optional[Section]:
    """A further key of the run's CarryOnBench section as its JSON (None: the run has none of it). Deprecated: read
    the section's record (``of(results).power``, ``.intent``, ``.rubric_helpful``)."""
    section = of(results)
    return section.further(name) if section is not None else None
