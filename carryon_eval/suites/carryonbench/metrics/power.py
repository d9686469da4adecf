"""What a run of a given size can resolve, before it is paid for and after: the smallest difference between two
models detectable at 80% power (two-sided 5%) on BC utility, Recovery%, the clarification effect and BC's violation
rate, and the queries a difference needs. Pure functions (the arithmetic: carryon_eval.metrics.family).

A comparison of two models stands on the SD over queries of their paired per-query difference, ``sd_pair``: for a
number that is a mean over a query's conversations it shrinks as a query has more conversations (the full plan's 10
BC and 5 NC against the quick subset's one of each), and it holds what two equally good models' queries differ by
(a model helps on other queries than another) as well as the judge's noise. ``FULL`` and ``QUICK`` hold those SDs
measured on the board simulation of equally good models (bench/bench_power.py; figures and what they assume in
bench/README.md): an assumption about the models to be compared until a run replaces it. ``--power-from RUNDIR`` reads a finished
run's own spread instead: each number's SD over queries from its reported 95% interval (half-width over t(n-1),
times sqrt(n)), made the SD of a paired difference with the shipped correlation of two models' per-query numbers
(``rho``: sd_pair = sd sqrt(2 (1 - rho))). A design between the two measured ones (conversations per query) is
read between them, linear in 1 / (BC conversations per query).

- ``design_power``: the dry run's table (``power`` of `--dry-run --json`, lines of the printed table);
- ``run_power``: a finished run's own smallest detectable differences (results.json's ``power``, table.md,
  report.html, the leaderboard).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence, Union

from carryon_eval.codec import Record, absent, fields_of
from carryon_eval.metrics.family import POWER, detectable, holm_criticals, queries_needed, t_quantile
from carryon_eval.metrics.number import Number
from carryon_eval.report.blocks import Inline, Shown, number_text, shown
from carryon_eval.run.results import TOP_LEVEL_SECTION
from carryon_eval.suite.inputs import DesignNote, DesignView
from carryon_eval.suites.carryonbench.metrics.condition import ClarificationEffect, ConditionBlock, Recovery, known

#: the numbers of the table: key (the leaderboard's column key) -> its name
NUMBERS = {"bc.utility": "BC utility", "recovery": "Recovery%", "clarification_effect": "clarification effect",
           "bc.violation_rate": "BC violation rate"}
#: the conditions each number needs
NEEDS = {"bc.utility": ("bc",), "recovery": ("turn1", "oracle", "bc"), "clarification_effect": ("bc", "nc"),
         "bc.violation_rate": ("bc",)}


@dataclass(frozen=True)
class Spread:
    """One number's per-query spread in one design: one model's SD over queries, the correlation of two models'
    per-query numbers, and the SD of their paired difference."""
    sd: float
    rho: float
    sd_pair: float


@dataclass(frozen=True)
class MeasuredDesign:
    """A design the board simulation measured: its BC conversations per query and, per number (NUMBERS' keys), the
    spread it found."""
    bc_per_query: int
    spreads: dict[str, Spread]


#: the two designs measured by bench/bench_power.py (20,000 queries, seed 0; bench/README.md): the full plan (10 BC
#: conversations per query) and the quick subset (one)
FULL = MeasuredDesign(10, {
    "bc.utility": Spread(11.76, 0.303, 13.89), "recovery": Spread(26.77, 0.136, 35.19),
    "clarification_effect": Spread(5.82, 0.000, 8.23), "bc.violation_rate": Spread(33.70, 0.859, 17.90)})
QUICK = MeasuredDesign(1, {
    "bc.utility": Spread(21.22, 0.604, 18.87), "recovery": Spread(38.93, 0.443, 41.09),
    "clarification_effect": Spread(28.67, 0.739, 20.73), "bc.violation_rate": Spread(46.71, 0.514, 46.04)})
SOURCE = ("the board simulation of two equally good models (bench/bench_power.py: per-query difficulty shared, each "
          "model better on some queries, a judge misreading 5% of verdicts)")


def _between(key: str, bc_per_query: float) -> float:
    """The SD of a paired difference at a design of ``bc_per_query`` BC conversations per query, read between the
    measured designs, linear in 1 / (BC conversations per query) on the variance."""
    full, quick = (d.spreads[key].sd_pair ** 2 for d in (FULL, QUICK))
    x = (1 / max(bc_per_query, 1) - 1 / FULL.bc_per_query) / (1 / QUICK.bc_per_query - 1 / FULL.bc_per_query)
    return math.sqrt(max(full + (quick - full) * min(max(x, 0.0), 1.0), 0.0))


@dataclass(frozen=True)
class Design:
    """What a run's power stands on: its queries, the conditions it runs and its BC conversations per query."""
    n_queries: int
    conditions: tuple[str, ...]
    bc_per_query: float

    @classmethod
    def of_jobs(cls, jobs: Sequence[Any]) -> "Design":
        """The design of a run's planned jobs (conversation_id, query_id, condition)."""
        queries = {j.query_id for j in jobs}
        conditions = tuple(dict.fromkeys(j.condition for j in jobs))
        bc = [j for j in jobs if j.condition == "bc"]
        per = len(bc) / len({j.query_id for j in bc}) if bc else 0.0
        return cls(len(queries), conditions, per)


def _nearest(bc_per_query: float) -> MeasuredDesign:
    return FULL if bc_per_query >= 3 else QUICK


def read_spreads(results: Sequence[Any], bc_per_query: float) -> dict[str, float]:
    """Per number, the paired SD of ``--power-from`` runs' own numbers (their CarryOnBench sections) at a design of
    ``bc_per_query``: each run's SD over queries from its reported interval, made paired with the shipped ``rho``
    of its design, moved to the planned design as the shipped spreads move, and their root mean square."""
    sections = [s for s in (r.section(TOP_LEVEL_SECTION) for r in results) if s is not None]
    out: dict[str, float] = {}
    for key in NUMBERS:
        pairs = []
        for section in sections:
            sd, per = own_sd(section, key), bc_per_query_of(section.conditions)
            if sd is not None and per:
                paired = sd * math.sqrt(2 * (1 - _nearest(per).spreads[key].rho))
                pairs.append(paired * _between(key, bc_per_query) / _between(key, per))
        if pairs:
            out[key] = math.sqrt(sum(p * p for p in pairs) / len(pairs))
    return out


def bc_per_query_of(conditions: Mapping[str, ConditionBlock]) -> float:
    """BC conversations per query of a run (its conditions' blocks)."""
    block = conditions.get("bc") or ConditionBlock()
    n, q = known(block.n_conversations, 0), known(block.n_queries, 0)
    return n / q if q else 0.0


def intervals_of(conditions: Mapping[str, ConditionBlock], recovery: Recovery,
                 effect: ClarificationEffect) -> dict[str, Optional[list[float]]]:
    """Each number of the table's reported 95% interval (the section's records)."""
    out: dict[str, Optional[list[float]]] = {"recovery": recovery.number.ci95,
                                             "clarification_effect": effect.number.ci95}
    for key in ("bc.utility", "bc.violation_rate"):
        cond, metric = key.split(".")
        out[key] = (conditions.get(cond) or ConditionBlock()).number(metric).ci95
    return out


def own_sd(section: Any, key: str) -> Optional[float]:
    """One run's SD over queries of a number (its CarryOnBench section), from its reported 95% interval."""
    ci = intervals_of(section.conditions, section.recovery, section.clarification_effect)[key]
    return sd_from_interval(ci, known(section.n.queries, 0) or 0)


def sd_from_interval(ci: Optional[Sequence[float]], n: int) -> Optional[float]:
    """The SD over n queries a 95% interval stands for: half its width over t(n-1), times sqrt(n)."""
    if not ci or n < 3:
        return None
    return (ci[1] - ci[0]) / 2 / t_quantile(0.975, n - 1) * math.sqrt(n)


# ---------------------------------------------------------------- the dry run's table
AMONG = "detectable_among_"         # + the board's models: a row's key of one pair's difference among them


@dataclass
class DesignRow(Record):
    """One number of the dry run's table: the smallest difference two models must differ by to be seen at 80% power
    (None, with the reason, where the design lacks a condition it needs), the SD of a paired difference it stands on
    and where that SD comes from, the same for one pair of a board of ``models`` (``among``: its JSON key names
    them) and, with ``--detect``, the queries that difference needs."""
    name: str = ""
    sd_pair: float = absent()
    spread: str = absent()
    detectable: Optional[float] = None
    models: int = absent()
    among: Optional[float] = absent()
    queries_for_detect: int = absent()
    reason: str = absent()

    def to_json(self) -> dict[str, Any]:
        among = f"{AMONG}{self.models}"
        return {among if key == "among" else key: value for key, value in super().to_json().items() if key != "models"}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "DesignRow":
        row = fields_of(cls, d)
        for key in (k for k in d if k.startswith(AMONG)):
            row.models, row.among = int(key[len(AMONG):]), d[key]
        return row


@dataclass
class DesignPower(Record):
    """The dry run's ``power`` object (`--dry-run --json`): the design's queries and BC conversations per query, the
    power and level, the difference asked about (``--detect``), a DesignRow per number (NUMBERS' keys), where the
    spreads come from and what the numbers mean."""
    n_queries: int = 0
    bc_per_query: float = 0.0
    power: float = POWER
    level: float = 0.95
    detect: Optional[float] = None
    numbers: dict[str, DesignRow] = field(default_factory=dict)
    spreads: str = ""
    meaning: str = ""


def design_power(design: Design, measured: Optional[Mapping[str, float]] = None, detect: Optional[float] = None,
                 models: int = 14, source: str = "") -> DesignPower:
    """The dry run's ``power``: per number, the smallest difference two models must differ by to be seen at 80%
    power with this design, the same as one pair of a board of ``models`` (its verdicts adjusted over all pairs,
    Holm), the SD it stands on and, with ``detect``, the queries that difference needs."""
    pairs = models * (models - 1) // 2
    numbers: dict[str, DesignRow] = {}
    for key, name in NUMBERS.items():
        missing = [c for c in NEEDS[key] if c not in design.conditions]
        if missing:
            numbers[key] = DesignRow(name, detectable=None, reason=f"the run has no {', '.join(missing)}")
            continue
        own = (measured or {}).get(key)
        sd = own or _between(key, design.bc_per_query)
        numbers[key] = DesignRow(name, round(sd, 2), "--power-from" if own else "shipped",
                                 _round(detectable(sd, design.n_queries)), models,
                                 _round(_board_detectable(sd, design.n_queries, pairs)))
        if detect is not None:
            numbers[key].queries_for_detect = queries_needed(detect, sd)
    return DesignPower(design.n_queries, round(design.bc_per_query, 2), POWER, 0.95, detect, numbers,
                       source or ("measured from --power-from runs" if measured else SOURCE),
                       "the smallest difference between two models' numbers (points) that this design detects 80% "
                       f"of the time; 'among {models}': one pair of a board of {models} models, its verdict "
                       f"adjusted over the {pairs} pairs (Holm)")


def _board_detectable(sd: float, n: int, pairs: int) -> Optional[float]:
    """The smallest difference detectable at 80% power when the verdict must pass Holm's first (strictest) step of
    ``pairs`` pairs."""
    if n < 3:
        return None
    return (holm_criticals(pairs, n - 1)[0] + t_quantile(POWER, n - 1)) * sd / math.sqrt(n)


def _round(x: Optional[float]) -> Optional[float]:
    return None if x is None else round(x, 2)


def _row_line(row: DesignRow, detect: Optional[float]) -> str:
    """One number's line of the printed table, its numbers in the reports' one format."""
    if row.detectable is None:
        missing = Number(reason=row.reason if row.reason else "too few queries")
        return f"  {row.name:<22} {number_text(Shown(missing, reason=True))}"
    text = (f"  {row.name:<22} {number_text(shown(row.detectable)):>6} points (one pair among {row.models} models, "
            f"adjusted: {number_text(shown(known(row.among)))}); per-query SD of a paired difference "
            f"{number_text(shown(row.sd_pair))}")
    if detect is not None:
        text += f"; {row.queries_for_detect} queries to detect {detect:g}"
    return text


def power_lines(table: DesignPower) -> list[str]:
    """The printed table's lines."""
    return [f"power: the smallest difference between two models detectable 80% of the time with {table.n_queries} "
            f"queries ({table.bc_per_query:g} BC conversations per query; spreads: {table.spreads}):",
            *(_row_line(row, table.detect) for row in table.numbers.values())]


# ---------------------------------------------------------------- a finished run's own
@dataclass
class PowerRow(Record):
    """One number's smallest detectable difference (None with the reason where the run lacks it) and the SD of a
    paired difference it stands on."""
    name: str = absent()
    detectable: Optional[float] = absent()
    sd_pair: float = absent()
    reason: str = absent()


@dataclass
class RunPower(Record):
    """results.json's ``power``: per number (NUMBERS' keys) a PowerRow, over the run's queries."""
    n_queries: int = absent()
    numbers: dict[str, PowerRow] = absent()
    meaning: str = absent()

    def rows(self) -> dict[str, PowerRow]:
        return self.numbers or {}


RUN_POWER_MEANING = ("the smallest difference between this model and another like it that a run of this size "
                     "detects 80% of the time (two-sided 5%), from this run's own intervals: differences between "
                     "models smaller than these are not resolved by this run")


def run_power(n_queries: int, intervals: Mapping[str, Optional[Sequence[float]]],
              bc_per_query: float) -> RunPower:
    """results.json's ``power``: per number, the smallest difference between this model and another like it that
    this run's size detects 80% of the time, from the run's own spread (its reported interval, ``intervals``) and
    the shipped correlation of two models' per-query numbers; None with the reason where the run lacks it."""
    out: dict[str, PowerRow] = {}
    for key, name in NUMBERS.items():
        sd = sd_from_interval(intervals.get(key), n_queries)
        if sd is None:
            out[key] = PowerRow(name, None, reason="no interval" if n_queries >= 3
                                else f"{n_queries} queries: too few for an interval")
            continue
        pair = sd * math.sqrt(2 * (1 - _nearest(bc_per_query).spreads[key].rho))
        out[key] = PowerRow(name, _round(detectable(pair, n_queries)), round(pair, 2))
    return RunPower(n_queries, out, RUN_POWER_MEANING)


def run_power_line(power: Union[RunPower, Mapping[str, Any], None]) -> list[Inline]:
    """One line of a run's own smallest detectable differences (table.md, report.html), text and shown numbers
    ([] without it); ``power``: its record (or results.json's ``power``)."""
    if not power:
        return []
    power = power if isinstance(power, RunPower) else RunPower.from_json(power)
    rows = list(power.rows().values())
    resolved = [row for row in rows if known(row.detectable) is not None]
    if not resolved:
        reasons = sorted({known(row.reason) or "no interval" for row in rows})
        return [f"This run's {power.n_queries} queries resolve no difference between two models "
                f"({'; '.join(reasons)}): its numbers cannot be read as a ranking."]
    parts: list[Inline] = []
    for row in resolved:
        parts += [*(["; "] if parts else []), f"{row.name} ", shown(row.detectable)]
    return [f"Smallest difference between two models this run's {power.n_queries} queries detect 80% of the time "
            "(points): ", *parts, ". Smaller differences between models are not resolved by this run."]


def design_note(view: DesignView) -> Optional[DesignNote]:
    """Suite.design: the dry run's power table of the run's CarryOnBench jobs (None without any)."""
    design = Design.of_jobs(view.jobs)
    if not design.n_queries:
        return None
    measured = read_spreads(view.power_from, design.bc_per_query) if view.power_from else None
    source = ""
    if view.power_from:
        source = (f"read from {len(view.power_from)} finished run(s) (--power-from)" + (
            "; a number they have no interval for from " + SOURCE if len(measured or {}) < len(NUMBERS) else "")
                  if measured else f"{SOURCE}: the --power-from runs have no interval to read (too few queries)")
    table = design_power(design, measured, view.detect, source=source)
    return DesignNote({"power": table.to_json()}, tuple(power_lines(table)))
