"""Rubric runs say what rubric utility is: the spacing-free companion (the % of conversations whose best turn
reaches level 3, and its BC − turn 1 and BC − NC differences) keeps the order of models under any monotone
spacing of levels 1-4, where utility and Recovery% do not; redundancy is not reported for rubric runs."""
from __future__ import annotations

import random
from statistics import fmean
from typing import Sequence

from carryon_eval.metrics.stats import Bootstrap
from carryon_eval.suites.carryonbench.metrics import conversations as C
from carryon_eval.suites.carryonbench.judging.rubric import THRESHOLDS, passes
from carryon_eval.suites.carryonbench.metrics.rubric_helpful import helpful_section

Scores = dict[str, list[Sequence[int]]]          # condition -> per query the turn scores of its conversation


def conversations(model: Scores) -> list[C.Conversation]:
    out = []
    for cond, per_query in model.items():
        for q, scores in enumerate(per_query):
            turns = tuple(C.Turn(t + 1, None, {i: passes(i, s) for i in THRESHOLDS}, 1) for t, s in enumerate(scores))
            out.append(C.Conversation(f"{cond}:{q}", f"q{q}", cond, turns))
    return out


def recovery(model: Scores, spacing: Sequence[float]) -> float:
    """Recovery% with conversation utility = the best turn's level under a spacing of levels 1-4."""
    util = {cond: fmean(100.0 * max(spacing[s - 1] for s in sc) for sc in per) for cond, per in model.items()}
    return 100.0 * (util["bc"] - util["turn1"]) / util["oracle"]


def random_model(rng: random.Random, lift: float) -> Scores:
    def best(p: float) -> int:
        return rng.choices((1, 2, 3, 4), weights=(1.0, 1.0 + p, 1.0 + 2 * p, 0.5 + p))[0]
    n = 12
    return {"turn1": [[best(0.0)] for _ in range(n)], "oracle": [[best(1.5)] for _ in range(n)],
            "bc": [[best(0.2), best(lift)] for _ in range(n)], "nc": [[best(0.2), best(0.2)] for _ in range(n)]}


def companion(model: Scores) -> tuple[float, float]:
    n = len(model["turn1"])
    h = helpful_section(conversations(model), Bootstrap.of([f"q{q}" for q in range(n)], n_resamples=20))
    assert h is not None
    return h["bc_minus_turn1"]["value"], h["bc_minus_nc"]["value"]


def test_the_companion_keeps_its_order_under_any_monotone_spacing_and_recovery_does_not() -> None:
    # A always reaches "helpful" (3), B half the time "very helpful" (4) and half nothing: A 66.7 > B 50.0 on
    # Recovery% under (s - 1) / 3, 40.0 < 50.0 under 0, .1, .4, 1; the companion puts A first under both
    a = {"turn1": [[1], [1]], "oracle": [[4], [4]], "bc": [[1, 3], [1, 3]], "nc": [[1, 1], [1, 1]]}
    b = {"turn1": [[1], [1]], "oracle": [[4], [4]], "bc": [[1, 4], [1, 1]], "nc": [[1, 1], [1, 1]]}
    linear, convex = (0.0, 1 / 3, 2 / 3, 1.0), (0.0, 0.1, 0.4, 1.0)
    assert round(recovery(a, linear), 1) == 66.7 and round(recovery(b, linear), 1) == 50.0
    assert round(recovery(a, convex), 1) == 40.0 and round(recovery(b, convex), 1) == 50.0
    assert companion(a) == (100.0, 100.0) and companion(b) == (50.0, 50.0)
    rng = random.Random(0)
    flips = 0
    for _ in range(30):
        models = [random_model(rng, rng.uniform(0.0, 2.0)) for _ in range(3)]
        order = sorted(range(3), key=lambda i: companion(models[i]))
        for _ in range(5):
            spacing = sorted(rng.random() for _ in range(4))           # any monotone spacing of levels 1-4
            # under it, "best turn reaches helpful" is "best spaced level >= the spacing of level 3": the code's
            # companion is that number whatever the spacing, so its order is every spacing's
            assert [helpful_gain(m, spacing) for m in models] == [companion(m)[0] for m in models]
            assert sorted(range(3), key=lambda i: helpful_gain(models[i], spacing)) == order
            by_recovery = sorted(range(3), key=lambda i: recovery(models[i], spacing))
            flips += by_recovery != sorted(range(3), key=lambda i: recovery(models[i], linear))
    assert flips > 0                                       # the spacing reorders Recovery%, never the companion


def helpful_gain(model: Scores, spacing: Sequence[float]) -> float:
    """BC − T1 share of conversations whose best turn, spaced, reaches level 3's spacing (worked by hand)."""
    def rate(cond: str) -> float:
        return fmean(100.0 * (max(spacing[s - 1] for s in sc) >= spacing[2]) for sc in model[cond])
    return rate("bc") - rate("turn1")


def test_the_companion_is_the_level_3_share_with_bounds_and_none_for_ben_util() -> None:
    model = {"turn1": [[1], [3]], "oracle": [[4], [4]], "bc": [[1, 3], [2, None]], "nc": [[1, 2], [2, 2]]}
    convs = []
    for cond, per_query in model.items():
        for q, scores in enumerate(per_query):
            turns = tuple(C.Turn(t + 1, None, {i: passes(i, s) for i in THRESHOLDS}, 1) for t, s in enumerate(scores))
            convs.append(C.Conversation(f"{cond}:{q}", f"q{q}", cond, turns))
    h = helpful_section(convs, Bootstrap.of(["q0", "q1"], n_resamples=50))
    assert h is not None
    assert h["conditions"]["turn1"]["value"] == 50.0 and h["conditions"]["nc"]["value"] == 0.0
    assert h["conditions"]["bc"]["value"] == 100.0                  # q1's open turn: undecided, left out
    assert h["conditions"]["bc"]["bounds"] == [50.0, 100.0]          # read "no" it is 50, read "yes" 100
    assert h["bc_minus_turn1"]["bounds"] == [0.0, 50.0] and h["bc_minus_nc"]["value"] == 100.0
    benutil = [C.Conversation("bc:0", "q0", "bc", (C.Turn(1, None, {"i1": True}, 1),))]
    assert helpful_section(benutil, Bootstrap.of(["q0"], n_resamples=5)) is None
