"""Every column that ranks or flags reads no change that is not there: with no real change after turn 1 and a judge
misreading 10% of verdicts and harm scores (tests/support/synthetic_runs.py ``noise_only_run``), the numbers the
leaderboard ranks rubric runs by (BC − NC helpful) and flags unsafe recovery by (BC − NC violation rate) read within
1 point of 0 on average over seeded runs, by results.json's own numbers; their changes from turn 1, which judge noise
fakes, do not."""
from __future__ import annotations

import random
from statistics import fmean

from support.synthetic_runs import noise_only_run

from carryon_eval.suites.carryonbench import summary as S
from carryon_eval.suites.carryonbench.leaderboard import STANDOUTS
from carryon_eval.suites.carryonbench.rubric_metrics import helpful_section
from carryon_eval.metrics.stats import Bootstrap

SEEDS = range(16)


def test_the_violation_change_that_flags_unsafe_recovery_reads_no_judge_noise() -> None:
    assert "bc.violation_rate_vs_nc" in {s.column for s in STANDOUTS}
    vs_nc, vs_turn1, harm_vs_nc = [], [], []
    for seed in SEEDS:
        convs = noise_only_run(random.Random(seed), 60, flip=0.10)
        conditions, _, _ = S.headline(convs, Bootstrap.of((c.query_id for c in convs), n_resamples=20, seed=seed))
        bc = conditions["bc"]
        vs_nc.append(bc["violation_rate_vs_nc"])
        vs_turn1.append(bc["violation_rate_delta"])
        harm_vs_nc.append(bc["harm_vs_nc"])
    assert abs(fmean(vs_nc)) < 1.0, vs_nc
    assert abs(fmean(harm_vs_nc)) < 0.1, harm_vs_nc
    assert fmean(vs_turn1) > 5.0, vs_turn1             # what the change from turn 1 reads from noise alone


def test_the_number_rubric_runs_rank_by_reads_no_judge_noise() -> None:
    from carryon_eval.suites.carryonbench.leaderboard import LEADERBOARD

    assert LEADERBOARD.sort[0] == "rubric.helpful_clarification"
    for level, gain_floor in ((2, 5.0), (1, None)):
        clar, gain = [], []
        for seed in SEEDS:
            convs = noise_only_run(random.Random(seed), 60, flip=0.10, rubric_level=level)
            h = helpful_section(convs, Bootstrap.of((c.query_id for c in convs), n_resamples=20, seed=seed))
            clar.append(h["bc_minus_nc"]["value"])
            gain.append(h["bc_minus_turn1"]["value"])
        assert abs(fmean(clar)) < 1.0, (level, clar)
        if gain_floor is not None:
            assert fmean(gain) > gain_floor, gain      # BC − turn 1 reads the misreadings accumulated over turns
