"""The leaderboard of `carryon-eval compare RUNDIR... --out DIR`: DIR/leaderboard.html and DIR/leaderboard.jsonl.

    board = build_leaderboard(runs)            # runs: one RunEntry per model (results, per-conversation scores)
    write_leaderboard(out, board, images)      # the page (jinja2 template) and the results record

The page is one self-contained file: inline CSS, one inline script (plain JavaScript, allowed by hash in the
page's Content-Security-Policy, which also forbids every network request), plots as data: URIs, every model
text escaped by the template engine. Its table holds every headline number of every run with its 95% interval
and scored share, sortable by any column; for the column sorted on it shows each model's 95% rank interval and
the paired between-model differences, each with its own interval and the verdict adjusted over the column's pairs
in the group (carryon_eval.report.board_stats: a query-cluster bootstrap over the queries every model of the group
shares, each model's number recomputed on them by the headline's own estimator from the records of
conversation_scores.jsonl, so that over the same queries the difference is the difference of the displayed cells;
the family's statistics: carryon_eval.metrics.family). Runs judged by different judges (models or prompt
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

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from carryon_eval.metrics.family import METHOD, METHOD_TEXT, RANK_TEXT
from carryon_eval.metrics.stats import N_RESAMPLES, SEED, Bootstrap, RankCorrelation, rank_correlation
from carryon_eval.report.board_stats import (OLD_ROWS, ColumnFamily, Difference, QuerySums, StatEstimate,  # noqa: F401
                                             column_family, covered, family_note, stat_estimate)
from carryon_eval.run.paths import local_path, shared_path
from carryon_eval.run.results import Results
from carryon_eval.suite.inputs import (Cell, Column, ColumnSource, DatasetUsed, RunBasis, RunEntry, Simulator, Stat,
                                       SuiteLeaderboard, UnitRule)

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


def run_basis(results: Results) -> RunBasis:
    """What a run's numbers stand on (its queries, plan mix, bootstrap settings), as the suites' leaderboards read
    it of their sections (``basis``), the first suite by rank giving each part."""
    out = RunBasis()
    for lb in suite_leaderboards():
        if lb.basis is not None:
            out = out.filled_by(lb.basis(results))
    return out


# ---------------------------------------------------------------- paired differences


def _sums(x: Any, units: Optional[UnitRule]) -> QuerySums:
    if isinstance(x, QuerySums):
        return x
    if units is None:
        raise LookupError("conversation_scores.jsonl rows without the rule that reads them back (a suite "
                          "leaderboard's units)")
    return QuerySums(x, units)


def shared_queries(a: Any, b: Any, stat: Stat, units: Optional[UnitRule] = None) -> set[str]:
    """The queries where both models (rows read by ``units``, or QuerySums) have a value for every mean the
    statistic needs."""
    return covered(_sums(a, units), stat) & covered(_sums(b, units), stat)


def paired_difference(a: Any, b: Any, stat: Stat, *, units: Optional[UnitRule] = None, n_resamples: int = N_RESAMPLES,
                      seed: int = SEED, ids: tuple[int, int] = (0, 1),
                      boots: Optional[dict[frozenset, Bootstrap]] = None) -> Difference:
    """Model a minus model b (per-conversation rows, or their QuerySums) on `stat`, paired over their shared
    queries: one set of query resamples drives both models' replicates, so the interval is that of the
    difference, not of two independent means (a family of one pair: ``differs`` is its own verdict). `units`
    reads rows back; `boots` caches the resamples per query set."""
    fam = column_family("", "", [_sums(a, units), _sums(b, units)], list(ids), stat, None,
                        {} if boots is None else boots, n_resamples, seed, labels())
    return fam.differences[0]


# ---------------------------------------------------------------- the board
@dataclass
class GroupInfo:
    """One comparability group: who judged its runs (each suite's ``judged``), their dataset and user simulator,
    whether they are smoke tests, a paper's reported rows or incomplete (never ranked), and its models."""
    judges: dict[str, Any]
    dataset: DatasetUsed
    dataset_id: str
    smoke: bool
    simulator: Simulator
    reported: bool
    incomplete: bool
    models: list[str] = field(default_factory=list)

    @property
    def ranked(self) -> bool:
        return not (self.smoke or self.incomplete)


@dataclass(frozen=True)
class BoardSettings:
    """What the board's intervals and verdicts stand on: the bootstrap's resamples and seed, its unit, the pairs'
    adjustment and the rank intervals' method."""
    n_resamples: int = N_RESAMPLES
    seed: int = SEED
    unit: str = "query (paired over the queries every model of a group shares)"
    pairs_method: str = METHOD
    pairs_method_text: str = METHOD_TEXT
    ranks: str = RANK_TEXT


@dataclass
class Board:
    runs: list[RunEntry]
    columns: list[Column]
    cells: list[list[Cell]]                      # [run][column]
    groups: list[str]                            # comparability group letter per run
    group_info: dict[str, GroupInfo]             # letter -> its group
    warnings: list[str]
    differences: dict[str, list[Difference]]     # column key -> pairs within a group
    spearman: dict[str, dict[str, RankCorrelation]]     # group -> correlated key (a condition) -> its correlation
    settings: BoardSettings
    families: dict[str, dict[str, ColumnFamily]] = None    # type: ignore[assignment]  # column key -> group -> family

    def __post_init__(self) -> None:
        if self.families is None:
            self.families = {}

    @property
    def ranks(self) -> dict[str, dict[int, tuple[int, int]]]:
        """Column key -> run index -> its 95% rank interval within its group (1 = best; ranked groups only)."""
        return {key: {i: r for fam in groups.values() for i, r in fam.ranks.items()}
                for key, groups in self.families.items() if any(f.ranks for f in groups.values())}

    def point_ranks(self) -> dict[str, dict[int, int]]:
        """Column key -> run index -> its rank by value within its group (1 = best; ties share the better rank),
        in the ranked groups: the rank ``ranks``' intervals stand beside."""
        better = {c.key: c.better for c in self.columns}
        out: dict[str, dict[int, int]] = {}
        for key, groups in self.families.items():
            for fam in (f for f in groups.values() if f.ranks):
                sign = 1.0 if better[key] == "higher" else -1.0
                for k, i in enumerate(fam.runs):
                    out.setdefault(key, {})[i] = 1 + int((sign * fam.points > sign * fam.points[k]).sum())
        return out

    def family(self, key: str, group: str) -> Optional[ColumnFamily]:
        return (self.families.get(key) or {}).get(group)

    def family_notes(self) -> list[str]:
        """What the adjusted verdicts stand on: per column and group, the pairs, the queries and the method."""
        labels_ = {c.key: f"{c.group} {c.label}" for c in self.columns}
        return [family_note(fam, labels_.get(key, key)) for key, groups in self.families.items()
                for fam in groups.values() if fam.n_pairs]


def bootstrap_settings(runs: Sequence[RunEntry]) -> tuple[int, int]:
    """The first run's bootstrap resamples and seed (the defaults where it records none)."""
    basis = run_basis(runs[0].results) if runs else RunBasis()
    return (int(basis.n_resamples or N_RESAMPLES), int(basis.seed if basis.seed is not None else SEED))


def _group_of(e: RunEntry) -> GroupInfo:
    status = e.results.status()
    return GroupInfo(run_judges(e), e.dataset_used(), e.dataset_id(), "smoke" in status, e.simulator(),
                     REPORTED in status, "incomplete" in status)


def _group_key(g: GroupInfo) -> str:
    # a smoke run measures nothing: it is never in a group with measured runs, so never ranked beside them
    # nor is an incomplete run: its numbers stand on part of its plan (bounds span the rest), so it is not ranked
    return json.dumps([g.judges, g.dataset_id, g.smoke, g.simulator.to_json(), g.reported,
                       *(("incomplete",) if g.incomplete else ())], sort_keys=True)


def comparability(runs: Sequence[RunEntry]) -> tuple[list[str], dict[str, GroupInfo], list[str]]:
    """A group letter per run (same judges, prompt versions, user simulator and dataset), the groups, and the page's warnings."""
    own = [_group_of(e) for e in runs]
    keys = [_group_key(g) for g in own]
    letters = {k: chr(ord("A") + i) for i, k in enumerate(dict.fromkeys(keys))}
    groups = [letters[k] for k in keys]
    info = {letters[k]: dataclasses.replace(g, models=[x.label for x, gg in zip(runs, groups) if gg == letters[k]])
            for k, g in zip(keys, own)}
    warnings = [f"{e.label}: {line}" for e in runs for line in e.results.status_lines()
                if REPORTED not in e.results.status()]
    warnings += list(dict.fromkeys(f"Rows reported in a paper, not measured here: {' '.join(e.results.notes[:2])}"
                                   for e in runs if REPORTED in e.results.status()))
    if any(i.smoke for i in info.values()):
        warnings.append("Smoke-test runs sit in a group of their own and are not ranked: their numbers measure "
                        "nothing.")
    if any(i.incomplete for i in info.values()):
        warnings.append("Incomplete runs sit in a group of their own and are not ranked: their numbers stand on "
                        "part of their plan (the bounds span the conversations and judgments still missing).")
    if len({json.dumps(run_judges(e), sort_keys=True) for e in runs}) > 1:
        warnings.append("These runs were judged by different judges (models or prompt versions): their numbers "
                        "are not comparable, so they are ranked and compared only within their group.")
    simulators = sorted({str(e.simulator().model) for e in runs})
    if len({e.simulator() for e in runs}) > 1:
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
            sums[id(rule)] = [QuerySums(e.scores, rule, run_basis(e.results).plans) for e in runs]
        return sums[id(rule)]

    members = {g: [i for i, x in enumerate(groups) if x == g] for g in dict.fromkeys(groups) if not info[g].reported}
    families: dict[str, dict[str, ColumnFamily]] = {}
    for col in (c for c in columns if c.stat is not None):
        families[col.key] = {g: column_family(col.key, g, [read(units[col.key])[i] for i in idx], idx, col.stat,
                                              col.better if info[g].ranked else None, boots, n, seed, labels())
                             for g, idx in members.items()}
    differences = {key: [d for fam in fams.values() for d in fam.differences] for key, fams in families.items()}
    return Board(runs, columns, by_run, groups, info, warnings, differences, rank_correlations(runs, groups),
                 BoardSettings(n, seed), families)


def rank_correlations(runs: Sequence[RunEntry], groups: Sequence[str]) -> dict[str, dict[str, RankCorrelation]]:
    """Per comparability group, the Spearman correlation across its models of each (x, y) pair the suites'
    leaderboards name (``correlated``; a run lacking one counts as None)."""
    sources = [b.correlated for b in suite_leaderboards() if b.correlated is not None]
    pairs = [{k: xy for source in sources for k, xy in source(e.results).items()} for e in runs]
    keys = list(dict.fromkeys(k for p in pairs for k in p))

    def rho(idx: list[int], key: str) -> RankCorrelation:
        xy = [pairs[i].get(key, (None, None)) for i in idx]
        return rank_correlation([x for x, _ in xy], [y for _, y in xy])

    return {g: {k: rho(idx, k) for k in keys}
            for g in dict.fromkeys(groups) for idx in [[i for i, x in enumerate(groups) if x == g]]}


# ---------------------------------------------------------------- leaderboard.jsonl
def jsonl_rows(board: Board, out: Path) -> list[dict[str, Any]]:
    """One row per model: what pins its numbers (dataset, judges, prompts), every column's cell, and on the ranked
    columns its rank within its group with the 95% rank interval beside it (``rank``, ``rank_ci95``: column ->
    [lo, hi]); every row has every column (null where a run lacks it), so a dataset of these rows has one schema. Paths are relative
    to ``out``, the leaderboard's folder (carryon_eval.run.paths)."""
    rows = []
    point_ranks = board.point_ranks()
    for index, (entry, group, cells) in enumerate(zip(board.runs, board.groups, board.cells)):
        meta, used = entry.meta, entry.dataset_used()
        dataset = dataclasses.replace(used, source=shared_path(local_path(used.source, entry.folder), out)).to_json()
        rows.append({
            "model": entry.label, "target_model": entry.results.model, "run": shared_path(entry.folder, out),
            "comparability_group": group, "status": entry.results.status(), "dataset": dataset,
            "judges": run_judges(entry), "simulator": entry.simulator().to_json(),
            "prompts": dict(meta.prompts), "subset": meta.subset, "limit": meta.limit,
            "carryonbench_version": meta.carryonbench_version, "report_by": entry.results.generated.by,
            "n_queries": run_basis(entry.results).n_queries,
            "metrics": {col.key: cell.to_json() for col, cell in zip(board.columns, cells)},
            "rank": {key: r for key, ranks in point_ranks.items() if (r := ranks.get(index)) is not None},
            "rank_ci95": {key: list(r) for key, ranks in board.ranks.items() if (r := ranks.get(index)) is not None},
            **({"notes": list(entry.results.notes)} if REPORTED in entry.results.status() else {}),
        })
    return rows
