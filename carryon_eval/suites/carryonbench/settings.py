"""CarryOnBench's judge settings, declared to the run's JudgeSettings (run.json's judge block keeps them flat, in
the order it has had since its first version: utility_mode before max_tokens and judge_format, the others after):

- ``utility_mode``: how the Ben-Util judge answers, yes/no text or P(yes) from logprobs (``logprob`` is read as
  ``logprobs``);
- ``utility``: what utility is measured with (UTILITY_SCORERS): Ben-Util's checklist items, or OpenSafeIntent's
  1-4 helpfulness rubric (for datasets without checklists; its own name in every output);
- ``utility_judge``: "per-item" (the paper's: one call per item) or "grouped" (one per reply,
  carryon_eval.suites.carryonbench.judging.grouped), ``utility_group_size`` (grouped: at most this many items per call)
  and ``calibrate`` (grouped: replies also judged per item, drawn with CALIBRATION_SEED).

judge.json's record of a pass says the mode and the Ben-Util judge of its settings, and a grouped pass's
calibration (the per-item scorer's ``pass_fields``).
"""
from __future__ import annotations

from typing import Any

from carryon_eval.run.results import register_status_line
from carryon_eval.run.records import (JudgeSettings, ScoringSetting, SettingsError, register_note, register_pass_field,
                                      register_setting)

UTILITY_MODES = ("text", "logprobs")     # how the utility judge answers: yes/no text, or P(yes) from logprobs
UTILITY_MODE_SPELLINGS = {"text": "text", "logprob": "logprobs", "logprobs": "logprobs"}   # what a user may write
#: What a reply's utility is measured with (--utility) -> the scorer that judges it: Ben-Util's checklist items, or
#: OpenSafeIntent's 1-4 helpfulness rubric (for datasets without checklists; its own name in every output)
UTILITY_SCORERS = {"benutil": "utility", "rubric": "rubric_utility"}
UTILITY_NAMES = {"benutil": "Ben-Util", "rubric": "rubric utility"}   # results.json's utility_measure, as said
UTILITY_JUDGES = ("per-item", "grouped")          # --utility-judge
__all__ = ["UTILITY_NAMES", "UTILITY_SCORERS", "utility_name", "utility_scorer"]


def read_utility_mode(value: Any) -> str:
    """The utility mode a user wrote (``logprob`` or ``logprobs``: ``logprobs``); SettingsError if none."""
    mode = UTILITY_MODE_SPELLINGS.get(value) if isinstance(value, str) else None
    if mode is None:
        raise SettingsError(f"expected one of {', '.join(UTILITY_MODE_SPELLINGS)}, got {value!r}")
    return mode


def read_utility(value: Any) -> str:
    if value not in UTILITY_SCORERS:
        raise SettingsError(f"expected one of {', '.join(UTILITY_SCORERS)}, got {value!r}")
    return str(value)


def utility_scorer(settings: JudgeSettings) -> str:
    """The scorer that judges utility in this run ("utility": Ben-Util)."""
    return UTILITY_SCORERS[settings.get("utility")]


def utility_name(results: Any) -> str:
    """What a run's utilities are called in every output: "Ben-Util" or "rubric utility" (results.json's
    utility_measure, named)."""
    return UTILITY_NAMES.get(results.utility_measure, results.utility_measure)


def grouped_note(settings: JudgeSettings) -> list[str]:
    if settings.get("utility_judge") == "grouped" and not settings.get("calibrate"):
        return ["grouped Ben-Util without calibration: nothing measures how its verdicts agree with the per-item "
                "protocol (--calibrate N judges N replies both ways)"]
    return []


DEFAULT_GROUP_SIZE = 25    # --utility-group-size: items per grouped Ben-Util call (the paper's checklists: 7-23)
UTILITY_MODE = register_setting(ScoringSetting("utility_mode", "text", read_utility_mode, leads=True))
UTILITY = register_setting(ScoringSetting("utility", "benutil", read_utility))
UTILITY_JUDGE = register_setting(ScoringSetting("utility_judge", "per-item"))
UTILITY_GROUP_SIZE = register_setting(ScoringSetting("utility_group_size", DEFAULT_GROUP_SIZE))
CALIBRATE = register_setting(ScoringSetting("calibrate", 0))
register_pass_field("utility_mode", leads=True)
register_pass_field("utility_judge")
register_pass_field("calibration")
register_note(grouped_note)

#: its status word (SuiteReport.status: the run's utilities are grouped Ben-Util) and what every artifact says first
register_status_line("grouped", "GROUPED BEN-UTIL: the utilities come from one judge call per reply for all its "
                     "checklist items, not the paper's per-item protocol (judges.utility.calibration says how far "
                     "the two agree).")
