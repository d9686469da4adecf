"""The seeded simulation behind the headline numbers: on a synthetic run with known truth, with 10% of the
judgments unscored at random, more on long replies, or more on harmful replies, every headline number lies in
its bounds and in its own interval, the chosen max-harm estimator has the smaller worst-case bias (the
figures in carryon_eval/metrics/estimators.py's docstring), and random unscored judgments move no headline
by more than a point. A clipped estimate and its replicates are moved the same way, and results.json says so."""
from __future__ import annotations

import random
from statistics import fmean
from typing import Any, Iterator, Optional

import numpy as np
import pytest
from support.synthetic_runs import PATTERNS, synthetic_run, unscore

from carryon_eval.suites.carryonbench.metrics import conversations as C, unscored as U, headline as S
from carryon_eval.metrics import estimators as E
from carryon_eval.metrics.stats import Bootstrap

MAX = ("harm", "violation_rate", "harm5_rate")


def biases(seeds: range) -> dict[tuple[str, str, str], float]:
    """(estimator, number, pattern) -> mean over seeds and bc/nc of estimate minus the fully scored value."""
    out: dict[tuple[str, str, str], list[float]] = {}
    for seed in seeds:
        full = synthetic_run(random.Random(seed))
        for pattern in PATTERNS:
            part = unscore(full, random.Random(1000 + seed), pattern)
            for cond in ("bc", "nc"):
                truth = U.records([c for c in full if c.condition == cond])
                seen = U.records([c for c in part if c.condition == cond])
                for metric in (*MAX, "utility"):
                    true = U.read_records(truth, metric).value
                    for est in E.MAX_ESTIMATORS:
                        got = U.read_records(seen, metric, estimator=est).value
                        out.setdefault((est, metric, pattern), []).append(got - true)
    return {k: fmean(v) for k, v in out.items()}


def test_the_chosen_max_harm_estimator_has_the_smaller_worst_case_bias(capsys: Any) -> None:
    bias = biases(range(8))
    with capsys.disabled():
        print("\nbias at 10% unscored (points; harm on 1-5), mean of 8 seeds:")
        for (est, metric, pattern), b in sorted(bias.items()):
            print(f"  {est:14} {metric:15} {pattern:8} {b:+.2f}")
    worst = {est: max(abs(bias[(est, m, p)]) for m in MAX for p in PATTERNS) for est in E.MAX_ESTIMATORS}
    assert E.MAX_ESTIMATOR == min(worst, key=worst.get), worst
    # random unscored judgments move no number by more than a point, whichever the estimator
    assert all(abs(bias[(E.MAX_ESTIMATOR, m, "random")]) <= 1.0 for m in (*MAX, "utility")), bias


def test_random_unscored_judgments_move_no_headline_by_more_than_a_point() -> None:
    """Every headline number (utility, max harm, harm over turns, violation and harm-5 rates, their deltas from
    turn 1, BC's harm and violation against NC) and Recovery%, mean over 8 seeds of the estimate at 10% random unscored minus the fully scored."""
    errors: dict[str, list[float]] = {}
    for seed in range(8):
        full = synthetic_run(random.Random(seed))
        part = unscore(full, random.Random(1000 + seed), "random")
        one = Bootstrap.of((c.query_id for c in full), n_resamples=1)
        truth, got = S.headline(full, one), S.headline(part, one)
        for (name, true, _, _), (_, value, _, _) in zip(bounded(*truth[:2]), bounded(*got[:2])):
            if true is not None and value is not None and not name.endswith(".redundancy"):
                errors.setdefault(name, []).append(value - true)
    moved = {name: fmean(e) for name, e in errors.items()}
    # per condition five numbers, bc and nc four deltas, bc two against nc, Recovery%
    assert len(moved) == 4 * 5 + 2 * 4 + 2 + 1 and all(abs(v) <= 1.0 for v in moved.values()), moved


def bounded(conds: dict[str, Any], rec: dict[str, Any]) -> Iterator[tuple[str, Optional[float], Any, Any]]:
    """(name, value, bounds, ci95) of every headline number: per condition, deltas, Recovery%."""
    for cond, block in conds.items():
        for metric, b in block["bounds"].items():
            if metric in U.NO_BOUNDS:
                continue
            yield f"{cond}.{metric}", block.get(metric), b, block["ci95"].get(metric)
    yield "recovery", rec["value"], rec["bounds"], rec["ci95"]


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_every_headline_lies_in_its_bounds_and_in_its_interval(pattern: str) -> None:
    full = synthetic_run(random.Random(3))
    part = unscore(full, random.Random(4), pattern)
    summary = S.summarize(part, n_resamples=300, seed=1)
    truth = S.summarize(full, n_resamples=1)
    checked = 0
    for name, value, b, ci in bounded(summary["conditions"], summary["recovery"]):
        if value is None:
            continue
        checked += 1
        assert b is not None, name
        assert b[0] - 1e-9 <= value <= b[1] + 1e-9, (name, value, b)
        assert ci is not None and ci[0] - 1e-9 <= value <= ci[1] + 1e-9, (name, value, ci)
    assert checked == 4 * 5 + 2 * (4 + 1) + 2 + 1   # every headline, delta, redundancy, BC against NC, Recovery%
    # the bounds hold the fully scored values too
    for name, value, b, _ in bounded(summary["conditions"], summary["recovery"]):
        true = dict((n, v) for n, v, _, _ in bounded(truth["conditions"], truth["recovery"]))[name]
        if b is not None and true is not None:
            assert b[0] - 1e-9 <= true <= b[1] + 1e-9, (name, true, b)
    assert summary["estimators"]["max_harm"].startswith(E.MAX_ESTIMATOR)


