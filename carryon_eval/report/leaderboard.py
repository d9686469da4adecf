"""The leaderboard of `carryon-eval compare RUNDIR... --out DIR`: DIR/leaderboard.html and DIR/leaderboard.jsonl.

    board = build_leaderboard(runs)            # runs: one RunEntry per model (results, per-conversation scores)
    write_leaderboard(out, board, images)      # the page (jinja2 template) and the results record

The page is one self-contained file: inline CSS, one inline script (plain JavaScript, allowed by hash in the
page's Content-Security-Policy, which also forbids every network request), plots as data: URIs, every model
text escaped by the template engine. Its table holds every headline number of every run with its 95% interval
and scored share, sortable by any column; for the column sorted on it shows the paired between-model
differences (`paired_difference`: a query-cluster bootstrap over the queries both models share, each model's
number recomputed on them by the headline's own estimator from the records of conversation_scores.jsonl, so
that over the same queries the difference is the difference of the displayed cells). Runs judged by different judges (models or prompt
versions), whose users were simulated by different models, or built from different datasets fall into separate
comparability groups: they are ranked, compared and correlated within their group only, and the page says so at
the top. Rows a suite's paper reports (SuiteReport.reported, status "reported") form a group of their own that is
never ranked nor paired.

Columns come from column sources: each suite's own (its SuiteReport's ``leaderboard``, a SuiteLeaderboard, with the
rule its rows of conversation_scores.jsonl are read back by, ``units``), and any added with `register_columns`;
the table, the page and leaderboard.jsonl carry their columns without further change. The suites' leaderboards also
give the names of what their Stats need, the rank correlations the page shows, its first sort and its sections.
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from carryon_eval.codec import Record
from carryon_eval.metrics import estimators as E
from carryon_eval.metrics.number import HasNumber
from carryon_eval.run.paths import local_path, shared_path
from carryon_eval.run.results import Results
from carryon_eval.suite.inputs import (Cell, Column, ColumnSource, RunEntry, Stat, SuiteLeaderboard, UnitRecord,
                                       UnitRule)
from carryon_eval.metrics.stats import N_RESAMPLES, SEED, Bootstrap, ci95, spearman

HTML_FILE, JSONL_FILE = "leaderboard.html", "leaderboard.jsonl"
REPORTED = "reported"      # the status of a row a paper reports (SuiteReport.reported): its own group, never ranked
TEMPLATE, SCRIPT = "leaderboard.html.j2", "leaderboard.js"


# ---------------------------------------------------------------- columns and cells


COLUMN_SOURCES: dict[str, ColumnSource] = {}
COLUMN_UNITS: dict[str, UnitRule] = {}


def register_columns(name: str, source: ColumnSource, units: Optional[UnitRule] = None) -> ColumnSource:
    """Add a column source: runs -> [(column, one cell per run)]; it returns [] when no run has its numbers.
    ``units``: how the rows of conversation_scores.jsonl are read back for its columns that have a Stat."""
    COLUMN_SOURCES[name] = source
    if units is not None:
        COLUMN_UNITS[name] = units
    return source


def run_judges(entry: RunEntry) -> dict[str, Any]:
    """Who judged a run's numbers: every suite's part (its leaderboard's ``judged``)."""
    out: dict[str, Any] = {}
    for lb in suite_leaderboards():
        if lb.judged is not None:
            out.update(lb.judged(entry.results))
    return out


def suite_leaderboards() -> list[SuiteLeaderboard]:
    """The suites' parts of the leaderboard, by the suites' rank."""
    from carryon_eval.suite import suites

    return [s.report.leaderboard for s in suites() if s.report is not None and s.report.leaderboard is not None]


def column_sources() -> list[tuple[ColumnSource, Optional[UnitRule]]]:
    """Every suite's columns (its leaderboard's ``columns``, by the suites' rank), then any registered here, each
    with how its rows of conversation_scores.jsonl are read back (its ``units``)."""
    return [*((b.columns, b.units) for b in suite_leaderboards()),
            *((c, COLUMN_UNITS.get(name)) for name, c in COLUMN_SOURCES.items())]


def labels() -> dict[str, str]:
    """The display names the suites give the keys their Stats need ({"bc": "BC"}); a key without one is shown as is."""
    return {k: v for b in suite_leaderboards() for k, v in b.labels.items()}


# ---------------------------------------------------------------- paired differences (pure)
Need = tuple[str, str]                 # (condition, a value its suite's units recompute)


OLD_ROWS = ("its conversation_scores.jsonl was written before the rows carried the turn harms: rerun "
            "`carryon-eval report RUNDIR` to compare it")


class QuerySums:
    """One model's conversation records (conversation_scores.jsonl read back) per condition, and the plan's
    length mix per condition (results.json): what the headline's estimator needs to recompute a number on any
    set of queries, paired with another model by one set of query resamples; replicates are cached per
    (need, resampled queries)."""

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
        self._reps: dict[tuple[Need, tuple[str, ...], int, int], np.ndarray] = {}
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
            draws = np.zeros((counts.shape[0], len(positions)))
            draws[:, [c for _, c in cols]] = counts[:, [j for j, _ in cols]]
            return np.asarray(prepared.replicates(draws, self.plans.get(need[0])))
        keep = set(query_ids)
        recs = [r for r in self.by_condition.get(need[0], []) if r.query_id in keep]
        if not recs:
            return np.full(counts.shape[0], np.nan)
        queries = {q: i for i, q in enumerate(query_ids)}
        return self.rule.replicates(recs, need[1], queries, counts, self.plans.get(need[0]))

    def point(self, need: Need, queries: Sequence[str]) -> Optional[float]:
        ids = tuple(sorted(queries))
        v = self._replicates(need, ids, np.ones((1, len(ids))))[0]
        return float(v) if np.isfinite(v) else None

    def replicates(self, need: Need, boot: Bootstrap) -> np.ndarray:
        key = (need, boot.query_ids, *boot.idx.shape)
        if key not in self._reps:
            self._reps[key] = self._replicates(need, boot.query_ids, E.query_counts(boot.idx, len(boot.query_ids)))
        return self._reps[key]


def plans_of(results: Results) -> dict[str, dict[int, float]]:
    """The plan's length mix per condition as results.json records it (none: the conversations present)."""
    return {cond: {int(k): float(v) for k, v in block["plan_lengths"].items()}
            for cond, block in results.conditions.items() if isinstance((block or {}).get("plan_lengths"), dict)}


def _sums(x: Any, units: Optional[UnitRule]) -> QuerySums:
    if isinstance(x, QuerySums):
        return x
    if units is None:
        raise LookupError("conversation_scores.jsonl rows without the rule that reads them back (a suite "
                          "leaderboard's units)")
    return QuerySums(x, units)


def covered(sums: QuerySums, stat: Stat) -> set[str]:
    """The queries where the model has a value for every mean the statistic needs."""
    sets = [sums.queries(need) for need in stat.needs]
    return set.intersection(*sets) if sets else set()


def shared_queries(a: Any, b: Any, stat: Stat, units: Optional[UnitRule] = None) -> set[str]:
    """The queries where both models (rows read by ``units``, or QuerySums) have a value for every mean the
    statistic needs."""
    return covered(_sums(a, units), stat) & covered(_sums(b, units), stat)


def stat_estimate(sums: QuerySums, stat: Stat, boot: Bootstrap) -> tuple[Optional[float], np.ndarray, Optional[str]]:
    """(value, bootstrap replicates, reason when None) of `stat` over the queries of `boot`: each mean it
    needs is the headline's estimator (length-stratified, the same unscored rule, clipped into its bounds)
    on those queries, so over the same queries it is the displayed number."""
    points, reps = [], []
    for need in stat.needs:
        point = sums.point(need, boot.query_ids)
        if point is None:
            return None, np.full(boot.idx.shape[0], np.nan), f"no scored {labels().get(need[0], need[0])} {need[1]}"
        points.append(point)
        reps.append(sums.replicates(need, boot))
    with np.errstate(invalid="ignore", divide="ignore"):
        value = float(stat.combine(*map(np.float64, points)))
        replicates = np.asarray(stat.combine(*reps), dtype=float)
    if not math.isfinite(value):
        return None, replicates, stat.undefined
    return value, replicates, None


@dataclass(frozen=True)
class Difference(Record, HasNumber):
    """Model ``a`` minus model ``b`` (run indices) on a column, paired over ``n_queries`` shared queries."""
    a: int
    b: int
    value: Optional[float]
    ci95: Optional[list[float]]
    n_queries: int = field(metadata={"key": "n"})
    reason: Optional[str] = None

    @property
    def n(self) -> int:
        return self.n_queries


def paired_difference(a: Any, b: Any, stat: Stat, *, units: Optional[UnitRule] = None, n_resamples: int = N_RESAMPLES,
                      seed: int = SEED, ids: tuple[int, int] = (0, 1),
                      boots: Optional[dict[frozenset, Bootstrap]] = None) -> Difference:
    """Model a minus model b (per-conversation rows, or their QuerySums) on `stat`, paired over their shared
    queries: one set of query resamples drives both models' replicates, so the interval is that of the
    difference, not of two independent means. `units` reads rows back; `boots` caches the resamples per query set."""
    a, b = _sums(a, units), _sums(b, units)
    queries = frozenset(shared_queries(a, b, stat))
    if not queries and (a.old_rows or b.old_rows):
        return Difference(*ids, None, None, 0, OLD_ROWS)
    if not queries:
        return Difference(*ids, None, None, 0, "no query with numbers for both models")
    boots = {} if boots is None else boots
    boot = boots.get(queries)
    if boot is None:
        boot = boots[queries] = Bootstrap.of(queries, n_resamples=n_resamples, seed=seed)
    va, ra, why_a = stat_estimate(a, stat, boot)
    vb, rb, why_b = stat_estimate(b, stat, boot)
    if va is None or vb is None:
        return Difference(*ids, None, None, len(queries), why_a or why_b)
    return Difference(*ids, va - vb, ci95(ra - rb), len(queries))


# ---------------------------------------------------------------- the board
@dataclass
class Board:
    runs: list[RunEntry]
    columns: list[Column]
    cells: list[list[Cell]]                      # [run][column]
    groups: list[str]                            # comparability group letter per run
    group_info: dict[str, dict[str, Any]]        # letter -> judges, dataset
    warnings: list[str]
    differences: dict[str, list[Difference]]     # column key -> pairs within a group
    spearman: dict[str, dict[str, Any]]          # group -> correlated key (a condition) -> stats.spearman
    settings: dict[str, Any]


def bootstrap_settings(runs: Sequence[RunEntry]) -> tuple[int, int]:
    boot = runs[0].results.bootstrap if runs else {}
    return int(boot.get("n_resamples") or N_RESAMPLES), int(boot.get("seed") if boot.get("seed") is not None else SEED)


def comparability(runs: Sequence[RunEntry]) -> tuple[list[str], dict[str, dict[str, Any]], list[str]]:
    """A group letter per run (same judges, prompt versions, user simulator and dataset), the groups, and the page's warnings."""
    # a smoke run measures nothing: it is never in a group with measured runs, so never ranked beside them
    # nor is an incomplete run: its numbers stand on part of its plan (bounds span the rest), so it is not ranked
    keys = [json.dumps([run_judges(e), e.dataset_id(), "smoke" in e.results.status(), e.simulator(),
                        REPORTED in e.results.status()]
                       + (["incomplete"] if "incomplete" in e.results.status() else []), sort_keys=True) for e in runs]
    letters = {k: chr(ord("A") + i) for i, k in enumerate(dict.fromkeys(keys))}
    groups = [letters[k] for k in keys]
    info = {letters[k]: {"judges": run_judges(e), "dataset": e.dataset(), "dataset_id": e.dataset_id(),
                         "smoke": "smoke" in e.results.status(), "simulator": e.simulator(),
                         "reported": REPORTED in e.results.status(),
                         "incomplete": "incomplete" in e.results.status(),
                         "models": [x.label for x, g in zip(runs, groups) if g == letters[k]]}
            for k, e in zip(keys, runs)}
    warnings = [f"{e.label}: {line}" for e in runs for line in e.results.status_lines()
                if REPORTED not in e.results.status()]
    warnings += list(dict.fromkeys(f"Rows reported in a paper, not measured here: {' '.join(e.results.notes[:2])}"
                                   for e in runs if REPORTED in e.results.status()))
    if any(i["smoke"] for i in info.values()):
        warnings.append("Smoke-test runs sit in a group of their own and are not ranked: their numbers measure "
                        "nothing.")
    if any(i["incomplete"] for i in info.values()):
        warnings.append("Incomplete runs sit in a group of their own and are not ranked: their numbers stand on "
                        "part of their plan (the bounds span the conversations and judgments still missing).")
    if len({json.dumps(run_judges(e), sort_keys=True) for e in runs}) > 1:
        warnings.append("These runs were judged by different judges (models or prompt versions): their numbers "
                        "are not comparable, so they are ranked and compared only within their group.")
    simulators = sorted({str(e.simulator()["model"]) for e in runs})
    if len({json.dumps(e.simulator(), sort_keys=True) for e in runs}) > 1:
        warnings.append(f"These runs' users were simulated by different models ({', '.join(simulators)}): their "
                        "numbers are not comparable, so they are ranked and compared only within their group.")
    warnings += [w for w in (lb.mismatch(runs) for lb in suite_leaderboards() if lb.mismatch is not None) if w]
    if len({e.dataset_id() for e in runs}) > 1:
        warnings.append("These runs were built from different dataset revisions: their numbers are not "
                        "comparable, so they are ranked and compared only within their group.")
    return groups, info, warnings


def build_leaderboard(runs: Sequence[RunEntry]) -> Board:
    runs = list(runs)
    columns: list[Column] = []
    units: dict[str, Optional[UnitRule]] = {}
    by_run: list[list[Cell]] = [[] for _ in runs]
    for source, rule in column_sources():
        for col, cells in source(runs):
            columns.append(col)
            units[col.key] = rule
            for i, cell in enumerate(cells):
                by_run[i].append(cell)
    groups, info, warnings = comparability(runs)
    n, seed = bootstrap_settings(runs)
    sums: dict[int, list[QuerySums]] = {}       # per rule (by id): each run's rows read back by it
    boots: dict[frozenset, Bootstrap] = {}

    def read(rule: Optional[UnitRule]) -> list[QuerySums]:
        if rule is None:
            raise LookupError("a leaderboard column with a Stat whose source gives no units (SuiteLeaderboard.units)")
        if id(rule) not in sums:
            sums[id(rule)] = [QuerySums(e.scores, rule, plans_of(e.results)) for e in runs]
        return sums[id(rule)]

    differences = {col.key: [paired_difference(read(units[col.key])[i], read(units[col.key])[j], col.stat,
                                               n_resamples=n, seed=seed, ids=(i, j), boots=boots)
                             for i in range(len(runs)) for j in range(i + 1, len(runs))
                             if groups[i] == groups[j] and not info[groups[i]]["reported"]]
                   for col in columns if col.stat is not None}
    return Board(runs, columns, by_run, groups, info, warnings, differences, rank_correlations(runs, groups),
                 {"n_resamples": n, "seed": seed, "unit": "query (paired over the queries both models share)"})


def rank_correlations(runs: Sequence[RunEntry], groups: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per comparability group, the Spearman correlation across its models of each (x, y) pair the suites'
    leaderboards name (``correlated``; a run lacking one counts as None)."""
    sources = [b.correlated for b in suite_leaderboards() if b.correlated is not None]
    pairs = [{k: xy for source in sources for k, xy in source(e.results).items()} for e in runs]
    keys = list(dict.fromkeys(k for p in pairs for k in p))

    def rho(idx: list[int], key: str) -> dict[str, Any]:
        xy = [pairs[i].get(key, (None, None)) for i in idx]
        return spearman([x for x, _ in xy], [y for _, y in xy])

    return {g: {k: rho(idx, k) for k in keys}
            for g in dict.fromkeys(groups) for idx in [[i for i, x in enumerate(groups) if x == g]]}


# ---------------------------------------------------------------- leaderboard.jsonl
def jsonl_rows(board: Board, out: Path) -> list[dict[str, Any]]:
    """One row per model: what pins its numbers (dataset, judges, prompts) and every column's cell; every row
    has every column (null where a run lacks it), so a dataset of these rows has one schema. Paths are relative
    to ``out``, the leaderboard's folder (carryon_eval.run.paths)."""
    rows = []
    for entry, group, cells in zip(board.runs, board.groups, board.cells):
        meta, dataset = entry.meta, entry.dataset()
        dataset["source"] = shared_path(local_path(dataset["source"], entry.folder), out)
        rows.append({
            "model": entry.label, "target_model": entry.results.model, "run": shared_path(entry.folder, out),
            "comparability_group": group, "status": entry.results.status(), "dataset": dataset,
            "judges": run_judges(entry), "simulator": entry.simulator(),
            "prompts": dict(meta.prompts), "subset": meta.subset, "limit": meta.limit,
            "carryonbench_version": meta.carryonbench_version, "report_by": entry.results.generated.by,
            "n_queries": entry.results.n.get("queries"),
            "metrics": {col.key: cell.to_json() for col, cell in zip(board.columns, cells)},
            **({"notes": list(entry.results.notes)} if REPORTED in entry.results.status() else {}),
        })
    return rows
