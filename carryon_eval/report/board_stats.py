"""The leaderboard's statistics across models: each model's number recomputed per query, the paired differences,
and per column and comparability group the family of all its pairs (adjusted verdicts, rank intervals).

    sums = QuerySums(rows, rule, plans)                          # one model's conversation_scores.jsonl, read back
    fam = column_family(key, group, [sums_0, sums_1, ...], [0, 1, ...], stat, better, boots, n_resamples, seed)
    fam.differences        # every pair: value, its own 95% interval (the reported method), the adjusted verdict
    fam.ranks              # run index -> simultaneous 95% rank interval

Every model of a group is recomputed on the same queries (those where each has a value for every mean the column
needs) and the same query resamples, so a pair's replicates are the differences of its two models' replicates and
the models' replicates can be ranked together. Each mean is the headline's estimator (length-stratified, the same
unscored rule, clipped into its bounds) on those queries: over the same queries the number is the displayed one.
The statistics themselves are carryon_eval.metrics.family's (pure, over arrays).
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from carryon_eval.codec import Record
from carryon_eval.metrics import estimators as E
from carryon_eval.metrics.family import METHOD, Family, holm, rank_intervals
from carryon_eval.metrics.number import HasNumber
from carryon_eval.metrics.stats import N_RESAMPLES, SEED, Bootstrap, interval95
from carryon_eval.suite.inputs import Stat, UnitRecord, UnitRule

Need = tuple[str, str]                 # (condition, a value its suite's units recompute)
OLD_ROWS = ("its conversation_scores.jsonl was written before the rows carried the turn harms: rerun "
            "`carryon-eval report RUNDIR` to compare it")


class QuerySums:
    """One model's conversation records (conversation_scores.jsonl read back) per condition, and the plan's
    length mix per condition (results.json): what the headline's estimator needs to recompute a number on any
    set of queries. Each (need, query resamples) is estimated once, for the point (every query once), the
    bootstrap's resamples and the leave-one-query-out jackknife together."""

    def __init__(self, rows: Sequence[Mapping[str, Any]], rule: UnitRule,
                 plans: Optional[Mapping[str, Mapping[int, float]]] = None) -> None:
        self.rule = rule
        self.by_condition: dict[str, list[UnitRecord]] = defaultdict(list)
        self.old_rows = False
        for r in rows:
            rec = self.rule.record(r)
            if rec is None:
                self.old_rows = True
                continue
            self.by_condition[r["condition"]].append(rec)
        self.plans = dict(plans or {})
        self._cache: dict[tuple[Need, tuple[str, ...], int, int], np.ndarray] = {}
        self._prepared: dict[Need, tuple[dict[str, int], Any]] = {}
        self._queries: dict[str, set[str]] = {}

    def queries(self, need: Need) -> set[str]:
        if need[0] not in self._queries:
            self._queries[need[0]] = {r.query_id for r in self.by_condition.get(need[0], [])}
        return set(self._queries[need[0]])

    def _read(self, need: Need) -> tuple[dict[str, int], Any]:
        """The condition's records of one value, read once (UnitRule.prepare) over the queries the run has there."""
        if need not in self._prepared:
            recs = self.by_condition.get(need[0], [])
            positions = {q: i for i, q in enumerate(sorted({r.query_id for r in recs}))}
            self._prepared[need] = positions, self.rule.prepare(recs, need[1], positions, len(positions))  # type: ignore[misc]
        return self._prepared[need]

    def _replicates(self, need: Need, query_ids: Sequence[str], counts: np.ndarray) -> np.ndarray:
        if self.rule.prepare is not None:          # the run read once: any set of queries is draws over its own
            positions, prepared = self._read(need)
            cols = [(j, positions[q]) for j, q in enumerate(query_ids) if q in positions]
            if not cols:
                return np.full(counts.shape[0], np.nan)
            draws = np.zeros((counts.shape[0], len(positions)))     # a query of the run left out: drawn 0 times
            draws[:, [c for _, c in cols]] = counts[:, [j for j, _ in cols]]
            return np.asarray(prepared.replicates(draws, self.plans.get(need[0])))
        keep = set(query_ids)
        recs = [r for r in self.by_condition.get(need[0], []) if r.query_id in keep]
        if not recs:
            return np.full(counts.shape[0], np.nan)
        queries = {q: i for i, q in enumerate(query_ids)}
        return self.rule.replicates(recs, need[1], queries, counts, self.plans.get(need[0]))

    def estimate(self, need: Need, boot: Bootstrap) -> tuple[Optional[float], np.ndarray, np.ndarray]:
        """(point, (R,) bootstrap replicates, (Q,) jackknife values) of one mean over ``boot``'s queries."""
        n, r = len(boot.query_ids), boot.idx.shape[0]
        key = (need, boot.query_ids, *boot.idx.shape)
        if key not in self._cache:
            counts = np.vstack([E.point_counts(n), E.query_counts(boot.idx, n), E.jackknife_counts(n)])
            self._cache[key] = self._replicates(need, boot.query_ids, counts)
        values = self._cache[key]
        point = float(values[0]) if np.isfinite(values[0]) else None
        return point, values[1:1 + r], values[1 + r:]


