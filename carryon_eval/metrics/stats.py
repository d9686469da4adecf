"""Small statistics helpers: query-cluster bootstrap, its intervals, bounds of derived numbers (length-stratified
means: estimators.py), Cohen's kappa, Spearman and mixed linear models.

Intervals (``interval95``): CarryOnBench's headline and intent numbers report BCa at levels expanded for n queries
(INTERVAL), its acceleration from the leave-one-query-out jackknife of the same estimator (the same clipping into
bounds); chosen over the percentile interval and plain BCa by the seeded coverage simulation of
tests/support/coverage.py (full table: bench/bench_coverage.py, bench/README.md). The percentile interval
(``ci95``) stays where no jackknife is computed (OpenSafeIntent's reference numbers, calibration, human agreement,
cross-model differences).

numpy only: the Spearman p-value is Student's t distribution of integer degrees of freedom in closed form
(``t_two_sided``, what scipy.stats.spearmanr computes); the mixed linear models alone need statsmodels and pandas
(the `report` extra), imported inside ``mixed_model``, which says so in its result when they are absent
(MIXED_MODELS_MISSING), so that compare and the leaderboard need neither.
"""
from __future__ import annotations

import itertools
import math
import warnings
from statistics import NormalDist
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

from carryon_eval.codec import OMIT_NONE, Record

from carryon_eval.defaults import BOOTSTRAP_RESAMPLES as N_RESAMPLES
from carryon_eval.defaults import BOOTSTRAP_SEED as SEED




# ---------------------------------------------------------------- the bootstrap (one for every interval)
def resample_indices(n: int, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> np.ndarray:
    """(n_resamples, n) indices drawn with replacement, seeded: the one resampling every interval uses."""
    if n == 0:
        return np.zeros((n_resamples, 0), int)
    return np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))


def bootstrap_ci(stat: Callable[..., Optional[float]], *columns: Sequence[Any], n_resamples: int = N_RESAMPLES,
                 seed: int = SEED) -> Optional[list[float]]:
    """95% percentile interval of ``stat(*columns)`` over cases (positions of the equally long columns)
    resampled with replacement; None when there are no cases or the statistic is undefined in more than a
    tenth of the resamples (ci95's rule)."""
    n = len(columns[0]) if columns else 0
    if n == 0:
        return None
    reps = np.array([np.nan if (v := stat(*([col[i] for i in row] for col in columns))) is None else v
                     for row in resample_indices(n, n_resamples, seed)], dtype=float)
    return ci95(reps)


@dataclass(frozen=True)
class Bootstrap:
    """One fixed set of resamples of the queries; every statistic of a run uses the same one so that
    differences and ratios (deltas, Recovery%) are bootstrapped jointly."""
    query_ids: tuple[str, ...]
    idx: np.ndarray                      # (n_resamples, n_queries) indices into query_ids

    @classmethod
    def of(cls, query_ids: Iterable[str], n_resamples: int = N_RESAMPLES, seed: int = SEED) -> "Bootstrap":
        ids = tuple(sorted(set(query_ids)))
        return cls(ids, resample_indices(len(ids), n_resamples, seed))

    def means(self, pairs: Sequence[tuple[str, float]]) -> np.ndarray:
        """Bootstrap replicates of the mean of values grouped by query: every replicate draws queries
        with replacement and averages all values of the drawn queries (NaN when it drew none)."""
        pos = {q: i for i, q in enumerate(self.query_ids)}
        sums = np.zeros(len(self.query_ids))
        counts = np.zeros(len(self.query_ids))
        for q, v in pairs:
            sums[pos[q]] += v
            counts[pos[q]] += 1
        return self.cluster_means(sums, counts)

    def cluster_means(self, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """`means` from each query's sum and count of values (arrays aligned with query_ids)."""
        total, n = sums[self.idx].sum(axis=1), counts[self.idx].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, total / np.where(n > 0, n, 1), np.nan)


# ---------------------------------------------------------------- bounds of derived numbers
Interval = Optional[Sequence[float]]


def bounds(low: Optional[float], high: Optional[float]) -> Optional[list[float]]:
    """[lower, upper] of a number computed under the lowest and the highest reading of the unscored
    judgments; None when either reading gives no number."""
    if low is None or high is None:
        return None
    return [min(low, high), max(low, high)]


def difference_bounds(a: Interval, b: Interval) -> Optional[list[float]]:
    """Bounds of A - B when A and B each lie in their bounds: [A_low - B_high, A_high - B_low] (the two
    terms move independently: unscored judgments of one need not be read like those of the other)."""
    if a is None or b is None:
        return None
    return [a[0] - b[1], a[1] - b[0]]


