"""Rollout and user simulator against a real (scripted) OpenAI-compatible server.

The dataset is a tiny folder (tests/support/rollout_data.py) with exactly the minimum columns of schema.TABLE_COLUMNS;
all its text is made up for these tests.
"""
from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Sequence

import pytest
from support.rollout_data import (CONVERSATIONS, FLOWS, INTENT_A, MARKER, QUERIES, make_dataset,
                                  rollout_handler as handler, write_jsonl as _write_jsonl)
from support.scripted_server import Fault, last_user_text

from carryon_eval.model.cache import ResponseCache
from carryon_eval.model.client import Endpoint, EndpointConfig, EndpointError, UsageLedger
from carryon_eval.dataset.load import load_benchmark
from carryon_eval.moves import BC_MOVES, MOVES
from carryon_eval.prompts import load_prompt
from carryon_eval.rollout.play import Generation, rollout, turn_seed
from carryon_eval.suite import PlanSettings, plan_jobs
from carryon_eval.run.folder import RunFolder
from carryon_eval.schema import Message
from carryon_eval.suites.carryonbench.conditions import CONDITIONS
from carryon_eval.rollout.simulator import UserSimulator, clean_turn

def do_rollout(srv: Any, rundir: Path, data: Path, *, conditions: Sequence[str] = CONDITIONS,
               shared: bool = True, concurrency: int = 4, max_retries: int = 0):
    bench = load_benchmark(data)
    run = RunFolder(rundir)
    run.prepare()
    cache, usage = ResponseCache(run.cache_dir), UsageLedger()
    target = Endpoint(EndpointConfig(srv.base_url, "tgt", max_retries=max_retries, backoff_base=0.01),
                      cache=cache, usage=usage)
    user = Endpoint(EndpointConfig(srv.base_url, "sim", max_retries=max_retries, backoff_base=0.01),
                    cache=cache, usage=usage)

    async def go():
        try:
            jobs, _ = plan_jobs(bench, conditions, PlanSettings(shared_turn1=shared))
            return await rollout(jobs, bench, run, target, UserSimulator(user), gen=Generation(),
                                 concurrency=concurrency, show_progress=False)
        finally:
            await target.aclose()
            await user.aclose()

    return asyncio.run(go()), run, bench


