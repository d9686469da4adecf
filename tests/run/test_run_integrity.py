"""Run integrity: a dataset changed between a crash and its resume is refused, not mixed; bad
datasets, full disks and rejected requests end with one line; SIGTERM is Ctrl-C; stray cache files go."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.eval_cli import invoke, one_error_line, remote, slowly, spawn, wait_for_lines
from support.rollout_data import evaluator_handler as handler, make_dataset
from support.scripted_server import Fault, ScriptedServer

from carryon_eval.schema import TABLE_COLUMNS


def edit_rows(path: Path, edit: Any) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(edit(r)) + "\n" for r in rows))


# ---------------------------------------------------------------- 1. a dataset edited in place
def test_a_dataset_edited_before_the_resume_is_refused_naming_what_changed(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    assert invoke(*remote(srv), "--dataset", dataset, "--out", out, "--conditions", "bc").exit_code == 0
    assert json.loads((out / "run.json").read_text())["dataset"]["content_sha256"]["queries"]
    before = (out / "transcripts.jsonl").read_text()
    edit_rows(dataset / "queries.jsonl", lambda r: {**r, "query": r["query"] + " (edited)"})
    srv.reset()
    line = one_error_line(invoke(*remote(srv), "--dataset", dataset, "--out", out, "--conditions", "bc"))
    assert "queries changed" in line and "conversations" not in line
    assert "changed" in one_error_line(invoke("rollout", out))
    assert srv.count() == 0 and (out / "transcripts.jsonl").read_text() == before


# ---------------------------------------------------------------- 3. one line instead of a traceback
def test_a_flow_whose_moves_is_null_is_one_line(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    edit_rows(dataset / "flows.jsonl", lambda r: {**r, "moves": None} if r["flow_id"] == "F1-bj" else r)
    line = one_error_line(invoke(*remote(srv), "--dataset", dataset, "--out", tmp_path / "run"))
    assert "flows row" in line and "'moves' must be a list" in line
    assert not (tmp_path / "run").exists()


def test_a_malformed_manifest_in_the_dataset_folder_is_one_line(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    (dataset / "MANIFEST.json").write_text('{"files": ')
    line = one_error_line(invoke(*remote(srv), "--dataset", dataset, "--out", tmp_path / "run"))
    assert "MANIFEST.json is unreadable" in line
    assert not (tmp_path / "run").exists()


# ---------------------------------------------------------------- 4. datasets with zero rows
def _empty_conversations(dataset: Path, rel: str) -> Path:
    fields = [(c, pa.string()) for c in TABLE_COLUMNS["conversations"]]
    path = dataset / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.schema(fields).empty_table(), path)
    (dataset / "conversations.jsonl").unlink()
    card = (dataset / "README.md").read_text().replace("path: conversations.jsonl", f"path: {rel}")
    (dataset / "README.md").write_text(card)
    return dataset


@pytest.mark.parametrize("rel", ["data/conversations/test.parquet",
                                 "data/conversations/test-00000-of-00001.parquet",
                                 "conversations-test.parquet"])
def test_a_dataset_without_conversations_is_one_clear_line_before_anything_is_written(scripted_server, tmp_path,
                                                                                      rel):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    data = _empty_conversations(make_dataset(tmp_path / "empty"), rel)
    out = tmp_path / "run"
    line = one_error_line(invoke(*remote(srv), "--dataset", data, "--out", out))
    assert "the dataset has no queries/conversations to run" in line
    assert not out.exists() and srv.count() == 0


# ---------------------------------------------------------------- 3. a full disk; 5. failures a rerun cannot fix
def test_a_rejected_request_does_not_say_rerun_and_a_full_disk_says_so(scripted_server, dataset, tmp_path):
    def rejecting(body: dict) -> Any:
        return Fault.status(400) if body["model"] == "tgt" else handler(body)

    srv = scripted_server(rejecting, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    line = one_error_line(invoke(*remote(srv), "--dataset", dataset, "--out", out))
    assert "rejected the request: HTTP 400" in line and "rerun" not in line
    assert not (out / "transcripts.jsonl").exists()

    (out / "transcripts.jsonl").symlink_to("/dev/full")      # every write to it: ENOSPC
    srv.handler = handler
    line = one_error_line(invoke(*remote(srv), "--dataset", dataset, "--out", out))
    assert "the disk is full" in line and "rerun the same command to resume" in line


def test_a_refused_api_key_and_an_unknown_model_do_not_say_rerun(scripted_server, dataset, tmp_path, monkeypatch):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"), api_key="the-right-key")
    monkeypatch.setenv("WRONG_KEY", "a-wrong-key")
    monkeypatch.setenv("RIGHT_KEY", "the-right-key")
    line = one_error_line(invoke(*remote(srv), "--api-key-env", "WRONG_KEY", "--dataset", dataset,
                                 "--out", tmp_path / "run"))
    assert "refused the API key" in line and "rerun" not in line
    line = one_error_line(invoke(*remote(srv), "--model", "nope", "--api-key-env", "RIGHT_KEY", "--dataset", dataset,
                                 "--out", tmp_path / "run"))
    assert "does not serve model 'nope'" in line and "rerun" not in line


class IncompleteListServer(ScriptedServer):
    """Serves every model it is given, but its /models lists only the first (as some gateways do)."""

    async def _models(self, request: Any) -> Any:
        from starlette.responses import JSONResponse
        return JSONResponse({"object": "list", "data": [{"id": self.models[0], "object": "model"}]})


def test_no_model_check_runs_on_a_server_whose_model_list_is_incomplete(dataset, tmp_path):
    with IncompleteListServer(handler, models=("tgt", "sim", "jdg")) as srv:
        args = [*remote(srv), "--dataset", dataset, "--out", tmp_path / "run", "--conditions", "bc"]
        assert "does not serve model 'sim'" in one_error_line(invoke(*args))
        result = invoke(*args, "--no-model-check")
        assert result.exit_code == 0, result.output
        assert "conversations" in result.stdout and srv.count() > 0


# ---------------------------------------------------------------- 5. a stray .tmp of the response cache
def test_a_stray_tmp_file_of_the_response_cache_is_removed_on_the_next_start(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    args = [*remote(srv), "--dataset", dataset, "--out", out, "--conditions", "bc"]
    assert invoke(*args).exit_code == 0
    shard = next(p for p in (out / "cache").iterdir() if p.is_dir())
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stray = [shard / f".{shard.name}abcdef.{dead.stdout.strip()}.x1y2.tmp", shard / f".{shard.name}abcdef.x1y2.tmp"]
    live = shard / f".{shard.name}abcdef.{os.getppid()}.x1y2.tmp"   # a writer that still runs keeps its file
    for path in (*stray, live):
        path.write_text('{"text": "half')
    assert invoke(*args).exit_code == 0
    assert not any(p.exists() for p in stray) and live.exists()


# ---------------------------------------------------------------- 5. SIGTERM is Ctrl-C
def test_sigterm_prints_the_ctrl_c_line_and_the_run_resumes(scripted_server, dataset, tmp_path):
    srv = scripted_server(slowly(handler), models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    proc = spawn(*remote(srv), "--dataset", dataset, "--out", out, "--concurrency", "2", text=True)
    try:
        wait_for_lines(proc, out / "transcripts.jsonl", 2)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert stderr.strip().splitlines()[-1] == "carryon-eval: interrupted; rerun the same command to resume"
    assert "Traceback" not in stderr
    srv.handler = handler
    assert invoke(*remote(srv), "--dataset", dataset, "--out", out).exit_code == 0


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into any folder: a read-only one needs another user")
def test_report_into_a_read_only_run_folder_is_one_line(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    assert invoke(*remote(srv), "--dataset", dataset, "--out", out, "--limit", 1, "--conditions", "turn1").exit_code == 0
    out.chmod(0o555)
    try:
        line = one_error_line(invoke("report", out))
    finally:
        out.chmod(0o755)
    assert line == f"carryon-eval: error: cannot write in {out}: Permission denied", line
