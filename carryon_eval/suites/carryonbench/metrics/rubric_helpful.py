"""What rubric utility is, and the spacing-free number rubric runs are ranked by (pure, no I/O).

A rubric run (``--utility rubric``) stores OpenSafeIntent's 1-4 helpfulness score of a reply as the items
``rubric>=2/3/4`` (carryon_eval.suites.carryonbench.judging.rubric), so a conversation's utility is its best turn's
(score - 1) / 3: a choice of spacing between levels 1-4. Any other monotone spacing (0, .1, .4, 1, say) can
reorder models on utility and Recovery%, and a best-turn score has no items to repeat, so redundancy and the
"repetitive recovery" flag mean nothing there (a run of [3, 3, 3] reads 100% redundant).

The companion that needs no spacing: ``helpful_rate``, the % of conversations whose best turn reaches level 3
("helpful"), the item ``rubric>=3`` fulfilled at any turn; and its differences BC minus turn 1 (what the
conversation adds over the query alone) and BC minus NC (what clarifying adds over the same turns). A monotone
re-spacing keeps which turns reach level 3, so these and the order of models on them never move. Read by the
headline's rule (carryon_eval.suites.carryonbench.metrics.unscored): a conversation with an unscored turn whose level-3
item could decide it is undecided (complete cases), means within each conversation length, bounds from the
unscored answers read "no" and "yes", each replicate moved into its own bounds; the run's query bootstrap.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from carryon_eval.codec import Record, absent
from carryon_eval.metrics.stats import Bootstrap
from carryon_eval.suites.carryonbench.metrics.condition import Interval, NumberView
from carryon_eval.suites.carryonbench.metrics.conversations import Conversation, by_condition
from carryon_eval.suites.carryonbench.metrics.unscored import CONVERSATION_VALUES, HELPFUL_ITEM, Estimate, rule_estimate

SECTION = "rubric_helpful"
SPACING_NOTE = ("Rubric utility depends on the spacing of levels 1-4 ((score - 1) / 3 here): another monotone spacing "
                "can reorder models on utility and Recovery%. The helpful rate (% of conversations whose best turn "
                "reaches level 3) and its differences need no spacing; compare and the leaderboard rank rubric runs "
                "by BC - NC helpful. Redundancy and the repetitive-recovery flag are not defined for rubric utility "
                "(a best-turn score has no items to repeat).")
NO_REDUNDANCY = "not defined for rubric utility: a best-turn score has no checklist items to repeat"
DIFFERENCES = {"bc_minus_turn1": ("bc", "turn1"), "bc_minus_nc": ("bc", "nc")}


def is_rubric(convs: Sequence[Conversation]) -> bool:
    """Whether the conversations' utility items are the rubric's (a rubric run)."""
    items = {i for c in convs for t in c.turns[:1] for i in t.verdicts}
    return HELPFUL_ITEM in items and items <= {"rubric>=2", "rubric>=3", "rubric>=4"}


def helpful_value(c: Conversation) -> tuple[Optional[float], bool]:
    """100 when a turn reached level 3, 0 when none did, undecided when an unscored answer could have."""
    return CONVERSATION_VALUES["helpful"](c)


@dataclass
class HelpfulNumber(NumberView, Record):
    value: Optional[float] = absent()
    ci95: Interval = absent()
    bounds: Interval = absent()
    reason: str = absent()


@dataclass
class RubricHelpful(Record):
    """results.json's ``rubric_helpful``: the helpful rate per condition and its differences (DIFFERENCES)."""
    definition: str = absent()
    note: str = absent()
    conditions: dict[str, HelpfulNumber] = absent()
    bc_minus_turn1: HelpfulNumber = absent()
    bc_minus_nc: HelpfulNumber = absent()

    def difference(self, name: str) -> HelpfulNumber:
        got = getattr(self, name, None)
        return got if isinstance(got, HelpfulNumber) else HelpfulNumber()


def _block(e: Estimate) -> HelpfulNumber:
    if e.value is None:
        return HelpfulNumber(None, None, e.bounds, "no conversation decided by scored rubric answers")
    return HelpfulNumber(e.value, e.ci95, e.bounds)


def helpful_record(convs: Sequence[Conversation], boot: Bootstrap) -> Optional[RubricHelpful]:
    """results.json's ``rubric_helpful`` (None for a Ben-Util run): per condition the helpful rate, and its
    differences BC - turn 1 and BC - NC (the same draws: paired by query), each by the headline's rule and its
    reported interval (``unscored.rule_estimate``: BCa at expanded levels)."""
    if not is_rubric(convs):
        return None
    groups = by_condition(convs)
    rates = {cond: rule_estimate(cs, "helpful", boot, "no conversation decided by scored rubric answers")
             for cond, cs in groups.items() if cs}
    differences = {}
    for name, (a, b) in DIFFERENCES.items():
        if a in rates and b in rates and rates[a].value is not None and rates[b].value is not None:
            differences[name] = _block(rates[a] - rates[b])
        else:
            differences[name] = HelpfulNumber(None, None, None, f"condition {a} or {b} not run")
    return RubricHelpful(f"% of conversations whose best turn reaches rubric level 3 (item {HELPFUL_ITEM} at any "
                         "turn); spacing-free", SPACING_NOTE, {c: _block(r) for c, r in rates.items()}, **differences)


def helpful_section(convs: Sequence[Conversation], boot: Bootstrap) -> Optional[dict[str, Any]]:
    """``helpful_record``'s JSON (results.json's shape)."""
    record = helpful_record(convs, boot)
    return None if record is None else record.to_json()
