"""No machine path in a file people share: a run folder, its report and a leaderboard name the dataset and the
runs relative to the folder they sit in (carryon_eval.run.paths), so that they can be sent or moved."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

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


def shared_release(tmp_path: Path) -> Path:
    from support.shared_data import OPENSAFEINTENT
    if not (OPENSAFEINTENT / "dataset.json").is_file():
        pytest.skip(f"the OpenSafeIntent release copy is not at {OPENSAFEINTENT}")
    return Path(shutil.copytree(OPENSAFEINTENT, tmp_path / "osi"))


def test_no_release_agreement_or_export_file_names_the_folder_it_ran_in(scripted_server, dataset, tmp_path):
    """The OpenSafeIntent release folder (run.json's suites record, results.json's section), agreement.json's
    run and label files, the batch export's manifest and the inspect log name paths relative to their folder;
    `report` and a resume still find the release from the recorded path."""
    from carryon_eval.suites.opensafeintent.release import load_release
    from support.opensafeintent_scripted import handler as osi_handler

    release = shared_release(tmp_path)
    srv = scripted_server(osi_handler(load_release(release, limit=2)), models=("tgt", "jdg"))
    osi = ["--conditions", "opensafeintent", "--opensafeintent", release, "--limit", 2, "--endpoint", srv.base_url,
           "--model", "tgt", "--judge-endpoint", srv.base_url, "--judge-model", "jdg", "--out", tmp_path / "osi-run"]
    res = invoke(*osi)
    assert res.exit_code == 0, res.output
    record = json.loads((tmp_path / "osi-run" / "run.json").read_text())["suites"]["opensafeintent"]
    assert (record["folder"], record["options"]["opensafeintent"]) == ("../osi", "../osi")
    results = json.loads((tmp_path / "osi-run" / "results.json").read_text())
    assert results["opensafeintent"]["release"]["folder"] == "../osi"
    calls = srv.count()
    assert invoke("report", tmp_path / "osi-run").exit_code == 0            # the release read back from "../osi"
    assert invoke(*osi).exit_code == 0 and srv.count() == calls             # a resume: nothing asked again

    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    run = tmp_path / "run"
    assert invoke(*remote(srv), "--dataset", dataset, "--out", run, "--limit", 1, "--conditions", "turn1").exit_code == 0
    cid = json.loads((run / "transcripts.jsonl").read_text().splitlines()[0])["conversation_id"]
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"annotator": "A", "task": "safety", "conversation_id": cid, "turn": 1,
                                  "score": 2}) + "\n")
    res = invoke("agreement", run, labels, "--out", run)
    assert res.exit_code == 0, res.output
    saved = json.loads((run / "agreement.json").read_text())["tasks"]["safety"]
    assert (saved["run"], saved["label_files"]) == (".", ["../labels.jsonl"])

    unjudged = tmp_path / "unjudged"
    unjudged.mkdir()
    for name in ("run.json", "transcripts.jsonl"):
        shutil.copy(run / name, unjudged / name)
    res = invoke("judge", unjudged, "--judge-endpoint", srv.base_url, "--batch-export", tmp_path / "batch")
    assert res.exit_code == 0, res.output
    manifest = json.loads(next((tmp_path / "batch").glob("*.json")).read_text())
    assert manifest["run"] == "../unjudged"

    logs = tmp_path / "logs"
    res = invoke("export", run, "--format", "inspect", "--out", logs / "run.eval")
    assert res.exit_code == 0, res.output
    from inspect_ai.log import read_eval_log
    log = read_eval_log(str(logs / "run.eval"))
    assert (log.eval.metadata["run_folder"], log.eval.dataset.location) == ("../run", f"../{dataset.name}")
    assert str(tmp_path) not in log.model_dump_json()                       # the log is a zip: read, not grepped
    assert files_naming(tmp_path, str(tmp_path)) == []