def test_all_conditions_make_transcripts_of_the_right_shape(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim"))
    summary, run, bench = do_rollout(srv, tmp_path / "run", dataset)
    by_id = {t.conversation_id: t for t in run.transcripts()}

    assert set(by_id) == {"turn1:q1", "turn1:q2", "turn1:q3", "oracle:q1", "oracle:q2",
                          "c1", "c2", "c3", "c4", "c5", "c6"}          # c7 (BC, q3 has no intent) skipped
    assert summary.total == summary.finished == 11 and not summary.failed
    _, skipped = plan_jobs(bench, CONDITIONS)
    assert {s.conversation_id for s in skipped} == {"oracle:q3", "c7"}
    assert all("benign_intent" in s.reason for s in skipped)

    for cid in ("turn1:q1", "oracle:q2"):
        t = by_id[cid]
        assert [m.role for m in t.messages] == ["user", "assistant"] and t.flow_id is None and t.moves == []
    assert by_id["turn1:q1"].condition == "turn1" and by_id["oracle:q1"].condition == "oracle"
    assert by_id["turn1:q1"].messages[0].content == QUERIES[0]["query"]
    oracle_open = by_id["oracle:q1"].messages[0].content
    assert QUERIES[0]["query"] in oracle_open and INTENT_A in oracle_open
    assert by_id["oracle:q1"].meta["prompt"] == load_prompt("target/oracle").ref

    for cid, qid, fid in CONVERSATIONS[:6]:
        t, moves = by_id[cid], FLOWS[fid]
        assert t.condition == ("bc" if any(m in BC_MOVES for m in moves) else "nc")
        assert t.flow_id == fid and t.moves == moves and t.query_id == qid
        assert len(t.messages) == 2 * (1 + len(moves))                  # the flow's n_turns
        assert len(t.replies) == 1 + len(moves)                          # 4 turns -> 2 replies, 12 -> 6
        assert [m.turn for m in t.replies] == list(range(1, 2 + len(moves)))
        assert [m.role for m in t.messages] == ["user", "assistant"] * (1 + len(moves))
        users = [m for m in t.messages if m.role == "user"]
        assert users[0].move is None and [u.move for u in users[1:]] == moves
        for u in users[1:]:
            assert u.model == "sim" and u.prompt_version == load_prompt(f"user_simulator/{u.move}").ref
            assert u.content.startswith("Well,") and not u.content.endswith('"')   # label and quotes stripped
        assert all(m.model == "tgt" for m in t.replies)
        assert t.shared_turn1 and t.replies[0].content == by_id[f"turn1:{qid}"].replies[0].content

    # Shared turn 1: one target call per query for turn 1, then one per oracle prompt and per follow-up move.
    follow_ups = sum(len(FLOWS[f]) for _, _, f in CONVERSATIONS[:6])
    assert srv.count(lambda b: b["model"] == "tgt") == 3 + 2 + follow_ups
    assert srv.count(lambda b: b["model"] == "sim") == follow_ups


def test_no_shared_turn1_generates_each_first_reply(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim"))
    summary, run, _ = do_rollout(srv, tmp_path / "run", dataset, conditions=["bc"], shared=False)
    assert {t.conversation_id for t in run.transcripts()} == {"c1", "c2", "c5"}
    assert not any(t.shared_turn1 for t in run.transcripts())
    first_calls = [b for b in srv.requests if b["model"] == "tgt" and len(b["messages"]) == 1]
    assert len(first_calls) == 3 and len({b["seed"] for b in first_calls}) == 3


def test_nc_conversations_never_see_the_benign_intent(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim"))
    do_rollout(srv, tmp_path / "run", dataset, conditions=["nc"])
    sim_prompts = [last_user_text(b) for b in srv.requests if b["model"] == "sim"]
    assert len(sim_prompts) == sum(len(FLOWS[f]) for c, _, f in CONVERSATIONS if c in ("c3", "c4", "c6"))
    for body in srv.requests:
        text = json.dumps(body["messages"]).lower()
        assert MARKER not in text
        for phrase in ("pinball machines", "volunteer arcade", "mystery novel", "detective"):
            assert phrase not in text


@pytest.mark.parametrize("move", MOVES)
def test_only_bc_move_prompts_can_hold_the_intent(move):
    sim = UserSimulator(endpoint=None)
    history = [Message("user", "How do I open a pinball coin door without the key?", 1),
               Message("assistant", "I can't help with that.", 1, model="tgt")]
    prompt = sim.prompt(move, query=history[0].content, history=history, benign_intent=INTENT_A)
    template = load_prompt(f"user_simulator/{move}").body
    assert (INTENT_A in prompt) == (move in BC_MOVES)
    assert ("$benign_intent" in template) == (move in BC_MOVES)
    assert load_prompt("user_simulator/shared_requirements").body.strip() in prompt


def test_bc_turns_reveal_the_intent_to_the_target(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim"))
    _, run, _ = do_rollout(srv, tmp_path / "run", dataset, conditions=["bc"])
    c1 = {t.conversation_id: t for t in run.transcripts()}["c1"]
    assert "zqx-marker-alpha" in c1.messages[2].content          # the benign_justification turn


def test_empty_simulator_turn_is_retried_then_recorded_as_failed(scripted_server, dataset, tmp_path):
    def empty_on_backchannel(body):
        if body["model"] == "sim" and "brief, neutral acknowledgment" in last_user_text(body):
            return Fault.empty("")
        return handler(body)

    srv = scripted_server(empty_on_backchannel, models=("tgt", "sim"))
    summary, run, _ = do_rollout(srv, tmp_path / "run", dataset, conditions=["nc"])
    # every NC flow here has a backchannel move: all three conversations fail, none is written blank
    assert run.transcripts() == []
    assert set(summary.failed) == set(run.failures()) == {"c3", "c4", "c6"}
    assert all("empty backchannel turn" in r for r in run.failures().values())
    seeds = [b["seed"] for b in srv.requests
             if b["model"] == "sim" and "brief, neutral acknowledgment" in last_user_text(b)]
    assert len(seeds) == 3 * 3                         # three tries in each of the three conversations
    base = turn_seed(0, "c3", 3, "user")
    assert {base, base + 1, base + 2} <= set(seeds)


def test_empty_target_reply_is_asked_again_then_kept_and_counted(scripted_server, dataset, tmp_path):
    calls: dict[str, int] = {}

    def flaky_target(body):
        if body["model"] == "tgt" and len(body["messages"]) == 1:     # turn-1 requests
            key = body["messages"][0]["content"]
            calls[key] = calls.get(key, 0) + 1
            if "pinball" in key or calls[key] == 1:   # q1 stays empty; the others recover on the 2nd ask
                return Fault.empty("")
        return handler(body)

    srv = scripted_server(flaky_target, models=("tgt", "sim"))
    _, run, bench = do_rollout(srv, tmp_path / "run", dataset, conditions=["turn1"])
    by_query = {t.query_id: t for t in run.transcripts()}
    texts = {qid: t.replies[0].content for qid, t in by_query.items()}
    empty = [qid for qid, text in texts.items() if text == ""]
    assert empty == ["q1"]
    assert by_query[empty[0]].meta["finish_reasons"] == ["empty"]
    assert sorted(calls.values()) == [2, 2, 3]       # recovered on the 2nd ask; empty after 1 + 2 retries
    from carryon_eval.report.results_file import count_empty_replies
    assert count_empty_replies(run.transcripts()) == 1


def test_killed_run_resumes_without_repeating_finished_calls(scripted_server, dataset, tmp_path):
    answered: list[str] = []
    calls = {"n": 0}

    def dies_after_20(body):
        calls["n"] += 1
        if calls["n"] > 20:
            return Fault.status(400, message="server went away")    # not retried: the rollout stops
        answered.append(json.dumps(body, sort_keys=True))
        return handler(body)

    srv = scripted_server(dies_after_20, models=("tgt", "sim"))
    with pytest.raises(EndpointError):
        do_rollout(srv, tmp_path / "run", dataset, concurrency=2)
    run = RunFolder(tmp_path / "run")
    first = run.finished_ids()
    assert 0 < len(first) < 11

    srv.handler = handler
    srv.reset()
    summary, run, _ = do_rollout(srv, tmp_path / "run", dataset, concurrency=2)
    assert summary.finished == 11 and summary.new == 11 - len(first)
    # No call of a finished conversation is made again (calls are told apart by their per-turn seeds).
    finished_seeds = {turn_seed(0, cid, turn, role) + k for cid in first for turn in range(1, 7)
                      for role, k in (("target", 0), ("user", 0), ("user", 1), ("user", 2))}
    assert not {b["seed"] for b in srv.requests} & finished_seeds
    # Of the unfinished ones, only a call whose answer was cut off by the stop (at most one per
    # conversation in flight) is asked again: the cache has every other one.
    again = [json.dumps(b, sort_keys=True) for b in srv.requests]
    assert len(set(again) & set(answered)) <= 2
    ids = [t.conversation_id for t in run.transcripts()]
    assert len(ids) == len(set(ids)) == 11

    srv.reset()
    summary, _, _ = do_rollout(srv, tmp_path / "run", dataset)      # all done: no call at all
    assert srv.count() == 0 and summary.new == 0


def test_torn_last_line_is_ignored_and_repaired(tmp_path):
    run = RunFolder(tmp_path / "run")
    run.prepare()
    run.transcripts_file.write_text('{"conversation_id": "a", "query_id": "q", "condition": "turn1", "flow_id": null, '
                                    '"moves": [], "messages": [{"role": "user", "content": "x", "turn": 1}], '
                                    '"target_model": "m"}\n{"conversation_id": "b", "qu')
    assert run.finished_ids() == {"a"}
    run.prepare()
    assert run.transcripts_file.read_text().endswith("}\n")
    assert run.finished_ids() == {"a"}


def test_read_jsonl_names_corrupt_lines_and_skips_a_torn_tail(tmp_path):
    from carryon_eval.run.folder import RunFileError, read_jsonl

    path = tmp_path / "f.jsonl"
    path.write_text('{"n": 1}\n{"n": 2, "bro\n\n[3]\n{"n": 4}\n{"n": 5}')   # corrupt, empty, not an object, torn
    with pytest.raises(RunFileError, match=f"{path} line 2: not a JSON line"):
        list(read_jsonl(path))
    bad: list[str] = []
    assert [d["n"] for d in read_jsonl(path, on_bad=lambda e: bad.append(str(e)))] == [1, 4]
    assert [b.split(";")[0] for b in bad] == [f"{path} line 2: not a JSON line", f"{path} line 4: not a JSON object"]
    assert list(read_jsonl(tmp_path / "missing.jsonl")) == []


@pytest.mark.parametrize("raw, clean", [
    ('"Why not, though?"', "Why not, though?"),
    ("User: Hmm, let me think.", "Hmm, let me think."),
    ("**User:** \u201cOkay, I see.\u201d", "Okay, I see."),
    ("<think>plan</think>\nI see.\nAssistant: Great!", "I see."),
    ("   ", ""),
    (None, ""),
])
def test_clean_turn(raw, clean):
    assert clean_turn(raw) == clean


def test_a_flow_whose_condition_contradicts_its_moves_is_refused(tmp_path):
    from carryon_eval.dataset.load import DatasetError

    data = make_dataset(tmp_path / "data")
    rows = [json.loads(line) for line in (data / "flows.jsonl").read_text().splitlines()]
    rows[0]["condition"] = "NC"                      # F1-bj is a benign justification: BC
    _write_jsonl(data / "flows.jsonl", rows)
    with pytest.raises(DatasetError, match="F1-bj has condition 'NC'"):
        plan_jobs(load_benchmark(data), CONDITIONS)
