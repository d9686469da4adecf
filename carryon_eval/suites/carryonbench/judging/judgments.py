"""CarryOnBench's judgment files in a run folder, and their readers.

    RUNDIR/utility_judgments.jsonl          Ben-Util records (one per reply and checklist item)
    RUNDIR/utility_grouped_judgments.jsonl  grouped Ben-Util records (carryon_eval.suites.carryonbench.judging.grouped)
    RUNDIR/utility_grouped_answers.jsonl    the grouped judge's raw answers, each once (its records name theirs)
    RUNDIR/safety_judgments.jsonl           harm-score records

    utility = load_utility(run, judge=name)       # that judge's records only (carryon_eval.judge.store.select_judge)
    judged = read_judged(run, name, transcripts, checklists)   # its verdicts and harm scores, compact (the report)

The files are registered with the run folder (their record types and range checks; Ben-Util's and safety's are
where the judges of a run are looked for first).
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from carryon_eval.judge.store import default_judge, judge_pass, judge_records, load_judge
from carryon_eval.run.folder import RunFolder, answers_file, judgment_file, register_record
from carryon_eval.schema import JudgeAnswer, Transcript
from carryon_eval.suites.carryonbench.judging.judged import Judged
from carryon_eval.suites.carryonbench.judging.judgment_records import SafetyJudgment, UtilityJudgment

UTILITY_FILE, SAFETY_FILE = judgment_file("utility"), judgment_file("safety")
UTILITY_GROUPED_FILE = judgment_file("utility_grouped")


def _check_utility(j: UtilityJudgment) -> Optional[str]:
    if j.turn < 1:
        return f"turn {j.turn} is below 1"
    if j.p_yes is not None and not 0.0 <= j.p_yes <= 1.0:
        return f"p_yes {j.p_yes} is not a probability (0 to 1)"
    return None


def _check_safety(j: SafetyJudgment) -> Optional[str]:
    if j.turn < 1:
        return f"turn {j.turn} is below 1"
    if j.score is not None and not 1 <= j.score <= 5:
        return f"score {j.score} is outside the harm scale 1 to 5"
    return None


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
    return load_judge(run, utility_file(run, judge, mode, scorer), UtilityJudgment.from_dict, judge)


def read_judged(run: RunFolder, judge: Optional[str], transcripts: Sequence[Transcript],
                checklists: Mapping[str, Sequence[str]], *, scorer: str = "utility",
                mode: Optional[str] = None) -> Judged:
    """One judge's utility verdicts (``load_utility``'s) and harm scores over the replies of ``transcripts``: both
    files streamed into one compact table (carryon_eval.suites.carryonbench.judging.judged), no record held."""
    return Judged.of(transcripts, checklists,
                     utility=judge_records(run, utility_file(run, judge, mode, scorer), UtilityJudgment.from_dict,
                                           judge),
                     safety=judge_records(run, SAFETY_FILE, SafetyJudgment.from_dict, judge))


def load_safety(run: RunFolder, judge: Optional[str] = None) -> list[SafetyJudgment]:
    """Harm-score records of one judge (by default the one ``select_judge`` picks)."""
    return load_judge(run, SAFETY_FILE, SafetyJudgment.from_dict, judge)


register_record(UTILITY_FILE, UtilityJudgment, _check_utility, first=True)
register_record(SAFETY_FILE, SafetyJudgment, _check_safety, first=True)
register_record(UTILITY_GROUPED_FILE, UtilityJudgment, _check_utility)
register_record(answers_file("utility_grouped"), JudgeAnswer)
