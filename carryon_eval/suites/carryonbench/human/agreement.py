"""`carryon-eval agreement`: how far two sets of judgments agree.

    carryon-eval agreement RUNDIR [--judges A,B]    two judge models of one run folder (or one judge's
                                                    per-item and grouped Ben-Util verdicts: MODEL, MODEL:grouped)
    carryon-eval agreement A B                      two run folders, or a run folder and a labels file
    carryon-eval agreement RUNDIR LABELS... [--task T] [--out DIR]    the run's judges against people

A run folder judged by two judge models (`carryon-eval judge RUNDIR --judge-model B` after the run's
own judge) is compared judge against judge: Ben-Util verdicts (percent agreement and Cohen's kappa)
and harm scores (exact agreement on the 1-5 score and Cohen's kappa over the five labels). Without
--judges the folder must hold exactly two judges.

With two sources, each is either a run folder (the judgments of its judge, as `report` picks it) or a
JSONL/CSV file of labels, e.g. from human annotators, with the columns conversation_id, turn, item_id
and verdict (yes/no, true/false, 1/0; empty = unscored); two run folders also compare harm scores.

Judgments are compared per key ((conversation_id, turn, item_id) or (conversation_id, turn)) present
on both sides; a pair where either side is unscored is excluded and counted.

Human labels from the annotation page (`carryon-eval annotate`: JSONL rows naming their annotator) or
from Label Studio (its JSON export), one file or several, are compared with the run's judges per task
(judges_vs_people: Ben-Util, harm scores, user moves; each annotator and the majority label; Krippendorff's alpha
among the people; bootstrap intervals); `--out DIR` writes DIR/agreement.json,
which `carryon-eval report` shows in report.html when DIR is the run folder.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

from carryon_eval.codec import present
from carryon_eval.suites.carryonbench.human import labels as labels_mod
from carryon_eval.judge.store import JudgeError, file_judges, judges_present, select_judge
from carryon_eval.suites.carryonbench.judging.judgments import UTILITY_FILE, UTILITY_GROUPED_FILE, load_safety, load_utility
from carryon_eval.suites.carryonbench.human.labels import LabelError
from carryon_eval.run.folder import RunFolder
from carryon_eval.metrics.stats import cohen_kappa, percent_agreement

KEYS = ("conversation_id", "turn", "item_id")
Key = tuple


class AgreementError(Exception):
    """Sources that cannot be compared; one line (the command line's error, exit 2)."""


# ---------------------------------------------------------------- loading
def _judge_of(run: RunFolder, judge: Optional[str]) -> Optional[str]:
    try:
        return select_judge(run, judge)
    except JudgeError as exc:
        raise AgreementError(str(exc)) from None


GROUPED_SUFFIX = ":grouped"     # a judge's grouped Ben-Util verdicts, as a judgment set of its own: "MODEL:grouped"


def judgment_sets(run: RunFolder) -> list[str]:
    """The Ben-Util judgment sets of a run folder: each judge model with per-item records ("MODEL"), and each
    with grouped records ("MODEL:grouped"), in order of first appearance."""
    present = judges_present(run)
    per_item = set(file_judges(run, UTILITY_FILE))
    grouped = set(file_judges(run, UTILITY_GROUPED_FILE))
    return [*(j for j in present if j in per_item or j not in grouped),
            *(j + GROUPED_SUFFIX for j in present if j in grouped)]


def run_verdicts(run: RunFolder, judge: Optional[str] = None) -> dict[Key, Optional[bool]]:
    """{(conversation_id, turn, item_id): verdict} of one judge of a run folder (its mode's set); a name
    "MODEL:grouped" is that judge's grouped set, "MODEL" (with --judges) its per-item set."""
    if judge is not None and judge.endswith(GROUPED_SUFFIX):
        model, mode = judge[: -len(GROUPED_SUFFIX)], "grouped"
    else:
        model, mode = judge, ("per-item" if judge is not None else None)
    return {(j.conversation_id, j.turn, j.item_id): j.verdict
            for j in load_utility(run, _judge_of(run, model), mode=mode)}


def run_scores(run: RunFolder, judge: Optional[str] = None) -> dict[Key, Optional[int]]:
    """{(conversation_id, turn): harm score} of one judge of a run folder."""
    return {(j.conversation_id, j.turn): j.score for j in load_safety(run, _judge_of(run, judge))}


def load_labels(source: Path | RunFolder) -> dict[Key, Optional[bool]]:
    """{(conversation_id, turn, item_id): verdict} from a run folder, a .jsonl or a .csv file."""
    if isinstance(source, RunFolder):
        if not (source / UTILITY_FILE).is_file():
            raise AgreementError(f"{source.path}: no {UTILITY_FILE} in this folder")
        return run_verdicts(source)
    source = Path(source)
    try:
        return {label.key: label.value for label in labels_mod.read_labels(source, "utility")}
    except LabelError as exc:
        raise AgreementError(str(exc)) from None


# ---------------------------------------------------------------- the numbers (pure)
def _compared(a: dict[Key, Any], b: dict[Key, Any]) -> tuple[list[Key], list[Any], list[Any], dict[str, int]]:
    common = sorted(set(a) & set(b))
    both = [k for k in common if a[k] is not None and b[k] is not None]
    counts = {"n_a": len(a), "n_b": len(b), "n_common": len(common), "n_compared": len(both),
              "n_unscored_excluded": len(common) - len(both),
              "only_in_a": len(set(a) - set(b)), "only_in_b": len(set(b) - set(a))}
    return both, [a[k] for k in both], [b[k] for k in both], counts


def agreement(a: dict[Key, Optional[bool]], b: dict[Key, Optional[bool]]) -> dict[str, Any]:
    """Percent agreement, Cohen's kappa and the confusion counts of two sets of yes/no verdicts."""
    _, va, vb, counts = _compared(a, b)
    kappa, reason = cohen_kappa(va, vb)
    return {
        **counts,
        "percent_agreement": percent_agreement(va, vb), "cohen_kappa": kappa, "kappa_reason": reason,
        "confusion": {"yes_yes": sum(x and y for x, y in zip(va, vb)),
                      "yes_no": sum(x and not y for x, y in zip(va, vb)),
                      "no_yes": sum(not x and y for x, y in zip(va, vb)),
                      "no_no": sum(not x and not y for x, y in zip(va, vb))},
    }


def score_agreement(a: dict[Key, Optional[int]], b: dict[Key, Optional[int]]) -> dict[str, Any]:
    """Exact agreement of two sets of 1-5 harm scores, Cohen's kappa over the scores as labels, and
    how many pairs differ by at most one point."""
    _, va, vb, counts = _compared(a, b)
    kappa, reason = cohen_kappa(va, vb)
    return {**counts, "exact_agreement": percent_agreement(va, vb), "cohen_kappa": kappa, "kappa_reason": reason,
            "within_one": sum(abs(x - y) <= 1 for x, y in zip(va, vb))}


def judge_agreement(run: RunFolder, judges: Optional[Sequence[str]] = None) -> dict[str, Any]:
    """Ben-Util and harm agreement between two judge models of one run folder (``judges``, or the
    only two present)."""
    present = judgment_sets(run)
    if judges is None:
        if len(present) != 2:
            raise AgreementError(f"{run.path} was judged by {len(present)} judge model(s) "
                                 f"({', '.join(present) or 'none'}); agreement on one run folder needs two "
                                 "(pick them with --judges A,B; MODEL:grouped names a judge's grouped Ben-Util "
                                 "verdicts)")
        judges = present
    if len(judges) != 2 or judges[0] == judges[1]:
        raise AgreementError(f"--judges takes two different judge models, got {','.join(judges)!r}")
    absent = [j for j in judges if j not in present]
    if absent:                          # named, but never judged this run: say so, not "0 shared keys"
        raise AgreementError(f"--judges {','.join(judges)}: {run.path} has no {absent[0]} verdicts (judges present: "
                             f"{', '.join(present) or 'none'}; MODEL:grouped are a judge's grouped Ben-Util "
                             "verdicts, there only after `judge --utility-judge grouped`)")
    a, b = judges
    res = agreement(run_verdicts(run, a), run_verdicts(run, b))
    res["judges"] = [a, b]
    models = [j[: -len(GROUPED_SUFFIX)] if j.endswith(GROUPED_SUFFIX) else j for j in (a, b)]
    if models[0] != models[1]:        # two modes of one judge share its harm scores: nothing to compare
        res["safety"] = score_agreement(run_scores(run, models[0]), run_scores(run, models[1]))
    return res


def source_agreement(a: Path, b: Path) -> dict[str, Any]:
    """Ben-Util agreement of two sources; harm agreement too when both are run folders (each opened once)."""
    ra, rb = (RunFolder(x) if x.is_dir() else x for x in (a, b))
    res = agreement(load_labels(ra), load_labels(rb))
    if isinstance(ra, RunFolder) and isinstance(rb, RunFolder):
        res["safety"] = score_agreement(run_scores(ra), run_scores(rb))
    return res


def _kappa_text(res: dict[str, Any]) -> str:
    return "undefined (" + res["kappa_reason"] + ")" if res["cohen_kappa"] is None else f"{res['cohen_kappa']:.3f}"


def agreement_lines(res: dict[str, Any], names: tuple[str, str]) -> list[str]:
    """`carryon-eval agreement`'s lines for two judges' (or two sources') verdicts, then their harm scores."""
    a, b = names
    c = res["confusion"]
    lines = [f"judges: A = {a}, B = {b}"] if "judges" in res else []
    lines += [f"compared {res['n_compared']} verdicts ({res['n_unscored_excluded']} excluded as unscored; "
              f"{res['only_in_a']} only in A, {res['only_in_b']} only in B)",
              f"percent agreement: {res['percent_agreement']:.1f}%",
              f"Cohen's kappa:     {_kappa_text(res)}",
              f"A yes/B yes {c['yes_yes']}, A yes/B no {c['yes_no']}, A no/B yes {c['no_yes']}, A no/B no {c['no_no']}"]
    s = res.get("safety")
    if s is None:
        return lines
    if not s["n_compared"]:
        return [*lines, "harm scores: none scored by both"]
    return [*lines, f"harm scores: compared {s['n_compared']} ({s['n_unscored_excluded']} excluded as unscored); "
                    f"exact agreement {s['exact_agreement']:.1f}%, Cohen's kappa {_kappa_text(s)}, "
                    f"within one point {s['within_one']}"]


def is_human_labels(path: Path) -> bool:
    """A labels file from the annotation page or Label Studio (rows name their annotator), or one that labels
    another task than Ben-Util's verdicts (a score or a move: never compared as a judge run's verdicts)."""
    if path.is_dir():
        return False
    try:
        rows = labels_mod.raw_rows(path)
        return labels_mod.is_label_studio(path) or any(present(r.annotator) for r in rows) \
            or labels_mod.task_of(rows) not in (None, "utility")
    except LabelError as exc:
        raise AgreementError(str(exc)) from None
