"""No machine path in a file people share: a run folder, its report and a leaderboard name the dataset and the
runs relative to the folder they sit in (carryon_eval.run.paths), so that they can be sent or moved."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from support.eval_cli import invoke, remote
from support.rollout_data import evaluator_handler as handler


def files_naming(folder: Path, text: str) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and text.encode() in p.read_bytes())


def test_no_file_of_a_run_its_report_or_a_leaderboard_names_the_folder_it_ran_in(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    for name in ("a", "b"):
        res = invoke(*remote(srv), "--dataset", dataset, "--out", tmp_path / name, "--limit", 1,
                     "--conditions", "turn1,bc")
        assert res.exit_code == 0, res.output
    res = invoke("compare", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "board")
    assert res.exit_code == 0, res.output
    assert files_naming(tmp_path, str(tmp_path)) == []
    assert json.loads((tmp_path / "a" / "run.json").read_text())["dataset"]["source"] == f"../{dataset.name}"
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    assert (results["dataset"]["source"], results["run"]["folder"]) == (f"../{dataset.name}", ".")
    assert f"dataset ../{dataset.name} ·" in (tmp_path / "a" / "report.html").read_text()
    rows = [json.loads(line) for line in (tmp_path / "board" / "leaderboard.jsonl").read_text().splitlines()]
    assert [(r["run"], r["dataset"]["source"]) for r in rows] == [("../a", f"../{dataset.name}")] * 1 + [
        ("../b", f"../{dataset.name}")]
    assert json.loads((tmp_path / "board" / "compare.json").read_text())["runs"] == ["../a", "../b"]


def test_a_run_moved_with_its_dataset_resumes_and_reports(scripted_server, dataset, tmp_path):
    """The recorded path is read back relative to the run folder, wherever both were moved."""
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    args = [*remote(srv), "--dataset", dataset, "--limit", 1, "--conditions", "turn1"]
    assert invoke(*args, "--out", tmp_path / "run").exit_code == 0
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    shutil.move(tmp_path / "run", moved / "run")
    shutil.move(dataset, moved / dataset.name)
    res = invoke("report", moved / "run")
    assert res.exit_code == 0, res.output
    res = invoke(*[a if a != dataset else moved / dataset.name for a in args], "--out", moved / "run")
    assert res.exit_code == 0, res.output                     # the same dataset: resumes (nothing left to do)
    assert files_naming(moved, str(tmp_path)) == []
