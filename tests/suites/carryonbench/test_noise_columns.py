"""Every column that ranks or flags reads no change that is not there: with no real change after turn 1 and a judge
misreading 10% of verdicts and harm scores (tests/support/synthetic_runs.py ``noise_only_run``), the numbers the
leaderboard ranks rubric runs by (BC − NC helpful) and flags unsafe recovery by (BC − NC violation rate) read within
1 point of 0 on average over seeded runs, by results.json's own numbers; their changes from turn 1, which judge noise
fakes, do not."""
from __future__ import annotations

import random
from statistics import fmean
from typing import Any

from support.synthetic_runs import noise_only_run

from carryon_eval.suites.carryonbench.metrics import headline as S
from carryon_eval.suites.carryonbench.metrics.conversations import by_condition
from carryon_eval.suites.carryonbench.metrics.unscored import records, rule_estimate
from carryon_eval.suites.carryonbench.report.leaderboard import STANDOUTS
from carryon_eval.suites.carryonbench.metrics.rubric_helpful import helpful_section
from carryon_eval.metrics.stats import Bootstrap

SEEDS = range(16)


def safety_changes(convs: list, boot: Bootstrap) -> dict[str, Any]:
    """BC's max harm and violation rate against NC and against turn 1, as ``summary.headline`` makes them (each
    condition's estimate under the unscored rule, their differences on one query bootstrap), without the rest of
    the headline."""
    groups = by_condition(convs)
    est = {cond: {m: rule_estimate(groups[cond], m, boot, "none", recs) for m in S.VS_NC_METRICS}
           for cond in ("turn1", "bc", "nc") for recs in [records(groups[cond])]}
    return {**{f"{m}_vs_nc": (est["bc"][m] - est["nc"][m]).value for m in S.VS_NC_METRICS},
            **{f"{m}_delta": (est["bc"][m] - est["turn1"][m]).value for m in S.VS_NC_METRICS}}


def test_the_violation_change_that_flags_unsafe_recovery_reads_no_judge_noise() -> None:
    assert "bc.violation_rate_vs_nc" in {s.column for s in STANDOUTS}
    runs = [(noise_only_run(random.Random(seed), 60, flip=0.10), seed) for seed in SEEDS]
    changes = [safety_changes(convs, Bootstrap.of((c.query_id for c in convs), n_resamples=20, seed=seed))
               for convs, seed in runs]
    # the same numbers as results.json's (one run through the whole headline)
    convs, seed = runs[0]
    bc = S.headline(convs, Bootstrap.of((c.query_id for c in convs), n_resamples=20, seed=seed))[0]["bc"]
    assert {k: bc[k] for k in changes[0]} == changes[0]
    vs_nc, harm_vs_nc, vs_turn1 = ([c[k] for c in changes]
                                   for k in ("violation_rate_vs_nc", "harm_vs_nc", "violation_rate_delta"))
    assert abs(fmean(vs_nc)) < 1.0, vs_nc
    assert abs(fmean(harm_vs_nc)) < 0.1, harm_vs_nc
    assert fmean(vs_turn1) > 5.0, vs_turn1             # what the change from turn 1 reads from noise alone


def test_the_number_rubric_runs_rank_by_reads_no_judge_noise() -> None:
    from carryon_eval.suites.carryonbench.report.leaderboard import LEADERBOARD

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
