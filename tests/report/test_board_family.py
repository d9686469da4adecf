"""Boards of many models through the leaderboard's own statistics (the wing's columns and their Stats, the family
of each column, the wing's flags), seeded and vectorised (tests/support/boards.py): chance alone marks no pair,
hands out no flag and separates no two rank intervals in more than 7% of boards of identical models; a model
truly 8 points better in BC utility at 200 queries differs from every other model and ranks [1, 1] in at least
80% of boards."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.boards import bc_gain_for, need_means, resample_counts, simulate

from carryon_eval.metrics.family import holm, rank_intervals
from carryon_eval.report.board_stats import ColumnFamily
from carryon_eval.run.results import Results
from carryon_eval.suites.carryonbench.report.leaderboard import LOCK_IN, STANDOUTS, headline_cells, standout_flags

RESAMPLES = 1000


def board_columns() -> dict[str, Any]:
    """The wing's paired columns (key -> Column) whose numbers the simulation has."""
    cols = {c.key: c for c, _ in headline_cells(Results(model="m"))}
    cols["lock_in"] = next(c for c, _ in headline_cells(Results(model="m")) if c.key == "recovery")
    cols["lock_in"] = type(cols["lock_in"])("lock_in", "BC − Oracle", "Recovery", 1, "higher", LOCK_IN)
    return {k: c for k, c in cols.items() if c.stat is not None}


COLUMNS = board_columns()


def families(board: Any, rng: np.random.Generator) -> dict[str, ColumnFamily]:
    """Every column's family on one board, as build_leaderboard makes it from each model's per-query numbers."""
    means = need_means(board, resample_counts(rng, board.n_queries, RESAMPLES))
    out = {}
    for key, col in COLUMNS.items():
        with np.errstate(invalid="ignore", divide="ignore"):
            points = np.asarray(col.stat.combine(*(means[n][0] for n in col.stat.needs)), float)
            reps = np.asarray(col.stat.combine(*(means[n][1] for n in col.stat.needs)), float).T
        out[key] = ColumnFamily.of(key, "A", list(range(board.n_models)), points, reps, board.n_queries, col.better)
    return out


def disjoint(ranks: dict[int, tuple[int, int]]) -> bool:
    return any(a[1] < b[0] for a in ranks.values() for b in ranks.values())


def test_boards_of_identical_models_mark_no_pair_flag_or_rank_by_chance() -> None:
    rng = np.random.default_rng(20261206)
    n_boards = 250
    marked = dict.fromkeys(COLUMNS, 0)
    separated = dict.fromkeys(COLUMNS, 0)
    flagged = 0
    for _ in range(n_boards):
        fams = families(simulate(rng, 14, 60, oracle_at_bc=True), rng)
        for key, fam in fams.items():
            marked[key] += bool(fam.family.differs.any())
            separated[key] += disjoint(fam.ranks)
        flags, _ = standout_flags(fams)
        flagged += bool(flags)
    assert {k: v for k, v in marked.items() if v > 0.07 * n_boards} == {}, marked
    assert {k: v for k, v in separated.items() if v > 0.07 * n_boards} == {}, separated
    assert flagged <= 0.07 * n_boards, flagged
    assert {s.column for s in STANDOUTS} <= set(COLUMNS)          # the flags' columns were among those simulated


def test_a_model_8_points_better_in_bc_utility_stands_out_at_200_queries() -> None:
    rng = np.random.default_rng(52)
    gain = [bc_gain_for(8.0)] + [0.0] * 13
    n_boards, found = 200, 0
    for _ in range(n_boards):
        board = simulate(rng, 14, 200, gain=gain, conditions=("bc",), utility_only=True)
        means = need_means(board, resample_counts(rng, 200, RESAMPLES))
        points, reps = means[("bc", "utility")]
        fam = ColumnFamily.of("bc.utility", "A", list(range(14)), points, reps.T, 200, "higher")
        found += all(fam.family.verdict(0, j) for j in range(1, 14)) and fam.ranks[0] == (1, 1)
    assert found >= 0.8 * n_boards, found


def test_rank_intervals_from_adjusted_verdicts_by_hand() -> None:
    """Three models: a clearly above b and c, b and c alike: a ranks [1, 1], b and c [2, 3]."""
    rng = np.random.default_rng(0)
    reps = np.array([10.0, 0.0, 0.1])[:, None] + rng.normal(0, 1, (3, 2000))
    fam = holm([10.0, 0.0, 0.1], reps, 100)
    assert list(fam.differs) == [True, True, False]
    assert rank_intervals(fam, "higher", 3) == [(1, 1), (2, 3), (2, 3)]
    assert rank_intervals(fam, "lower", 3) == [(3, 3), (1, 2), (1, 2)]


@pytest.mark.parametrize("m", [2, 5])
def test_holm_holds_a_constant_shift_and_ignores_undefined_pairs(m: int) -> None:
    reps = np.tile(np.arange(m, dtype=float)[:, None], (1, 50))
    fam = holm(np.arange(m, dtype=float), reps, 30)               # every replicate the same: exact differences
    assert fam.differs.all()
    reps[0] = np.nan
    fam = holm(np.arange(m, dtype=float), reps, 30)
    assert not any(d for (i, _), d in zip(fam.pairs, fam.differs) if i == 0)