def corner_bounds(fn: Callable[..., Optional[float]], *intervals: Interval) -> Optional[list[float]]:
    """Bounds of fn(x, y, ...) over the box of its terms' bounds, as the extremes over the box's corners:
    exact for a function monotone in each term on the box (a ratio whose denominator keeps its sign).
    None when a term has no bounds or fn is undefined at a corner (e.g. a denominator that may be 0)."""
    if any(i is None for i in intervals):
        return None
    values = [fn(*corner) for corner in itertools.product(*((i[0], i[1]) for i in intervals))]  # type: ignore[index]
    if any(v is None or not math.isfinite(v) for v in values):
        return None
    return [min(values), max(values)]  # type: ignore[type-var]


def clip(value: Optional[float], within: Interval) -> Optional[float]:
    """The value moved into its bounds: the true (fully scored) number is known to lie in them, so an
    estimate outside them is moved to the nearest end."""
    if value is None or within is None:
        return value
    return min(max(value, within[0]), within[1])


def ci95(replicates: np.ndarray, min_defined: float = 0.9) -> Optional[list[float]]:
    """Percentile interval of the defined replicates; None when fewer than min_defined of them are
    defined (e.g. most resamples drew no query that has the condition)."""
    defined = replicates[np.isfinite(replicates)]
    if replicates.size == 0 or defined.size < min_defined * replicates.size:
        return None
    lo, hi = np.percentile(defined, [2.5, 97.5])
    return [float(lo), float(hi)]


#: The interval every carryonbench number with jackknife values reports (``interval95``; INTERVALS; chosen by
#: the seeded coverage simulation in tests/suites/carryonbench/test_interval_coverage.py, table in bench/README.md).
INTERVALS = ("percentile", "bca", "bca_expanded")
INTERVAL = "bca_expanded"
INTERVAL_TEXT = {
    "percentile": "percentile 2.5-97.5 of the query bootstrap",
    "bca": "BCa (bias-corrected and accelerated) of the query bootstrap, acceleration from the leave-one-query-out "
           "jackknife",
    "bca_expanded": "BCa of the query bootstrap (acceleration from the leave-one-query-out jackknife) at levels "
                    "expanded for n queries: z replaced by sqrt(n/(n-1)) t(n-1), which undoes the bootstrap's "
                    "narrowness at small n",
}


def _t_quantile(p: float, df: int) -> float:
    """Student's t quantile by the Cornish-Fisher expansion in 1/df (within 1e-3 of the exact for df >= 10;
    numpy only, no scipy at import)."""
    z = NormalDist().inv_cdf(p)
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2) \
        + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3)


def acceleration(jack: np.ndarray) -> float:
    """BCa's acceleration from the jackknife values (leave one query out): sum d^3 / (6 (sum d^2)^1.5) with
    d = mean - value; 0 when they do not vary (or too few are defined)."""
    j = jack[np.isfinite(jack)]
    d = j.mean() - j if j.size else j
    ss = float((d ** 2).sum())
    return float((d ** 3).sum() / (6.0 * ss ** 1.5)) if j.size > 2 and ss > 0 else 0.0


def interval95(point: Optional[float], replicates: np.ndarray, jack: Optional[np.ndarray] = None,
               method: str = INTERVAL, min_defined: float = 0.9) -> Optional[list[float]]:
    """The 95% interval of a number from its point, bootstrap replicates and jackknife values (``method``, one of
    INTERVALS; percentile when no jackknife is given), widened to hold the point; None when the point is None or
    fewer than min_defined of the replicates are defined (ci95's rule)."""
    if method not in INTERVALS:
        raise ValueError(f"unknown interval {method!r}: one of {', '.join(INTERVALS)}")
    if point is None:
        return None
    if method == "percentile" or jack is None:
        out = ci95(replicates, min_defined)
    else:
        out = _bca(point, replicates, jack, method == "bca_expanded", min_defined)
    return None if out is None else [min(out[0], point), max(out[1], point)]


def _bca(point: float, replicates: np.ndarray, jack: np.ndarray, expanded: bool,
         min_defined: float) -> Optional[list[float]]:
    defined = replicates[np.isfinite(replicates)]
    if replicates.size == 0 or defined.size < min_defined * replicates.size:
        return None
    below = (np.sum(defined < point) + 0.5 * np.sum(defined == point)) / defined.size
    nd = NormalDist()
    z0 = nd.inv_cdf(min(max(below, 0.5 / defined.size), 1 - 0.5 / defined.size))
    a = acceleration(jack)
    n = int(np.isfinite(jack).sum())
    z = nd.inv_cdf(0.975)
    if expanded and n > 2:
        z = math.sqrt(n / (n - 1)) * _t_quantile(0.975, n - 1)
    levels = []
    for zq in (-z, z):
        w = z0 + zq
        denom = 1 - a * w
        levels.append(nd.cdf(z0 + w / denom) if denom > 0 else (0.0 if zq < 0 else 1.0))
    lo, hi = np.quantile(defined, levels)
    return [float(lo), float(hi)]