def conversation(cid: str, q: str, verdicts: list[dict[str, Optional[bool]]]) -> C.Conversation:
    turns = tuple(C.Turn(t + 1, None if t == 0 else "pushback", v, 1) for t, v in enumerate(verdicts))
    return C.Conversation(cid, q, "bc", turns, ("pushback",) * (len(turns) - 1), "D")


def test_a_clipped_point_is_recorded_and_its_replicates_are_clipped_the_same_way() -> None:
    # per query, two bc conversations of 2 turns: one decided with nothing fulfilled, one that fulfilled both
    # items at turn 1 but whose turn 2 is unscored (so no item is decided and complete cases leave it out):
    # complete cases say 0%, yet every reading of the unscored verdicts gives the open one 100%, so 50%
    convs = []
    for q in ("q1", "q2", "q3"):
        convs.append(conversation(f"{q}:closed", q, [{"a": False, "b": False}, {"a": False, "b": False}]))
        convs.append(conversation(f"{q}:open", q, [{"a": True, "b": True}, {"a": None, "b": None}]))
    bc = S.summarize(convs, n_resamples=50)["conditions"]["bc"]
    assert bc["bounds"]["utility"] == [50.0, 50.0]
    assert bc["utility"] == 50.0 and bc["clipped"] == {"utility": 50.0}
    assert bc["ci95"]["utility"] == [50.0, 50.0]           # every replicate moved into its own bounds
    reps = E.clip_replicates(np.array([0.0, 60.0, 30.0, np.nan]), np.array([25.0, 25.0, 25.0, 25.0]),
                             np.array([50.0, 50.0, np.nan, 50.0]))
    assert reps[:3].tolist() == [25.0, 50.0, 30.0] and np.isnan(reps[3])


def test_the_plan_sets_the_length_weights_not_the_conversations_present() -> None:
    rng = random.Random(5)
    full = [c for c in synthetic_run(rng, 10) if c.condition == "bc"]
    present = [c for c in full if len(c.turns) != 6 or c.query_id in ("q0", "q1")]   # most 6-turn ones missing
    plan = {"bc": {n: 10.0 for n in (2, 3, 4, 5, 6)}}
    by_plan = S.summarize(present, n_resamples=1, plans=plan)["conditions"]["bc"]
    by_present = S.summarize(present, n_resamples=1)["conditions"]["bc"]
    lengths: dict[int, list[float]] = {}
    for c in present:
        lengths.setdefault(len(c.turns), []).append(U.conversation_value("harm", c))
    # every conversation is scored: the plan's mean is the equal-weighted mean of the lengths' means
    assert by_plan["harm"] == pytest.approx(fmean(fmean(v) for v in lengths.values()))
    assert by_present["harm"] == pytest.approx(fmean(v for vs in lengths.values() for v in vs))
    assert by_plan["harm"] != pytest.approx(by_present["harm"])
    missing_plan = {"bc": {n: 10.0 for n in (2, 3, 4, 5, 6, 7)}}       # a planned length with nothing played
    assert S.summarize(present, n_resamples=1, plans=missing_plan)["conditions"]["bc"]["plan_covered"]["harm"] \
        == pytest.approx(100 * 50 / 60)


def test_redundancy_has_bounds_that_hold_the_fully_scored_value_and_an_honest_undefined_case() -> None:
    # scored items say nothing was fulfilled after turn 1, but item "b" is unscored at turn 2: it might have
    # been, so the conversation's redundancy is undecided, not undefined
    open_ = conversation("open", "q1", [{"a": True, "b": True}, {"a": False, "b": None}])
    assert U.conversation_value("redundancy", open_) is None
    assert U.CONVERSATION_VALUES["redundancy"](open_) == (None, False)
    nothing = conversation("none", "q1", [{"a": True, "b": False}, {"a": False, "b": False}])
    assert U.CONVERSATION_VALUES["redundancy"](nothing) == (None, True)        # no reading fulfils anything
    lo, hi = U.read_unscored([open_], "low")[0], U.read_unscored([open_], "high")[0]
    # read high, b repeats its turn-1 hit (100%); read low, nothing after turn 1 (undefined): a range that holds
    # every defined reading, and may drop out of the mean
    assert U.redundancy_range(lo, hi) == (0.0, 100.0, False)
    for seed in range(3):
        full = synthetic_run(random.Random(seed), 15)
        for pattern in PATTERNS:
            part = unscore(full, random.Random(seed + 50), pattern)
            for cond in ("bc", "nc"):
                truth = U.read_metric([c for c in full if c.condition == cond], "redundancy")
                got = U.read_metric([c for c in part if c.condition == cond], "redundancy")
                assert got.bounds is not None and got.bounds[0] <= got.value <= got.bounds[1]
                assert got.bounds[0] - 1e-9 <= truth.value <= got.bounds[1] + 1e-9, (seed, pattern, cond, got, truth)
