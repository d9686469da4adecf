"""CarryOnBench's judgments: its records (one Ben-Util verdict per conversation, model turn and checklist item; one
harm score per conversation and model turn; each of one judge model), the run-folder files they fill, and their
readers.

    RUNDIR/utility_judgments.jsonl          Ben-Util records (one per reply and checklist item)
    RUNDIR/utility_grouped_judgments.jsonl  grouped Ben-Util records (carryon_eval.suites.carryonbench.judging.grouped)
    RUNDIR/utility_grouped_answers.jsonl    the grouped judge's raw answers, each once (its records name theirs)
    RUNDIR/rubric_utility_judgments.jsonl   the rubric utility judge's records (judging/rubric.py), Ben-Util's shape
    RUNDIR/safety_judgments.jsonl           harm-score records

    utility = load_utility(run, judge=name)       # that judge's records only (carryon_eval.judge.store.select_judge)
    judged = read_judged(run, name, transcripts, checklists)   # judged.py: its verdicts and harm scores, compact

A verdict or score that could not be parsed is None ("unscored"), never False or 0. Each scorer declares its
record type (``record_type``: judging/scorers.py, grouped.py, rubric.py), which registers it with the run folder:
every line of its file is read straight into one and checked (``out_of_range``); Ben-Util's and safety's files are
where the judges of a run are looked for first.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, TypeVar

from carryon_eval.judge.store import default_judge, judge_pass, load_judge
from carryon_eval.run.folder import RunFolder, judgment_file

UTILITY_FILE, SAFETY_FILE = judgment_file("utility"), judgment_file("safety")
UTILITY_GROUPED_FILE = judgment_file("utility_grouped")


# ---------------------------------------------------------------- the records
class _Flat:
    """A judgment record whose fields are all str/int/float/bool/None: its dict in field order (``asdict``
    without its deep copy, which plain values do not need) and back."""

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}   # type: ignore[attr-defined]

    @classmethod
    def from_dict(cls: type[F], d: dict[str, Any]) -> F:
        return cls(**{k: d.get(k) for k in cls.__dataclass_fields__})             # type: ignore[attr-defined]


F = TypeVar("F", bound=_Flat)


@dataclass
class UtilityJudgment(_Flat):
    conversation_id: str
    turn: int
    item_id: str
    verdict: Optional[bool]         # None = unscored (unparseable after retries)
    judge_model: str
    prompt_version: str
    p_yes: Optional[float] = None   # logprob mode only
    raw: Optional[str] = None
    attempts: Optional[int] = None  # calls behind the answer (None in files written before it was recorded)
    via: Optional[str] = None       # how the verdict was obtained: "json_schema" | "text" | "logprobs"
    answer: Optional[str] = None    # grouped: the id of its raw answer, stored once (``raw`` is filled from it)

    def out_of_range(self) -> Optional[str]:
        """Why the record cannot be one of a Ben-Util file (None: it can)."""
        if self.turn < 1:
            return f"turn {self.turn} is below 1"
        if self.p_yes is not None and not 0.0 <= self.p_yes <= 1.0:
            return f"p_yes {self.p_yes} is not a probability (0 to 1)"
        return None


@dataclass
class SafetyJudgment(_Flat):
    conversation_id: str
    turn: int
    score: Optional[int]            # 1..5, None = unscored
    judge_model: str
    prompt_version: str
    raw: Optional[str] = None
    attempts: Optional[int] = None  # calls behind the answer (None in files written before it was recorded)
    via: Optional[str] = None       # how the score was obtained: "json_schema" | "text"

    def out_of_range(self) -> Optional[str]:
        """Why the record cannot be one of the safety file (None: it can)."""
        if self.turn < 1:
            return f"turn {self.turn} is below 1"
        if self.score is not None and not 1 <= self.score <= 5:
            return f"score {self.score} is outside the harm scale 1 to 5"
        return None


# ---------------------------------------------------------------- the files and their readers
def utility_judge_of(run: RunFolder, judge: Optional[str]) -> str:
    """Which Ben-Util judgment set a judge's numbers stand on: the mode of its latest pass (judge.json's
    ``utility_judge``), "per-item" for passes recorded before there was a choice."""
    judged = judge_pass(run, judge)
    return (judged.scoring.get("utility_judge") if judged is not None else None) or "per-item"


def utility_file(run: RunFolder, judge: Optional[str] = None, mode: Optional[str] = None,
                 scorer: str = "utility") -> str:
    """The file of a judge's utility records: ``scorer``'s own for another utility measure; for Ben-Util, of one
    mode, "per-item" (utility_judgments.jsonl) or "grouped" (utility_grouped_judgments.jsonl), by default the mode
    of that judge's latest pass (``utility_judge_of``)."""
    if scorer != "utility":        # what measured utility in Ben-Util's place (run.json judge.utility_scorer)
        return judgment_file(scorer)
    if mode is None:
        mode = utility_judge_of(run, judge if judge is not None else default_judge(run, scorer))
    return UTILITY_GROUPED_FILE if mode == "grouped" else UTILITY_FILE


def load_utility(run: RunFolder, judge: Optional[str] = None, mode: Optional[str] = None,
                 scorer: str = "utility") -> list[UtilityJudgment]:
    """Ben-Util records of one judge (by default the one ``select_judge`` picks), of one mode (``utility_file``)."""
    return load_judge(run, utility_file(run, judge, mode, scorer), judge)


def load_safety(run: RunFolder, judge: Optional[str] = None) -> list[SafetyJudgment]:
    """Harm-score records of one judge (by default the one ``select_judge`` picks)."""
    return load_judge(run, SAFETY_FILE, judge)
