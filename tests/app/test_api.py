"""The Python API (`from carryon_eval import evaluate`): the documented example runs as written, as a plain script
and inside a running event loop, against the scripted server (real HTTP); it returns results.json's record.

The example is taken from docs/evaluating.md (the first ```python block under "## From Python"); only its endpoint URL is
replaced by the scripted server's, which serves the example's model names.
"""
from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.rollout_data import evaluator_handler, make_dataset

from carryon_eval.app.config import ConfigError
from carryon_eval.run.results import Results
from support.shared_data import REPO

README_URL = "http://localhost:8000/v1"
NAMES = {"my-model": "tgt", "my-simulator": "sim", "my-judge": "jdg"}   # the example's models -> the scripted roles


def readme_example() -> str:
    text = (REPO / "docs" / "evaluating.md").read_text(encoding="utf-8")
    section = text.split("\n## From Python\n", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "docs/evaluating.md: no ```python block under '## From Python'"
    code = found.group(1)
    assert README_URL in code and "from carryon_eval import evaluate" in code
    return code


def handler(body: dict) -> Any:
    return evaluator_handler({**body, "model": NAMES[body["model"]]})


def run_script(code: str, cwd: Path) -> subprocess.CompletedProcess:
    script = cwd / "example.py"
    script.write_text(code, encoding="utf-8")
    return subprocess.run([sys.executable, str(script)], cwd=cwd, capture_output=True, text=True, timeout=300)


IN_A_LOOP = '''import asyncio

EXAMPLE = {code!r}


async def main():                      # as in a notebook: the example's code runs while a loop is running
    asyncio.get_running_loop()
    exec(compile(EXAMPLE, "README example", "exec"), {{"__name__": "__main__"}})


asyncio.run(main())
'''


@pytest.mark.parametrize("mode", ["script", "event_loop"])
def test_readme_example_runs(scripted_server, tmp_path, mode):
    srv = scripted_server(handler, models=tuple(NAMES))
    code = readme_example().replace(README_URL, srv.base_url)
    proc = run_script(code if mode == "script" else IN_A_LOOP.format(code=code), tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "run folder: runs/my-model-api" in proc.stdout
    results = json.loads((tmp_path / "runs/my-model-api/results.json").read_text())
    assert results["conditions"]["bc"]["n_conversations"] > 0
    assert srv.count(lambda b: b["model"] == "my-judge") > 0 and srv.count(lambda b: b["model"] == "my-simulator") > 0


def test_returns_results_json_record_and_resumes(scripted_server, tmp_path):
    """In-process, from inside a running loop: the record equals results.json; a rerun into the same folder
    calls nothing (resumed from the run's cache)."""
    from carryon_eval import evaluate

    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    options = dict(endpoint=srv.base_url, model="tgt", user_model="sim", judge_model="jdg",
                   dataset=make_dataset(tmp_path / "data"), out=tmp_path / "run", conditions="bc,nc",
                   no_shared_turn1=True)
    lines: list[str] = []

    class Lines:
        def info(self, text: str) -> None:
            lines.append(text)

        def note(self, text: str) -> None:
            lines.append(text)

    async def in_a_loop() -> Results:
        return evaluate(output=Lines(), **options)

    results = asyncio.run(in_a_loop())
    assert isinstance(results, Results)
    assert results.to_json() == json.loads((tmp_path / "run/results.json").read_text())
    assert set(results.conditions) >= {"bc", "nc"} and results.conditions["bc"]["n_conversations"] > 0
    run_json = json.loads((tmp_path / "run/run.json").read_text())
    assert run_json["conditions"] == ["bc", "nc"] and run_json["shared_turn1"] is False
    assert any(line.startswith("rollout: ") for line in lines)

    calls = srv.count()
    again = evaluate(output=Lines(), **options)       # no loop running here: asyncio.run
    assert srv.count() == calls and again is not None and again.to_json()["conditions"] == results.to_json()["conditions"]


def test_dry_run_returns_none_and_writes_nothing(scripted_server, tmp_path, capsys):
    from carryon_eval import evaluate_async

    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    got = asyncio.run(evaluate_async(endpoint=srv.base_url, model="tgt", dataset=make_dataset(tmp_path / "d"),
                                     out=tmp_path / "run", dry_run=True, price=["judge=0.15/0.60"]))
    assert got is None and not (tmp_path / "run").exists() and srv.count() == 0
    assert "judge" in capsys.readouterr().out


@pytest.mark.parametrize("options, message", [
    ({"limit": 0}, "limit: expected a whole number >= 1, got 0"),
    ({"conditions": "bc,xx"}, "conditions: expected 'all' or a subset of"),
    ({"utility_mode": "probs"}, "utility_mode: expected one of text, logprob, logprobs, got 'probs'"),
    ({"endpoint": "http://127.0.0.1:9/v1"}, "--model is required with --endpoint http://127.0.0.1:9/v1"),
])
def test_bad_options_raise_one_line(tmp_path, options, message):
    from carryon_eval import evaluate

    with pytest.raises(ConfigError) as err:
        evaluate(out=tmp_path / "run", **options)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "run").exists()


def test_unknown_keyword_is_a_type_error():
    from carryon_eval import evaluate

    with pytest.raises(TypeError, match="judge_modle"):
        evaluate(judge_modle="x")


def test_import_stays_light():
    code = ("import sys, carryon_eval; print(sorted(m for m in sys.modules if m.startswith('carryon_eval') "
            "or m in ('click', 'openai', 'datasets', 'numpy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "['carryon_eval']"


def test_options_build_the_command_lines_config(tmp_path):
    """Same record as `carryon-eval` builds from the same options (the CLI's own parser gives the reference)."""
    from carryon_eval.api import evaluate_config
    from carryon_eval.cli import cli

    ctx = cli.make_context("carryon-eval", ["--endpoint", "http://a/v1", "--endpoint", "http://b/v1", "--model", "m",
                                            "--conditions", "all", "--no-shared-turn1", "--utility-mode", "logprob",
                                            "--price", "judge=1/2", "--dry-run", "--json"])
    from carryon_eval.cli import evaluate_config as cli_config
    opts = dict(ctx.params)
    assert evaluate_config(endpoint=["http://a/v1", "http://b/v1"], model="m", conditions="all", no_shared_turn1=True,
                           utility_mode="logprob", price="judge=1/2", dry_run=True, json=True) == \
        cli_config(**opts, conditions_all=True)
    assert evaluate_config(conditions="all").conditions_all           # suites with own inputs join when given
    assert evaluate_config(opensafeintent=tmp_path).suite_options["opensafeintent"] == tmp_path
