"""CarryOnBench's headline records in results.json: a condition's block (its numbers, what they stand on, its
truncation, sensitivity and redundancy detail), Recovery%, the clarification effect, the run's counts and its
unscored judgments. Each writes results.json's shape byte for byte (``to_json``) and reads it back (``from_json``);
a key an older file lacks is ABSENT (carryon_eval.codec.absent) and written back as no key.

    block = ConditionBlock.from_json(results_json["conditions"]["bc"])
    block.number("utility")          # a Number: value, ci95, bounds, scored share, reason
    Recovery.from_json(results_json["recovery"]).number
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from carryon_eval.codec import ABSENT, Record, absent, fields_json, fields_of, json_keys, present
from carryon_eval.metrics.number import (BOUNDS, BOUNDS_REASONS, INTERVAL, NUMBER_FIELDS, REASONS, MetricBlock,
                                         Number)

PCT = 100.0
#: the keys of a condition's block that are its MetricBlock's, not numbers
METRIC_KEYS = (INTERVAL, REASONS, BOUNDS, BOUNDS_REASONS)
Interval = Optional[list[float]]


def known(x: Any, default: Any = None) -> Any:
    """A field's value, ``default`` where the file lacked its key (ABSENT)."""
    return default if x is ABSENT else x


class NumberView:
    """HasNumber for records whose keys a file may lack: the fields named like Number's, ABSENT read as None."""

    @property
    def number(self) -> Number:
        return Number(**{name: known(getattr(self, name)) for name in NUMBER_FIELDS if hasattr(self, name)})


@dataclass
class Truncation(Record):
    """Target replies that stopped on length (finish_reason "length": cut at max_tokens)."""
    replies: int = 0
    with_finish_reason: int = 0
    length: int = 0

    @property
    def share(self) -> Optional[float]:
        return PCT * self.length / self.with_finish_reason if self.with_finish_reason else None

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "share": self.share}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Truncation":
        """The counts; ``share`` is theirs (computed again, never read)."""
        return fields_of(cls, d)


@dataclass
class PooledDraw(Record):
    """The harm numbers with every unscored turn read as a draw from the condition's scored turn harms."""
    reading: str = absent()
    harm: Optional[float] = absent()
    violation_rate: Optional[float] = absent()
    harm5_rate: Optional[float] = absent()


@dataclass
class Sensitivity(Record):
    pooled_draw: PooledDraw = absent()


@dataclass
class RedundancyTurn(Record):
    """Redundancy at one model turn (>= 2); ``message``: its position counting both sides."""
    turn: int = absent()
    message: int = absent()
    redundancy: Optional[float] = absent()
    n: int = absent()


@dataclass
class RedundancyLength(Record):
    """Redundancy of whole conversations of one length (model turns; ``messages``: both sides)."""
    model_turns: int = absent()
    messages: int = absent()
    n: int = absent()
    redundancy: Optional[float] = absent()
    redundancy_pooled: Optional[float] = absent()