# ---------------------------------------------------------------- agreement
def percent_agreement(a: Sequence[bool], b: Sequence[bool]) -> Optional[float]:
    if len(a) != len(b):
        raise ValueError("label sequences differ in length")
    return 100.0 * sum(x == y for x, y in zip(a, b)) / len(a) if a else None


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> tuple[Optional[float], Optional[str]]:
    """Cohen's kappa of two label sequences (any hashable labels); (None, reason) when undefined."""
    if len(a) != len(b):
        raise ValueError("label sequences differ in length")
    n = len(a)
    if n == 0:
        return None, "no items labelled by both"
    labels = set(a) | set(b)
    observed = sum(x == y for x, y in zip(a, b)) / n
    expected = sum((list(a).count(k) / n) * (list(b).count(k) / n) for k in labels)
    if math.isclose(expected, 1.0):
        return None, "chance agreement is 1 (both raters used a single, identical label): kappa is undefined"
    return (observed - expected) / (1 - expected), None


# ---------------------------------------------------------------- rank correlation (one for every use)
def _ranks(x: Sequence[float]) -> np.ndarray:
    """Ranks 1..n, ties sharing their average rank."""
    arr = np.asarray(x, dtype=float)
    order = np.argsort(arr, kind="mergesort")
    ranks = np.empty(len(arr))
    ranks[order] = np.arange(1, len(arr) + 1)
    for value in np.unique(arr):
        tied = arr == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def spearman_rho(a: Sequence[float], b: Sequence[float]) -> Optional[float]:
    """Spearman's rho (Pearson's r of the average ranks); None with fewer than 2 pairs or a constant side."""
    if len(a) < 2 or len(set(a)) < 2 or len(set(b)) < 2:
        return None
    return float(np.corrcoef(_ranks(a), _ranks(b))[0, 1])


