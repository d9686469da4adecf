"""Spearman's p-value without scipy: Student's t in closed form gives scipy's numbers."""
from __future__ import annotations

import numpy as np
import pytest

from carryon_eval.metrics.stats import spearman, t_two_sided


def test_the_closed_form_t_distribution_is_scipys() -> None:
    stats = pytest.importorskip("scipy.stats", reason="scipy (the test extra) is the reference here")
    for df in range(1, 40):
        for t in (0.0, 0.05, 0.7, 1.3, 2.1, 3.5, 8.0, 40.0):
            assert t_two_sided(t, df) == pytest.approx(2 * stats.t.sf(t, df), abs=1e-12)
            assert t_two_sided(-t, df) == t_two_sided(t, df)


def test_spearman_p_is_scipys_for_every_board_size() -> None:
    stats = pytest.importorskip("scipy.stats", reason="scipy (the test extra) is the reference here")
    rng = np.random.default_rng(7)
    for n in range(3, 20):
        x = rng.normal(size=n)
        y = 0.4 * x + rng.normal(size=n)
        got = spearman(list(x), list(y))
        want = stats.spearmanr(x, y)
        assert got["rho"] == pytest.approx(want.statistic) and got["p"] == pytest.approx(want.pvalue, rel=1e-9)
    assert spearman([1, 2, 3], [3, 2, 1])["p"] == 0.0 and spearman([1, 2], [1, 2])["p"] is None
