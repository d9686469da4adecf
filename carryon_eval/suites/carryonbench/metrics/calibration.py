"""How far grouped Ben-Util verdicts agree with per-item ones on the same replies (pure).

A grouped run with ``--calibrate N`` also judges whole queries of its plan (every conversation of each), drawn at
random (seeded) until N replies, in the per-item mode of the paper. Each (reply, item) pair scored both ways is compared:

- ``percent_agreement``: % of pairs with the same verdict;
- ``cohen_kappa``: Cohen's kappa of the two verdict sets;
- ``utility_difference``: the mean over the sampled replies of (grouped - per-item) reply utility, where a
  reply's utility is the % of its checklist items judged fulfilled, over the items scored both ways. This is
  the turn-level utility of the paper on those replies;
- ``headline_differences``: what people read: the grouped-minus-per-item difference of each headline utility
  number (conversation utility per condition, its deltas from turn 1, Recovery%, the clarification effect) on
  the sampled conversations, by the headline's estimators. Conversation utility counts an item reached at any
  turn, so an item-level disagreement moves it by other amounts (even of the other sign) than reply utility.

The sample is whole queries (every conversation of a drawn query: turn 1, the oracle, BC and NC alike), so that each
headline number has its conditions on the same queries. Every interval is the headline's (``stats.interval95``: BCa
at levels expanded for n, its acceleration from the leave-one-out jackknife), paired: the reply-level figures over
the sampled replies (a reply's items move together, as a cluster), the headline differences over the sampled
queries, each resample drawing both modes on the same draw. Pairs where either mode left the item unscored are
excluded and counted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from carryon_eval.codec import OMIT_NONE, Record, absent
from carryon_eval.metrics.number import HasNumber, Interval
from carryon_eval.metrics.stats import (INTERVAL, INTERVAL_TEXT, cohen_kappa, interval95, percent_agreement,
                                        resample_indices)
from carryon_eval.suites.carryonbench.conditions import CONDITIONS


@dataclass
class AgreementNumber(HasNumber, Record):
    """One figure of the agreement (percent agreement, Cohen's kappa, the reply utility difference): a number with
    its interval, why it is missing, and what it is (``definition``, where it says)."""
    value: Optional[float] = None
    ci95: Interval = None
    reason: Optional[str] = field(default=None, metadata=OMIT_NONE)
    definition: Optional[str] = field(default=None, metadata=OMIT_NONE)


@dataclass
class HeadlineDifference(HasNumber, Record):
    """Grouped minus per-item value of one headline utility number on the sample, with both values."""
    value: Optional[float] = None
    ci95: Interval = None
    grouped: Optional[float] = None
    per_item: Optional[float] = None
    reason: Optional[str] = field(default=None, metadata=OMIT_NONE)


@dataclass
class HeadlineDifferences(Record):
    """``headline_differences``: what the grouped mode moves each headline utility number by (HEADLINE_DIFFERENCES
    by name), on the sampled conversations of whole queries."""
    n_conversations: int = 0
    n_queries: int = 0
    numbers: dict[str, HeadlineDifference] = field(default_factory=dict)
    definition: str = ""


@dataclass
class Calibration(Record):
    """results.json's ``judges.utility.calibration`` of a grouped Ben-Util run: ``calibrated`` False (and the
    reason) when nothing was judged both ways; else the sample (``replies_sampled``, ``sample_seed``: judge.json's
    record of it), the agreement on it (``calibration``) and, where measured, the headline differences."""
    calibrated: bool = False
    reason: Optional[str] = field(default=None, metadata=OMIT_NONE)
    replies_sampled: Optional[int] = absent()
    sample_seed: Optional[int] = absent()
    n_replies: int = absent()
    n_pairs: int = absent()
    n_common: int = absent()
    n_unscored_excluded: int = absent()
    percent_agreement: AgreementNumber = absent()
    cohen_kappa: AgreementNumber = absent()
    utility_difference: AgreementNumber = absent()
    interval: str = absent()
    headline: HeadlineDifferences = absent()


@dataclass
class CalibrationSample(Record):
    """judge.json's record of a grouped pass's calibration: how many replies it also judged per item, drawn with
    which seed."""
    replies: Optional[int] = None
    seed: Optional[int] = None


Pairs = list[tuple[bool, bool]]        # (grouped, per-item) verdicts of one reply's items scored both ways


def _reply_pairs(grouped: Sequence[Any], per_item: Sequence[Any]) -> tuple[dict[tuple, Pairs], int, int]:
    g = {(r.conversation_id, r.turn, r.item_id): r.verdict for r in grouped}
    replies: dict[tuple, list[tuple[bool, bool]]] = {}
    common = excluded = 0
    for r in per_item:
        key = (r.conversation_id, r.turn, r.item_id)
        if key not in g:
            continue
        common += 1
        replies.setdefault(key[:2], [])
        if r.verdict is None or g[key] is None:
            excluded += 1
            continue
        replies[key[:2]].append((bool(g[key]), bool(r.verdict)))
    return {k: v for k, v in sorted(replies.items()) if v}, common, excluded


def _stats(clusters: Sequence[list[tuple[bool, bool]]]) -> tuple[Optional[float], Optional[float], Optional[float]]:
    pairs = [p for c in clusters for p in c]
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    kappa, _ = cohen_kappa(a, b) if pairs else (None, None)
    diffs = [100.0 * (sum(x for x, _ in c) - sum(y for _, y in c)) / len(c) for c in clusters]
    return percent_agreement(a, b), kappa, (float(np.mean(diffs)) if diffs else None)


def _jackknife(clusters: Sequence[list[tuple[bool, bool]]]) -> np.ndarray:
    """(n, 3) the three statistics of ``_stats`` with each reply left out in turn, from each reply's counts (the
    verdicts are yes/no: agreement, kappa's marginals and reply utility are sums over replies)."""
    n_pairs = np.array([len(c) for c in clusters], float)
    agree = np.array([sum(x == y for x, y in c) for c in clusters], float)
    yes_g = np.array([sum(x for x, _ in c) for c in clusters], float)
    yes_p = np.array([sum(y for _, y in c) for c in clusters], float)
    diffs = 100.0 * (yes_g - yes_p) / n_pairs
    rest = n_pairs.sum() - n_pairs
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = (agree.sum() - agree) / rest
        pg, pp = (yes_g.sum() - yes_g) / rest, (yes_p.sum() - yes_p) / rest
        expected = pg * pp + (1 - pg) * (1 - pp)
        kappa = np.where(np.isclose(expected, 1.0), np.nan, (observed - expected) / (1 - expected))
        utility = (diffs.sum() - diffs) / (len(clusters) - 1)
    return np.column_stack([100.0 * observed, kappa, utility])


