"""A run's status (smoke test, incomplete) travels with every artifact made from it: results.json, table.md,
report.html, the compare table, leaderboard.jsonl/.html and the inspect export; the leaderboard never ranks a
smoke run beside measured runs."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.eval_cli import invoke, remote
from support.rollout_data import evaluator_handler as handler

from carryon_eval.suites.carryonbench.judging.judgments import UTILITY_FILE
from carryon_eval.run.results import STATUS_LINES


def played(scripted_server, dataset: Path, out: Path) -> Path:
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    result = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--limit", 2, "--conditions", "turn1,bc")
    assert result.exit_code == 0, result.output
    return out


def as_smoke(run: Path) -> None:
    """run.json as the embedded model writes it: the target role is local."""
    meta = json.loads((run / "run.json").read_text())
    meta["roles"]["target"]["local"] = True
    (run / "run.json").write_text(json.dumps(meta))
    assert invoke("report", run).exit_code == 0


def test_a_smoke_run_says_so_everywhere_and_is_not_ranked(scripted_server, dataset, tmp_path):
    real = played(scripted_server, dataset, tmp_path / "real")
    smoke = tmp_path / "smoke"
    shutil.copytree(real, smoke)
    as_smoke(smoke)
    line = STATUS_LINES["smoke"]
    assert json.loads((smoke / "results.json").read_text())["run"]["status"] == ["smoke"]
    assert f"**{line}**" in (smoke / "table.md").read_text()
    assert line in (smoke / "report.html").read_text()
    assert json.loads((real / "results.json").read_text())["run"]["status"] == []

    result = invoke("compare", real, smoke, "--out", tmp_path / "cmp")
    assert result.exit_code == 0, result.output
    table = json.loads((tmp_path / "cmp" / "compare.json").read_text())["table"]
    assert [r["Status"] for r in table] == ["full", "smoke"]
    assert "| Status |" in (tmp_path / "cmp" / "table.md").read_text()
    assert f"tgt (smoke): {line}" in (tmp_path / "cmp" / "table.md").read_text()
    rows = [json.loads(x) for x in (tmp_path / "cmp" / "leaderboard.jsonl").read_text().splitlines()]
    assert [(r["status"], r["comparability_group"]) for r in rows] == [([], "A"), (["smoke"], "B")]
    page = (tmp_path / "cmp" / "leaderboard.html").read_text()
    assert 'data-unranked="smoke test"' in page and "SMOKE TEST, not ranked" in page and line in page


def test_an_incomplete_run_says_so_in_table_md_and_the_inspect_export(scripted_server, dataset, tmp_path):
    run = played(scripted_server, dataset, tmp_path / "run")
    lines = (run / UTILITY_FILE).read_text().splitlines(keepends=True)
    (run / UTILITY_FILE).write_text("".join(lines[:-2]))          # two judgments missing
    result = invoke("report", run)
    assert result.exit_code == 4
    assert json.loads((run / "results.json").read_text())["run"]["status"] == ["incomplete"]
    assert f"**{STATUS_LINES['incomplete']}**" in (run / "table.md").read_text()
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    exported = invoke("export", run, "--format", "inspect", "--out", tmp_path / "logs" / "run.eval")
    assert exported.exit_code == 0, exported.output
    log = read_eval_log(str(tmp_path / "logs" / "run.eval"))
    assert log.eval.metadata["status"] == ["incomplete"]
    assert log.eval.metadata["status_lines"] == [STATUS_LINES["incomplete"]]


def test_report_on_a_torn_transcripts_file_says_incomplete_and_exits_4(scripted_server, dataset, tmp_path):
    run = played(scripted_server, dataset, tmp_path / "run")
    text = (run / "transcripts.jsonl").read_text()
    (run / "transcripts.jsonl").write_text(text[: len(text) - 40])           # the last line torn, as by a kill
    result = invoke("report", run)
    assert result.exit_code == 4, result.output
    err = result.stderr.strip().splitlines()
    assert err[0] == ("INCOMPLETE: 1 planned conversation(s) have no final transcript yet (the rollout stopped, or "
                      "a reply stayed empty); rerun the same command to finish them. A conversation not played is "
                      "read like one whose judgments are all unscored: the numbers stand on the conversations played "
                      "and their bounds span every value the others could take (marked in table.md).")
    assert err[-1] == ("carryon-eval: the run is incomplete: planned conversations have no final transcript yet "
                       "(results.json and the report say so); rerun the same command to resume")
    assert f"**{STATUS_LINES['incomplete']}**" in (run / "table.md").read_text()
