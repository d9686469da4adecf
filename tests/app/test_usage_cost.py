"""Cost you can see: the provider's cached prompt tokens and reasoning tokens, recorded and priced.

A scripted server reports ``usage.prompt_tokens_details.cached_tokens`` (as OpenAI does for a prompt-cache hit)
and ``completion_tokens_details.reasoning_tokens``; run.json's ``usage`` and the summary line show them, and
``--price judge=1/4/0.5`` prices the cached prompt tokens at 0.5 USD per 1M."""
from __future__ import annotations

import json
from typing import Any

from support.eval_cli import invoke
from support.rollout_data import evaluator_handler
from support.scripted_server import Reply

from carryon_eval.app.cost import Price, RoleUsage, parse_prices


def remote(srv: Any) -> list[Any]:
    return ["--endpoint", srv.base_url, "--model", "tgt", "--user-endpoint", srv.base_url, "--user-model", "sim",
            "--judge-endpoint", srv.base_url, "--judge-model", "jdg"]


def judge_cached(body: dict) -> int:
    """The judge's prompt cache serves 7 tokens of every judge prompt; the other roles' none."""
    return 7 if body["model"] == "jdg" else 0


def reasoning_target(body: dict) -> Any:
    out = evaluator_handler(body)
    if body["model"] == "tgt":
        return Reply(out, reasoning="Thinking it over first.")       # 4 reasoning tokens per reply
    return out


def test_cached_and_reasoning_tokens_are_recorded_and_priced(scripted_server, dataset, tmp_path):
    srv = scripted_server(reasoning_target, models=("tgt", "sim", "jdg"), cached_tokens=judge_cached)
    out = tmp_path / "run"
    result = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--conditions", "turn1,bc",
                    "--price", "judge=1/4/0.5", "--price", "target=2/8")
    assert result.exit_code == 0, result.output
    usage = json.loads((out / "run.json").read_text())["usage"]
    judge_calls = srv.count(lambda b: b["model"] == "jdg")
    judge = usage["judge"]
    assert judge["calls"] == judge_calls and judge["cached_prompt_tokens"] == 7 * judge_calls
    assert 0 < judge["cached_prompt_tokens"] < judge["prompt_tokens"]
    expected = ((judge["prompt_tokens"] - judge["cached_prompt_tokens"]) * 1 + judge["cached_prompt_tokens"] * 0.5
                + judge["completion_tokens"] * 4) / 1e6
    assert judge["usd"] == round(expected, 6)
    assert judge["usd"] < (judge["prompt_tokens"] * 1 + judge["completion_tokens"] * 4) / 1e6   # cached is cheaper
    assert judge["price_per_1m"] == {"input": 1.0, "output": 4.0, "cached": 0.5}
    target = usage["target"]
    assert target["cached_prompt_tokens"] == 0
    assert target["reasoning_tokens"] == 4 * srv.count(lambda b: b["model"] == "tgt")
    assert target["usd"] == round((target["prompt_tokens"] * 2 + target["completion_tokens"] * 8) / 1e6, 6)
    assert "usd" not in usage["user"]                                   # no --price for the user role
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("of which:"))
    assert f"judge {judge['cached_prompt_tokens']} of" in line and "cached by the provider" in line
    cost = next(ln for ln in result.stdout.splitlines() if ln.startswith("cost:"))
    assert f"judge {judge['usd']:,.4f} USD" in cost

    again = invoke("judge", out)                       # nothing new to ask: usage and its prices stay
    assert again.exit_code == 0, again.output
    assert json.loads((out / "run.json").read_text())["usage"]["judge"] == judge


def test_price_takes_an_optional_cached_rate():
    assert parse_prices(["judge=1/4/0.5", "target=2/8"]) == {"judge": Price(1.0, 4.0, 0.5),
                                                           "target": Price(2.0, 8.0, None)}
    assert Price(1, 4).spent(RoleUsage(prompt_tokens=100, cached_prompt_tokens=60, completion_tokens=10)) \
        == (100 + 40) / 1e6                              # no cached rate: every prompt token at the prompt rate


def test_a_bad_price_is_one_line(dataset):
    result = invoke("--dataset", dataset, "--dry-run", "--price", "judge=1/4/x")
    assert result.exit_code == 2 and "expected ROLE=IN/OUT[/CACHED]" in result.output
    assert "Traceback" not in result.output
