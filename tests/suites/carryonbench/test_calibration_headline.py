"""Calibration at the level people read: on a sample of whole queries, the grouped-minus-per-item difference
of each headline utility number, with its interval, against a simulated truth (the difference on the whole run).
Two grouped judges as in the field: one that flips 5% of the item verdicts, one that says "no" more often. Reply
utility (what calibration compared before) moves little and, for the first, not as the headline does; the
headline differences on the sample cover the whole run's."""
from __future__ import annotations

import random
from dataclasses import replace
from typing import Callable

import pytest
from support.synthetic_runs import synthetic_run

from carryon_eval.metrics.stats import Bootstrap
from carryon_eval.suites.carryonbench.judging.judgments import UtilityJudgment
from carryon_eval.suites.carryonbench.metrics import conversations as C
from carryon_eval.suites.carryonbench.metrics import headline as S
from carryon_eval.suites.carryonbench.metrics.calibration import HEADLINE_DIFFERENCES, calibration, headline_differences

Judge = Callable[[bool, random.Random], bool]
JUDGES: dict[str, Judge] = {
    "flips 5%": lambda v, rng: v != (rng.random() < 0.05),
    "says no more often": lambda v, rng: v and rng.random() >= 0.2,
}


def grouped(convs: list[C.Conversation], judge: Judge, rng: random.Random) -> list[C.Conversation]:
    """The same conversations with every verdict as the grouped judge reads it (the per-item one: as they are)."""
    return [replace(c, turns=tuple(replace(t, verdicts={k: judge(bool(v), rng) for k, v in t.verdicts.items()})
                                   for t in c.turns)) for c in convs]


def whole_run_difference(per_item: list[C.Conversation], group: list[C.Conversation]) -> dict[str, float]:
    """The truth: grouped minus per-item headline numbers on the whole run."""
    one = Bootstrap.of((c.query_id for c in per_item), n_resamples=1)
    (a, ra, ea), (b, rb, eb) = S.headline(group, one), S.headline(per_item, one)
    out = {f"{cond}.{m}": a[cond][m] - b[cond][m] for cond in ("turn1", "oracle", "bc", "nc") for m in ("utility",)}
    out.update({f"{cond}.utility_delta": a[cond]["utility_delta"] - b[cond]["utility_delta"] for cond in ("bc", "nc")})
    out["recovery"], out["clarification_effect"] = ra["value"] - rb["value"], ea["value"] - eb["value"]
    return out


def records(convs: list[C.Conversation]) -> list[UtilityJudgment]:
    return [UtilityJudgment(c.conversation_id, t.turn, k, v, "j", "p") for c in convs for t in c.turns
            for k, v in t.verdicts.items()]


@pytest.mark.parametrize("name", list(JUDGES))
def test_calibration_headline_differences_cover_the_whole_runs(name: str) -> None:
    hits = {n: 0 for n in HEADLINE_DIFFERENCES}
    seeds = range(10)
    moved = []
    for seed in seeds:
        rng = random.Random(seed)
        per_item = synthetic_run(rng, 60)
        group = grouped(per_item, JUDGES[name], rng)
        truth = whole_run_difference(per_item, group)
        queries = sorted({c.query_id for c in per_item})
        picked = set(rng.sample(queries, len(queries) // 2))                                # whole queries
        sample_p = [c for c in per_item if c.query_id in picked]
        sample_g = [c for c in group if c.query_id in picked]
        got = headline_differences(sample_g, sample_p, n_resamples=200, seed=seed).numbers
        for n in HEADLINE_DIFFERENCES:
            lo, hi = got[n].ci95
            assert lo <= got[n].value <= hi
            hits[n] += lo <= truth[n] <= hi
        reply = calibration(records(sample_g), records(sample_p), n_resamples=50).utility_difference.value
        moved.append((reply, truth["bc.utility"], truth["nc.utility"], truth["recovery"]))
    assert all(h >= 0.9 * len(seeds) for h in hits.values()), hits
    # what calibration measured before (reply utility) is not what the headline moves by
    reply, bc, nc, _ = (sum(m[i] for m in moved) / len(moved) for i in range(4))
    if name == "flips 5%":
        assert bc > reply + 2.0 and nc > reply + 2.0, (reply, bc, nc)
    else:
        assert reply < 0 and bc < 0 and abs(bc - reply) > 1.0, (reply, bc, nc)
