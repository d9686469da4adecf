"""A run folder moved or copied to another depth (carryon_eval.suite.reopen): run.json records its dataset relative to
the run folder, so that path leads nowhere; `report` finds the dataset again by its recorded name in the folders
above the run, only when its rows are the ones run.json's content hashes pin, and otherwise says to give it with
`report --dataset DIR` (checked the same way)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.eval_cli import invoke, one_error_line, remote
from support.rollout_data import make_dataset, unique_replies
from support.scripted_server import ScriptedServer


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("moved")
    data = make_dataset(tmp / "data")
    with ScriptedServer(unique_replies, models=("tgt", "sim", "jdg")) as srv:
        result = invoke(*remote(srv), "--dataset", data, "--out", tmp / "runs" / "a", "--limit", 2,
                        "--conditions", "turn1,bc")
    assert result.exit_code == 0, result.output
    return tmp / "runs" / "a", data


def numbers(run: Path) -> dict:
    return json.loads((run / "results.json").read_text())["conditions"]


def test_a_copy_at_another_depth_finds_its_dataset_above_it(ran):
    run, data = ran
    copy = run.parent / "deeper" / "still" / "a"              # ../../data-… from here leads nowhere
    shutil.copytree(run, copy)
    (copy / "results.json").unlink()
    result = invoke("report", copy)
    assert result.exit_code == 0, result.output
    assert f"{data} holds the same rows (their content hashes match), read from there" in result.stdout
    assert numbers(copy) == numbers(run)


def test_elsewhere_report_says_to_give_the_dataset_and_takes_only_its_rows(ran, tmp_path):
    run, data = ran
    copy = tmp_path / "a"
    shutil.copytree(run, copy)
    recorded = json.loads((copy / "run.json").read_text())["dataset"]["source"]
    line = one_error_line(invoke("report", copy))
    assert line == (f"carryon-eval: error: {copy}: its dataset {recorded} (run.json's, from the run folder) is not "
                    f"there, and no folder named {data.name} above the run holds its rows; give the dataset folder: "
                    f"carryon-eval report {copy} --dataset DIR")
    other = make_dataset(tmp_path / "other")                  # other rows: refused, as a resume on them is
    (other / "queries.jsonl").write_text((other / "queries.jsonl").read_text().replace("?", "!"))
    assert "was started on other rows of dataset" in one_error_line(invoke("report", copy, "--dataset", other))
    result = invoke("report", copy, "--dataset", data)
    assert result.exit_code == 0, result.output
    assert numbers(copy) == numbers(run)
