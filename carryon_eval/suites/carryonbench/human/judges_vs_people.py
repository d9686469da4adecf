"""Judges against people: the agreement of a run's judges with human labels, and among the people.

    res = human_agreement(RunFolder(rundir), [labels_a.jsonl, labels_b.jsonl], task="safety")
    write_agreement(out_dir, res)            # agreement.json (one section per task) + agreement.html
    blocks = agreement_blocks(rundir)        # report.html's "Judges against people" section, [] without one

The references a task compares with the people:
    utility   every judge model of the run (Ben-Util verdicts)
    safety    every judge model of the run (harm scores)
    fidelity  the move the simulator was asked to play ("intended move"), and the fidelity classifier's
              move when fidelity.json exists
Each reference is compared with each annotator and with the majority label (ties have none), on the
cases both labeled (a skipped / unscored side is excluded and counted). Among two or more annotators:
Krippendorff's alpha (nominal for verdicts and moves, ordinal for scores). See agreement_stats.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from carryon_eval.codec import Record
from carryon_eval.suites.carryonbench.human.stats import (LEVEL, TASK_STATS, Agreement, Alpha, Statistic,
                                                          alpha_with_ci, majority)
from carryon_eval.judge.store import judges_present
from carryon_eval.report.blocks import VALUE_CI, Block, Cell, Heading, Shown, Table, Text, to_html
from carryon_eval.report.html import document
from carryon_eval.suites.carryonbench.judging.judgments import load_safety, load_utility
from carryon_eval.suites.carryonbench.human.labels import LABEL_FIELD, TASKS, Key, LabelError, raw_rows, read_labels, task_of
from carryon_eval.run.folder import AGREEMENT_FILE, AGREEMENT_HTML, RunFolder, write_json_atomic, write_text_atomic
from carryon_eval.run.paths import shared_local
from carryon_eval.suites.carryonbench.metrics.condition import known
from carryon_eval.suites.carryonbench.metrics.fidelity import read_fidelity     # the fidelity task is CarryOnBench's moves

PAGE_CSS = ("body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em}"
            "table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:3px 7px}th{background:#f3f3f3}"
            ".meta{color:#555;font-size:12px}")
SCHEMA_VERSION = 1
INTENDED = "intended move"


class HumanAgreementError(Exception):
    """Labels that do not fit the run (no task, no shared case); one line."""


# ---------------------------------------------------------------- agreement.json's records
@dataclass
class AmongAnnotators(Record):
    krippendorff_alpha: Alpha = field(default_factory=Alpha)


@dataclass
class Reference(Record):
    """One reference (a judge model, the intended move, the fidelity classifier) against the people's majority
    label and against each annotator."""
    vs_majority: Agreement = field(default_factory=Agreement)
    vs_annotators: dict[str, Agreement] = field(default_factory=dict)


@dataclass
class TaskAgreement(Record):
    """One task's section of agreement.json (``human_agreement``): what was labeled, by whom, the agreement among the
    people and every reference's against them."""
    schema_version: int = SCHEMA_VERSION
    task: str = ""
    label_field: str = ""
    run: str = ""
    label_files: list[str] = field(default_factory=list)
    annotators: list[str] = field(default_factory=list)
    n_cases: int = 0
    n_labels: int = 0
    n_skipped: int = 0
    n_majority_ties: int = 0
    among_annotators: AmongAnnotators = field(default_factory=AmongAnnotators)
    references: dict[str, Reference] = field(default_factory=dict)


@dataclass
class AgreementFile(Record):
    """agreement.json: one section per task labeled."""
    schema_version: int = SCHEMA_VERSION
    tasks: dict[str, TaskAgreement] = field(default_factory=dict)


# ---------------------------------------------------------------- what the people are compared with
def _judge_references(run: RunFolder, task: str, judges: Optional[Sequence[str]]) -> dict[str, dict[Key, Any]]:
    names = list(judges) if judges else judges_present(run)
    if task == "utility":
        return {j: {(r.conversation_id, r.turn, r.item_id): r.verdict for r in load_utility(run, j)} for j in names}
    return {j: {(r.conversation_id, r.turn): r.score for r in load_safety(run, j)} for j in names}


