"""Options that used to be ignored or misread without a word: each is now one line and exit 2."""
from __future__ import annotations

import json
import shutil

import pytest
from support.eval_cli import invoke, one_error_line, remote
from support.rollout_data import evaluator_handler as handler
from support.shared_data import OPENSAFEINTENT as SHIPPED


def test_a_judge_model_beside_the_embedded_judge_is_refused(dataset, tmp_path):
    line = one_error_line(invoke("--endpoint", "local", "--judge-model", "gpt-4o", "--dataset", dataset,
                                 "--out", tmp_path / "run"))
    assert line == ("carryon-eval: error: --judge-model gpt-4o: the judge runs on the embedded model (its endpoint "
                    "is 'local'), which serves no other model; give --judge-endpoint URL to use gpt-4o")


def test_an_unset_key_variable_is_refused(scripted_server, dataset, tmp_path, monkeypatch):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    monkeypatch.delenv("CARRYON_NO_SUCH_KEY", raising=False)
    line = one_error_line(invoke(*remote(srv), "--judge-api-key-env", "CARRYON_NO_SUCH_KEY", "--dataset", dataset,
                                 "--out", tmp_path / "run"))
    assert line == ("carryon-eval: error: --judge-api-key-env CARRYON_NO_SUCH_KEY: the environment variable "
                    "CARRYON_NO_SUCH_KEY is not set")
    assert srv.count() == 0


def test_a_temperature_out_of_range_is_refused(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    line = one_error_line(invoke(*remote(srv), "--judge-temperature", "50", "--dataset", dataset,
                                 "--out", tmp_path / "run"))
    assert srv.count() == 0                                             # click's usage error, as for every option
    assert line == ("carryon-eval: error: Invalid value for '--judge-temperature': expected a number in 0-2 or "
                    "'default' (the provider's), got '50' (see 'carryon-eval --help')")


@pytest.mark.skipif(not (SHIPPED / "dataset.json").is_file(), reason="no OpenSafeIntent release copy")
def test_opensafeintent_without_its_condition_is_refused(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    line = one_error_line(invoke(*remote(srv), "--opensafeintent", SHIPPED, "--dataset", dataset,
                                 "--out", tmp_path / "run"))
    assert line.startswith("carryon-eval: error: --opensafeintent was given, but --conditions (")
    assert line.endswith("has none of opensafeintent; add opensafeintent to --conditions (or leave "
                         "--opensafeintent out)")


@pytest.mark.skipif(not (SHIPPED / "dataset.json").is_file(), reason="no OpenSafeIntent release copy")
def test_a_duplicated_prompt_set_is_refused(tmp_path):
    copy = tmp_path / "osi"
    shutil.copytree(SHIPPED, copy)
    rows = json.loads((copy / "dataset.json").read_text())
    (copy / "dataset.json").write_text(json.dumps(rows[:3] + [rows[1]]))
    line = one_error_line(invoke("--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--conditions",
                                 "opensafeintent", "--opensafeintent", copy, "--dry-run"))
    assert line == (f"carryon-eval: error: {copy / 'dataset.json'}: row 3: the same prompt-set as row 1 "
                    "(a duplicated row)")


@pytest.mark.parametrize("name,command", [("judge.json", ["report"]),
                                          ("usage.json", ["export", "--format", "inspect", "--out"])])
def test_a_garbage_side_file_is_one_line(scripted_server, dataset, tmp_path, name, command):
    """report reads judge.json (which judge, finished or not); usage.json is read by the inspect export (and
    added to by the next command that makes calls): a file there but unreadable is never taken for absent."""
    if name == "usage.json":
        pytest.importorskip("inspect_ai")
        command = [*command, tmp_path / "log.eval"]
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    assert invoke(*remote(srv), "--dataset", dataset, "--out", out, "--limit", 1, "--conditions", "turn1").exit_code == 0
    (out / name).write_text("not json{")
    line = one_error_line(invoke(command[0], out, *command[1:]))
    assert line.startswith(f"carryon-eval: error: {out / name}: unreadable (JSONDecodeError); ")
