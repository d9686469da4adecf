"""Seeded boards of many models, vectorised (numpy): the simulation behind the leaderboard's family-wise verdicts,
rank intervals, flags and the dry run's power table (tests/report/test_board_family.py, tests/suites/carryonbench/
test_power.py, bench/bench_null_boards.py, bench/bench_power.py).

Per query, a skill and a risk shared by every model (query difficulty), then each model's conversations drawn on
their own: per query turn 1 and the oracle once, BC twice and NC once per length of 2-6 model turns (the paper's
plan; ``bc_per_length`` / ``nc_per_length`` change it, e.g. the quick subset's one of each). Each of a checklist's 6
items is fulfilled at turn 1 with chance 0.25 skill, at a later BC turn 0.2 + 0.3 skill (plus a model's ``gain``
of what is left), at a later NC turn 0.1 + 0.15 skill, in the oracle reply 0.4 + 0.5 skill; a fulfilled item is
given again at a later turn with chance 0.3 (redundancy). The judge misreads each (reply, item) verdict with chance
``flip``; a conversation's utility is its count of items the judge saw fulfilled at any turn, drawn from that
count's exact distribution (a per-item chain over the turns: items are independent given the query), redundancy
from the expected share of later hits that repeat one seen before. Harm starts at 1-3 (2-4 for the riskiest 30% of
queries) and rises by one at a later turn with chance 0.1 + 0.3 risk (BC) or 0.05 + 0.2 risk (NC); the judge reads
each turn's harm one level off (up or down, clipped to 1-5) with chance ``flip``; a conversation's harm is the max it
read. Noise like the judge's: with no real change, any-turn utility and max harm still climb with turns.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional, Sequence

import numpy as np

ITEMS = 18
LENGTHS = (2, 3, 4, 5, 6)
VIOLATION = 4
REPEAT = 0.3
LATER = {"bc": (0.2, 0.3), "nc": (0.1, 0.15)}            # later-turn hit chance: a + b skill
RISE = {"bc": (0.1, 0.3), "nc": (0.05, 0.2)}             # later-turn harm rise chance: a + b risk
INTERACTION = 0.4                                        # SD of a model's own skill / risk on a query


@dataclass(frozen=True)
class Board:
    """Per-conversation values of M models on Q queries: ``values[(condition, metric)]`` is (M, Q, C) (NaN:
    undefined for the conversation), C conversations per query of that condition."""
    values: dict[tuple[str, str], np.ndarray]
    n_queries: int
    n_models: int
    lengths: dict[str, tuple[int, ...]]          # per condition, the model turns of each of its C conversations


def item_chain(first: np.ndarray, later: Any, length: int, flip: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per item of a conversation of ``length`` turns (arrays broadcast over models and queries): the chance the
    judge sees it fulfilled at some turn, and the expected judged hits after turn 1 and of those the ones seen
    before (redundancy's two counts). ``later``: the hit chance at every later turn, or a function of the turn
    (1-based) giving it."""
    # states (done, seen): 00, 01, 10, 11
    s = [np.ones_like(first), np.zeros_like(first), np.zeros_like(first), np.zeros_like(first)]
    hits = np.zeros_like(first)
    repeats = np.zeros_like(first)
    for t in range(length):
        p = first if t == 0 else (later(t + 1) if callable(later) else later)
        yes_new, yes_old = p * (1 - flip) + (1 - p) * flip, REPEAT * (1 - flip) + (1 - REPEAT) * flip
        n00, n01, n10, n11 = s
        if t:
            hits = hits + (n00 + n01) * yes_new + (n10 + n11) * yes_old
            repeats = repeats + n01 * yes_new + n11 * yes_old
        # not done: hit (-> done) with p, seen with (1-f) if hit else f; done: seen again with yes_old
        s = [n00 * (1 - p) * (1 - flip),
             n01 * (1 - p) + n00 * (1 - p) * flip,
             n00 * p * flip + n10 * (1 - yes_old),
             n01 * p + n00 * p * (1 - flip) + n11 + n10 * yes_old]
    return s[1] + s[3], hits, repeats


def _harm(rng: np.random.Generator, shape: tuple[int, ...], start: np.ndarray, rise: np.ndarray, length: int,
          flip: float) -> np.ndarray:
    """(shape) the judge's max harm over ``length`` turns."""
    harm = np.broadcast_to(start, shape).astype(int)
    worst = np.zeros(shape, int)
    for t in range(length):
        u = rng.random((3,) + shape)
        if t:
            harm = np.minimum(5, harm + (u[0] < rise))
        worst = np.maximum(worst, np.clip(harm + np.where(u[1] < flip, np.where(u[2] < 0.5, -1, 1), 0), 1, 5))
    return worst


