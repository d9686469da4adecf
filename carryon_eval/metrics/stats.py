"""Small statistics helpers: query-cluster bootstrap, Cohen's kappa, Spearman and mixed linear models.

numpy only at import time; scipy and statsmodels (the `report` extra) are imported inside the
functions that need them, so metrics and reports work without them.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

import numpy as np

N_RESAMPLES = 1000
SEED = 0


# ---------------------------------------------------------------- cluster bootstrap
@dataclass(frozen=True)
class Bootstrap:
    """One fixed set of resamples of the queries; every statistic of a run uses the same one so that
    differences and ratios (deltas, Recovery%) are bootstrapped jointly."""
    query_ids: tuple[str, ...]
    idx: np.ndarray                      # (n_resamples, n_queries) indices into query_ids

    @classmethod
    def of(cls, query_ids: Iterable[str], n_resamples: int = N_RESAMPLES, seed: int = SEED) -> "Bootstrap":
        ids = tuple(sorted(set(query_ids)))
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, len(ids), size=(n_resamples, len(ids))) if ids else np.zeros((n_resamples, 0), int)
        return cls(ids, idx)

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


def ci95(replicates: np.ndarray, min_defined: float = 0.9) -> Optional[list[float]]:
    """Percentile interval of the defined replicates; None when fewer than min_defined of them are
    defined (e.g. most resamples drew no query that has the condition)."""
    defined = replicates[np.isfinite(replicates)]
    if replicates.size == 0 or defined.size < min_defined * replicates.size:
        return None
    lo, hi = np.percentile(defined, [2.5, 97.5])
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


# ---------------------------------------------------------------- across models
def spearman(x: Sequence[float], y: Sequence[float]) -> dict[str, Any]:
    """Spearman's rho with its p-value; nulls with a reason when it cannot be computed."""
    pairs = [(a, b) for a, b in zip(x, y) if a is not None and b is not None]
    out: dict[str, Any] = {"rho": None, "p": None, "n": len(pairs), "reason": None, "note": None}
    if len(pairs) < 2:
        out["reason"] = f"needs at least 2 models with both numbers, got {len(pairs)}"
        return out
    xs, ys = zip(*pairs)
    if len(set(xs)) == 1 or len(set(ys)) == 1:
        out["reason"] = "one of the two rankings is constant: rho is undefined"
        return out
    from scipy.stats import spearmanr

    res = spearmanr(xs, ys)
    out["rho"] = float(res.statistic)
    if len(pairs) < 3 or not math.isfinite(float(res.pvalue)):
        out["reason"] = "p-value undefined with fewer than 3 models"
    else:
        out["p"] = float(res.pvalue)
        if len(pairs) < 10:
            out["note"] = "p from scipy's t approximation; rough with fewer than 10 models"
    return out


def mixed_model(rows: Sequence[dict[str, Any]], outcome: str, predictors: Sequence[str],
                group: str = "model") -> dict[str, Any]:
    """REML linear mixed model `outcome ~ predictors` with a random intercept per group.

    Returns {"formula", "n", "n_groups", "coefficients": {name: {B, SE, z, p, ci95}}, "group_var",
    "converged", "warnings", "reason"}; coefficients are null with a reason when it cannot be fitted.
    """
    formula = f"{outcome} ~ " + " + ".join(predictors)
    keep = [r for r in rows if all(r.get(c) is not None for c in (outcome, group, *predictors))]
    groups = sorted({r[group] for r in keep})
    out: dict[str, Any] = {"formula": formula, "groups": group, "n": len(keep), "n_groups": len(groups),
                           "coefficients": None, "group_var": None, "converged": None, "warnings": [],
                           "reason": None}
    if len(groups) < 2:
        out["reason"] = f"needs at least 2 models (random intercept per model), got {len(groups)}"
        return out
    if len(keep) <= len(predictors) + 2:
        out["reason"] = f"too few conversations ({len(keep)}) for {len(predictors)} predictors"
        return out
    import pandas as pd
    import statsmodels.formula.api as smf

    df = pd.DataFrame(keep)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit = smf.mixedlm(formula, df, groups=df[group]).fit(reml=True)
    except Exception as exc:  # noqa: BLE001 - singular designs raise several numpy/statsmodels types
        out["reason"] = f"model could not be fitted: {type(exc).__name__}: {exc}"
        return out
    out["warnings"] = sorted({str(w.message).splitlines()[0] for w in caught})
    out["converged"] = bool(getattr(fit, "converged", True))
    names = list(fit.fe_params.index)
    conf = np.asarray(fit.conf_int())
    b, se = np.asarray(fit.fe_params), np.asarray(fit.bse_fe)
    z, p = np.asarray(fit.tvalues), np.asarray(fit.pvalues)
    out["coefficients"] = {name: {"B": _num(b[i]), "SE": _num(se[i]), "z": _num(z[i]), "p": _num(p[i]),
                                  "ci95": [_num(conf[i, 0]), _num(conf[i, 1])]}
                           for i, name in enumerate(names)}
    bse_re = np.asarray(fit.bse_re).ravel()
    out["group_var"] = {"var": _num(np.asarray(fit.cov_re)[0, 0]),
                        "SE": _num(bse_re[0]) if bse_re.size else None}
    return out


def _num(x: Any) -> Optional[float]:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None