def calibration(grouped: Sequence[Any], per_item: Sequence[Any], *, n_resamples: int = 1000,
                seed: int = 0) -> Calibration:
    """The agreement of the grouped records with the per-item records of the same judge (UtilityJudgment-like:
    conversation_id, turn, item_id, verdict), on the replies both judged."""
    replies, common, excluded = _reply_pairs(grouped, per_item)
    clusters = list(replies.values())
    agree, kappa, diff = _stats(clusters)
    reps = np.full((n_resamples, 3), np.nan)
    for i, row in enumerate(resample_indices(len(clusters), n_resamples, seed)):
        values = _stats([clusters[j] for j in row]) if len(row) else (None, None, None)
        reps[i] = [np.nan if v is None else v for v in values]
    jack = _jackknife(clusters) if len(clusters) > 2 else None
    _, kappa_reason = cohen_kappa([x for c in clusters for x, _ in c], [y for c in clusters for _, y in c])

    def ci(value: Optional[float], k: int) -> Optional[list[float]]:
        return interval95(value, reps[:, k], None if jack is None else jack[:, k]) if clusters else None
    return Calibration(
        True, n_replies=len(clusters), n_pairs=sum(map(len, clusters)), n_common=common, n_unscored_excluded=excluded,
        percent_agreement=AgreementNumber(agree, ci(agree, 0)),
        cohen_kappa=AgreementNumber(kappa, ci(kappa, 1), kappa_reason if kappa is None else None),
        utility_difference=AgreementNumber(diff, ci(diff, 2), definition=(
            "mean over the sampled replies of grouped minus per-item reply utility (% of checklist items fulfilled, "
            "items scored both ways), percentage points; paired bootstrap over replies")),
        interval=f"{INTERVAL_TEXT[INTERVAL]}, over the sampled replies ({n_resamples} resamples, seed {seed})")


