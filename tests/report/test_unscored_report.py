"""Unscored made visible end to end: the under-95% footnote in table.md and report.html, and
exit 3 with one line when a condition has no scored number (everything still written)."""
from __future__ import annotations

import json
import re
import zlib
from typing import Any

from click.testing import CliRunner
from support.rollout_data import evaluator_handler
from support.scripted_server import last_user_text

from carryon_eval.cli import cli


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def remote(srv: Any) -> list[Any]:
    return ["--endpoint", srv.base_url, "--model", "tgt", "--user-endpoint", srv.base_url, "--user-model", "sim",
            "--judge-endpoint", srv.base_url, "--judge-model", "jdg"]


def test_a_judge_that_answers_nothing_usable_exits_3_after_writing_everything(scripted_server, dataset, tmp_path):
    def handler(body: dict) -> Any:
        if body["model"] == "jdg":
            return "Hmm, that is a hard one to say."
        return evaluator_handler(body)
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    result = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--conditions", "turn1,bc")
    assert result.exit_code == 3, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("carryon-eval: judge answered nothing usable: "), result.stderr
    assert "turn1" in lines[0] and "bc" in lines[0] and "Traceback" not in result.output
    results = json.loads((out / "results.json").read_text())
    assert results["conditions"]["turn1"]["utility"] is None
    assert results["conditions"]["turn1"]["bounds"]["utility"] == [0.0, 100.0]
    assert (out / "report.html").is_file() and (out / "table.md").is_file()


def test_headlines_under_95_percent_scored_are_marked(scripted_server, dataset, tmp_path):
    def handler(body: dict) -> Any:        # the safety judge cannot rate some replies (a fixed third of them)
        text = last_user_text(body)
        if body["model"] == "jdg" and "rating how harmful" in text:
            reply = re.search(r"<reply>\n(.*?)\n</reply>", text, re.S).group(1)
            if zlib.crc32(reply.encode()) % 3 == 0:
                return "I would rather not rate this."
        return evaluator_handler(body)
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    result = invoke(*remote(srv), "--dataset", dataset, "--out", out)
    results = json.loads((out / "results.json").read_text())
    assert result.exit_code == (3 if any(
        b["n_conversations"] and b["harm"] is None and b["utility"] is None
        for b in results["conditions"].values()) else 0), result.output
    marked = {c: b["under_95"] for c, b in results["conditions"].items() if b["under_95"]}
    assert marked and all("harm" in m for m in marked.values())
    table = (out / "table.md").read_text()
    html = (out / "report.html").read_text()
    for cond, metrics in marked.items():
        share = results["conditions"][cond]["scored_share"]["harm"]
        assert f"† {cond} harm: " in table and f"stands on {share:.1f}% scored judgments" in table
        assert f"† {cond} harm: " in html
    row = next(line for line in table.splitlines() if line.startswith("| tgt |"))
    assert "†" in row                                                       # a marked cell in Table 2


def test_judge_format_is_an_option_recorded_in_run_and_judge_json(scripted_server, dataset, tmp_path):
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    result = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--limit", 1, "--judge-format", "text")
    assert result.exit_code == 0, result.output
    assert json.loads((out / "run.json").read_text())["judge"]["judge_format"] == "text"
    assert json.loads((out / "judge.json").read_text())["judge_format"] == "text"
    assert srv.count(lambda b: b["model"] == "jdg" and b.get("response_format") is not None) == 0
    assert "obtained as " in result.stdout and " text" in result.stdout
    again = invoke("judge", out, "--judge-format", "json_schema")
    assert again.exit_code == 0, again.output
    assert json.loads((out / "judge.json").read_text())["judge_format"] == "json_schema"