def _conversations(rng: np.random.Generator, shape: tuple[int, ...], first: np.ndarray, later: np.ndarray,
                   length: int, flip: float, redundancy: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(shape) utility and redundancy of conversations of ``length`` turns (redundancy all NaN when not asked)."""
    seen, hits, repeats = item_chain(first, later, length, flip)
    util = 100.0 * rng.binomial(ITEMS, np.broadcast_to(seen, shape)) / ITEMS
    if length == 1 or not redundancy:
        return util, np.full(shape, np.nan)
    later_hits = rng.binomial(ITEMS * (length - 1), np.broadcast_to(np.clip(hits / (length - 1), 0, 1), shape))
    share = np.broadcast_to(np.where(hits > 0, repeats / np.where(hits > 0, hits, 1), 0.0), shape)
    repeated = rng.binomial(later_hits, share)
    with np.errstate(invalid="ignore", divide="ignore"):
        red = np.where(later_hits > 0, 100.0 * repeated / np.where(later_hits > 0, later_hits, 1), np.nan)
    return util, red


def simulate(rng: np.random.Generator, n_models: int, n_queries: int, *, flip: float = 0.05,
             gain: Optional[Sequence[float]] = None, bc_per_length: int = 2, nc_per_length: int = 1,
             oracle_at_bc: bool = False, conditions: Sequence[str] = ("turn1", "oracle", "bc", "nc"),
             interaction: float = INTERACTION, quick: bool = False, utility_only: bool = False) -> Board:
    """One board (see the module's docstring). ``oracle_at_bc``: the oracle reply fulfils, as the judge reads it,
    each item with the chance a BC conversation's turns do (averaged over the lengths): no model locks in, and
    none recovers beyond its oracle either (the utility lock-in's null). ``conditions``: the ones to draw.
    ``interaction``: the SD of a model's own skill and risk on a query around the query's (models equally good
    on average are better on different queries). ``quick``: the quick subset's design, one BC and one NC
    conversation per query, their lengths cycling over the queries (BC at the r-th length, NC two further).
    ``utility_only``: draw the utilities alone (no harm, violation rate or redundancy), for the power of utility."""
    m, q = n_models, n_queries
    skill0, risk0 = rng.random(q)[None, :, None], rng.random(q)[None, :, None]
    skill = np.clip(skill0 + interaction * rng.standard_normal((m, q, 1)), 0, 1)
    risk = np.clip(risk0 + interaction * rng.standard_normal((m, q, 1)), 0, 1)
    start = np.where(risk0 < 0.7, rng.choice([1, 1, 2, 3], size=(1, q, 1)), rng.choice([2, 3, 4], size=(1, q, 1)))
    g = np.zeros((m, 1, 1)) if gain is None else np.asarray(gain, float).reshape(m, 1, 1)
    values: dict[tuple[str, str], list[np.ndarray]] = {}

    def add(cond: str, metric: str, x: np.ndarray) -> None:
        values.setdefault((cond, metric), []).append(x)

    bc_seen = np.mean([item_chain(0.25 * skill, LATER["bc"][0] + LATER["bc"][1] * skill, n, flip)[0]
                       for n in LENGTHS], axis=0)
    for cond, first in (("turn1", 0.25 * skill), ("oracle", 0.4 + 0.5 * skill)):
        if cond not in conditions:
            continue
        if cond == "oracle" and oracle_at_bc:
            add(cond, "utility", 100.0 * rng.binomial(ITEMS, np.broadcast_to(bc_seen, (m, q, 1))) / ITEMS)
        else:
            add(cond, "utility", _conversations(rng, (m, q, 1), first, first, 1, flip)[0])
        if not utility_only:
            add(cond, "harm", _harm(rng, (m, q, 1), start, np.zeros((1, q, 1)), 1, flip).astype(float))
    if quick:
        bc_per_length = nc_per_length = 1
    for cond, per in (("bc", bc_per_length), ("nc", nc_per_length)):
        if cond not in conditions:
            continue
        a, b = LATER[cond]
        later = _gained(a + b * skill, g) if cond == "bc" else a + b * skill
        rise = RISE[cond][0] + RISE[cond][1] * risk
        for k, length in enumerate(LENGTHS):
            util, red = _conversations(rng, (m, q, per), 0.25 * skill, later, length, flip, not utility_only)
            if quick:                                  # each query keeps its one conversation of this condition
                kept = ((np.arange(q) + (2 if cond == "nc" else 0)) % len(LENGTHS) == k)[None, :, None]
                util, red = (np.where(kept, x, np.nan) for x in (util, red))
            add(cond, "utility", util)
            if utility_only:
                continue
            harm = _harm(rng, (m, q, per), start, rise, length, flip).astype(float)
            add(cond, "redundancy", red)
            add(cond, "harm", np.where(kept, harm, np.nan) if quick else harm)
    out = {k: np.concatenate(v, axis=-1) for k, v in values.items()}
    for cond in () if utility_only else conditions:
        h = out[(cond, "harm")]
        out[(cond, "violation_rate")] = np.where(np.isfinite(h), 100.0 * (h >= VIOLATION), np.nan)
    lengths = {"turn1": (1,), "oracle": (1,), "bc": tuple(n for n in LENGTHS for _ in range(bc_per_length)),
               "nc": tuple(n for n in LENGTHS for _ in range(nc_per_length))}
    return Board(out, q, m, lengths)


def _gained(later: np.ndarray, gain: Any) -> np.ndarray:
    """A model's later-turn hit chance under its ``gain``: above 0, that share of what is left to 1 is added; below
    0, that share of the chance is taken away."""
    return np.where(gain >= 0, later + gain * (1 - later), later * (1 + gain))


def expected_bc_utility(gain: float, flip: float = 0.05, interaction: float = INTERACTION) -> float:
    """A model's population BC utility (plan's length mix) for a ``gain``: the item chain over a fixed sample of
    its per-query skills (the query's, uniform, plus its own deviation)."""
    rng = np.random.default_rng(12345)
    skill = np.clip(rng.random(20_000) + interaction * rng.standard_normal(20_000), 0, 1)
    a, b = LATER["bc"]
    later = _gained(a + b * skill, np.float64(gain))
    return float(np.mean([100.0 * item_chain(0.25 * skill, later, n, flip)[0].mean() for n in LENGTHS]))


def nc_leak_shift(leak: float, flip: float = 0.05, grid: int = 2001) -> float:
    """How far the clarification effect (BC - NC utility) moves when each NC user turn reveals the intent with
    chance ``leak`` (from the leaking turn on, the model answers as under BC): population values over a grid of
    skills, the plan's length mix."""
    skill = np.linspace(0, 1, grid)
    (a, b), (c, d) = LATER["bc"], LATER["nc"]
    bc_later, nc_later = a + b * skill, c + d * skill

    def nc_utility(length: int, leaked_at: Optional[int]) -> float:
        def later(turn: int) -> np.ndarray:
            return bc_later if leaked_at is not None and turn >= leaked_at else nc_later
        return float(100.0 * item_chain(0.25 * skill, later, length, flip)[0].mean())

    shifts = []
    for n in LENGTHS:
        plain = nc_utility(n, None)
        mix = (1 - leak) ** (n - 1) * plain + sum(leak * (1 - leak) ** (k - 2) * nc_utility(n, k)
                                                  for k in range(2, n + 1))
        shifts.append(plain - mix)                     # BC - NC falls by what the leaks add to NC
    return float(np.mean(shifts))


@lru_cache(maxsize=32)
def bc_gain_for(points: float, flip: float = 0.05, symmetric: bool = False) -> float:
    """The ``gain`` that raises a model's population BC utility by ``points`` over a model without one; with
    ``symmetric``, that puts a model of ``gain`` that many points above one of ``-gain`` (bisection)."""
    base = expected_bc_utility(0.0, flip)
    lo, hi = 0.0, 1.0
    for _ in range(25):
        mid = (lo + hi) / 2
        low = expected_bc_utility(-mid, flip) if symmetric else base
        lo, hi = (mid, hi) if expected_bc_utility(mid, flip) - low < points else (lo, mid)
    return (lo + hi) / 2


# ---------------------------------------------------------------- the leaderboard's replicates of a board
# (einsum, not @: a multithreaded BLAS on a loaded machine makes these small products several times slower)
def resample_counts(rng: np.random.Generator, n_queries: int, n_resamples: int) -> np.ndarray:
    """(R, Q) how often each query is drawn in each resample of the queries."""
    idx = rng.integers(0, n_queries, size=(n_resamples, n_queries))
    flat = (np.arange(n_resamples)[:, None] * n_queries + idx).ravel()
    return np.bincount(flat, minlength=n_resamples * n_queries).reshape(n_resamples, n_queries).astype(float)


def need_means(board: Board, counts: np.ndarray) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """Per (condition, metric): each model's mean over its defined conversations, (M,) point and (R, M) replicates
    under the draws ``counts`` (R, Q): the query-cluster bootstrap of the leaderboard's columns."""
    out = {}
    drawn = counts.sum(axis=1)[:, None]
    for need, x in board.values.items():
        ok = np.isfinite(x)
        sums, ns = np.where(ok, x, 0.0).sum(axis=-1), ok.sum(axis=-1).astype(float)     # (M, Q)
        with np.errstate(invalid="ignore", divide="ignore"):
            point = sums.sum(axis=1) / ns.sum(axis=1)
            total = np.einsum("rq,mq->rm", counts, sums, optimize=False)
            n = drawn * x.shape[-1] if ok.all() else np.einsum("rq,mq->rm", counts, ns, optimize=False)
            out[need] = (point, total / n)
    return out
