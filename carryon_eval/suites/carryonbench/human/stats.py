"""The statistics of judge-human agreement: pure functions of paired labels, with bootstrap intervals.

    binary_stats(judge, human)       Ben-Util: percent agreement, Cohen's kappa
    score_stats(judge, human)        harm 1-5: exact and within-1 agreement (%), quadratic-weighted kappa, Spearman
    move_stats(intended, human)      fidelity: accuracy (%) and the confusion matrix (intended -> labeled)
    krippendorff_alpha(rows, level)  among several annotators (the `krippendorff` package)
    majority(values)                 the majority label of one case (None on a tie)

Every statistic comes with a 95% percentile bootstrap interval over the compared cases (resampled with
replacement, N_RESAMPLES times, seeded): `with_ci`, on metrics.stats.bootstrap_ci (the project's one bootstrap; the
rank correlation is metrics.stats.spearman_rho, the one compare uses too). A statistic that is undefined (no pairs, a constant
rating) is None with a reason, never 0. Each is a record (``Statistic``, ``Kappa``, ``Alpha``: a number with its
interval, its ``number`` the Number the report shows) and a task's set of them is one ``Agreement``.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from carryon_eval.codec import OMIT_NONE, Record, absent
from carryon_eval.moves import MOVES
from carryon_eval.metrics.number import HasNumber, Interval
from carryon_eval.metrics.stats import bootstrap_ci, cohen_kappa, percent_agreement, spearman_rho

N_RESAMPLES = 1000
SEED = 0
SCORES = (1, 2, 3, 4, 5)

Stat = Callable[[Sequence[Any], Sequence[Any]], Optional[float]]


@dataclass
class Statistic(HasNumber, Record):
    """A statistic and its 95% bootstrap interval (each None when undefined; both always written)."""
    value: Optional[float] = None
    ci95: Interval = None


@dataclass
class Kappa(Statistic):
    """Cohen's kappa with its interval, and why it is undefined (None: it is defined)."""
    reason: Optional[str] = None


@dataclass
class Alpha(HasNumber, Record):
    """Krippendorff's alpha among the annotators with its interval, its level of measurement (nominal, ordinal) and,
    when it is n/a for want of annotators, why."""
    value: Optional[float] = None
    ci95: Interval = None
    level: str = ""
    reason: Optional[str] = field(default=None, metadata=OMIT_NONE)


@dataclass
class Agreement(Record):
    """A task's statistics of two label sets (a reference and people) on the cases both labeled: ``n``, the task's
    statistics (utility: ``percent_agreement``, ``cohen_kappa``; safety: ``exact_agreement``, ``within_one``,
    ``quadratic_kappa``, ``spearman``; fidelity: ``accuracy``; another task's are absent), the ``confusion`` matrix
    and, where compared with a reference (judges_vs_people.compare), the counts of what was left out."""
    n: int = 0
    percent_agreement: Statistic = absent()
    cohen_kappa: Kappa = absent()
    exact_agreement: Statistic = absent()
    within_one: Statistic = absent()
    quadratic_kappa: Statistic = absent()
    spearman: Statistic = absent()
    accuracy: Statistic = absent()
    confusion: dict[str, Any] = field(default_factory=dict)
    n_labeled: int = absent()
    n_excluded_unscored: int = absent()
    n_not_in_reference: int = absent()


# ---------------------------------------------------------------- single statistics
def within_one(a: Sequence[int], b: Sequence[int]) -> Optional[float]:
    """Percent of pairs whose scores differ by at most one point."""
    return 100.0 * sum(abs(x - y) <= 1 for x, y in zip(a, b)) / len(a) if a else None


def quadratic_kappa(a: Sequence[int], b: Sequence[int], categories: Sequence[int] = SCORES) -> Optional[float]:
    """Cohen's kappa with quadratic weights ((i - j) / (K - 1))^2 over the fixed categories; None when the
    chance-expected weighted disagreement is 0 (both raters used one and the same score)."""
    if not a:
        return None
    k = len(categories)
    pos = {c: i for i, c in enumerate(categories)}
    observed = np.zeros((k, k))
    for x, y in zip(a, b):
        observed[pos[x], pos[y]] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    i, j = np.indices((k, k))
    weights = ((i - j) / (k - 1)) ** 2
    denom = float((weights * expected).sum())
    if math.isclose(denom, 0.0):
        return None
    return 1.0 - float((weights * observed).sum()) / denom


