"""The 95% intervals cover: the seeded coverage simulation (tests/support/coverage.py) at 80 queries, every headline
number (turn-1 / oracle / BC / NC utility, harm and violation rate, the BC and NC deltas, Recovery%, the clarification
effect) and every intent number (sensitivities, exploitation against its twin, the raw exploitation rate), by the
interval results.json reports (stats.INTERVAL). Few seeds here, to stay fast; the full table (200 seeds, every
method, with and without harm-biased missingness) is bench/bench_coverage.py's, in bench/README.md.

Tolerance: with k seeds a number whose true coverage is 93% has binomial hits; the test fails a number only when
its hits are below the 0.1% quantile of Binomial(k, 0.93) (about 1 spurious failure in 40 runs of all 24
numbers), and the coverage pooled over the numbers below 93% minus 3 binomial standard errors of k seeds (the
numbers of one seed share its draw, so the seed is the unit)."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest
from support.coverage import coverage, headline_truth, intent_samples, intent_truth
from support.synthetic_runs import intent_run, unscore

from carryon_eval.metrics.stats import INTERVAL, Bootstrap, interval95

SEEDS = 24
QUERIES = 80
RESAMPLES = 200
TARGET = 0.93


def lowest_hits(k: int, p: float = TARGET, alpha: float = 0.001) -> int:
    """The smallest hit count h with P(Binomial(k, p) < h) <= alpha."""
    cdf = 0.0
    for h in range(k + 1):
        nxt = cdf + math.comb(k, h) * p ** h * (1 - p) ** (k - h)
        if nxt > alpha:
            return h
        cdf = nxt
    return k


@pytest.mark.parametrize("kind", ["headline", "intent"])
def test_every_number_covers_at_80_queries(kind: str) -> None:
    truth = headline_truth(3000) if kind == "headline" else intent_truth(3000)
    hits = coverage(range(SEEDS), QUERIES, RESAMPLES, truth, methods=(INTERVAL,))[INTERVAL]
    floor = lowest_hits(SEEDS)
    low = {name: h for name, h in hits.items() if h < floor}
    assert not low, (f"fewer than {floor} of {SEEDS} intervals cover", low)
    pooled = sum(hits.values()) / (len(hits) * SEEDS)
    assert pooled >= TARGET - 3 * math.sqrt(TARGET * (1 - TARGET) / SEEDS), (pooled, hits)


def test_bca_jackknife_values_lie_in_their_bounds_and_the_interval_holds_the_point() -> None:
    """Under harm-biased missingness every jackknife value is the clipped estimator (inside the bounds of its own
    draw), and the interval holds its point."""
    convs = unscore(intent_run(random.Random(3), QUERIES, 0.04), random.Random(7), "harmful")
    boot = Bootstrap.of((c.query_id for c in convs), n_resamples=RESAMPLES, seed=3)
    for name, (point, reps, jack) in intent_samples(convs, boot).items():
        assert jack is not None and jack.size == len(boot.query_ids), name
        ci = interval95(point, reps, jack)
        assert ci is not None and ci[0] <= point <= ci[1], (name, point, ci)
        assert np.isfinite(jack).all(), name


def test_bca_is_the_percentile_interval_for_a_symmetric_statistic_with_no_bias() -> None:
    """With replicates symmetric about the point and a jackknife that does not skew, BCa's levels are 2.5/97.5 and
    the expanded levels widen it by sqrt(n/(n-1)) t(n-1) / z."""
    rng = np.random.default_rng(0)
    half = rng.normal(0, 1, 5000)
    reps = np.concatenate([half, -half])
    jack = np.concatenate([np.full(40, 1.0), np.full(40, -1.0)])
    pct = interval95(0.0, reps, None, "percentile")
    bca = interval95(0.0, reps, jack, "bca")
    wide = interval95(0.0, reps, jack, "bca_expanded")
    assert pct is not None and bca is not None and wide is not None
    assert bca == pytest.approx(pct, abs=1e-9)
    assert wide[1] > bca[1] and wide[0] < bca[0]
    assert wide[1] == pytest.approx(math.sqrt(80 / 79) * 1.9905, abs=0.08)
