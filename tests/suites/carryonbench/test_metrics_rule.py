"""The one rule for unscored judgments, end to end: random (MCAR) unscored judgments do not move the
headline (seeded simulation with known truth; the old readings do move it), the breakdowns compute the
headline's numbers, every number lies within its bounds on a scripted run, and replies cut at
max_tokens are counted and marked."""
from __future__ import annotations

import json
import random
import zlib
from dataclasses import replace
from statistics import fmean
from typing import Any, Iterator, Optional

import pytest
from support.eval_cli import invoke, remote
from support.rollout_data import evaluator_handler
from support.scripted_server import last_user_text

from carryon_eval.suites.carryonbench.metrics import conversations as C, unscored as U, breakdowns as B, headline as S
from carryon_eval.metrics.stats import Bootstrap
from carryon_eval.suites.carryonbench.conditions import CONDITIONS

ITEMS = tuple(f"i{k}" for k in range(6))
LENGTHS = (2, 3, 4, 5, 6)


def synthetic_run(rng: random.Random, n_queries: int = 30) -> list[C.Conversation]:
    """Known truth: items, once fulfilled, are sometimes repeated; harm is sticky and rises with turns."""
    convs = []
    for q in range(n_queries):
        skill = rng.random()

        def play(cond: str, n: int) -> C.Conversation:
            done = {i: False for i in ITEMS}
            harm = rng.choice((1, 1, 2))
            turns = []
            for t in range(1, n + 1):
                verdicts = {i: rng.random() < (0.3 if done[i] else skill * 0.25) for i in ITEMS}
                done = {i: done[i] or verdicts[i] for i in ITEMS}
                if t > 1 and rng.random() < 0.3:
                    harm = min(5, harm + 1)
                turns.append(C.Turn(t, None if t == 1 else "pushback", verdicts, harm))
            return C.Conversation(f"{cond}:q{q}:{n}", f"q{q}", cond, tuple(turns), ("pushback",) * (n - 1), "D")
        convs += [play("turn1", 1), play("oracle", 1)] + [play(c, n) for c in ("bc", "nc") for n in LENGTHS]
    return convs


def unscore(convs: list[C.Conversation], rng: random.Random, p: float = 0.1) -> list[C.Conversation]:
    """Every verdict and every harm score made unscored with probability p, independently (MCAR)."""
    def turn(t: C.Turn) -> C.Turn:
        return replace(t, verdicts={k: None if rng.random() < p else v for k, v in t.verdicts.items()},
                       harm=None if rng.random() < p else t.harm)
    return [replace(c, turns=tuple(turn(t) for t in c.turns)) for c in convs]


def old_utility(c: C.Conversation) -> Optional[float]:
    """The earlier reading: an item is fulfilled if a scored turn says so, else unfulfilled when any turn
    scored it (an unscored turn acts as a silent "no")."""
    status = [[t.verdicts[i] for t in c.turns if t.verdicts[i] is not None] for i in ITEMS]
    decided = [any(s) for s in status if s]
    return 100 * sum(decided) / len(decided) if decided else None


def test_random_unscored_judgments_do_not_move_the_headline() -> None:
    errors: dict[str, list[float]] = {k: [] for k in ("utility", "violation_rate", "old_utility", "pooled_draw")}
    for seed in range(8):
        rng = random.Random(seed)
        full = synthetic_run(rng)
        one = Bootstrap.of((c.query_id for c in full), n_resamples=1)
        truth, _, _ = S.headline(full, one)
        part = unscore(full, rng)
        got, _, _ = S.headline(part, one)
        for cond in ("bc", "nc"):
            for m in ("utility", "violation_rate"):
                errors[m].append(got[cond][m] - truth[cond][m])
                lo, hi = got[cond]["bounds"][m]
                assert lo <= truth[cond][m] <= hi and lo <= got[cond][m] <= hi
            errors["old_utility"].append(fmean(u for c in part if c.condition == cond
                                               if (u := old_utility(c)) is not None) - truth[cond]["utility"])
            errors["pooled_draw"].append(got[cond]["sensitivity"]["pooled_draw"]["violation_rate"]
                                         - truth[cond]["violation_rate"])
    mean = {k: fmean(v) for k, v in errors.items()}
    assert abs(mean["utility"]) <= 1.0 and abs(mean["violation_rate"]) <= 1.0, mean
    # the readings this rule replaced lean: the silent "no" low, the pooled draw high
    assert mean["old_utility"] < -1.0 and mean["pooled_draw"] > 1.0, mean


def test_breakdowns_and_headline_agree_where_one_domain_holds_all_data() -> None:
    rng = random.Random(7)
    convs = [c for c in unscore(synthetic_run(rng, 12), rng) if c.condition != "nc" or len(c.turns) == 4]
    summary = S.summarize(convs, n_resamples=20)
    head, domain = summary["conditions"], summary["by_domain"]["D"]
    for cond in CONDITIONS:
        for m in ("utility", "harm"):
            assert domain[cond][m] == pytest.approx(head[cond][m]) and domain[cond]["bounds"][m] == head[cond]["bounds"][m]
        if cond in ("bc", "nc"):
            for m in ("utility", "harm"):
                assert domain[cond][f"{m}_delta"] == pytest.approx(head[cond][f"{m}_delta"])
    # nc conversations all have 4 model turns: cumulative by_turn at turn 4 is the whole conversation
    last = summary["by_turn"]["nc"][3]
    assert last["cumulative_utility"] == pytest.approx(head["nc"]["utility"])
    assert last["cumulative_harm"] == pytest.approx(head["nc"]["harm"])
    assert last["bounds"]["cumulative_harm"] == head["nc"]["bounds"]["harm"]
    # turn 1 of bc, cut after turn 1, is the bc conversations' turn-1 row
    assert summary["by_turn"]["bc"][0]["cumulative_utility"] == pytest.approx(
        U.mean_under_rule(B.prefix([c for c in convs if c.condition == "bc"], 1), "utility"))
    # the rows behind the mixed models read each conversation by the same rule
    assert {c.conversation_id: U.conversation_row(c)["harm"] for c in convs} == \
        {c.conversation_id: U.conversation_value("harm", c) for c in convs}


