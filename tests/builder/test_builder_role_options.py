"""`carryon-build build` with the per-role option names shared with carryon-eval (--ROLE-model, --ROLE-endpoint,
--ROLE-max-tokens, --ROLE-temperature, --ROLE-reasoning-effort, --ROLE-system-prompt, --ROLE-extra-body), and
against endpoints that refuse parameters (scripted servers, real HTTP)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.builder_models import GENERATORS, JUDGE, MAIN_MODELS, Scripted
from support.synthetic_source import write_llm_source

from carryonbench_builder.cli import cli
from carryonbench_builder.sources.casebench import load_source, select_queries


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    return write_llm_source(tmp_path_factory.mktemp("source") / "casebench_synthetic.json")


@pytest.fixture(scope="module")
def script(source):
    return Scripted({q.query: label for q, label in zip(select_queries(load_source(source))[:3], "ABC")})


def args(source, main, judge, out, *extra) -> list[str]:
    return ["build", "--source", str(source), "--out", str(out), "--cache-dir", str(out) + ".cache", "--limit", "3",
            "--endpoint", main.base_url, "--model", "intent-m", "--decomposer-model", "decomp-m",
            "--merger-model", "merge-m", "--item-filter-model", "filter-m",
            "--harm-classifier-endpoint", judge.base_url, "--harm-classifier-model", JUDGE,
            *[a for g in GENERATORS for a in ("--generator-model", g)], *extra]


def test_role_options_reach_each_roles_requests_and_the_manifest(scripted_server, source, script, tmp_path):
    main = scripted_server(script.reply, models=MAIN_MODELS)
    judge = scripted_server(script.reply, models=(JUDGE,))
    out = tmp_path / "ds"
    res = CliRunner().invoke(cli, args(source, main, judge, out, "--decomposer-system-prompt", "Be terse.",
                                       "--merger-reasoning-effort", "high", "--item-filter-extra-body",
                                       '{"top_p": 0.5}', "--intent-writer-max-tokens", "321",
                                       "--intent-writer-temperature", "default", "--harm-classifier-temperature",
                                       "0.1"), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    by = {m: [b for b in [*main.requests, *judge.requests] if b["model"] == m]
          for m in ("intent-m", "decomp-m", "merge-m", "filter-m", JUDGE)}
    assert all(b["messages"][0]["role"] == "system" and b["messages"][0]["content"].startswith("Be terse.\n\n")
               for b in by["decomp-m"]) and by["decomp-m"]
    assert by["merge-m"] and all(b["reasoning_effort"] == "high" for b in by["merge-m"])
    assert by["filter-m"] and all(b["top_p"] == 0.5 for b in by["filter-m"])
    assert by["intent-m"] and all(b["max_tokens"] == 321 and "temperature" not in b for b in by["intent-m"])
    assert by[JUDGE] and all(b["temperature"] == 0.1 for b in by[JUDGE])
    assert all("reasoning_effort" not in b for m in ("intent-m", "decomp-m", "filter-m") for b in by[m])
    stages = json.loads((out / "MANIFEST.json").read_text())["llm_stages"]
    stages = stages.get("stages", stages)
    merge = next(v for v in stages.values() if isinstance(v, dict) and v.get("role") == "merger")
    assert merge["params"]["request"] == [{"reasoning_effort": "high"}]
    intents = next(v for v in stages.values() if isinstance(v, dict) and v.get("role") == "intent_writer")
    assert intents["params"]["max_tokens"] == 321


def test_a_build_on_reasoning_model_endpoints_completes(scripted_server, source, script, tmp_path):
    main = scripted_server(script.reply, models=MAIN_MODELS, quirks=("reasoning_model",))
    judge = scripted_server(script.reply, models=(JUDGE,), quirks=("reasoning_model", "no_seed"))
    res = CliRunner().invoke(cli, args(source, main, judge, tmp_path / "ds"), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    answered = [b for b, s in zip(main.requests, main.statuses) if s == 200]
    assert answered and all("max_tokens" not in b and "temperature" not in b for b in answered)
    stages = json.loads((tmp_path / "ds" / "MANIFEST.json").read_text())["llm_stages"]
    stages = stages.get("stages", stages)
    merge = next(v for v in stages.values() if isinstance(v, dict) and v.get("role") == "merger")
    assert merge["params"]["sent"] == [{"max_tokens": "sent as max_completion_tokens",
                                        "temperature": "not sent: provider default (refused 0.0)"}]


def test_version_and_old_spellings():
    res = CliRunner().invoke(cli, ["--version"])
    assert res.exit_code == 0 and res.output.startswith("carryon-build, version ")
    text = CliRunner().invoke(cli, ["build", "--help"]).output
    assert "--harm-classifier-model" in text and "--role-model" not in text.split("Examples:")[0].split("Options:")[1]
