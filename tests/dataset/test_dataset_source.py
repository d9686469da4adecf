"""A dataset argument names exactly one thing: an existing folder, or a Hub id fetched at its revision; never
the `datasets` cache's copy of another build of the same name. run.json records which it was."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from support.eval_cli import invoke, one_error_line, remote
from support.rollout_data import evaluator_handler as handler, make_dataset


def test_a_missing_path_is_a_missing_folder(scripted_server, tmp_path, monkeypatch):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    monkeypatch.chdir(tmp_path)
    line = one_error_line(invoke(*remote(srv), "--dataset", "./nope", "--out", tmp_path / "run"))
    assert line == "carryon-eval: error: dataset ./nope: no such folder"
    assert srv.count() == 0


def test_revision_with_a_local_folder_is_refused(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    line = one_error_line(invoke(*remote(srv), "--dataset", dataset, "--revision", "v0.1.0", "--out", tmp_path / "r"))
    assert line == (f"carryon-eval: error: --revision v0.1.0: dataset {dataset} is a local folder, which has no "
                    "revisions; leave --revision out, or give a Hub id")


def test_a_name_with_no_folder_never_loads_a_cached_build_of_that_name(scripted_server, tmp_path):
    """The `datasets` cache holds an earlier build loaded from a folder `carryonbench`; from elsewhere, offline,
    `--dataset carryonbench` must not run on that copy."""
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_DATASETS_CACHE": str(tmp_path / "hf" / "datasets"),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    (tmp_path / "a").mkdir()
    shutil.copytree(make_dataset(tmp_path / "src"), tmp_path / "a" / "carryonbench")
    warm = ("import datasets\nfor c in ('queries','checklists','flows','conversations'):\n"
            "    datasets.load_dataset('carryonbench', c, split='test')\n")
    subprocess.run([sys.executable, "-c", warm], cwd=tmp_path / "a", env=env, check=True, capture_output=True)
    (tmp_path / "b").mkdir()
    proc = subprocess.run([sys.executable, "-m", "carryon_eval.cli", *remote(srv), "--dataset", "carryonbench",
                           "--out", str(tmp_path / "run"), "--limit", "1", "--conditions", "turn1"],
                          cwd=tmp_path / "b", env=env, capture_output=True, text=True, timeout=300)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith(
        "carryon-eval: error: dataset carryonbench: no folder of that name here, and the Hub dataset carryonbench "
        "at revision main could not be fetched ("), proc.stderr
    assert srv.count() == 0 and not (tmp_path / "run" / "transcripts.jsonl").exists()


def test_run_json_records_what_the_source_was(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    result = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--limit", 1, "--conditions", "turn1")
    assert result.exit_code == 0, result.output
    recorded = json.loads((out / "run.json").read_text())["dataset"]
    # the folder relative to the run folder (carryon_eval.run.paths), never the machine's path
    assert (recorded["source"], recorded["kind"], recorded["commit"]) == (f"../{dataset.name}", "folder", None)