def with_ci(stat: Stat, a: Sequence[Any], b: Sequence[Any]) -> Statistic:
    return Statistic(stat(a, b), bootstrap_ci(stat, a, b))


# ---------------------------------------------------------------- one statistic set per task
def binary_stats(a: Sequence[bool], b: Sequence[bool]) -> Agreement:
    """Ben-Util: percent agreement and Cohen's kappa (a: judge, b: people), with intervals."""
    kappa, reason = with_ci(lambda x, y: cohen_kappa(x, y)[0], a, b), cohen_kappa(a, b)[1]
    return Agreement(len(a), percent_agreement=with_ci(percent_agreement, a, b),
                     cohen_kappa=Kappa(kappa.value, kappa.ci95, reason),
                     confusion={"yes_yes": sum(x and y for x, y in zip(a, b)),
                                "yes_no": sum(x and not y for x, y in zip(a, b)),
                                "no_yes": sum(not x and y for x, y in zip(a, b)),
                                "no_no": sum(not x and not y for x, y in zip(a, b))})


def score_stats(a: Sequence[int], b: Sequence[int]) -> Agreement:
    """Harm scores: exact and within-1 agreement (%), quadratic-weighted kappa, Spearman's rho."""
    return Agreement(len(a), exact_agreement=with_ci(percent_agreement, a, b), within_one=with_ci(within_one, a, b),
                     quadratic_kappa=with_ci(quadratic_kappa, a, b), spearman=with_ci(spearman_rho, a, b),
                     confusion={str(s): {str(t): sum(x == s and y == t for x, y in zip(a, b)) for t in SCORES}
                                for s in SCORES})


def move_stats(a: Sequence[str], b: Sequence[str]) -> Agreement:
    """Moves: accuracy (% of b equal to a) and the confusion matrix a -> b over the seven moves."""
    return Agreement(len(a), accuracy=with_ci(percent_agreement, a, b),
                     confusion={m: {p: sum(x == m and y == p for x, y in zip(a, b)) for p in MOVES} for m in MOVES})


TASK_STATS: dict[str, Callable[[Sequence[Any], Sequence[Any]], Agreement]] = {
    "utility": binary_stats, "safety": score_stats, "fidelity": move_stats}


# ---------------------------------------------------------------- several annotators
def majority(values: Sequence[Any]) -> Optional[Any]:
    """The most frequent non-None label; None when there is none or the top labels tie."""
    counts = Counter(v for v in values if v is not None).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


LEVEL = {"utility": "nominal", "safety": "ordinal", "fidelity": "nominal"}


def krippendorff_alpha(rows: Sequence[Sequence[Any]], level: str) -> Optional[float]:
    """Krippendorff's alpha of an annotators x cases table (None = not labeled); None when undefined
    (fewer than two annotators, no case with two labels, or a single value overall)."""
    import krippendorff

    if len(rows) < 2:
        return None
    values = sorted({v for r in rows for v in r if v is not None}, key=str)
    if len(values) < 2:
        return None
    code = {v: float(i) for i, v in enumerate(values)} if level == "nominal" else {v: float(v) for v in values}
    data = np.array([[np.nan if v is None else code[v] for v in r] for r in rows], dtype=float)
    if not (np.sum(~np.isnan(data), axis=0) >= 2).any():
        return None
    with np.errstate(invalid="ignore", divide="ignore"):      # 0/0 is the undefined case, returned as None
        alpha = float(krippendorff.alpha(reliability_data=data, level_of_measurement=level,
                                         value_domain=list(SCORES) if level == "ordinal" else None))
    return alpha if math.isfinite(alpha) else None


def alpha_with_ci(rows: Sequence[Sequence[Any]], level: str, *, n_resamples: int = N_RESAMPLES,
                  seed: int = SEED) -> Alpha:
    """Krippendorff's alpha with a 95% interval over cases resampled with replacement."""
    value = krippendorff_alpha(rows, level)
    n = len(rows[0]) if rows else 0
    if value is None or n == 0:
        return Alpha(value, None, level)
    ci = bootstrap_ci(lambda *resampled: krippendorff_alpha(resampled, level), *rows, n_resamples=n_resamples, seed=seed)
    return Alpha(value, ci, level)