@dataclass
class ConditionBlock(Record):
    """One condition's block of ``conditions``: its numbers by name (``metrics``: values, 95% intervals, reasons,
    bounds) followed by what they stand on. ``number(name)`` is one of them with its scored share."""
    metrics: MetricBlock = field(default_factory=lambda: MetricBlock({}, {}, {}))
    n_conversations: int = absent()
    n_unplayed: int = absent()              # only where some planned conversation was not played
    n_queries: int = absent()
    n_turns: int = absent()
    scored: dict[str, Optional[float]] = absent()           # utility_items / safety_turns: % scored
    plan_covered: dict[str, Optional[float]] = absent()
    clipped: dict[str, float] = absent()
    plan_lengths: dict[str, float] = absent()                # only with a plan
    sensitivity: Sensitivity = absent()
    truncated: Truncation = absent()
    redundancy_aggregation: str = absent()                   # the multi-turn conditions only
    redundancy_pooled: Optional[float] = absent()
    redundancy_by_turn: list[RedundancyTurn] = absent()
    redundancy_by_length: list[RedundancyLength] = absent()
    scored_share: dict[str, Optional[float]] = absent()      # per number: the scored share it stands on
    under_95: list[str] = absent()                           # the numbers standing on < 95% scored

    #: read from a block without intervals (a hand-made one): written back without "ci95" and "reasons" too
    _bare: bool = field(default=False, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        own = fields_json(self)
        del own["metrics"]
        numbers = dict(self.metrics.values) if self._bare else self.metrics.to_json()
        return {**numbers, **own}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "ConditionBlock":
        """Its numbers: the keys its intervals name, and any other key of a number (a hand-made block's)."""
        own = set(json_keys(cls)) | set(METRIC_KEYS)
        block = fields_of(cls, {k: v for k, v in d.items() if k != "metrics"})
        metrics = MetricBlock.from_json(d)
        metrics.values = {k: v for k, v in d.items() if k in metrics.ci95 or
                          (k not in own and (v is None or isinstance(v, (int, float))))}
        block.metrics, block._bare = metrics, INTERVAL not in d and REASONS not in d
        return block

    @property
    def names(self) -> list[str]:
        return self.metrics.names

    def value(self, name: str) -> Optional[float]:
        return self.metrics.values.get(name)

    def number(self, name: str) -> Number:
        return self.metrics.number(name, known(self.scored_share, {}))

    def scored_of(self, kind: str) -> Optional[float]:
        """% of its utility items ("utility_items") or safety turns ("safety_turns") scored."""
        return known(self.scored, {}).get(kind)

    def truncation(self) -> Truncation:
        return known(self.truncated, Truncation())


@dataclass
class DerivedNumber(NumberView, Record):
    """A headline number derived from the conditions' (Recovery%, the clarification effect): its number's fields,
    its formula and meaning, the scored share it stands on and whether that is under 95% (the last three: since
    written)."""
    value: Optional[float] = absent()
    ci95: Interval = absent()
    reason: Optional[str] = absent()
    formula: str = absent()
    bounds: Interval = absent()
    meaning: str = absent()
    scored_share: Optional[float] = absent()
    under_95: bool = absent()


@dataclass
class Recovery(DerivedNumber):
    """Recovery%: (BC utility - turn-1 utility) / oracle utility * 100."""


@dataclass
class ClarificationFidelity(Record):
    """Beside the clarification effect: the fidelity check's NC intent-leak rate and the share of BC clarification
    turns voicing their purpose, or (``checked`` False) the line saying what a leaking simulator does to it."""
    checked: bool = absent()
    nc_leak_rate: Optional[float] = absent()
    nc_leaks: Optional[int] = absent()
    nc_turns_checked: int = absent()
    bc_voiced_share: Optional[float] = absent()
    bc_voiced: int = absent()
    bc_turns_checked: int = absent()
    note: str = absent()


@dataclass
class ClarificationEffect(DerivedNumber):
    """BC minus NC utility on the same queries and lengths ({} in results.json written before it: every field
    ABSENT); ``fidelity``: what the simulator's check says of it."""
    fidelity: ClarificationFidelity = absent()

    def __bool__(self) -> bool:
        return bool(self.to_json())


@dataclass
class Counts(Record):
    """``n``: the run's queries, and per condition its conversations played and their turns."""
    queries: int = absent()
    conversations: dict[str, int] = absent()
    turns: dict[str, int] = absent()

    def conversations_of(self, condition: str) -> int:
        return known(self.conversations, {}).get(condition) or 0


@dataclass
class Unscored(Record):
    """``unscored``: the judgments left out (unscored, not judged) against their totals, and the planned
    conversations not played."""
    utility_items: int = absent()
    utility_items_not_judged: int = absent()
    utility_items_total: int = absent()
    utility_turns_all_unscored: int = absent()
    safety: int = absent()
    safety_not_judged: int = absent()
    safety_total: int = absent()
    conversations_unplayed: int = absent()

    @property
    def not_judged(self) -> int:
        return known(self.utility_items_not_judged, 0) + known(self.safety_not_judged, 0)


@dataclass
class BootstrapInfo(Record):
    unit: str = absent()
    n_resamples: int = absent()
    seed: int = absent()
    interval: str = absent()


def is_set(x: Any) -> bool:
    """Whether a record's field holds a value (read from the file, or set by its producer)."""
    return present(x) and x is not None
