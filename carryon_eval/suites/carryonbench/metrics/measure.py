"""CarryOnBench's word on a new run's settings (its Suite.configure hook): the utility measure (--utility, or
the first the dataset supports), refused in one line when the dataset cannot support it, and grouped Ben-Util
refused where there is no checklist to group. run.json's ``utility_choice`` records a measure the dataset chose
(``CHOICE_KEY``: its name on disk)."""
from __future__ import annotations

from typing import Any, Optional, Sequence

from carryon_eval.dataset.load import Benchmark
from carryon_eval.suites.carryonbench.dataset_support import RUBRIC_OPTION, dataset_notes, dataset_scoring, why_not
from carryon_eval.suite import Configured, ScoringPlan, SuiteError
from carryon_eval.suites.carryonbench.settings import UTILITY_NAMES

#: run.json's field recording a measure the dataset chose (its name on disk)
CHOICE_KEY = "utility_choice"
#: The scorer of the conditions whose utility the run's measure judges (Ben-Util's; --utility swaps it).
UTILITY_JUDGED = "utility"


def configure(scoring: dict[str, Any], bench: Benchmark, conditions: Sequence[str]) -> Configured:
    """The run's utility measure: the one named (--utility), refused in one line when the dataset cannot support
    it, else the first the dataset supports (carryon_eval.suites.carryonbench.dataset_support); run.json's ``utility_choice`` when the
    dataset chose a measure other than Ben-Util (a run that measures Ben-Util records what it always did).
    Conditions whose replies no utility judge scores need no measure."""
    measure, choice = _measure(scoring, bench, conditions)
    scoring = {**scoring, "utility": measure}
    lines = (utility_line(choice, bench),) if choice else ()
    return Configured(scoring, lines=lines, notes=tuple(dataset_notes(bench, measure)), meta={CHOICE_KEY: choice or {}},
                      chosen_by=(f" (rubric utility is dataset {bench.source}'s measure: it has no checklists for "
                                 "Ben-Util)") if choice else "")


def _measure(scoring: dict[str, Any], bench: Benchmark,
             conditions: Sequence[str]) -> tuple[str, Optional[dict[str, str]]]:
    named = scoring.get("utility")
    if UTILITY_JUDGED not in ScoringPlan.of(conditions).scorers:
        return named or "benutil", None
    supported = dataset_scoring(bench)
    if named == "benutil" and "benutil" not in supported.utility:
        alt = (f"; or measure with {RUBRIC_OPTION}, which it supports" if "rubric" in supported.utility else "")
        raise SuiteError(f"--utility benutil: dataset {bench.source} cannot be scored with Ben-Util: "
                         f"{why_not('benutil')}{alt}")
    if named:
        _refuse_grouped(scoring, named, f"--utility {named}")
        return named, None
    if not supported.utility:
        raise SuiteError(f"dataset {bench.source} supports no utility measure (read from {supported.origin}): "
                         f"{why_not('benutil')} to score Ben-Util; or measure with {RUBRIC_OPTION} "
                         f"(OpenSafeIntent's helpfulness rubric)")
    measure = supported.utility[0]
    if measure == "benutil":
        return measure, None
    _refuse_grouped(scoring, measure, f"the measure dataset {bench.source} supports: it has no checklists for Ben-Util")
    return measure, {"measure": measure, "chosen_by": "dataset", "supported": ", ".join(supported.utility),
                     "why": f"no --utility given, and the dataset has no checklists for Ben-Util; read from "
                            f"{supported.origin}"}


def _refuse_grouped(scoring: dict[str, Any], measure: str, why: str) -> None:
    """--utility-judge grouped groups Ben-Util's checklist items per call: refused (one line) on a run that
    measures another utility (``why``: who chose that measure), never run as a Ben-Util judge with nothing to judge."""
    if scoring.get("utility_judge") == "grouped" and measure != "benutil":
        raise SuiteError(f"--utility-judge grouped: it groups Ben-Util's checklist items, and this run measures "
                         f"{measure} utility ({why}), which has no checklist items; leave --utility-judge out"
                         + ("" if why.startswith("--utility") else ", or give a dataset with checklists"))


def utility_line(choice: dict[str, str], bench: Benchmark) -> str:
    """The first lines' word on a measure the dataset chose."""
    return (f"utility: {UTILITY_NAMES[choice['measure']]} (--utility {choice['measure']}), the measure dataset "
            f"{bench.source} supports: {choice['why']}")
