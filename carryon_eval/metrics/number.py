"""A number is a record (HELM's Stat, inspect's EvalMetric): its value, its 95% interval, its bounds over every
reading of the unscored judgments, the scored share it stands on, how many units it counts, and why it is missing.

    n = Number(61.3, ci95=[55.0, 67.1], bounds=[58.2, 64.0], scored_share=97.5, n=410)
    Number(reason="condition not run")                  # n/a, and why

This module is the one home of a number's keys: a record whose JSON holds a number among keys of its own (Recovery%,
a contrast, a leaderboard cell) names its fields like Number's and gets ``number`` (``HasNumber``), the view the
report reads; the tables of numbers keyed by name (a condition's block, a breakdown's cell) read and write their
keys here (``MetricBlock``, ``BreakdownCell``). Reports format a Number in one way (carryon_eval.report.blocks).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from carryon_eval.codec import OMIT_NONE, Record

SCORED_MIN = 95.0                # a number whose scored share is under this is marked (table.md, report.html)
Interval = Optional[list[float]]


@dataclass(frozen=True)
class Number(Record):
    """One number and what it stands on; ``value`` None: n/a, ``reason`` says why. Its JSON: ``value``, then each
    other key that is set."""
    value: Optional[float] = None
    ci95: Interval = field(default=None, metadata=OMIT_NONE)           # the 95% interval
    bounds: Interval = field(default=None, metadata=OMIT_NONE)         # over every reading of the unscored judgments
    scored_share: Optional[float] = field(default=None, metadata=OMIT_NONE)    # % of its judgments scored
    n: Optional[int] = field(default=None, metadata=OMIT_NONE)         # the units it counts
    reason: Optional[str] = field(default=None, metadata=OMIT_NONE)    # why value is None

    @property
    def under_95(self) -> bool:
        """Whether it stands on fewer than SCORED_MIN% scored judgments (marked in every table)."""
        return self.value is not None and self.scored_share is not None and self.scored_share < SCORED_MIN

    def minus(self, other: "Number") -> "Number":
        """This number less another, without interval (a difference's interval needs the joint bootstrap)."""
        if self.value is None or other.value is None:
            return Number(reason=self.reason or other.reason)
        return Number(self.value - other.value)


NUMBER_FIELDS = tuple(f.name for f in dataclasses.fields(Number))


class HasNumber:
    """A record whose JSON layout holds a number's keys among keys of its own: its fields named like Number's are
    the number (``number``); what it has beside them is its own."""

    @property
    def number(self) -> Number:
        return Number(**{name: getattr(self, name) for name in NUMBER_FIELDS if hasattr(self, name)})


# ---------------------------------------------------------------- numbers keyed by name
VALUE, INTERVAL, REASONS, BOUNDS, BOUNDS_REASONS = "value", "ci95", "reasons", "bounds", "bounds_reasons"
SCORED, SCORED_SHARE, SIZE = "scored", "scored_share", "n"
REASON = "reason"               # a number's own "why it is missing", where a record writes it beside its keys


@dataclass
class MetricBlock:
    """Named numbers with their 95% CIs, why each null is null and (where the section has them) their
    bounds: the block every metric section of results.json shares (a condition of the headline, the
    triplet headline and its parts). ``to_json`` gives results.json's shape: the numbers by name, then
    "ci95", "reasons" and, when set, "bounds" and "bounds_reasons". ``number(name)`` is one of them as a Number
    (``shares``: the scored shares, when the block's section has them)."""
    values: dict[str, Optional[float]]
    ci95: dict[str, Interval]
    reasons: dict[str, str]
    bounds: Optional[dict[str, Interval]] = None
    bounds_reasons: Optional[dict[str, str]] = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.values, INTERVAL: dict(self.ci95), REASONS: dict(self.reasons)}
        if self.bounds is not None:
            out[BOUNDS] = dict(self.bounds)
        if self.bounds_reasons is not None:
            out[BOUNDS_REASONS] = dict(self.bounds_reasons)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "MetricBlock":
        """The block of a JSON object that holds it (and maybe more keys): its names are those its intervals name."""
        ci = dict(d.get(INTERVAL) or {})
        return cls({name: d.get(name) for name in ci}, ci, dict(d.get(REASONS) or {}),
                   None if d.get(BOUNDS) is None else dict(d[BOUNDS]),
                   None if d.get(BOUNDS_REASONS) is None else dict(d[BOUNDS_REASONS]))

    @property
    def names(self) -> list[str]:
        return list(self.values)

    def withhold(self, name: str, reason: str) -> None:
        """Report ``name`` as n/a: no value, interval or bounds, and why."""
        self.values[name], self.ci95[name], self.reasons[name] = None, None, reason
        if self.bounds is not None:
            self.bounds[name] = None

    def number(self, name: str, shares: Optional[Mapping[str, Optional[float]]] = None,
               n: Optional[int] = None) -> Number:
        return Number(self.values.get(name), self.ci95.get(name), (self.bounds or {}).get(name),
                      (shares or {}).get(name), n, self.reasons.get(name))


@dataclass
class BreakdownCell:
    """One cell of a breakdown (a turn, a bin, a domain): its numbers, their bounds and the scored shares."""
    n: int
    values: dict[str, Optional[float]]
    bounds: dict[str, Interval] = field(default_factory=dict)
    scored: dict[str, Optional[float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {SIZE: self.n, **self.values, BOUNDS: dict(self.bounds), SCORED: dict(self.scored)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "BreakdownCell":
        own = (SIZE, BOUNDS, SCORED)
        return cls(d.get(SIZE) or 0, {k: v for k, v in d.items() if k not in own}, dict(d.get(BOUNDS) or {}),
                   dict(d.get(SCORED) or {}))

    def number(self, name: str) -> Number:
        return Number(self.values.get(name), bounds=self.bounds.get(name), n=self.n)
