"""Batch judging round trip: export the judge requests as OpenAI Batch API JSONL, answer them with a scripted
batch runner that writes the documented output format, import, and get the live run's judgments without a
live judge call."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from support.batch_runner import batch_runner
from support.eval_cli import one_error_line
from support.rollout_data import evaluator_handler

from carryon_eval.judge import batch
from carryon_eval.cli import cli
from carryon_eval.run.folder import RunFolder

JUDGMENTS = ("utility_judgments.jsonl", "safety_judgments.jsonl")


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def judged_run_and_unjudged_copy(srv: Any, dataset: Path, tmp_path: Path) -> tuple[Path, Path]:
    live = tmp_path / "live"
    args = ["--endpoint", srv.base_url, "--model", "tgt", "--user-model", "sim", "--judge-model", "jdg"]
    assert invoke(*args, "--dataset", dataset, "--out", live).exit_code == 0
    copy = tmp_path / "batched"
    copy.mkdir()
    for name in ("run.json", "transcripts.jsonl"):
        shutil.copy(live / name, copy / name)
    return live, copy


def lines(path: Path) -> list[str]:
    return sorted(path.read_text().splitlines())


def test_export_run_import_gives_the_live_judgments_without_a_live_call(scripted_server, dataset, tmp_path):
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    live, copy = judged_run_and_unjudged_copy(srv, dataset, tmp_path)
    live_judge_calls = srv.count(lambda b: b["model"] == "jdg")
    srv.reset()

    exported = invoke("judge", copy, "--judge-endpoint", srv.base_url, "--batch-export", tmp_path / "batch")
    assert exported.exit_code == 0, exported.output
    assert srv.count() == 0                                      # exporting calls nothing
    manifest = json.loads((tmp_path / "batch" / "manifest.json").read_text())
    assert manifest["requests"] == live_judge_calls and [f["file"] for f in manifest["files"]] == ["requests-0001.jsonl"]
    answered = batch_runner(tmp_path / "batch" / "requests-0001.jsonl", tmp_path / "results.jsonl")
    assert answered == live_judge_calls

    imported = invoke("judge", copy, "--judge-endpoint", srv.base_url, "--batch-import", tmp_path / "results.jsonl")
    assert imported.exit_code == 0, imported.output
    assert f"batch: {answered} answer(s) stored in the cache, 0 failed" in imported.stdout
    assert srv.count() == 0                                      # every answer came from the batch
    for name in JUDGMENTS:
        assert lines(copy / name) == lines(live / name)

    assert invoke("judge", copy, "--judge-endpoint", srv.base_url, "--batch-export", tmp_path / "batch2").exit_code == 0
    assert json.loads((tmp_path / "batch2" / "manifest.json").read_text())["requests"] == 0


def test_failed_batch_lines_are_asked_again_live(scripted_server, dataset, tmp_path):
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    live, copy = judged_run_and_unjudged_copy(srv, dataset, tmp_path)
    srv.reset()
    assert invoke("judge", copy, "--judge-endpoint", srv.base_url, "--batch-export", tmp_path / "b").exit_code == 0
    batch_runner(tmp_path / "b" / "requests-0001.jsonl", tmp_path / "r.jsonl", fail=lambda i: i % 4 == 0)
    failed = sum(1 for line in (tmp_path / "r.jsonl").read_text().splitlines() if json.loads(line)["error"])
    refused = one_error_line(invoke("judge", copy, "--judge-endpoint", srv.base_url, "--batch-import",
                                    tmp_path / "r.jsonl"))
    assert f"{failed} judge request(s) of this run have no answer" in refused and "--live-rest" in refused
    assert srv.count() == 0                                       # nothing live without --live-rest
    result = invoke("judge", copy, "--judge-endpoint", srv.base_url, "--batch-import", tmp_path / "r.jsonl",
                    "--live-rest")
    assert result.exit_code == 0, result.output
    assert f"{failed} failed" in result.stdout
    assert srv.count(lambda b: b["model"] == "jdg") == failed     # exactly the failed ones, live
    for name in JUDGMENTS:
        assert lines(copy / name) == lines(live / name)


def test_files_split_at_the_request_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(batch, "MAX_REQUESTS", 3)
    reqs = [{"custom_id": f"{i:064x}", "method": "POST", "url": batch.URL, "body": {"model": "m"}} for i in range(7)]
    exported = batch.write_batch_files(tmp_path / "out", reqs, model="m", run=RunFolder(tmp_path))
    assert exported.files == ["requests-0001.jsonl", "requests-0002.jsonl", "requests-0003.jsonl"]
    counts = [len((tmp_path / "out" / f).read_text().splitlines()) for f in exported.files]
    assert counts == [3, 3, 1]


def test_a_file_that_is_not_a_batch_result_is_one_error_line(scripted_server, dataset, tmp_path):
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    _, copy = judged_run_and_unjudged_copy(srv, dataset, tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"custom_id": "not-a-key", "response": {"status_code": 200, "body": {}}}\n')
    result = invoke("judge", copy, "--judge-endpoint", srv.base_url, "--batch-import", bad)
    assert result.exit_code == 2
    assert result.stderr.strip() == f"carryon-eval: error: {bad} line 1 is not an OpenAI batch result line"


def _exported(srv, dataset, tmp_path):
    _, copy = judged_run_and_unjudged_copy(srv, dataset, tmp_path)
    srv.reset()
    assert invoke("judge", copy, "--judge-endpoint", srv.base_url, "--batch-export", tmp_path / "b").exit_code == 0
    return copy, tmp_path / "b" / "requests-0001.jsonl"


def test_bad_batch_imports_are_one_line_and_ask_nothing_live(scripted_server, dataset, tmp_path):
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    copy, requests = _exported(srv, dataset, tmp_path)
    results = tmp_path / "r.jsonl"
    batch_runner(requests, results)
    before = {name: (copy / name).read_bytes() for name in ("run.json", "transcripts.jsonl")}
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text("".join(json.dumps({**json.loads(line), "custom_id": f"{i:064x}"}) + "\n"
                               for i, line in enumerate(results.read_text().splitlines())))
    cases = {empty: f"{empty} is empty",
             requests: f"{requests} line 1 is a batch request line (the exported requests file), not a result",
             foreign: f"{foreign} line 1: custom_id {0:012x}... is not a judge request of this run",
             tmp_path: f"{tmp_path} is a folder"}
    for given, expected in cases.items():
        line = one_error_line(invoke("judge", copy, "--judge-endpoint", srv.base_url, "--batch-import", given))
        assert expected in line, line
    line = one_error_line(invoke("judge", copy, "--judge-endpoint", srv.base_url, "--batch-import", results,
                                 "--batch-export", tmp_path / "again"))
    assert "--batch-export and --batch-import do not go together" in line
    assert srv.count() == 0 and not (tmp_path / "again").exists()
    assert not (copy / "utility_judgments.jsonl").exists()
    assert before == {name: (copy / name).read_bytes() for name in before}