def _fidelity_references(run: RunFolder) -> dict[str, dict[Key, Any]]:
    intended = {(t.conversation_id, m.turn): m.move for t in run.transcripts()
                for m in t.messages if m.role == "user" and m.move}
    refs = {INTENDED: intended}
    data = read_fidelity(run)
    if data is not None:
        refs[f"fidelity judge ({data.judge_model})"] = {
            (r.conversation_id, int(r.turn)): known(r.predicted) for r in data.turns}
    return refs


def references(run: RunFolder, task: str, judges: Optional[Sequence[str]] = None) -> dict[str, dict[Key, Any]]:
    if task == "fidelity":
        return _fidelity_references(run)
    return _judge_references(run, task, judges)


# ---------------------------------------------------------------- the comparison
def compare(reference: dict[Key, Any], labels: dict[Key, Any], task: str) -> Agreement:
    """The task's statistics on the cases both sides labeled, with the counts of what was left out."""
    common = sorted(set(reference) & set(labels))
    both = [k for k in common if reference[k] is not None and labels[k] is not None]
    res = TASK_STATS[task]([reference[k] for k in both], [labels[k] for k in both])
    return replace(res, n_labeled=len(labels), n_excluded_unscored=len(common) - len(both),
                   n_not_in_reference=len(set(labels) - set(reference)))


def infer_task(paths: Sequence[Path]) -> str:
    """The task the files label (their `task` column, else their label column); one line naming the file
    that says none, or the files that say different ones."""
    tasks = {p: task_of(raw_rows(p)) for p in paths}
    blank = next((p for p, t in tasks.items() if t is None), None)
    if blank is not None:
        columns = ", ".join(f"{LABEL_FIELD[t]!r} ({t})" for t in TASKS)
        raise HumanAgreementError(f"{blank}: no row has a 'task' or a label column ({columns}); name the label "
                                  f"column so, or give --task {'|'.join(TASKS)}")
    found = sorted(set(tasks.values()))          # type: ignore[type-var]
    if len(found) > 1:
        raise HumanAgreementError("the label files are of different tasks ("
                                  + "; ".join(f"{p}: {t}" for p, t in tasks.items())
                                  + f"); give the files of one task, or --task {'|'.join(TASKS)}")
    return str(found[0])


def human_agreement(run: RunFolder, paths: Sequence[Path], task: Optional[str] = None,
                    judges: Optional[Sequence[str]] = None) -> TaskAgreement:
    """Every reference of the task against each annotator and the majority label; alpha among annotators."""
    try:
        task = task or infer_task(paths)
        labels = [label for p in paths for label in read_labels(p, task)]
    except LabelError as exc:
        raise HumanAgreementError(str(exc)) from None
    if not labels:
        other = sorted({t for t in (task_of(raw_rows(p)) for p in paths) if t not in (None, task)})
        hint = f" (their rows label {', '.join(other)}: give --task {other[0]})" if other else ""
        raise HumanAgreementError(f"no {task} labels in {', '.join(map(str, paths))}{hint}")
    annotators = sorted({label.annotator for label in labels})
    table: dict[str, dict[Key, Any]] = {a: {} for a in annotators}
    for label in labels:
        table[label.annotator][label.key] = label.value
    keys = sorted({label.key for label in labels})
    voted = {k: majority([table[a].get(k) for a in annotators]) for k in keys}
    refs = references(run, task, judges)
    if not any(set(ref) & set(keys) for ref in refs.values()):
        raise HumanAgreementError(f"none of the {len(keys)} labeled cases is a {task} case of {run.path} "
                                  "(labels of another run or task?)")
    among = Alpha(level=LEVEL[task], reason="needs at least two annotators")
    if len(annotators) >= 2:
        among = alpha_with_ci([[table[a].get(k) for k in keys] for a in annotators], LEVEL[task])
    return TaskAgreement(
        task=task, label_field=LABEL_FIELD[task], run=str(run.path), label_files=[str(p) for p in paths],
        annotators=annotators, n_cases=len(keys), n_labels=len(labels),
        n_skipped=sum(label.value is None for label in labels),
        n_majority_ties=sum(v is None for k, v in voted.items() if any(table[a].get(k) is not None
                                                                         for a in annotators)),
        among_annotators=AmongAnnotators(among),
        references={name: Reference(compare(ref, dict(voted), task),
                                    {a: compare(ref, table[a], task) for a in annotators})
                    for name, ref in refs.items()})