def t_two_sided(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` (a whole number >= 1) degrees of freedom: the closed form of
    Abramowitz & Stegun 26.7.3-4 (a finite sum in cos(theta), theta = atan(|t| / sqrt(df)))."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if math.isinf(t):
        return 0.0
    theta = math.atan(abs(t) / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2:                    # odd: (2/pi) (theta + sin cos (1 + 2/3 cos^2 + 2*4/(3*5) cos^4 + ...))
        term, total = 1.0, 1.0 if df > 1 else 0.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        inside = 2 / math.pi * (theta + s * math.cos(theta) * total) if df > 1 else 2 * theta / math.pi
    else:                         # even: sin (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ...)
        term, total = 1.0, 1.0
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        inside = s * total
    return min(1.0, max(0.0, 1.0 - inside))


@dataclass
class RankCorrelation(Record):
    """Spearman's rho over ``n`` pairs with its p-value; nulls with a reason when it cannot be computed."""
    rho: Optional[float] = None
    p: Optional[float] = None
    n: int = 0
    reason: Optional[str] = None
    note: Optional[str] = None


def rank_correlation(x: Sequence[float], y: Sequence[float]) -> RankCorrelation:
    """Spearman's rho with its p-value (Student's t with n - 2 degrees of freedom, as scipy.stats.spearmanr)."""
    pairs = [(a, b) for a, b in zip(x, y) if a is not None and b is not None]
    if len(pairs) < 2:
        return RankCorrelation(n=len(pairs), reason=f"needs at least 2 models with both numbers, got {len(pairs)}")
    xs, ys = zip(*pairs)
    if len(set(xs)) == 1 or len(set(ys)) == 1:
        return RankCorrelation(n=len(pairs), reason="one of the two rankings is constant: rho is undefined")
    rho = spearman_rho(xs, ys)
    if len(pairs) < 3 or rho is None:
        return RankCorrelation(rho=rho, n=len(pairs), reason="p-value undefined with fewer than 3 models")
    df = len(pairs) - 2
    with np.errstate(divide="ignore"):
        t = math.inf if abs(rho) >= 1 else rho * math.sqrt(df / ((1 + rho) * (1 - rho)))
    note = "p from the t approximation; rough with fewer than 10 models" if len(pairs) < 10 else None
    return RankCorrelation(rho=rho, p=t_two_sided(t, df), n=len(pairs), note=note)


def spearman(x: Sequence[float], y: Sequence[float]) -> dict[str, Any]:
    """``rank_correlation`` as JSON ({"rho", "p", "n", "reason", "note"})."""
    return rank_correlation(x, y).to_json()


#: What the mixed linear models need beyond the core install, and what they add (compare.json, table.md and the
#: leaderboard page say it where the models could not be fitted for want of it).
MIXED_MODELS_PACKAGES = ("statsmodels", "pandas")
MIXED_MODELS_MISSING = ("not fitted: {missing} is not installed; `pip install 'carryonbench[report]'` adds the "
                        "mixed linear models (conversation utility and harm on the turn-1 value, the number of "
                        "benign moves and of turns, a random intercept per model; the paper's Tables 3-4). Every "
                        "other number, rank and figure of the comparison stands without them.")


def missing_packages(names: Sequence[str]) -> list[str]:
    """Which of the named packages cannot be imported here."""
    import importlib

    absent = []
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            absent.append(name)
    return absent


@dataclass
class Coefficient(Record):
    """One fixed effect of a mixed model: its estimate ``B``, standard error ``SE``, z, p and 95% interval."""
    b: Optional[float] = field(default=None, metadata={"key": "B"})
    se: Optional[float] = field(default=None, metadata={"key": "SE"})
    z: Optional[float] = None
    p: Optional[float] = None
    ci95: Optional[list[Optional[float]]] = None


@dataclass
class MixedModel(Record):
    """A REML linear mixed model ``formula`` with a random intercept per ``groups``: coefficients {name: a
    Coefficient's JSON} and the group variance, null with a reason when it cannot be fitted (``missing``: the
    packages it lacks, only when that is the reason)."""
    formula: str
    groups: str
    n: int
    n_groups: int
    coefficients: Optional[dict[str, dict[str, Any]]] = None
    group_var: Optional[dict[str, Any]] = None
    converged: Optional[bool] = None
    warnings: list[str] = field(default_factory=list)
    reason: Optional[str] = None
    missing: Optional[list[str]] = field(default=None, metadata=OMIT_NONE)


def mixed_model(rows: Sequence[dict[str, Any]], outcome: str, predictors: Sequence[str],
                group: str = "model") -> dict[str, Any]:
    """REML linear mixed model `outcome ~ predictors` with a random intercept per group: ``MixedModel`` as JSON."""
    return fit_mixed_model(rows, outcome, predictors, group).to_json()


def fit_mixed_model(rows: Sequence[dict[str, Any]], outcome: str, predictors: Sequence[str],
                    group: str = "model") -> MixedModel:
    """REML linear mixed model `outcome ~ predictors` with a random intercept per group."""
    formula = f"{outcome} ~ " + " + ".join(predictors)
    keep = [r for r in rows if all(r.get(c) is not None for c in (outcome, group, *predictors))]
    groups = sorted({r[group] for r in keep})
    out = MixedModel(formula=formula, groups=group, n=len(keep), n_groups=len(groups))
    if len(groups) < 2:
        out.reason = f"needs at least 2 models (random intercept per model), got {len(groups)}"
        return out
    if len(keep) <= len(predictors) + 2:
        out.reason = f"too few conversations ({len(keep)}) for {len(predictors)} predictors"
        return out
    absent = missing_packages(MIXED_MODELS_PACKAGES)
    if absent:
        out.reason, out.missing = MIXED_MODELS_MISSING.format(missing=" and ".join(absent)), absent
        return out
    import pandas as pd
    import statsmodels.formula.api as smf

    df = pd.DataFrame(keep)
    # every warning of the fit and of what is read from it (a singular covariance's sqrt of a negative variance, in
    # statsmodels' own files) is the result's, named in its "warnings": never printed with a site-packages path
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit = smf.mixedlm(formula, df, groups=df[group]).fit(reml=True)
        except Exception as exc:  # noqa: BLE001 - singular designs raise several numpy/statsmodels types
            out.reason = f"model could not be fitted: {type(exc).__name__}: {exc}"
            return out
        out.converged, out.coefficients, out.group_var = _fitted(fit)
    out.warnings = sorted({str(w.message).splitlines()[0] for w in caught})
    return out


def _fitted(fit: Any) -> tuple[bool, dict[str, dict[str, Any]], dict[str, Any]]:
    """A mixed model fit's coefficients (B, SE, z, p, ci95), its group variance and whether it converged."""
    names = list(fit.fe_params.index)
    conf = np.asarray(fit.conf_int())
    b, se = np.asarray(fit.fe_params), np.asarray(fit.bse_fe)
    z, p = np.asarray(fit.tvalues), np.asarray(fit.pvalues)
    bse_re = np.asarray(fit.bse_re).ravel()
    return (bool(getattr(fit, "converged", True)),
            {name: Coefficient(_num(b[i]), _num(se[i]), _num(z[i]), _num(p[i]),
                               [_num(conf[i, 0]), _num(conf[i, 1])]).to_json() for i, name in enumerate(names)},
            {"var": _num(np.asarray(fit.cov_re)[0, 0]), "SE": _num(bse_re[0]) if bse_re.size else None})


def _num(x: Any) -> Optional[float]:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None
