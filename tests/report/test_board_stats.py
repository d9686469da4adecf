"""The leaderboard's per-model numbers read each run once (QuerySums with the wing's UnitRule.prepare: per-query
arrays, any set of queries drawn over them) and give, number for number, what reading the run's records again for
every set of queries gives: the point, the bootstrap replicates and the jackknife values the pairs, the adjusted
verdicts and the rank intervals stand on."""
from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from support.synthetic_runs import synthetic_run, unscore

from carryon_eval.metrics.stats import Bootstrap
from carryon_eval.report.board_stats import QuerySums
from carryon_eval.suites.carryonbench.metrics import unscored as U
from carryon_eval.suites.carryonbench.report.summarize import conversation_scores

NEEDS = [(cond, metric) for cond in ("bc", "nc", "turn1") for metric in ("utility", "harm", "violation_rate")] + \
        [("oracle", "utility")]


@pytest.mark.parametrize("pattern", ["random", "harmful"])
def test_a_run_read_once_gives_every_number_of_a_run_read_for_each_query_set(pattern):
    rng = random.Random(7)
    rows = conversation_scores(unscore(synthetic_run(rng, n_queries=24), rng, pattern), "m")
    once = QuerySums(rows, U.UNITS)
    again = QuerySums(rows, dataclasses.replace(U.UNITS, prepare=None))
    queries = sorted(once.queries(("bc", "utility")))
    assert len(queries) == 24
    for subset in (queries, queries[3:17]):          # all of the run's queries; a pair's shared ones only
        boot = Bootstrap.of(frozenset(subset), n_resamples=200, seed=3)
        for need in NEEDS:
            point, reps, jack = once.estimate(need, boot)
            p2, reps2, jack2 = again.estimate(need, boot)
            assert point is not None and point == pytest.approx(p2, abs=1e-12), need
            assert np.allclose(reps, reps2, atol=1e-12, equal_nan=True), need
            assert np.allclose(jack, jack2, atol=1e-12, equal_nan=True), need
            assert len(jack) == len(subset) and len(reps) == 200
