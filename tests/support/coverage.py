"""The seeded coverage simulation behind the choice of interval (carryon_eval.metrics.stats.INTERVAL): synthetic
runs of n queries (tests/support/synthetic_runs.py), every headline and intent number with its bootstrap replicates
and jackknife values by the package's own estimators, each interval method (stats.INTERVALS) on the same
replicates, and how often each covers the number's population value (a large fully scored run). Shared by
tests/suites/carryonbench/test_interval_coverage.py (few seeds) and bench/bench_coverage.py (the full table)."""
from __future__ import annotations

import random
from statistics import fmean
from typing import Callable, Optional

import numpy as np
from support.synthetic_runs import intent_run, synthetic_run, unscore

from carryon_eval.metrics.stats import INTERVALS, Bootstrap, interval95
from carryon_eval.suites.carryonbench.conditions import CONDITIONS
from carryon_eval.suites.carryonbench.metrics import conversations as C
from carryon_eval.suites.carryonbench.metrics.intent import exploitation_side, headline_side, pairs
from carryon_eval.suites.carryonbench.metrics.headline import condition_estimates, recovery_estimate
from carryon_eval.suites.carryonbench.metrics.unscored import DELTA_METRICS

Sample = tuple[Optional[float], np.ndarray, Optional[np.ndarray]]      # (point, bootstrap replicates, jackknife)
HEADLINE = ("utility", "harm", "violation_rate")
INTENT_PUSH = 0.04            # mc's extra per-turn chance that harm rises: exploitation about 2 points


def headline_samples(convs: list[C.Conversation], boot: Bootstrap) -> dict[str, Sample]:
    """Turn-1 / oracle / BC / NC utility, harm and violation rate, the BC and NC deltas, Recovery% and the
    clarification effect, as summary.headline computes them."""
    groups = C.by_condition(convs)
    ests = {cond: condition_estimates(groups[cond], boot) for cond in CONDITIONS}
    out: dict[str, Sample] = {}
    for cond in CONDITIONS:
        for m in HEADLINE:
            e = ests[cond][m]
            out[f"{cond}.{m}"] = (e.value, e.reps, e.jack)
        if cond in ("bc", "nc"):
            for m in DELTA_METRICS:
                if m in HEADLINE:
                    d = ests[cond][m] - ests["turn1"][m]
                    out[f"{cond}.{m}_delta"] = (d.value, d.reps, d.jack)
    value, _, reps, jack = recovery_estimate(ests["turn1"]["utility"], ests["oracle"]["utility"], ests["bc"]["utility"])
    out["recovery"] = (value, reps, jack)
    effect = ests["bc"]["utility"] - ests["nc"]["utility"]
    out["clarification_effect"] = (effect.value, effect.reps, effect.jack)
    return out


def intent_samples(convs: list[C.Conversation], boot: Bootstrap) -> dict[str, Sample]:
    """The intent sensitivities and exploitation (twin and raw rate), as intent.intent_section computes them."""
    paired = pairs(convs)
    bc, mc = [p[0] for p in paired], [p[1] for p in paired]
    r = boot.idx.shape[0]
    sides = {"sensitivity.utility": headline_side(bc, "utility", boot) - headline_side(mc, "utility", boot),
             "exploitation": exploitation_side(mc, boot) - exploitation_side(bc, boot),
             "exploitation_rate": exploitation_side([c for c in convs if c.condition == "mc"], boot)}
    return {name: (float(s.value[0]), s.value[1:1 + r], s.value[1 + r:]) for name, s in sides.items()}


def _mean(convs: list[C.Conversation], cond: str, f: Callable[[C.Conversation], float]) -> float:
    return fmean(f(c) for c in convs if c.condition == cond)


def _utility(c: C.Conversation) -> float:
    return C.conversation_utility(c.turns)


def _violation(c: C.Conversation) -> float:
    return 100.0 * (max(t.harm for t in c.turns) >= 4)


def _harm(c: C.Conversation) -> float:
    return float(max(t.harm for t in c.turns))


def headline_truth(n_queries: int = 20000) -> dict[str, float]:
    """The population values: plain means of a large fully scored run (every length has the same share)."""
    convs = synthetic_run(random.Random(12345), n_queries)
    fs = {"utility": _utility, "harm": _harm, "violation_rate": _violation}
    out = {f"{cond}.{m}": _mean(convs, cond, fs[m]) for cond in CONDITIONS for m in HEADLINE}
    for cond in ("bc", "nc"):
        for m in HEADLINE:
            out[f"{cond}.{m}_delta"] = out[f"{cond}.{m}"] - out[f"turn1.{m}"]
    out["recovery"] = 100.0 * (out["bc.utility"] - out["turn1.utility"]) / out["oracle.utility"]
    out["clarification_effect"] = out["bc.utility"] - out["nc.utility"]
    return out


def intent_truth(n_queries: int = 20000, push: float = INTENT_PUSH) -> dict[str, float]:
    convs = intent_run(random.Random(999), n_queries, push)

    def exploited(c: C.Conversation) -> float:
        return _violation(c) * (c.turns[0].harm < 4)
    return {"sensitivity.utility": _mean(convs, "bc", _utility) - _mean(convs, "mc", _utility),
            "exploitation": _mean(convs, "mc", exploited) - _mean(convs, "bc", exploited),
            "exploitation_rate": _mean(convs, "mc", exploited)}


def coverage(seeds: range, n_queries: int, n_resamples: int, truth: dict[str, float],
             missing: Optional[str] = None, methods: tuple[str, ...] = INTERVALS) -> dict[str, dict[str, int]]:
    """{method: {number: hits}} over ``seeds`` (each a run of n_queries, its judgments unscored by the pattern
    ``missing`` if given); asserts on the way that every interval holds its point."""
    hits = {m: {name: 0 for name in truth} for m in methods}
    for seed in seeds:
        if "exploitation" in truth:
            convs = intent_run(random.Random(seed), n_queries, INTENT_PUSH)
            sampler = intent_samples
        else:
            convs, sampler = synthetic_run(random.Random(seed), n_queries), headline_samples
        if missing:
            convs = unscore(convs, random.Random(10_000 + seed), missing)
        samples = sampler(convs, Bootstrap.of((c.query_id for c in convs), n_resamples=n_resamples, seed=seed))
        for method in methods:
            for name, (point, reps, jack) in samples.items():
                ci = interval95(point, reps, jack, method)
                assert ci is not None and ci[0] <= point <= ci[1], (method, name, point, ci)
                hits[method][name] += ci[0] <= truth[name] <= ci[1]
    return hits
