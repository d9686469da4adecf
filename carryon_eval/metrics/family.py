"""Many models compared at once: adjusted pairwise verdicts, rank intervals and the model that stands out. Pure
functions over arrays: one column's point per model (M,) and its bootstrap replicates over queries (M, R), the
replicates of every model drawn on the same resampled queries (paired), so a pair's replicates are the differences
of its two rows.

- ``holm``: Holm's step-down adjustment over a column's pairs. Each pair's difference d is held to its standard
  error from its paired bootstrap replicates (their SD times sqrt(n/(n-1)), the reported intervals' expansion for
  n queries), its p-value from Student's t with n - 1 degrees of freedom; the smallest p-value is held to 0.05 / P,
  the next to 0.05 / (P - 1), ..., until one fails. A pair ``differs`` when it is rejected: the chance that any of
  a column's pairs is marked when no two models differ is at most 5% (not 5% per pair, which marks 4-5 of 91 pairs
  on a board of 14 identical models). Single-step max-T over the same replicates (the bootstrap quantile of the
  largest studentized difference) was measured and not chosen: with each pair's standard error estimated from 60
  queries it marked a pair on 6-10% of boards of identical models (bench/README.md).
- ``rank_intervals``: each model's 95% rank interval from the same verdicts (Mogstad, Romano, Shaikh and Wilhelm,
  "Inference for ranks", 2024): 1 + the models that differ from it on the better side, to M - those that differ
  on the worse side; all of them hold at once with 95% confidence. The percentile interval of each model's rank
  over the replicates (each replicate ranking all models) is ``replicate_rank_intervals``: it holds for one model
  at a time only, and on a board of identical models it separates the luckiest from the unluckiest (figures in
  bench/README.md).
- ``standout``: the model at the top of a column, only when its difference from the runner-up is adjusted
  ``differs``; otherwise none (the rule of every "the model that ..." flag).
- ``zero_tests``: one number per model tested against 0 as a family (Holm over the models): e.g. a model's BC
  utility below its own oracle, M models at once.
- ``detectable`` and ``queries_needed``: the smallest difference between two models a design detects at 80% power
  (two-sided 5%), and the queries a difference needs, from the per-query SD of the paired difference.

numpy and the standard library only (statistics.NormalDist, math.lgamma): no scipy.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Optional, Sequence

import numpy as np

METHOD = "Holm"
METHOD_TEXT = ("Holm's step-down adjustment over the column's pairs in the group: each pair's difference over its "
               "standard error from its paired bootstrap replicates, p from Student's t with n - 1 degrees of "
               "freedom (n queries); family-wise 5%")
RANK_TEXT = ("95% rank interval, simultaneous over the group's models: 1 + the models adjusted-better than it, to "
             "the number of models - those adjusted-worse (Mogstad, Romano, Shaikh and Wilhelm's inference for ranks "
             "from the Holm verdicts)")
LEVEL = 0.95
POWER = 0.80


# ---------------------------------------------------------------- Student's t, exact enough for extreme tails
def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def t_sf(t: float, df: float) -> float:
    """P(T > t) of Student's t with df degrees of freedom (t >= 0), by the incomplete beta function."""
    x = df / (df + t * t)
    a, b = df / 2.0, 0.5
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    ibeta = front * _betacf(a, b, x) / a if x < (a + 1) / (a + b + 2) else 1.0 - front * _betacf(b, a, 1 - x) / b
    return 0.5 * ibeta


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile for p in (0.5, 1): Newton's method on ``t_sf`` from the normal quantile, bisection
    where a step leaves the bracket (to 1e-10)."""
    tail = 1.0 - p
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > tail:
        lo, hi = hi, hi * 2
    x = min(max(NormalDist().inv_cdf(p), lo), hi)
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    for _ in range(100):
        f = t_sf(x, df) - tail
        if f > 0:
            lo = x
        else:
            hi = x
        density = math.exp(log_c - (df + 1) / 2 * math.log1p(x * x / df))
        step = x + f / density if density > 0 else (lo + hi) / 2
        x_new = step if lo < step < hi else (lo + hi) / 2
        if abs(x_new - x) < 1e-10:
            return x_new
        x = x_new
    return x


def standard_error(sd: np.ndarray, n_queries: int) -> np.ndarray:
    """A bootstrap SD over n resampled queries as a standard error: times sqrt(n/(n-1)), which undoes the
    bootstrap's narrowness (the reported intervals' expansion, ``stats.INTERVAL``)."""
    return sd * math.sqrt(n_queries / (n_queries - 1)) if n_queries > 1 else sd


@lru_cache(maxsize=256)
def holm_criticals(m: int, df: int, alpha: float = 1 - LEVEL) -> tuple[float, ...]:
    """Holm's critical |t| for its steps 1..m: two-sided alpha / m, alpha / (m - 1), ..., alpha."""
    return tuple(t_quantile(1 - alpha / (2 * (m - j)), max(df, 1)) for j in range(m))


