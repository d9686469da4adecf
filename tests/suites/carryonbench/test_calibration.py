"""--calibrate N: a grouped run also judges N replies per item; results.json and report.html give the agreement.

On the built-in sample (no --dataset), against the scripted judge of support/grouped_judge.py, which answers both
prompts consistently except where a test makes the grouped answer differ."""
from __future__ import annotations

import json
from typing import Any

from support.eval_cli import invoke
from support.grouped_judge import GROUPED, PER_ITEM, consistent_handler, grouped_answer, verdict
from support.scripted_server import last_user_text

from carryon_eval.suites.carryonbench.metrics.calibration import Calibration, calibration
from carryon_eval.suites.carryonbench.judging.judgments import UtilityJudgment


def remote(srv: Any) -> list[Any]:
    return ["--endpoint", srv.base_url, "--model", "tgt", "--user-endpoint", srv.base_url, "--user-model", "sim",
            "--judge-endpoint", srv.base_url, "--judge-model", "jdg"]


def test_calibrate_20_on_the_sample_writes_the_agreement(scripted_server, tmp_path):
    srv = scripted_server(consistent_handler(), models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    result = invoke(*remote(srv), "--out", out, "--conditions", "turn1,oracle,bc,nc", "--utility-judge", "grouped",
                    "--calibrate", "20")
    assert result.exit_code == 0, result.output
    per_item = [json.loads(line) for line in (out / "utility_judgments.jsonl").read_text().splitlines()]
    grouped = [json.loads(line) for line in (out / "utility_grouped_judgments.jsonl").read_text().splitlines()]
    sampled = {(r["conversation_id"], r["turn"]) for r in per_item}
    transcripts = [json.loads(line) for line in (out / "transcripts.jsonl").read_text().splitlines()]
    replies = {tr["conversation_id"]: {(tr["conversation_id"], m["turn"]) for m in tr["messages"]
                                       if m["role"] == "assistant"} for tr in transcripts}
    queries = {tr["query_id"] for tr in transcripts if replies[tr["conversation_id"]] & sampled}
    whole = {r for tr in transcripts if tr["query_id"] in queries for r in replies[tr["conversation_id"]]}
    assert sampled == whole                                          # whole queries: every reply of each
    assert len(sampled) <= 20 or len(queries) == 1                   # up to 20 replies (the first query always)
    assert {tr["condition"] for tr in transcripts if tr["query_id"] in queries} >= {"turn1", "oracle", "bc", "nc"}
    assert {(r["conversation_id"], r["turn"], r["item_id"]) for r in per_item} <= \
        {(r["conversation_id"], r["turn"], r["item_id"]) for r in grouped}
    res = json.loads((out / "results.json").read_text())
    cal = res["judges"]["utility"]["calibration"]
    assert res["judges"]["utility"]["utility_judge"] == "grouped"
    assert cal["calibrated"] is True and cal["n_replies"] == len(sampled) and cal["n_pairs"] == len(per_item)
    assert cal["percent_agreement"]["value"] == 100.0 and cal["utility_difference"]["value"] == 0.0
    headline = cal["headline"]["numbers"]                            # the same verdicts: every headline moves 0
    assert headline["bc.utility"]["value"] == 0.0 and headline["bc.utility"]["ci95"] == [0.0, 0.0]
    assert cal["headline"]["n_conversations"] >= 2
    assert cal["cohen_kappa"]["value"] == 1.0 and cal["cohen_kappa"]["ci95"] == [1.0, 1.0]
    html = (out / "report.html").read_text()
    assert f"calibrated on {len(sampled)} replies" in html and "Cohen&#x27;s kappa 1.000" in html
    assert "BC utility grouped - per-item 0.0" in html
    run = json.loads((out / "judge.json").read_text())
    assert run["judges"]["jdg"]["calibration"] == {"replies": len(sampled), "seed": 0}   # whole queries, <= 20

    again = invoke("agreement", out)                               # the two judgment sets, like two judges
    assert again.exit_code == 0, again.output
    assert "A = jdg, B = jdg:grouped" in again.output and "percent agreement: 100.0%" in again.output


def test_calibration_measures_a_grouped_judge_that_disagrees(scripted_server, dataset, tmp_path):
    def flipping(body: dict) -> Any:          # the grouped answer says "yes" to every item
        if body["model"] == "jdg" and GROUPED in last_user_text(body):
            return json.dumps({k: "yes" for k in json.loads(grouped_answer(last_user_text(body)))})
        return consistent_handler()(body)
    srv = scripted_server(flipping, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    result = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--conditions", "turn1,bc",
                    "--utility-judge", "grouped", "--calibrate", "6")
    assert result.exit_code == 0, result.output
    cal = json.loads((out / "results.json").read_text())["judges"]["utility"]["calibration"]
    per_item = [json.loads(line) for line in (out / "utility_judgments.jsonl").read_text().splitlines()]
    no = sum(r["verdict"] is False for r in per_item)
    assert no > 0 and cal["n_pairs"] == len(per_item)
    assert cal["percent_agreement"]["value"] == 100.0 * (len(per_item) - no) / len(per_item)
    assert cal["utility_difference"]["value"] > 0                   # grouped reads more items as fulfilled
    lo, hi = cal["utility_difference"]["ci95"]
    assert lo <= cal["utility_difference"]["value"] <= hi
    assert not [b for b in srv.requests if PER_ITEM in last_user_text(b) and b["model"] != "jdg"]


def test_calibration_numbers():
    def rec(c: str, t: int, i: str, v: Any) -> UtilityJudgment:
        return UtilityJudgment(c, t, i, v, "j", "p")
    per_item = [rec("c1", 1, "a", True), rec("c1", 1, "b", False), rec("c2", 1, "a", True), rec("c2", 1, "b", None)]
    grouped = [rec("c1", 1, "a", True), rec("c1", 1, "b", True), rec("c2", 1, "a", True), rec("c2", 1, "b", False),
               rec("c3", 1, "a", False)]
    cal = calibration(grouped, per_item, n_resamples=200, seed=1)
    assert cal.n_replies == 2 and cal.n_pairs == 3 and cal.n_unscored_excluded == 1
    assert cal.percent_agreement.value == 100.0 * 2 / 3
    assert cal.utility_difference.value == (50.0 + 0.0) / 2       # c1: 100 - 50; c2: 100 - 100
    assert Calibration.from_json(json.loads(json.dumps(cal.to_json()))) == cal        # read back as written
    assert list(cal.to_json())[:2] == ["calibrated", "n_replies"] and "reason" not in cal.to_json()["cohen_kappa"]
    assert verdict("x", "y") in (True, False)


def test_calibration_samples_whole_queries_so_every_condition_stands_on_the_same_ones() -> None:
    """The paper's plan shape (turn 1, oracle, 10 BC and 5 NC conversations of 2-6 replies per query): at N = 200
    every sampled query brings every condition, so no headline number is left without its turn 1 or oracle."""
    from types import SimpleNamespace

    from carryon_eval.suites.carryonbench.judging.scorers import calibration_sample

    jobs = [SimpleNamespace(conversation_id=f"{c}:q{q}:{k}", query_id=f"q{q}", condition=c, moves=("m",) * n)
            for q in range(50) for c, n, k in [("turn1", 0, 0), ("oracle", 0, 0),
                                               *(("bc", 1 + k % 5, k) for k in range(10)),
                                               *(("nc", 1 + k % 5, k) for k in range(5))]]
    sampled = calibration_sample(jobs, 200)
    by_id = {j.conversation_id: j for j in jobs}
    queries = {by_id[c].query_id for c, _ in sampled}
    assert 2 <= len(queries) and len(sampled) <= 200
    for q in queries:                                   # each sampled query: all its conversations, every reply
        mine = {(j.conversation_id, t) for j in jobs if j.query_id == q for t in range(1, len(j.moves) + 2)}
        assert mine <= set(sampled)
    assert calibration_sample(jobs, 200) == sampled     # seeded