def covered(sums: QuerySums, stat: Stat) -> set[str]:
    """The queries where the model has a value for every mean the statistic needs."""
    sets = [sums.queries(need) for need in stat.needs]
    return set.intersection(*sets) if sets else set()


@dataclass(frozen=True)
class StatEstimate:
    """A model's number over some queries: its value, bootstrap replicates, jackknife values, why it is None."""
    value: Optional[float]
    reps: np.ndarray
    jack: np.ndarray
    reason: Optional[str] = None

    @property
    def ci95(self) -> Optional[list[float]]:
        """Its 95% interval by the reported method (``stats.interval95``)."""
        return interval95(self.value, self.reps, self.jack)


def stat_estimate(sums: QuerySums, stat: Stat, boot: Bootstrap, names: Mapping[str, str] = {}) -> StatEstimate:
    """``stat`` over the queries of ``boot``: each mean it needs is the headline's estimator on those queries, so
    over the same queries it is the displayed number. ``names``: the conditions' display names (reasons)."""
    points, reps, jacks = [], [], []
    for need in stat.needs:
        point, rep, jack = sums.estimate(need, boot)
        if point is None:
            nan = np.full(boot.idx.shape[0], np.nan)
            return StatEstimate(None, nan, np.full(len(boot.query_ids), np.nan),
                                f"no scored {names.get(need[0], need[0])} {need[1]}")
        points.append(point)
        reps.append(rep)
        jacks.append(jack)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = float(stat.combine(*map(np.float64, points)))
        replicates = np.asarray(stat.combine(*reps), dtype=float)
        jack = np.asarray(stat.combine(*jacks), dtype=float)
    if not math.isfinite(value):
        return StatEstimate(None, replicates, jack, stat.undefined)
    return StatEstimate(value, replicates, jack)


@dataclass(frozen=True)
class Difference(Record, HasNumber):
    """Model ``a`` minus model ``b`` (run indices) on a column, paired over ``n_queries`` shared queries: its own
    95% interval (the reported method, not adjusted) and ``differs``, the verdict adjusted over the column's pairs in
    the group (None where there is no difference)."""
    a: int
    b: int
    value: Optional[float]
    ci95: Optional[list[float]]
    n_queries: int = field(metadata={"key": "n"})
    reason: Optional[str] = None
    differs: Optional[bool] = None

    @property
    def n(self) -> int:
        return self.n_queries


@dataclass
class ColumnFamily:
    """One column's comparison within one comparability group: the runs compared (those with a value on the
    group's shared queries), their numbers and replicates, the adjusted verdicts and the rank intervals."""
    key: str
    group: str
    runs: tuple[int, ...]                          # run indices, the order of points and reps
    n_queries: int
    points: np.ndarray                             # (M,)
    reps: np.ndarray                               # (M, R)
    family: Family
    differences: list[Difference] = field(default_factory=list)     # every pair of the group (i < j)
    ranks: dict[int, tuple[int, int]] = field(default_factory=dict)  # run index -> rank interval (1 = best)

    @property
    def n_pairs(self) -> int:
        return len(self.family.pairs)

    @classmethod
    def of(cls, key: str, group: str, runs: Sequence[int], points: np.ndarray, reps: np.ndarray, n_queries: int,
           better: Optional[str]) -> "ColumnFamily":
        """The family of runs' numbers ``points`` (M,) with their paired replicates ``reps`` (M, R) over
        ``n_queries`` shared queries: the adjusted verdicts, and (``better``: which end ranks first) the rank
        intervals; its ``differences`` are filled by ``column_family``."""
        family = holm(points, reps, n_queries)
        ranks = ({r: ri for r, ri in zip(runs, rank_intervals(family, better, len(runs)))}
                 if better is not None and len(runs) > 1 else {})
        return cls(key, group, tuple(runs), n_queries, np.asarray(points, float), np.asarray(reps, float), family,
                   ranks=ranks)