def holm_reject(stat: np.ndarray, usable: np.ndarray, n_queries: int, alpha: float = 1 - LEVEL) -> np.ndarray:
    """Holm's step-down verdicts of statistics |d| / SE (K,), over the usable ones (t with n - 1 df): the largest
    held to the critical value of alpha / m, the next to alpha / (m - 1), ..., stopping at the first that fails."""
    out = np.zeros(len(stat), bool)
    idx = np.flatnonzero(usable)
    if not len(idx):
        return out
    crit = np.array(holm_criticals(len(idx), n_queries - 1, alpha))
    order = idx[np.argsort(-stat[idx], kind="stable")]
    passed = stat[order] > crit
    k = len(order) if passed.all() else int(np.argmin(passed))
    out[order[:k]] = True
    return out


# ---------------------------------------------------------------- adjusted pairwise verdicts
def _spread(d: np.ndarray, value: np.ndarray, min_defined: float) -> tuple[np.ndarray, np.ndarray]:
    """(K,) each row's bootstrap SD over its defined replicates, and whether the row is usable: its point is
    finite and at least ``min_defined`` of its replicates are defined (two at least)."""
    if d.shape[1] == 0:
        return np.full(len(d), np.nan), np.zeros(len(d), bool)
    ok = np.isfinite(d)
    n = ok.sum(axis=1)
    usable = (n >= max(2, min_defined * d.shape[1])) & np.isfinite(value)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(ok, d, 0.0).sum(axis=1) / np.maximum(n, 1)
        var = np.where(ok, (d - mean[:, None]) ** 2, 0.0).sum(axis=1) / np.maximum(n - 1, 1)
    return np.where(usable, np.sqrt(var), np.nan), usable


def _statistics(value: np.ndarray, sd: np.ndarray, usable: np.ndarray, n_queries: int) -> np.ndarray:
    """|d| / SE, infinite for a difference whose replicates do not vary (an exact difference), 0 where unusable."""
    se = standard_error(np.where(usable, sd, 1.0), n_queries)
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = np.where(se > 0, np.abs(value) / np.where(se > 0, se, 1.0), np.where(value != 0, np.inf, 0.0))
    return np.where(usable, stat, 0.0)


@dataclass(frozen=True)
class Family:
    """One column's pairs (i < j, indices into the models given) with their differences i - j, each one's
    bootstrap SD and statistic |d| / SE, and the adjusted verdicts."""
    pairs: tuple[tuple[int, int], ...]
    value: np.ndarray                  # (P,) point differences
    sd: np.ndarray                     # (P,) bootstrap SD of each pair's replicates
    stat: np.ndarray                   # (P,) |d| / SE
    differs: np.ndarray                # (P,) bool
    n_queries: int

    def verdict(self, i: int, j: int) -> bool:
        """Whether models i and j differ (adjusted), in either order."""
        k = self.pairs.index((min(i, j), max(i, j)))
        return bool(self.differs[k])

    @property
    def critical(self) -> Optional[float]:
        """Holm's first (strictest) critical |t| over the usable pairs; None when none is usable."""
        m = int(np.isfinite(self.sd).sum())
        return holm_criticals(m, self.n_queries - 1)[0] if m else None


def pair_list(m: int) -> tuple[tuple[int, int], ...]:
    return tuple((i, j) for i in range(m) for j in range(i + 1, m))


def holm(points: Sequence[float], reps: np.ndarray, n_queries: int, alpha: float = 1 - LEVEL,
         min_defined: float = 0.9) -> Family:
    """Adjusted verdicts of every pair of ``points`` (M,) from their paired bootstrap replicates ``reps`` (M, R).
    A pair whose replicates are defined in fewer than ``min_defined`` of the resamples has no verdict (False) and
    is not counted among the pairs; one whose replicates do not vary differs when its difference is not 0."""
    points = np.asarray(points, dtype=float)
    reps = np.asarray(reps, dtype=float)
    pairs = pair_list(len(points))
    if not pairs:
        return Family(pairs, np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0, bool), n_queries)
    a, b = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    value = points[a] - points[b]
    if reps.ndim == 2 and reps.shape[1] > 1 and np.isfinite(reps).all():     # every replicate defined: from the
        c = reps - reps.mean(axis=1, keepdims=True)                           # models' covariance, no (P, R) array
        cov = np.einsum("ir,jr->ij", c, c, optimize=False) / (reps.shape[1] - 1)
        sd = np.sqrt(np.maximum(cov[a, a] + cov[b, b] - 2 * cov[a, b], 0.0))
        usable = np.isfinite(value)
    else:
        sd, usable = _spread(reps[a] - reps[b], value, min_defined)
    stat = _statistics(value, sd, usable, n_queries)
    return Family(pairs, value, sd, stat, holm_reject(stat, usable, n_queries, alpha), n_queries)


