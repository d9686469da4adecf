"""Run integrity (issue 11): a dataset changed between a crash and its resume is refused, not mixed; bad
datasets, full disks and rejected requests end with one line; SIGTERM is Ctrl-C; stray cache files go."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from helpers.rollout_data import evaluator_handler as handler, make_dataset

from carryon_eval.cli import cli
from carryon_eval.schema import TABLE_COLUMNS


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def one_error_line(result: Any) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("carryon-eval: error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def remote(srv: Any, *extra: Any) -> list[Any]:
    return ["--endpoint", srv.base_url, "--model", "tgt", "--user-endpoint", srv.base_url, "--user-model", "sim",
            "--judge-endpoint", srv.base_url, "--judge-model", "jdg", *extra]


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
