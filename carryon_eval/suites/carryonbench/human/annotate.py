"""`carryon-eval annotate`: a reproducible sample of a run's judgments, for people to label.

    cases = sample_cases(RunFolder(rundir), bench, "safety", n=60, seed=0)      # stratified, the judge's answer kept aside
    write_page(cases, "safety", out)                                 # one self-contained HTML page
    write_label_studio(cases, "safety", out)                         # or Label Studio's tasks + labeling config

Tasks: "utility" (one Ben-Util (reply, checklist item) pair: yes/no), "safety" (one reply: harm 1-5),
"fidelity" (one simulated user turn: which of the seven moves). The sample is stratified by condition and
by the judge's own answer (the verdict, the harm score, or for fidelity the intended move), so every
answer is represented: the strata take turns (in sorted order) until N cases are drawn, each drawing its
cases in an order fixed by the seed. The page never holds the judge's answer. It keeps its labels in the
browser's local storage and downloads them as JSONL rows that `carryon-eval agreement` reads:
conversation_id, turn, item_id (utility), the label as verdict / score / move, annotator, task, case_id.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Optional, Sequence

from carryon_eval.codec import Record
from carryon_eval.dataset.load import Benchmark
from carryon_eval.judge.store import select_judge
from carryon_eval.suites.carryonbench.judging.judgments import load_safety, load_utility
from carryon_eval.suites.carryonbench.human.labels import LABEL_FIELD, TASKS
from carryon_eval.moves import MOVES
from carryon_eval.prompts import load_prompt
from carryon_eval.run.folder import RunFolder, write_json_atomic, write_text_atomic
from carryon_eval.schema import Transcript
from carryon_eval.suites.carryonbench.conditions import MULTI_TURN_CONDITIONS

TEMPLATE = "annotate.html"
_DATA_MARK = "/*CASES*/null"


class AnnotateError(Exception):
    """Nothing to sample, or a task the run cannot give; one line."""


@dataclass(frozen=True)
class AnnotationCase(Record):
    """One case to label: its key in the run, its stratum, and what the judge saw (never its answer)."""
    case_id: str
    task: str
    conversation_id: str
    turn: int
    condition: str
    stratum: str
    item_id: Optional[str] = None
    show: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------- what the judge saw
def safety_rubric() -> list[str]:
    """The five levels of the safety judge's prompt ("1 - ..."), so the page shows the judge's own rubric."""
    return re.findall(r"^[1-5] - .*$", load_prompt("judges/safety").body, re.M)


def move_definitions() -> list[dict[str, str]]:
    """The seven moves with the definitions the fidelity classifier is given, in MOVES order."""
    found = dict(re.findall(r"^(\w+): (.*)$", load_prompt("fidelity/classify_move").body, re.M))
    return [{"move": m, "definition": found.get(m, "")} for m in MOVES]


def _reply(tr: Transcript, turn: int) -> Optional[str]:
    return next((m.content for m in tr.messages if m.role == "assistant" and m.turn == turn), None)


def _query(bench: Benchmark, tr: Transcript) -> str:
    return str(bench.queries.get(tr.query_id, {}).get("query") or next(
        (m.content for m in tr.messages if m.role == "user"), ""))


def _items(bench: Benchmark) -> dict[str, str]:
    return {str(i["item_id"]): str(i["question"]) for items in bench.checklists.values() for i in items}


# ---------------------------------------------------------------- the population, by task
def _utility_population(run: RunFolder, bench: Benchmark, judge: Optional[str]) -> list[AnnotationCase]:
    trs = {t.conversation_id: t for t in run.transcripts()}
    questions = _items(bench)
    cases = []
    for j in load_utility(run, judge):
        tr = trs.get(j.conversation_id)
        reply = _reply(tr, j.turn) if tr else None
        if tr is None or reply is None or j.item_id not in questions:
            continue
        answer = "unscored" if j.verdict is None else ("yes" if j.verdict else "no")
        cases.append(AnnotationCase(f"{j.conversation_id}|{j.turn}|{j.item_id}", "utility", j.conversation_id,
                                    j.turn, tr.condition, f"{tr.condition}/{answer}", j.item_id,
                                    {"query": _query(bench, tr), "reply": reply, "item": questions[j.item_id]}))
    return cases


def _safety_population(run: RunFolder, bench: Benchmark, judge: Optional[str]) -> list[AnnotationCase]:
    trs = {t.conversation_id: t for t in run.transcripts()}
    cases = []
    for j in load_safety(run, judge):
        tr = trs.get(j.conversation_id)
        reply = _reply(tr, j.turn) if tr else None
        if tr is None or reply is None:
            continue
        answer = "unscored" if j.score is None else str(j.score)
        cases.append(AnnotationCase(f"{j.conversation_id}|{j.turn}", "safety", j.conversation_id, j.turn,
                                    tr.condition, f"{tr.condition}/{answer}",
                                    show={"query": _query(bench, tr), "reply": reply}))
    return cases


def _fidelity_population(run: RunFolder, bench: Benchmark, judge: Optional[str]) -> list[AnnotationCase]:
    cases = []
    for tr in run.transcripts():
        if tr.condition not in MULTI_TURN_CONDITIONS:
            continue
        for i, m in enumerate(tr.messages):
            if m.role == "user" and m.move:
                cases.append(AnnotationCase(f"{tr.conversation_id}|{m.turn}", "fidelity", tr.conversation_id,
                                            m.turn, tr.condition, f"{tr.condition}/{m.move}",
                                            show={"conversation": [{"role": x.role, "content": x.content}
                                                                   for x in tr.messages[:i]],
                                                  "message": m.content}))
    return cases


_POPULATION = {"utility": _utility_population, "safety": _safety_population, "fidelity": _fidelity_population}


# ---------------------------------------------------------------- the sampler
def stratified_sample(cases: Sequence[AnnotationCase], n: int, seed: int) -> list[AnnotationCase]:
    """N cases (all of them when there are fewer): each stratum's cases in an order fixed by the seed, the
    strata (sorted) taking turns, so that every stratum is drawn from once N reaches their number; the
    result is shuffled by the same seed so that the page does not show one stratum after another."""
    rng = random.Random(seed)
    strata: dict[str, list[AnnotationCase]] = defaultdict(list)
    for case in sorted(cases, key=lambda c: c.case_id):
        strata[case.stratum].append(case)
    queues = []
    for name in sorted(strata):
        members = strata[name]
        rng.shuffle(members)
        queues.append(members)
    picked: list[AnnotationCase] = []
    while len(picked) < n and any(queues):
        for q in queues:
            if q and len(picked) < n:
                picked.append(q.pop(0))
    rng.shuffle(picked)
    return picked


def sample_cases(run: RunFolder, bench: Benchmark, task: str, n: int, seed: int = 0,
                 judge: Optional[str] = None) -> list[AnnotationCase]:
    """A reproducible stratified sample of one task's cases of a run folder (``judge``: whose answers
    stratify the sample when several judges judged it; default: the run's own)."""
    if task not in TASKS:
        raise AnnotateError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    if not run.transcripts_file.is_file():
        raise AnnotateError(f"{run.path}: no transcripts (run the rollout first)")
    if task != "fidelity":
        judge = select_judge(run, judge)
    population = _POPULATION[task](run, bench, judge)
    if not population:
        what = "simulated user turns" if task == "fidelity" else f"{task} judgments (run the judge phase first)"
        raise AnnotateError(f"{run.path}: no {what} to sample")
    return stratified_sample(population, n, seed)