# ---------------------------------------------------------------- agreement.json and the report's section
def write_agreement(out_dir: Path, res: TaskAgreement) -> Path:
    """agreement.json in ``out_dir`` (this task's section replaces the earlier one; other tasks stay) and
    agreement.html beside it, the section `report` puts into report.html, as a page of its own."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / AGREEMENT_FILE
    data = read_agreement(out_dir) or AgreementFile()
    # the run folder and the label files relative to agreement.json's folder, never the machine's paths
    data.tasks[res.task] = replace(res, run=shared_local(res.run, out_dir),
                                   label_files=[shared_local(p, out_dir) for p in res.label_files])
    write_json_atomic(path, data.to_json())
    write_text_atomic(out_dir / AGREEMENT_HTML,
                      document("Judges against people", to_html(agreement_blocks(out_dir)), PAGE_CSS))
    return path


def read_agreement(folder: Path) -> Optional[AgreementFile]:
    """agreement.json of ``folder`` (None: there is none, or it is not one this command wrote)."""
    try:
        data = json.loads((Path(folder) / AGREEMENT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    read = AgreementFile.from_json(data) if isinstance(data, dict) else None
    return read if read is not None and isinstance(read.tasks, dict) and \
        all(isinstance(t, TaskAgreement) for t in read.tasks.values()) else None


#: a task's headline statistics: (the statistic of an Agreement, its column, its digits)
Headline = tuple[Callable[[Agreement], Statistic], str, int]
HEADLINE: dict[str, list[Headline]] = {
    "utility": [(lambda s: s.percent_agreement, "agreement %", 1), (lambda s: s.cohen_kappa, "Cohen's κ", 3)],
    "safety": [(lambda s: s.exact_agreement, "exact %", 1), (lambda s: s.within_one, "within 1 %", 1),
               (lambda s: s.quadratic_kappa, "quadratic κ", 3), (lambda s: s.spearman, "Spearman ρ", 3)],
    "fidelity": [(lambda s: s.accuracy, "accuracy %", 1)]}


def rows_of(res: TaskAgreement) -> list[list[Cell]]:
    """One row per (reference, annotators): n and the task's headline statistics with their intervals."""
    rows: list[list[Cell]] = []
    for name, ref in res.references.items():
        for who, stats in [("majority", ref.vs_majority), *ref.vs_annotators.items()]:
            rows.append([name, who, str(stats.n)]
                        + [Shown(stat_of(stats).number, d, VALUE_CI) for stat_of, _, d in HEADLINE[res.task]])
    return rows


def alpha_shown(res: TaskAgreement) -> Shown:
    """Krippendorff's alpha among the annotators, with its interval, or n/a and why."""
    return Shown(res.among_annotators.krippendorff_alpha.number, 3, VALUE_CI, reason=True)


def agreement_blocks(folder: Path) -> list[Block]:
    """report.html's section from agreement.json in ``folder``; none when there is none."""
    data = read_agreement(folder)
    if not data or not data.tasks:
        return []
    blocks: list[Block] = [Heading("Judges against people"),
                           Text("From agreement.json (`carryon-eval agreement RUNDIR LABELS... --out RUNDIR`); 95% "
                                "bootstrap intervals over cases in brackets.", cls="meta")]
    for task, res in data.tasks.items():
        level = res.among_annotators.krippendorff_alpha.level
        blocks += [Heading(f"{task}: {len(res.annotators)} annotator(s), {res.n_cases} cases", 3),
                   Text([f"Krippendorff's α among annotators ({level}): ", alpha_shown(res)]),
                   Table(["reference", "people", "n"] + [label for _, label, _ in HEADLINE.get(task, [])], rows_of(res)),
                   *(_confusion(res) if task == "fidelity" else [])]
    return blocks


def _confusion(res: TaskAgreement) -> list[Block]:
    """The intended move (rows) against the people's majority label (columns)."""
    ref = res.references.get(INTENDED)
    if ref is None:
        return []
    confusion = ref.vs_majority.confusion
    moves = list(confusion)
    return [Text("Intended move (rows) against the people's majority label (columns):"),
            Table(["intended", *moves], [[m, *(str(confusion[m][p]) for p in moves)] for m in moves])]