def not_calibrated(reason: str) -> Calibration:
    """A grouped run's calibration when nothing was judged both ways: what it lacks, and why."""
    return Calibration(False, reason)


# ---------------------------------------------------------------- the headline numbers on the sample
#: The numbers a grouped Ben-Util judge moves (harm is judged alike in both modes), as results.json names them.
HEADLINE_DIFFERENCES = ("turn1.utility", "oracle.utility", "bc.utility", "nc.utility", "bc.utility_delta",
                        "nc.utility_delta", "recovery", "clarification_effect")


Draws = tuple[Optional[float], np.ndarray, Optional[np.ndarray]]      # value, bootstrap replicates, jackknife


def _draws(estimate: Any) -> Draws:
    return estimate.value, estimate.reps, estimate.jack


def _utility_numbers(convs: Sequence[Any], boot: Any) -> dict[str, Draws]:
    """The utility headline numbers of some conversations (value, bootstrap replicates, jackknife values), by the
    headline's estimators on ``boot``'s resamples of the queries."""
    from carryon_eval.suites.carryonbench.metrics.conversations import by_condition
    from carryon_eval.suites.carryonbench.metrics.headline import recovery_estimate
    from carryon_eval.suites.carryonbench.metrics.unscored import rule_estimate

    groups = by_condition(convs)
    turn1, oracle, bc, nc = (rule_estimate(groups[cond], "utility", boot, "not in the sample") for cond in CONDITIONS)
    value, _, reps, jack = recovery_estimate(turn1, oracle, bc)
    # in HEADLINE_DIFFERENCES' order
    draws = [*map(_draws, (turn1, oracle, bc, nc, bc - turn1, nc - turn1)), (value, reps, jack), _draws(bc - nc)]
    return dict(zip(HEADLINE_DIFFERENCES, draws))


def headline_differences(grouped: Sequence[Any], per_item: Sequence[Any], *, n_resamples: int = 1000,
                         seed: int = 0) -> HeadlineDifferences:
    """Grouped minus per-item value of each utility headline number (HEADLINE_DIFFERENCES) on the calibration
    sample: ``grouped`` and ``per_item`` are the same sampled conversations (Conversation records) assembled from
    each mode's verdicts. Conversation utility counts an item fulfilled at any turn, so a judge's item-level
    disagreement moves these differently from reply utility: this is what the headline would move by. Paired
    95% intervals by the headline's method: one bootstrap (and one jackknife) of the sampled queries drives both
    modes."""
    from carryon_eval.metrics.stats import Bootstrap

    boot = Bootstrap.of((c.query_id for c in (*grouped, *per_item)), n_resamples=n_resamples, seed=seed)
    g, p = _utility_numbers(grouped, boot), _utility_numbers(per_item, boot)
    out: dict[str, HeadlineDifference] = {}
    for name in HEADLINE_DIFFERENCES:
        (gv, greps, gjack), (pv, preps, pjack) = g[name], p[name]
        if gv is None or pv is None:
            out[name] = HeadlineDifference(None, None, gv, pv, "not computable on the sample (a condition it needs "
                                                               "has no sampled conversation decided by scored "
                                                               "judgments)")
            continue
        jack = None if gjack is None or pjack is None else gjack - pjack
        out[name] = HeadlineDifference(gv - pv, interval95(gv - pv, greps - preps, jack), gv, pv)
    return HeadlineDifferences(len({c.conversation_id for c in per_item}), len(boot.query_ids), out,
                               "grouped minus per-item value of each headline utility number, both read by the "
                               "headline's estimators on the sampled conversations (whole queries); paired bootstrap "
                               "over their queries, the headline's interval")
