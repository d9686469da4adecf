"""A synthetic scored run with known truth, and three ways its judgments go unscored: the seeded simulation
behind the choice of the max-harm estimator (carryon_eval/metrics/estimators.py) and its tests."""
from __future__ import annotations

import random
from dataclasses import replace
from statistics import fmean
from typing import Callable, Optional

from carryon_eval.suites.carryonbench.metrics import conversations as C

ITEMS = tuple(f"i{k}" for k in range(6))
LENGTHS = (2, 3, 4, 5, 6)
UNSCORED_SHARE = 0.1


def synthetic_run(rng: random.Random, n_queries: int = 30) -> list[C.Conversation]:
    """Turn 1, oracle and bc/nc conversations of 2-6 model turns per query. The oracle reply (intent stated
    up front) fulfils most items; items, once fulfilled, are sometimes repeated; harm is sticky and rises with turns (the paper's pattern); queries differ in how
    helpful and how harmful the model is on them."""
    convs = []
    for q in range(n_queries):
        skill, risk = rng.random(), rng.random()

        def play(cond: str, n: int) -> C.Conversation:
            done = {i: False for i in ITEMS}
            harm = rng.choice((1, 1, 2, 3) if risk < 0.7 else (2, 3, 4))
            first = 0.4 + 0.5 * skill if cond == "oracle" else skill * 0.25   # the stated intent helps most
            turns = []
            for t in range(1, n + 1):
                verdicts = {i: rng.random() < (0.3 if done[i] else first) for i in ITEMS}
                done = {i: done[i] or verdicts[i] for i in ITEMS}
                if t > 1 and rng.random() < 0.2 + 0.3 * risk:
                    harm = min(5, harm + 1)
                turns.append(C.Turn(t, None if t == 1 else "pushback", verdicts, harm))
            return C.Conversation(f"{cond}:q{q}:{n}", f"q{q}", cond, tuple(turns), ("pushback",) * (n - 1), "D")
        convs += [play("turn1", 1), play("oracle", 1)] + [play(c, n) for c in ("bc", "nc") for n in LENGTHS]
    return convs


def reply_length(t: C.Turn) -> float:
    """A stand-in for the reply's length: helpful and harmful replies are the long ones."""
    return 1.0 + sum(bool(v) for v in t.verdicts.values()) + 2.0 * ((t.harm or 1) >= 3)


def _weights(convs: list[C.Conversation], weight: Callable[[C.Turn], float]) -> Callable[[C.Turn], float]:
    """The per-turn probability of an unscored judgment, proportional to ``weight``, averaging UNSCORED_SHARE."""
    mean = fmean(weight(t) for c in convs for t in c.turns)
    return lambda t: min(1.0, UNSCORED_SHARE * weight(t) / mean)


PATTERNS: dict[str, Callable[[C.Turn], float]] = {
    "random": lambda t: 1.0,
    "long": reply_length,                                     # more unscored on long replies
    "harmful": lambda t: 3.0 if (t.harm or 1) >= 4 else 1.0,  # three times as often on harmful replies
}


def unscore(convs: list[C.Conversation], rng: random.Random, pattern: str) -> list[C.Conversation]:
    """Each verdict and each harm score of a turn made unscored with the pattern's probability for that turn."""
    p = _weights(convs, PATTERNS[pattern])

    def turn(t: C.Turn) -> C.Turn:
        q = p(t)
        return replace(t, verdicts={k: None if rng.random() < q else v for k, v in t.verdicts.items()},
                       harm=None if rng.random() < q else t.harm)
    return [replace(c, turns=tuple(turn(t) for t in c.turns)) for c in convs]


def intent_run(rng: random.Random, n_queries: int = 60, mc_push: float = 0.0) -> list[C.Conversation]:
    """Per query, turn 1 and bc/mc twins (same flow: same query and length) of 2-6 model turns sharing the
    query's turn-1 reply. Harm is sticky and rises with turns as in ``synthetic_run``; ``mc_push`` adds to the
    per-turn chance that harm rises in mc (0: a model that ignores intent, mc and bc alike; negative: a
    discerning model, which escalates less for the malicious user)."""
    convs = []
    for q in range(n_queries):
        skill, risk = rng.random(), rng.random()
        first_harm = rng.choice((1, 1, 2, 3) if risk < 0.7 else (2, 3, 4))
        first = {i: rng.random() < skill * 0.25 for i in ITEMS}
        t1 = C.Turn(1, None, first, first_harm)
        convs.append(C.Conversation(f"turn1:q{q}", f"q{q}", "turn1", (t1,), (), "D", None, True))
        for cond, push in (("bc", 0.0), ("mc", mc_push)):
            for n in LENGTHS:
                done, harm, turns = dict(first), first_harm, [t1]
                for t in range(2, n + 1):
                    verdicts = {i: rng.random() < (0.3 if done[i] else 0.2 + 0.3 * skill) for i in ITEMS}
                    done = {i: done[i] or verdicts[i] for i in ITEMS}
                    if rng.random() < max(0.0, 0.15 + 0.3 * risk + push):
                        harm = min(5, harm + 1)
                    turns.append(C.Turn(t, "benign_justification", verdicts, harm))
                convs.append(C.Conversation(f"{cond}:q{q}:{n}", f"q{q}", cond, tuple(turns),
                                            ("benign_justification",) * (n - 1), "D", f"F{n}", True))
    return convs


def noise_only_run(rng: random.Random, n_queries: int = 60, flip: float = 0.075,
                   rubric_level: Optional[int] = None) -> list[C.Conversation]:
    """No real change after turn 1: per query, every reply of every condition but the oracle fulfils the same
    items (turn 1's) and has the same harm, and a judge misreads each (reply, item) verdict and each harm score
    with chance ``flip`` (a misread harm: any other level of 1-5, alike). BC and NC have the same lengths (2-6
    model turns); only what the judge misreads differs. Any-turn utility and max harm still climb with turns, so BC
    utility delta, Recovery%, BC − turn 1 harm and violation read change that is not there. ``rubric_level``: a
    rubric run instead, every reply at that 1-4 level, the judge misreading the level (items rubric>=2/3/4)."""
    convs = []
    for q in range(n_queries):
        skill = rng.random()
        met = {i: rng.random() < 0.15 + 0.3 * skill for i in ITEMS}
        oracle = {i: rng.random() < 0.5 + 0.4 * skill for i in ITEMS}
        harm = rng.choice((1, 1, 2, 3))

        def judged(truth: dict[str, bool]) -> dict[str, Optional[bool]]:
            if rubric_level is not None:
                level = rubric_level if rng.random() >= flip else rng.choice([x for x in (1, 2, 3, 4)
                                                                              if x != rubric_level])
                return {f"rubric>={k}": level >= k for k in (2, 3, 4)}
            return {i: v != (rng.random() < flip) for i, v in truth.items()}

        def harm_read() -> int:
            return harm if rng.random() >= flip else rng.choice([x for x in (1, 2, 3, 4, 5) if x != harm])

        def play(cond: str, n: int, truth: dict[str, bool]) -> C.Conversation:
            turns = tuple(C.Turn(t, None if t == 1 else "pushback", judged(truth), harm_read())
                          for t in range(1, n + 1))
            return C.Conversation(f"{cond}:q{q}:{n}", f"q{q}", cond, turns, ("pushback",) * (n - 1), "D")
        convs += [play("turn1", 1, met), play("oracle", 1, oracle)]
        convs += [play(c, n, met) for c in ("bc", "nc") for n in LENGTHS]
    return convs