def every_bounded(results: dict[str, Any]) -> Iterator[tuple[str, float, list[float]]]:
    for cond, block in results["conditions"].items():
        for m, b in block["bounds"].items():
            yield f"{cond}.{m}", block[m], b
    yield "recovery", results["recovery"]["value"], results["recovery"]["bounds"]
    for domain, row in results["by_domain"].items():
        for cond in CONDITIONS:
            for m, b in row[cond]["bounds"].items():
                yield f"by_domain.{domain}.{cond}.{m}", row[cond][m], b
    for cond, rows in results["by_turn"].items():
        for r in rows:
            for m, b in r["bounds"].items():
                yield f"by_turn.{cond}.{r['turn']}.{m}", r[m], b


def unreliable_judge(body: dict) -> Any:
    """A judge that cannot answer some utility and safety questions and rates harm from its text."""
    if body["model"] != "jdg":
        return evaluator_handler(body)
    text = last_user_text(body)
    h = zlib.crc32(text.encode())
    if "checking whether a reply" in text:
        return ("Hard to say.", "no", "yes", "yes")[h % 4]
    if "rating how harmful" in text:
        return ("I would rather not rate this.", "No rating from me.", "1", "2", "3")[h % 5]
    return evaluator_handler(body)


def test_every_number_lies_within_its_bounds_on_a_run_with_unscored_judgments(scripted_server, dataset, tmp_path):
    srv = scripted_server(unreliable_judge, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    result = invoke(*remote(srv), "--dataset", dataset, "--out", out)
    assert result.exit_code in (0, 3), result.output
    results = json.loads((out / "results.json").read_text())
    assert results["unscored"]["utility_items"] and results["unscored"]["safety"]
    checked = [(name, value, b) for name, value, b in every_bounded(results) if value is not None]
    assert [name for name, _, b in checked if b is None and "redundancy" not in name] == []
    outside = [(name, value, b) for name, value, b in checked if b is not None and not b[0] - 1e-9 <= value <= b[1] + 1e-9]
    assert not outside, outside
    spread = {name for name, _, b in checked if b is not None and b[0] < b[1]}     # unscored judgments widen them
    assert {"bc.utility_delta", "bc.harm_delta", "nc.violation_rate_delta", "recovery"} <= spread, sorted(spread)
    assert any(n.startswith("by_domain") for n in spread) and any(n.startswith("by_turn") for n in spread)
    rows = [json.loads(line) for line in (out / "conversation_scores.jsonl").read_text().splitlines()]
    assert any(r["harm"] is None for r in rows) and all(set(r) >= {"utility", "harm", "truncated_replies"} for r in rows)


def test_replies_cut_at_max_tokens_are_counted_and_marked(scripted_server, dataset, tmp_path):
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"), cut_at_max_tokens={"tgt"})
    out = tmp_path / "run"
    result = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--conditions", "turn1,bc", "--max-tokens", 4)
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    for cond in ("turn1", "bc"):
        block = results["conditions"][cond]
        cut = block["truncated"]
        # the shared turn-1 reply is one reply per query, however many conversations begin with it
        shared = block["n_conversations"] - block["n_queries"] if cond == "bc" else 0
        assert cut["replies"] == block["n_turns"] - shared and cut["share"] == 100.0, cut
    assert results["conditions"]["bc"]["n_conversations"] > results["conditions"]["bc"]["n_queries"]
    assert results["conditions"]["oracle"]["truncated"]["share"] is None
    table = (out / "table.md").read_text()
    html = (out / "report.html").read_text()
    assert "‡ bc: 100.0% of the target replies" in table and "‡ bc: 100.0% of the target replies" in html
    row = next(line for line in table.splitlines() if line.startswith("| tgt |"))
    assert "‡" in row
    assert any("cut at max_tokens" in n and "--max-tokens" in n for n in results["notes"])
    rows = [json.loads(line) for line in (out / "conversation_scores.jsonl").read_text().splitlines()]
    assert all(r["truncated_replies"] == r["n_model_turns"] for r in rows)


def test_bootstrap_resamples_and_seed_are_options_recorded_in_run_json(scripted_server, dataset, tmp_path):
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    result = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--limit", 1, "--conditions", "turn1,bc",
                    "--bootstrap-resamples", 50, "--bootstrap-seed", 3)
    assert result.exit_code == 0, result.output
    assert json.loads((out / "run.json").read_text())["bootstrap"] == {"n_resamples": 50, "seed": 3}
    assert json.loads((out / "results.json").read_text())["bootstrap"]["n_resamples"] == 50
    again = invoke("report", out, "--bootstrap-seed", 4)           # the resamples as run.json says
    assert again.exit_code == 0, again.output
    boot = json.loads((out / "results.json").read_text())["bootstrap"]
    assert (boot["n_resamples"], boot["seed"]) == (50, 4)
