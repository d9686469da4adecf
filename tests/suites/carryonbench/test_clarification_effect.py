"""The clarification effect (BC minus NC utility, same queries and lengths) against judge noise: a seeded
simulation with no real change after turn 1 and a judge that misreads 5-10% of the item verdicts
(tests/support/synthetic_runs.py ``noise_only_run``). Recovery% reads recovery that is not there; the
clarification effect stays within its interval of 0."""
from __future__ import annotations

import random

from support.synthetic_runs import noise_only_run

from carryon_eval.metrics.stats import Bootstrap
from carryon_eval.suites.carryonbench.metrics import headline as S


def test_judge_noise_reads_as_recovery_but_not_as_clarification_effect() -> None:
    seeds = range(24)
    covered, recoveries = 0, []
    for seed in seeds:
        rng = random.Random(seed)
        convs = noise_only_run(rng, 60, flip=0.05 + 0.05 * rng.random())
        _, rec, effect = S.headline(convs, Bootstrap.of((c.query_id for c in convs), n_resamples=200, seed=seed))
        lo, hi = effect["ci95"]
        assert lo <= effect["value"] <= hi and effect["bounds"] == [effect["value"]] * 2
        covered += lo <= 0.0 <= hi
        recoveries.append(rec["value"])
        assert effect["formula"] == S.CLARIFICATION_FORMULA and effect["meaning"] == S.CLARIFICATION_MEANING
    assert covered >= 0.9 * len(seeds), covered
    assert min(recoveries) > 10.0, recoveries


def test_the_clarification_effect_is_bc_minus_nc_utility_with_difference_bounds() -> None:
    from support.synthetic_runs import synthetic_run, unscore

    full = synthetic_run(random.Random(2), 20)
    part = unscore(full, random.Random(3), "random")
    out = S.summarize(part, n_resamples=50)
    bc, nc, effect = out["conditions"]["bc"], out["conditions"]["nc"], out["clarification_effect"]
    assert effect["value"] == bc["utility"] - nc["utility"]
    assert effect["bounds"] == [bc["bounds"]["utility"][0] - nc["bounds"]["utility"][1],
                                bc["bounds"]["utility"][1] - nc["bounds"]["utility"][0]]
    truth = S.summarize(full, n_resamples=1)["clarification_effect"]["value"]
    assert effect["bounds"][0] <= truth <= effect["bounds"][1]
    empty = S.summarize([c for c in part if c.condition != "nc"], n_resamples=20)["clarification_effect"]
    assert empty["value"] is None and empty["reason"] == "NC utility not available"
