"""`--subset quick`: every query, one BC and one NC conversation each, stratified over lengths, reproducible."""
from __future__ import annotations

import collections
import hashlib
import json
import random
from typing import Any

from click.testing import CliRunner
from support.rollout_data import evaluator_handler

from carryon_eval.cli import cli
from carryon_eval.dataset.load import Benchmark
from carryon_eval.run.folder import RunFolder
from carryon_eval.dataset.subset import apply_subset

LENGTHS = (4, 6, 8, 10, 12)


def plan_like_carryonbench(n_queries: int) -> Benchmark:
    """Per query and length 2 BC and 1 NC conversations, as the CarryOnBench plan has them."""
    flows, convs = {}, []
    for length in LENGTHS:
        for cond in ("BC", "NC"):
            flows[f"{cond}{length}"] = {"flow_id": f"{cond}{length}", "moves": ["pushback"] * (length // 2 - 1),
                                        "n_turns": length, "condition": cond}
    queries = {f"q{i:03d}": {"query_id": f"q{i:03d}", "query": f"made-up {i}", "benign_intent": "x"}
               for i in range(n_queries)}
    for qid in queries:
        for length in LENGTHS:
            for k, cond in enumerate(("BC", "BC", "NC")):
                convs.append({"conversation_id": f"{qid}-{length}-{k}", "query_id": qid, "flow_id": f"{cond}{length}"})
    return Benchmark(source="inline", revision=None, queries=queries, checklists={}, flows=flows, conversations=convs)


def rank(text: str) -> str:
    return hashlib.sha256(f"quick|{text}".encode()).hexdigest()


def documented_choice(bench: Benchmark) -> set[str]:
    """The module docstring's rule, written out again: rank r gets BC at L[r % 5] and NC at L[(r + 2) % 5],
    the conversation of smallest hash among those."""
    chosen = set()
    for r, qid in enumerate(sorted(bench.queries, key=rank)):
        for cond, length in (("BC", LENGTHS[r % 5]), ("NC", LENGTHS[(r + 2) % 5])):
            ids = [c["conversation_id"] for c in bench.conversations
                   if c["query_id"] == qid and c["flow_id"] == f"{cond}{length}"]
            chosen.add(min(ids, key=rank))
    return chosen


def test_quick_is_the_documented_stratified_draw():
    bench = plan_like_carryonbench(20)
    quick = apply_subset(bench, "quick")
    assert {c["conversation_id"] for c in quick.conversations} == documented_choice(bench)
    assert quick.queries == bench.queries                      # every query stays (turn1, oracle)
    per = collections.Counter((c["query_id"], quick.flows[c["flow_id"]]["condition"]) for c in quick.conversations)
    assert set(per.values()) == {1} and len(per) == 2 * len(bench.queries)
    for cond in ("BC", "NC"):                                  # 20 queries, 5 lengths: each length 4 times
        lengths = collections.Counter(quick.flows[c["flow_id"]]["n_turns"] for c in quick.conversations
                                      if quick.flows[c["flow_id"]]["condition"] == cond)
        assert lengths == {length: 4 for length in LENGTHS}
    assert len(quick.conversations) * 5 <= len(bench.conversations) * 1   # 2 of 15 per query


def test_quick_does_not_depend_on_dataset_order():
    bench = plan_like_carryonbench(12)
    shuffled = list(bench.conversations)
    random.Random(7).shuffle(shuffled)
    other = Benchmark(source="inline", revision=None, queries=dict(reversed(list(bench.queries.items()))),
                      checklists={}, flows=bench.flows, conversations=shuffled)
    ids = {c["conversation_id"] for c in apply_subset(bench, "quick").conversations}
    assert ids == {c["conversation_id"] for c in apply_subset(other, "quick").conversations}
    assert apply_subset(bench, "full") is bench and apply_subset(bench, None) is bench


def test_quick_run_names_its_subset(scripted_server, dataset, tmp_path):
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    args: list[Any] = ["--endpoint", srv.base_url, "--model", "tgt", "--user-model", "sim", "--judge-model", "jdg",
                       "--dataset", dataset, "--out", out, "--subset", "quick"]
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    transcripts = RunFolder(out).transcripts()
    bcnc = collections.Counter((t.query_id, t.condition) for t in transcripts if t.condition in ("bc", "nc"))
    # q3 has no benign intent: its BC conversation is skipped as in a full run
    assert bcnc == {("q1", "bc"): 1, ("q1", "nc"): 1, ("q2", "bc"): 1, ("q2", "nc"): 1, ("q3", "nc"): 1}
    assert json.loads((out / "run.json").read_text())["subset"] == "quick"
    assert json.loads((out / "results.json").read_text())["run"]["subset"] == "quick"
    assert CliRunner().invoke(cli, ["rollout", str(out)], catch_exceptions=False).exit_code == 0
    assert len(RunFolder(out).transcripts()) == len(transcripts)        # the subset is the run's, on resume
