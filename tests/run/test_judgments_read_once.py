"""One command parses each judgment file of a run folder once: the readers of a command (the judge selection, the
report, the suites' sections and probes, the calibration) share one view per run folder (``RunFolder.judgments()``).

Counted from the process's real file opens (Python's audit event ``open``), against the scripted server over
HTTP: nothing is patched. An open for reading of a ``*_judgments.jsonl`` or of judge.json is one parse."""
from __future__ import annotations

import shutil

import os
import sys
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import json

import pytest
from support.eval_cli import invoke, remote
from support.rollout_data import evaluator_handler
from support.shared_data import OPENSAFEINTENT as RELEASE
from support.scripted_server import by_model, rubric_judges

from carryon_eval.run.folder import JUDGE_META_FILE, JUDGMENT_SUFFIX, RunFolder, judgment_file, owner_of
from carryon_eval.suite import suites

_COUNTERS: list[Counter[str]] = []
_HOOKED = False


def _count_open(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or not _COUNTERS:
        return
    path, mode = args[0], args[1]
    if not isinstance(mode, str) or "r" not in mode or "+" in mode or isinstance(path, int):
        return
    name = os.path.basename(os.fsdecode(path))
    if name.endswith(JUDGMENT_SUFFIX) or name == JUDGE_META_FILE:
        _COUNTERS[-1][name] += 1


@contextmanager
def judgment_reads() -> Iterator[Counter[str]]:
    """The judgment files opened for reading inside the block, by file name."""
    global _HOOKED
    if not _HOOKED:               # an audit hook stays for the process; it counts only inside this block
        sys.addaudithook(_count_open)
        _HOOKED = True
    counter: Counter[str] = Counter()
    _COUNTERS.append(counter)
    try:
        yield counter
    finally:
        _COUNTERS.pop()


def judgment_files(run: Path) -> list[str]:
    return sorted(p.name for p in run.glob(f"*{JUDGMENT_SUFFIX}"))


def test_evaluate_report_and_compare_parse_each_judgment_file_once(scripted_server, tmp_path):
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    with judgment_reads() as reads:
        res = invoke(*remote(srv), "--limit", 2, "--conditions", "all", "--out", out)
    assert res.exit_code == 0, res.output
    files = judgment_files(out)
    assert {judgment_file("utility"), judgment_file("safety")} <= set(files), files
    # a fresh run: the judge phase writes the files (nothing to resume) and reads each back once to copy its lines
    # into their final order (by the offsets it wrote them at: no parse), the report parses each one once
    assert reads == Counter({**{f: 2 for f in files}, JUDGE_META_FILE: 1}), reads
    undeclared = [p.name for p in out.iterdir() if owner_of(p.name) is None]
    assert not undeclared, f"files of the run folder no stage or suite declares: {undeclared}"

    with judgment_reads() as reads:
        res = invoke("report", out)
    assert res.exit_code == 0, res.output
    assert reads == Counter({**{f: 1 for f in files}, JUDGE_META_FILE: 1}), reads

    shutil.copytree(out, tmp_path / "copy")
    with judgment_reads() as reads:         # compare reads the reports (results.json), never a judgment
        res = invoke("compare", out, tmp_path / "copy")
    assert res.exit_code == 0, res.output
    assert reads == Counter(), reads


def test_the_view_parses_a_file_again_only_once_it_changed(tmp_path):
    suites()                                                # the wing whose scorer declares the file's record type
    run = RunFolder(tmp_path)
    path = run / judgment_file("utility")
    row = ('{"conversation_id": "c1", "query_id": "q1", "condition": "bc", "turn": 1, "item_id": "i1", '
           '"verdict": true, "raw": "yes", "judge_model": "j", "prompt_version": "p"}\n')
    path.write_text(row)
    view = run.judgments()
    with judgment_reads() as reads:
        first = view.records(path.name)
        again = view.records(path.name)
    assert first == again and len(first) == 1 and reads == Counter({path.name: 1})
    assert type(first[0]).__name__ == "UtilityJudgment" and first[0].verdict is True     # read as its scorer's record
    assert view.parses[path.name] == 1 and run.judgments() is view
    with open(path, "a", encoding="utf-8") as fh:           # the judge phase appends a record
        fh.write(row.replace('"c1"', '"c2"'))
    with judgment_reads() as reads:
        grown = view.records(path.name)
    assert [r.conversation_id for r in grown] == ["c1", "c2"] and reads == Counter({path.name: 1})
    assert view.records(judgment_file("nobody")) == [] and view.parses[path.name] == 2


def test_a_wing_declares_its_own_run_files():
    suites()
    owners = {name: getattr(owner_of(name), "owner", None) for name in (
        "fidelity.json", "opensafeintent_probe.jsonl", "triplet_probe.jsonl", "results.json", "osi_harmfulness_judgments.jsonl")}
    assert owners == {"fidelity.json": "suite carryonbench", "opensafeintent_probe.jsonl": "suite opensafeintent",
                      "triplet_probe.jsonl": "suite triplet", "results.json": "carryon-eval",
                      "osi_harmfulness_judgments.jsonl": "carryon-eval"}
    assert owner_of("notes.txt") is None


@pytest.mark.skipif(not (RELEASE / "dataset.json").is_file(), reason=f"the OpenSafeIntent release is not at {RELEASE}")
def test_a_suites_probe_and_section_read_the_judgments_through_the_same_view(scripted_server, tmp_path):
    """OpenSafeIntent's three judgment files are read by its intent probe (after judging) and by its section (the
    report): one parse each, the probe's, since nothing changed them in between (and the judge phase's one read
    back of the lines it wrote, to put them in their final order)."""
    from carryon_eval.suites.opensafeintent.release import load_release

    t = load_release(RELEASE).templates
    answers = {"helpfulness": lambda text: "3", "harmfulness": lambda text: "1",
               "assistance_level": lambda text: json.dumps({"a_level": "A2"}),
               "intent_classification": lambda text: json.dumps({"strategy": "REFUSE"})}
    srv = scripted_server(by_model({
        "tgt": rubric_judges({"intent_classification": t["intent_classification"]}, answers, evaluator_handler),
        "sim": evaluator_handler,
        "jdg": rubric_judges({k: t[k] for k in ("helpfulness", "harmfulness", "assistance_level")}, answers,
                             evaluator_handler)}), models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    with judgment_reads() as reads:
        res = invoke(*remote(srv), "--conditions", "bc,opensafeintent", "--opensafeintent", RELEASE, "--limit", 2,
                     "--out", out)
    assert res.exit_code == 0, res.output
    files = judgment_files(out)
    assert {judgment_file(s) for s in ("osi_helpfulness", "osi_harmfulness", "osi_assistance_level")} <= set(files)
    assert (out / "opensafeintent_probe.jsonl").is_file()
    assert reads == Counter({**{f: 2 for f in files}, JUDGE_META_FILE: 1}), reads
