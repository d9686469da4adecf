"""`inspect eval carryon_eval/carryonbench` against the scripted server (inspect's `openai-api` provider with the
server's base URL), then `carryon-eval import` and `carryon-eval report`: the same results.json as `carryon-eval`
on the same server and dataset, number for number. Skips, saying why, without inspect-ai."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.eval_cli import invoke, one_error_line
from support.inspect_run import judged_run, partly_unscored_handler

pytest.importorskip("inspect_ai", reason="inspect-ai is not installed (the `test` extra has it)")
INSPECT = shutil.which("inspect")
pytestmark = pytest.mark.skipif(INSPECT is None, reason="the `inspect` command is not on PATH")

ROLES = ("--model", "openai-api/scripted/tgt", "--model-role", "user=openai-api/scripted/sim",
         "--model-role", "grader=openai-api/scripted/jdg")


def inspect_eval(srv: Any, logs: Path, *task_args: str) -> Path:
    """`inspect eval` of the task in a subprocess; returns its one log file."""
    env = {**os.environ, "SCRIPTED_BASE_URL": srv.base_url, "SCRIPTED_API_KEY": "unused", "HF_HUB_OFFLINE": "1",
           "INSPECT_LOG_DIR": str(logs)}
    args = [str(INSPECT), "eval", "carryon_eval/carryonbench", *ROLES, "--display", "plain", "--log-dir", str(logs)]
    for arg in task_args:
        args += ["-T", arg]
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600, cwd=logs.parent)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    found = sorted(logs.glob("*.eval"))
    assert len(found) == 1, found
    return found[0]


def comparable(results: dict[str, Any]) -> dict[str, Any]:
    """results.json without what names the folder and the time it was written."""
    out = dict(results)
    out["run"] = {k: v for k, v in out["run"].items() if k != "folder"}
    out.pop("generated")
    return out


def test_inspect_eval_then_import_gives_the_same_results(tmp_path: Path, dataset: Path, scripted_server) -> None:
    srv = scripted_server(partly_unscored_handler, models=("tgt", "sim", "jdg"))
    own = judged_run(srv, dataset, tmp_path / "own")
    calls_own = srv.count()
    srv.reset()

    log = inspect_eval(srv, tmp_path / "logs", f"dataset={dataset}")
    # the turn-1 reply is generated once per query and shared: as many target calls as carryon-eval made
    target_calls = srv.count(lambda b: b["model"] == "tgt")
    assert target_calls == sum(1 for line in (own / "transcripts.jsonl").read_text().splitlines()
                               for m in json.loads(line)["messages"] if m["role"] == "assistant"
                               and not (json.loads(line)["shared_turn1"] and m["turn"] == 1
                                        and json.loads(line)["condition"] != "turn1"))
    assert srv.count() <= calls_own

    imported = tmp_path / "imported"
    result = invoke("import", log, "--out", imported)
    assert result.exit_code == 0, result.output
    result = invoke("report", imported)
    assert result.exit_code == 0, result.output

    mine = json.loads((own / "results.json").read_text())
    theirs = json.loads((imported / "results.json").read_text())
    assert mine["unscored"]["utility_items"] > 0 and mine["unscored"]["safety"] > 0   # unscored on both sides
    assert comparable(theirs) == comparable(mine)

    # the log's own metrics are those headline numbers too (by the same metric functions)
    from inspect_ai.log import read_eval_log

    metrics = {name: m.value for score in read_eval_log(str(log)).results.scores for name, m in score.metrics.items()}
    expected = {f"{cond}_{name}": block[name] for cond, block in mine["conditions"].items()
                if block["n_conversations"] for name in block["ci95"] if block[name] is not None}
    assert expected and {k: metrics.get(k) for k in expected} == expected
    assert metrics.get("recovery") == mine["recovery"]["value"] is not None
    assert metrics["unscored_judgments"] == mine["unscored"]["utility_items"] + mine["unscored"]["safety"]


def test_import_of_a_foreign_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.eval"
    bad.write_text("not a log")
    line = one_error_line(invoke("import", bad, "--out", tmp_path / "run"))
    assert "bad.eval" in line
    assert not (tmp_path / "run").exists()


def test_the_triplet_suite_as_a_task_is_refused_without_the_release_folder() -> None:
    """The triplets' judges are OpenSafeIntent's release files, which the task has no argument for: the task
    refuses condition triplet, naming the option the CLI runs it with."""
    from carryon_eval.suites.carryonbench.inspect_eval.task import carryonbench
    from carryon_eval.suite import SuiteError

    with pytest.raises(SuiteError, match="--opensafeintent DIR"):
        carryonbench(conditions="triplet")
