"""Damaged run files: every JSONL line is read through one reader that names the file and the line. A torn last
line is repaired (and said); a garbage line, a wrong type, an out-of-range value, a transcript without messages,
invalid UTF-8 stop the command with one line (exit 2), or are judged again by the judge phase; a run.json that
lost its fields or comes from a newer version is refused (never the built-in sample in its place)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from support.eval_cli import invoke, one_error_line, remote
from support.rollout_data import evaluator_handler, make_dataset
from support.scripted_server import ScriptedServer


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ScriptedServer, Path, Path]]:
    """One finished run (bc only) on the scripted server; each test damages a copy of it."""
    root = tmp_path_factory.mktemp("judged")
    data = make_dataset(root / "data")
    with ScriptedServer(evaluator_handler, models=("tgt", "sim", "jdg")) as srv:
        result = invoke(*remote(srv), "--dataset", data, "--out", root / "run", "--conditions", "turn1,bc")
        assert result.exit_code == 0, result.output
        yield srv, data, root / "run"


def copy_of(run: Path, tmp_path: Path) -> Path:
    """A copy of the run folder, with its dataset beside it where run.json says (relative to the run)."""
    out = tmp_path / "run"
    shutil.copytree(run, out)
    dataset = json.loads((run / "run.json").read_text())["dataset"]["source"]
    shutil.copytree(run / dataset, out / dataset)
    return out


def edit_line(path: Path, n: int, edit: Callable[[dict], Any]) -> None:
    """Replace line n (1-based) of a JSONL file by edit(record) (a dict is dumped, bytes/str written as they are)."""
    lines = path.read_bytes().split(b"\n")
    new = edit(json.loads(lines[n - 1]))
    lines[n - 1] = new if isinstance(new, bytes) else (new if isinstance(new, str) else json.dumps(new)).encode()
    path.write_bytes(b"\n".join(lines))


def first_line(path: Path, pred: Callable[[dict], bool]) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if pred(json.loads(line)))


DAMAGES = {
    "garbage": ("transcripts.jsonl", lambda r: "{garbage", "not a JSON line"),
    "no messages": ("transcripts.jsonl", lambda r: {k: v for k, v in r.items() if k != "messages"},
                    "messages: field required"),
    "wrong type": ("transcripts.jsonl", lambda r: {**r, "messages": "hello"}, "messages: input should be a valid"),
    "bad utf-8": ("utility_judgments.jsonl", lambda r: json.dumps(r).encode().replace(b'"jdg"', b'"j\xffg"'),
                  "not UTF-8 text"),
    "verdict maybe": ("utility_judgments.jsonl", lambda r: {**r, "verdict": "maybe"},
                      "verdict: input should be a valid boolean"),
    "score 9": ("safety_judgments.jsonl", lambda r: {**r, "score": 9}, "score 9 is outside the harm scale 1 to 5"),
    "score as text": ("safety_judgments.jsonl", lambda r: {**r, "score": "3"}, "score: input should be a valid integer"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_line_stops_the_report_naming_file_and_line(judged, tmp_path, damage):
    _, _, run = judged
    name, edit, expected = DAMAGES[damage]
    out = copy_of(run, tmp_path)
    before = (out / "results.json").read_bytes()
    edit_line(out / name, 2, edit)
    line = one_error_line(invoke("report", out))
    assert f"{out / name} line 2: {expected}" in line, line
    assert (out / "results.json").read_bytes() == before          # nothing rewritten from damaged records


@pytest.mark.parametrize("damage", ["garbage", "no messages"])
def test_a_damaged_transcript_stops_the_rollout_and_the_judge_too(judged, tmp_path, damage):
    srv, _, run = judged
    name, edit, expected = DAMAGES[damage]
    out = copy_of(run, tmp_path)
    edit_line(out / name, 3, edit)
    srv.reset()
    for command in ("rollout", "judge"):
        assert f"{out / name} line 3: {expected}" in one_error_line(invoke(command, out))
    assert srv.count() == 0


@pytest.mark.parametrize("damage", ["score 9", "verdict maybe", "bad utf-8"])
def test_the_judge_phase_judges_a_damaged_judgment_again(judged, tmp_path, damage, caplog):
    srv, _, run = judged
    name, edit, expected = DAMAGES[damage]
    out = copy_of(run, tmp_path)
    good = (out / name).read_bytes()
    edit_line(out / name, 2, edit)
    srv.reset()
    result = invoke("judge", out)
    assert result.exit_code == 0, result.output
    said = [r.getMessage() for r in caplog.records if f"{out / name} line 2: {expected}" in r.getMessage()]
    assert len(said) == 1 and said[0].endswith("; left out, its case is judged again"), caplog.text
    assert srv.count() == 0                                  # judged again from the run's response cache
    assert sorted((out / name).read_bytes().splitlines()) == sorted(good.splitlines())
    assert invoke("report", out).exit_code == 0


def test_a_torn_last_line_is_repaired_and_said(judged, tmp_path, caplog):
    srv, data, run = judged
    out = copy_of(run, tmp_path)
    transcripts = out / "transcripts.jsonl"
    whole = transcripts.read_bytes()
    lines = whole.split(b"\n")[:-1]
    torn = b"\n".join(lines[:-1]) + b"\n" + lines[-1][: len(lines[-1]) // 2]     # killed mid-write
    transcripts.write_bytes(torn)
    result = invoke(*remote(srv), "--dataset", data, "--out", out, "--conditions", "turn1,bc")
    assert result.exit_code == 0, result.output
    assert f"{transcripts} line {len(lines)} was cut short" in caplog.text
    assert sorted(transcripts.read_bytes().splitlines()) == sorted(whole.splitlines())


@pytest.mark.parametrize("meta, expected", [
    ({"schema_version": 1}, "lacks dataset.source, roles.target.model, conditions"),
    ({"roles": {}}, "lacks roles.target.model"),
    ({"schema_version": 99}, "has schema_version 99, newer than this carryon-eval reads (1)"),
])
def test_a_run_json_without_its_fields_or_from_a_newer_version_is_refused(judged, tmp_path, meta, expected):
    srv, _, run = judged
    out = copy_of(run, tmp_path)
    old = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps(meta if "roles" not in meta and len(meta) == 1
                                             and "schema_version" in meta and meta["schema_version"] == 1
                                             else {**old, **meta}))
    before = (out / "results.json").read_bytes()
    srv.reset()
    for command in ("report", "judge", "rollout"):
        line = one_error_line(invoke(command, out))
        assert f"{out / 'run.json'} " in line and expected in line, line
    assert srv.count() == 0 and (out / "results.json").read_bytes() == before


def test_report_on_a_file_says_it_is_a_file(judged):
    _, _, run = judged
    line = one_error_line(invoke("report", run / "results.json"))
    assert "is a file, not a run folder" in line
