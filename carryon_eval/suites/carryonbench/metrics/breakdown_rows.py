"""CarryOnBench's breakdowns in results.json as records (breakdowns.py computes them): by turn, the turn-1 bins,
the user moves' effects and the domains. Each writes results.json's shape byte for byte and reads it back; a key an
older file lacks is ABSENT (carryon_eval.codec.absent). ``number(name)`` gives one of a cell's numbers as a Number
(its value, its bounds over the unscored judgments and the cell's n).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from carryon_eval.codec import Record, absent, decode, encode
from carryon_eval.metrics.number import Number
from carryon_eval.suites.carryonbench.metrics.condition import Interval, known

Shares = dict[str, Optional[float]]


class CellNumbers:
    """A breakdown cell's numbers: its fields named like them, their bounds and the cell's n."""

    def number(self, name: str) -> Number:
        return Number(known(getattr(self, name, None)), bounds=(known(getattr(self, "bounds", None)) or {}).get(name),
                      n=known(getattr(self, "n", None)))

    def scored_of(self, kind: str) -> Optional[float]:
        return (known(getattr(self, "scored", None)) or {}).get(kind)


@dataclass
class TurnRow(CellNumbers, Record):
    """``by_turn``: model turn t of a condition's conversations that reach it: turn-level and cumulative (up to t)
    utility and harm."""
    turn: int = absent()
    n: int = absent()
    utility: Optional[float] = absent()
    cumulative_utility: Optional[float] = absent()
    harm: Optional[float] = absent()
    cumulative_harm: Optional[float] = absent()
    bounds: dict[str, Interval] = absent()
    scored: Shares = absent()


@dataclass
class BinCell(CellNumbers, Record):
    """``turn1_bins``: one bin's conversations of one condition: their turn-1 and conversation utility and harm."""
    n: int = absent()
    turn1_utility: Optional[float] = absent()
    turn1_harm: Optional[float] = absent()
    utility: Optional[float] = absent()
    harm: Optional[float] = absent()
    bounds: dict[str, Interval] = absent()
    scored: Shares = absent()


@dataclass
class Unbinned(Record):
    n: int = absent()
    reason: str = absent()


@dataclass
class TurnBins:
    """Paper Figure 3: per bin (``hard_refusal``, ``partial``, ``high``) and condition a BinCell; the conversations
    left unbinned and why; on a rubric run the bins' ``labels``."""
    bins: dict[str, dict[str, BinCell]] = field(default_factory=dict)
    unbinned: Optional[Unbinned] = None
    labels: Optional[dict[str, str]] = None
    OWN = ("unbinned", "labels")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = encode(self.bins)
        if self.unbinned is not None:
            out["unbinned"] = self.unbinned.to_json()
        if self.labels is not None:
            out["labels"] = dict(self.labels)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "TurnBins":
        bins = {b: decode(dict[str, BinCell], cells) for b, cells in d.items() if b not in cls.OWN}
        return cls(bins, None if d.get("unbinned") is None else Unbinned.from_json(d["unbinned"]), d.get("labels"))

    def __bool__(self) -> bool:
        return bool(self.bins or self.unbinned)

    def label(self, name: str) -> Optional[str]:
        return (self.labels or {}).get(name)


@dataclass
class MoveEffect(CellNumbers, Record):
    """The mean turn utility and harm right after a user move (or a group of moves) and their deviation from the
    model's mean over all turns (``*_dev``) and over follow-up turns (``*_dev_followup``)."""
    group: str = absent()                    # a move's group (``moves`` only)
    utility: Optional[float] = absent()
    harm: Optional[float] = absent()
    n_turns: int = absent()
    utility_dev: Optional[float] = absent()
    harm_dev: Optional[float] = absent()
    utility_dev_followup: Optional[float] = absent()
    harm_dev_followup: Optional[float] = absent()


@dataclass
class ModelMean(Record):
    utility: Optional[float] = absent()
    harm: Optional[float] = absent()
    n_turns: int = absent()


@dataclass
class MovesByCondition:
    """The MC column: each move's effect under bc and under mc, on the same baseline."""
    baseline: str = ""
    conditions: dict[str, dict[str, MoveEffect]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"baseline": self.baseline, **encode(self.conditions)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "MovesByCondition":
        return cls(d.get("baseline") or "",
                   {c: decode(dict[str, MoveEffect], v) for c, v in d.items() if c != "baseline"})


@dataclass
class MoveEffects(Record):
    """Paper Figure 23: per user move and per group of moves its MoveEffect, against the model's means."""
    by_condition: MovesByCondition = absent()        # only with mc conversations
    baseline: str = absent()
    model_mean: ModelMean = absent()
    model_mean_followup: ModelMean = absent()
    moves: dict[str, MoveEffect] = absent()
    groups: dict[str, MoveEffect] = absent()

    def __bool__(self) -> bool:
        return bool(self.to_json())

    def moves_of(self) -> dict[str, MoveEffect]:
        return known(self.moves, {})


@dataclass
class DomainCell(CellNumbers, Record):
    """One condition's numbers in one domain (bc/nc: with their change from turn 1)."""
    n: int = absent()
    utility: Optional[float] = absent()
    harm: Optional[float] = absent()
    bounds: dict[str, Interval] = absent()
    scored: Shares = absent()
    utility_delta: Optional[float] = absent()
    harm_delta: Optional[float] = absent()


@dataclass
class DomainRow:
    """``by_domain``: one domain's queries and each condition's DomainCell."""
    n_queries: int = 0
    conditions: dict[str, DomainCell] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"n_queries": self.n_queries, **encode(self.conditions)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "DomainRow":
        return cls(d.get("n_queries") or 0, {c: DomainCell.from_json(v) for c, v in d.items() if c != "n_queries"})

    def cell(self, condition: str) -> DomainCell:
        return self.conditions.get(condition) or DomainCell()