# ---------------------------------------------------------------- ranks
def _sign(better: str) -> float:
    if better not in ("higher", "lower"):
        raise ValueError(f"better is 'higher' or 'lower', got {better!r}")
    return 1.0 if better == "higher" else -1.0


def rank_intervals(family: Family, better: str, m: int) -> list[tuple[int, int]]:
    """Each model's simultaneous 95% rank interval (1 = best) from the family's adjusted verdicts: 1 + the models
    that differ from it on the better side, to M - those that differ on the worse side."""
    s = _sign(better)
    above, below = [0] * m, [0] * m
    for (i, j), v, diff in zip(family.pairs, family.value, family.differs):
        if not diff:
            continue
        win, lose = (i, j) if s * v > 0 else (j, i)
        above[lose] += 1
        below[win] += 1
    return [(1 + above[k], m - below[k]) for k in range(m)]


def replicate_rank_intervals(reps: np.ndarray, better: str, level: float = LEVEL) -> list[tuple[int, int]]:
    """Per model, the percentile interval of its rank over the replicates, each replicate ranking all models (ties
    share the better rank): one model at a time, not simultaneous (see the module's docstring)."""
    s = _sign(better)
    x = s * np.asarray(reps, dtype=float)                  # (M, R): larger is better
    ranks = 1 + (x[None, :, :] > x[:, None, :]).sum(axis=1)   # (M, R): models strictly better, + 1
    lo, hi = np.quantile(ranks, [(1 - level) / 2, (1 + level) / 2], axis=1, method="inverted_cdf")
    return [(int(a), int(b)) for a, b in zip(lo, hi)]


def standout(points: Sequence[float], family: Family, top: str = "higher") -> Optional[int]:
    """The index of the model at the ``top`` end of ``points`` when it differs (adjusted) from the runner-up;
    None when it does not, or when two models tie at the top."""
    x = _sign(top) * np.asarray(points, dtype=float)
    if len(x) < 2 or not np.isfinite(x).all():
        return None
    order = np.argsort(-x, kind="stable")
    first, second = int(order[0]), int(order[1])
    if x[first] == x[second]:
        return None
    return first if family.verdict(first, second) else None


def zero_tests(points: Sequence[float], reps: np.ndarray, n_queries: int, alpha: float = 1 - LEVEL,
               min_defined: float = 0.9) -> np.ndarray:
    """(M,) the sign of each model's number where it excludes 0 as one of a family of M (Holm over the models,
    each number over its standard error from its bootstrap replicates), else 0: +1 above 0, -1 below."""
    points = np.asarray(points, dtype=float)
    reps = np.asarray(reps, dtype=float).reshape(len(points), -1)
    sd, usable = _spread(reps, points, min_defined)
    hit = holm_reject(_statistics(points, sd, usable, n_queries), usable, n_queries, alpha)
    return np.where(hit, np.sign(points), 0.0)


# ---------------------------------------------------------------- power
def detectable(sd: float, n_queries: int, power: float = POWER, level: float = LEVEL) -> Optional[float]:
    """The smallest difference between two models that a two-sided test at 1 - level detects with ``power`` over
    n queries, when the per-query paired difference has SD ``sd`` (the t quantiles of n - 1 degrees of freedom,
    sized for the expanded intervals): (t_{1-a/2} + t_power) sd / sqrt(n)."""
    if n_queries < 2 or sd is None or not math.isfinite(sd):
        return None
    df = n_queries - 1
    return (t_quantile(1 - (1 - level) / 2, df) + t_quantile(power, df)) * sd / math.sqrt(n_queries)


def queries_needed(difference: float, sd: float, power: float = POWER, level: float = LEVEL) -> Optional[int]:
    """The fewest queries whose ``detectable`` difference is at most ``difference``."""
    if difference <= 0 or sd is None or not math.isfinite(sd):
        return None
    nd = NormalDist()
    n = max(3, int((nd.inv_cdf(1 - (1 - level) / 2) + nd.inv_cdf(power)) ** 2 * sd ** 2 / difference ** 2))
    while (detectable(sd, n, power, level) or math.inf) > difference:
        n += 1
    while n > 2 and (detectable(sd, n - 1, power, level) or math.inf) <= difference:
        n -= 1
    return n
