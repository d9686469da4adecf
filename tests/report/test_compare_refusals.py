"""`carryon-eval compare` on the command line refuses what would mislead, in one line: the same run twice (ranked 1
and 2 against itself), --out into a run folder (its own table.md overwritten), a results.json it cannot read; and it
calls a run and its copy's datasets the same when their content hashes are (wherever each folder sits)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.eval_cli import invoke, one_error_line, remote
from support.rollout_data import make_dataset, unique_replies
from support.scripted_server import ScriptedServer

pytest.importorskip("statsmodels")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("cmp")
    with ScriptedServer(unique_replies, models=("tgt", "sim", "jdg")) as srv:
        result = invoke(*remote(srv), "--dataset", make_dataset(tmp / "data"), "--out", tmp / "runs" / "a",
                        "--limit", 2, "--conditions", "turn1,bc")
    assert result.exit_code == 0, result.output
    return tmp / "runs" / "a"


def test_the_same_run_twice_and_out_into_a_run_folder_are_refused(run, tmp_path):
    again = run.parent / "." / run.name                   # the same folder, spelled otherwise
    assert one_error_line(invoke("compare", run, again)) == (
        f"carryon-eval: error: {again} is {run} again: compare each run once (a run is not a model of its own twice)")
    copy = tmp_path / "b"
    shutil.copytree(run, copy)
    table = (run / "table.md").read_text()
    line = one_error_line(invoke("compare", run, copy, "--out", run))
    assert line.startswith(f"carryon-eval: error: --out {run} is a run folder: compare's compare.json, table.md, "
                           "plots, leaderboard.html, leaderboard.jsonl would overwrite its own"), line
    assert (run / "table.md").read_text() == table and not (run / "compare.json").exists()


def test_a_copy_at_another_depth_is_the_same_dataset(run, tmp_path):
    copy = tmp_path / "deeper" / "still" / "b"
    shutil.copytree(run, copy)                            # its run.json's relative dataset path now points nowhere
    result = invoke("compare", run, copy, "--out", tmp_path / "board")
    assert result.exit_code == 0, result.output
    assert "different datasets" not in result.output
    # two runs of identical numbers: a singular mixed model, whose warnings are compare.json's, never printed
    assert "site-packages" not in result.stderr and "Warning" not in result.stderr, result.stderr
    notes = json.loads((tmp_path / "board" / "compare.json").read_text())["notes"]
    assert not any("different datasets" in n for n in notes), notes


def test_an_unreadable_results_json_is_one_line(run, tmp_path):
    broken = tmp_path / "b"
    shutil.copytree(run, broken)
    (broken / "results.json").unlink()
    (broken / "results.json").symlink_to("/proc/self/mem")      # a file whose every read fails (EIO), root or not
    line = one_error_line(invoke("compare", run, broken))
    assert line == f"carryon-eval: error: cannot read {broken / 'results.json'}: Input/output error", line
