"""Ben-Util's two modes side by side in the cost table of a run (``--dry-run``): the per-item and the grouped
judge's calls and tokens for the same plan (without calibration), whichever the run uses (``--utility-judge``):
``utility_judge`` and ``utility_modes`` of ``--dry-run --json``, one line of the printed table."""
from __future__ import annotations

import dataclasses
from typing import Any

from carryon_eval.judge.costing import CostNote, CostRow, CostView, register_cost_note
from carryon_eval.judge.scorers import planned_uses
from carryon_eval.suite import ScoringPlan

MODES = (("per-item", "utility"), ("grouped", "utility_grouped"))     # --utility-judge -> its scorer


def without_grouped(scoring: ScoringPlan) -> ScoringPlan:
    """The plan with the grouped Ben-Util scorer read back as the per-item one (the suites' own plan)."""
    return ScoringPlan({c: tuple(dataclasses.replace(u, scorer="utility") if u.scorer == "utility_grouped" else u
                                 for u in uses) for c, uses in scoring.uses.items()})


@register_cost_note
def both_modes(view: CostView) -> CostNote:
    settings = view.settings
    own = "utility_grouped" if settings.get("utility_judge") == "grouped" else "utility"
    rows: dict[str, Any] = {}
    for mode, name in MODES:
        counted = view.counted(own) if name == own else None
        if counted is not None:        # the run's own mode: the calls counted already (no second plan)
            rows[mode] = counted
            continue
        moded = settings.with_scoring(utility_judge=mode)
        mine = planned_uses(ScoringPlan({c: tuple(u for u in uses if u.scorer == "utility")
                                         for c, uses in without_grouped(view.scoring).uses.items()}),
                            moded.with_scoring(calibrate=0))
        if name in mine.scorers:
            rows[mode] = view.estimate(name, mine, moded)
    size = settings.get("utility_group_size")
    json = {"utility_judge": settings.get("utility_judge"),
            "utility_modes": {**{m: r.to_json() for m, r in rows.items()}, "group_size": size,
                              "note": "Ben-Util calls and tokens in each mode for the same plan (without "
                                      "calibration); the run uses utility_judge"}}
    return CostNote(json=json, lines=(_line(rows["per-item"], rows["grouped"], settings.get("utility_judge"), size),)
                    if len(rows) == 2 else ())


def _line(per: CostRow, grouped: CostRow, judge: str, size: int) -> str:
    return (f"Ben-Util judge, both modes for this plan (this run: {judge}): per-item "
            f"{per.calls:,} calls, {per.prompt_tokens:,} prompt tok, {per.completion_tokens:,} compl. tok; "
            f"grouped (at most {size} items a call) {grouped.calls:,} calls, "
            f"{grouped.prompt_tokens:,} prompt tok, {grouped.completion_tokens:,} compl. tok")