# ---------------------------------------------------------------- outputs
def page_data(cases: Sequence[AnnotationCase], task: str, source: str) -> dict[str, Any]:
    """What the page's script reads: the task, its labels and help, and the cases (no judge answers)."""
    payload = [c.to_json() for c in cases]
    digest = hashlib.sha256(json.dumps([task, payload], sort_keys=True).encode()).hexdigest()[:16]
    return {"task": task, "source": source, "sample_id": digest, "label_field": LABEL_FIELD[task],
            "rubric": safety_rubric() if task == "safety" else [],
            "moves": move_definitions() if task == "fidelity" else [], "cases": payload}


def render_page(cases: Sequence[AnnotationCase], task: str, source: str) -> str:
    """The self-contained page: the template with the data inlined (no server, no external URL)."""
    template = resources.files(__package__).joinpath("templates", TEMPLATE).read_text(encoding="utf-8")
    data = json.dumps(page_data(cases, task, source), ensure_ascii=False)
    # Inside <script>, "</" could end the element and "<!--" open a comment: escape "<" in the JSON.
    return template.replace(_DATA_MARK, data.replace("<", "\\u003c"))


def label_studio_config(task: str) -> str:
    """Label Studio's labeling config for one task (choices named as our label fields)."""
    if task == "utility":
        body = ('<Header value="Request"/><Text name="query" value="$query"/>'
                '<Header value="Reply"/><Text name="reply" value="$reply"/>'
                '<Header value="Checklist item: does the reply fulfil it?"/><Text name="item" value="$item"/>'
                '<Choices name="verdict" toName="reply" choice="single" required="true">'
                '<Choice value="yes" hotkey="y"/><Choice value="no" hotkey="n"/></Choices>')
    elif task == "safety":
        rubric = "".join(f'<Choice value="{line[0]}" hint="{_xml(line)}" hotkey="{line[0]}"/>'
                         for line in safety_rubric())
        body = ('<Header value="Request"/><Text name="query" value="$query"/>'
                '<Header value="Reply: how harmful is it (1-5)?"/><Text name="reply" value="$reply"/>'
                f'<Choices name="score" toName="reply" choice="single" required="true">{rubric}</Choices>')
    else:
        moves = "".join(f'<Choice value="{d["move"]}" hint="{_xml(d["definition"])}" hotkey="{i}"/>'
                        for i, d in enumerate(move_definitions(), start=1))
        body = ('<Header value="Conversation so far"/><Text name="conversation" value="$conversation"/>'
                '<Header value="The user\'s next message: which move is it?"/><Text name="message" value="$message"/>'
                f'<Choices name="move" toName="message" choice="single" required="true">{moves}</Choices>')
    return f"<View>{body}</View>\n"


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def label_studio_tasks(cases: Sequence[AnnotationCase], task: str) -> list[dict[str, Any]]:
    """Label Studio tasks: each case's keys and what the judge saw, as ``data``."""
    return [{"data": {"case_id": c.case_id, "task": task, "conversation_id": c.conversation_id, "turn": c.turn,
                      "item_id": c.item_id, "condition": c.condition, **c.show,
                      **({"conversation": _conversation_text(c.show["conversation"])} if "conversation" in c.show
                         else {})}} for c in cases]


def _conversation_text(messages: Sequence[dict[str, str]]) -> str:
    return "\n\n".join(f"{'User' if m['role'] == 'user' else 'Assistant'}: {m['content']}" for m in messages)


def write_annotation(cases: Sequence[AnnotationCase], task: str, out: Path, *, source: str,
                     fmt: str = "html") -> list[Path]:
    """Write the page (``fmt`` "html") or Label Studio's tasks JSON at ``out`` and its labeling config
    beside it (``<out stem>.label_config.xml``); atomically. Returns the paths written."""
    out = Path(out)
    if fmt == "html":
        write_text_atomic(out, render_page(cases, task, source))
        return [out]
    config = out.with_name(out.stem + ".label_config.xml")
    write_json_atomic(out, label_studio_tasks(cases, task))
    write_text_atomic(config, label_studio_config(task))
    return [out, config]


def strata_counts(cases: Sequence[AnnotationCase]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for c in cases:
        counts[c.stratum] += 1
    return dict(sorted(counts.items()))
