"""Human-label files that are not UTF-8 or not of the expected JSON shape: one line and exit 2, never a
traceback; and `export` onto a path of the wrong kind (a file where a folder is written, or a folder named for
a file format, which then gets a file inside it)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.annotation_run import annotation_run
from support.eval_cli import invoke, one_error_line


@pytest.fixture
def run(tmp_path: Path, dataset: Path) -> Path:
    return annotation_run(tmp_path / "run", dataset)


@pytest.mark.parametrize("name, content, message", [
    ("labels.jsonl", b'{"conversation_id": "c", "turn": 1, "verdict": "yes"}\n\xff\xfe\n',
     "not UTF-8 text (byte 54); save the labels as UTF-8"),
    ("labels.csv", b"conversation_id,turn,score\nc\xe9,1,3\n", "not UTF-8 text (byte 28); save the labels as UTF-8"),
    ("labels.jsonl", b'[1, 2]\n', "1: expected a JSON object per line, got a list"),
    ("labels.json", json.dumps([{"data": {}, "annotations": ["x"]}]).encode(),
     ": task 0: expected each annotation to be an object whose 'result' is a list of objects with a 'value' object"),
    ("labels.json", json.dumps(["a task"]).encode(), ": task 0: expected an object (a Label Studio task), got a str"),
    # a bad row is named where it stands (not "no safety labels", every good row dropped; not a row count)
    ("labels.json", json.dumps([{"conversation_id": "c1", "turn": 1, "score": 3}, "stray",
                                {"conversation_id": "c2", "turn": 1, "score": 4}]).encode(),
     ": row 2 of the list: expected a JSON object (a label row), got a str"),
    ("labels.json", json.dumps([{"conversation_id": "c1", "turn": 1, "score": 3},
                                {"conversation_id": "c2", "turn": 1, "score": 9}]).encode(),
     ": row 2 of the list: score 9 is not a whole number from 1 to 5 (or empty for unscored)"),
    ("labels.csv", b"conversation_id,turn,score\nc1,1,3\n\nc2,1,9\n",
     ": line 4: score '9' is not a whole number from 1 to 5 (or empty for unscored)"),
    ("labels.jsonl", b'{"conversation_id": "c1", "turn": 1, "score": 3}\n\n{"conversation_id": "c2", "turn": 1, '
                     b'"score": 9}\n', ": line 3: score 9 is not a whole number from 1 to 5 (or empty for unscored)"),
    ("labels.json", json.dumps([
        {"data": {"conversation_id": "c1", "turn": 1}, "annotations": [{"result": []}]},
        {"data": {"conversation_id": "c2", "turn": 1}, "annotations": [
            {"result": [{"from_name": "score", "value": {"choices": ["3"]}}]},
            {"result": [{"from_name": "score", "value": {"choices": ["9"]}}]}]}]).encode(),
     ": task 1, annotation 1: score '9' is not a whole number from 1 to 5 (or empty for unscored)"),
])
def test_a_bad_label_file_is_one_line(run, tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    line = one_error_line(invoke("agreement", run, path))
    assert line.startswith(f"carryon-eval: error: {path}") and line.endswith(message), line


def test_export_onto_a_folder_or_a_file(scripted_server, dataset, tmp_path):
    pytest.importorskip("inspect_ai")
    from support.inspect_run import judged_run, partly_unscored_handler

    run = judged_run(scripted_server(partly_unscored_handler, models=("tgt", "sim", "jdg")), dataset, tmp_path / "run")
    folder = tmp_path / "logs"
    result = invoke("export", run, "--format", "inspect", "--out", f"{folder}/")
    assert result.exit_code == 0, result.output
    assert folder.is_dir() and [p.name for p in folder.iterdir()] == ["run.eval"]
    bare = tmp_path / "log"                     # no .eval: inspect-ai would not open it
    assert one_error_line(invoke("export", run, "--format", "inspect", "--out", bare)) == (
        f"carryon-eval: error: --out {bare}: format inspect writes a .eval file, which its readers know by that "
        f"name; give --out {bare}.eval (or a folder, {bare}/, to write run.eval into)")
    assert not bare.exists()
    a_file = tmp_path / "taken"
    a_file.write_text("x")
    line = one_error_line(invoke("export", run, "--format", "opensafeintent", "--out", a_file))
    assert line.startswith(f"carryon-eval: error: --out {a_file} is a file; format opensafeintent writes a folder")