def _boot(queries: frozenset, boots: dict[frozenset, Bootstrap], n_resamples: int, seed: int) -> Bootstrap:
    if queries not in boots:
        boots[queries] = Bootstrap.of(queries, n_resamples=n_resamples, seed=seed)
    return boots[queries]


def column_family(key: str, group: str, sums: Sequence[QuerySums], runs: Sequence[int], stat: Stat,
                  better: Optional[str], boots: dict[frozenset, Bootstrap], n_resamples: int = N_RESAMPLES,
                  seed: int = SEED, names: Mapping[str, str] = {}) -> ColumnFamily:
    """One column's family within a group of runs (``sums`` and ``runs`` aligned): every pair's difference with
    its own interval and the adjusted verdict, and each compared run's rank interval (``better``: which end
    ranks first; None: no ranks)."""
    cover = [covered(s, stat) for s in sums]
    present = [k for k, c in enumerate(cover) if c]
    shared = frozenset(set.intersection(*(cover[k] for k in present))) if present else frozenset()
    ests: dict[int, StatEstimate] = {}
    if shared:
        boot = _boot(shared, boots, n_resamples, seed)
        ests = {k: stat_estimate(sums[k], stat, boot, names) for k in present}
    members = [k for k in present if k in ests and ests[k].value is not None]
    points = np.array([ests[k].value for k in members], dtype=float)
    reps = np.array([ests[k].reps for k in members], dtype=float).reshape(len(members), n_resamples if not members
                                                                             else -1)
    fam = ColumnFamily.of(key, group, [runs[k] for k in members], points, reps, len(shared), better)
    at = {k: m for m, k in enumerate(members)}
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            fam.differences.append(_difference(i, j, runs, sums, cover, shared, ests, at, fam.family))
    return fam


def _difference(i: int, j: int, runs: Sequence[int], sums: Sequence[QuerySums], cover: Sequence[set[str]],
                shared: frozenset, ests: Mapping[int, StatEstimate], at: Mapping[int, int],
                family: Family) -> Difference:
    ids = (runs[i], runs[j])
    if not shared:
        if sums[i].old_rows or sums[j].old_rows:
            return Difference(*ids, None, None, 0, OLD_ROWS)
        why = ("no query with numbers for both models" if not cover[i] & cover[j] else
               "no query with numbers for every model of the group")
        return Difference(*ids, None, None, 0, why)
    for k in (i, j):
        if k not in ests:
            return Difference(*ids, None, None, 0, OLD_ROWS if sums[k].old_rows else
                              "no query with every number this column needs for one of the two models")
    a, b = ests[i], ests[j]
    if a.value is None or b.value is None:
        return Difference(*ids, None, None, len(shared), a.reason or b.reason)
    value = a.value - b.value
    diff = StatEstimate(value, a.reps - b.reps, a.jack - b.jack)
    return Difference(*ids, value, diff.ci95, len(shared), None, family.verdict(at[i], at[j]))


def family_note(fam: ColumnFamily, label: str) -> str:
    """What a column's verdicts in a group stand on: the pairs, the queries, the method."""
    pairs = f"{fam.n_pairs} pair" + ("s" if fam.n_pairs != 1 else "")
    critical = fam.family.critical
    return (f"{label}, group {fam.group}: {len(fam.runs)} models, {pairs} over {fam.n_queries} shared queries; "
            f"'differs' is adjusted for the {pairs} by {METHOD}"
            + (f" (first critical |difference| / SE {critical:.2f})" if critical is not None else ""))
