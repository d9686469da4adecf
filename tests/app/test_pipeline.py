"""Scheduling of a run: a conversation starts on its own query's turn-1 reply; the judge works while the
rollout goes on; longest conversations first. Ordering is observed through a scripted server's requests,
never through time."""
from __future__ import annotations

import asyncio
from typing import Any

from click.testing import CliRunner
from support.rollout_data import QUERIES, evaluator_handler
from support.scripted_server import last_user_text

from carryon_eval.cli import cli
from carryon_eval.rollout.play import longest_first
from carryon_eval.suite import Job

PATIENCE = 30.0     # seconds a held request waits for what should release it; only a bug waits that long


class Gate:
    """A handler that holds the requests matching `held` until one matching `release` has arrived; a held
    request that was never released (the bug) is noted in `.stuck` and then answered anyway."""

    def __init__(self, held: Any, release: Any) -> None:
        self.held, self.release = held, release
        self.event: asyncio.Event | None = None
        self.stuck: list[str] = []

    async def __call__(self, body: dict) -> Any:
        self.event = self.event or asyncio.Event()
        if self.release(body):
            self.event.set()
        elif self.held(body):
            try:
                await asyncio.wait_for(self.event.wait(), PATIENCE)
            except asyncio.TimeoutError:
                self.stuck.append(last_user_text(body)[:60])
        return evaluator_handler(body)


def run(srv: Any, out: Any, *extra: Any) -> Any:
    args = ["--endpoint", srv.base_url, "--model", "tgt", "--user-model", "sim", "--judge-model", "jdg", *extra,
            "--out", out]
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_a_conversation_starts_on_its_own_querys_turn1_reply(scripted_server, dataset, tmp_path):
    q1, q2 = QUERIES[0]["query"], QUERIES[1]["query"]
    # q2's turn-1 reply is held until the simulator writes a turn of one of q1's conversations: that
    # happens only if q1's conversations start without waiting for q2's turn-1 reply.
    gate = Gate(held=lambda b: b["model"] == "tgt" and len(b["messages"]) == 1 and last_user_text(b) == q2,
                release=lambda b: b["model"] == "sim" and q1 in last_user_text(b))
    srv = scripted_server(gate, models=("tgt", "sim", "jdg"))
    result = run(srv, tmp_path / "run", "--dataset", dataset)
    assert result.exit_code == 0, result.output
    assert gate.stuck == []


def test_the_judge_works_while_the_rollout_goes_on(scripted_server, dataset, tmp_path):
    # Every simulator turn is held until a judge request has arrived: only a judge that starts on the
    # finished turn1 conversations, before the rollout is over, lets them through.
    gate = Gate(held=lambda b: b["model"] == "sim", release=lambda b: b["model"] == "jdg")
    srv = scripted_server(gate, models=("tgt", "sim", "jdg"))
    result = run(srv, tmp_path / "run", "--dataset", dataset, "--concurrency", 2)
    assert result.exit_code == 0, result.output
    assert gate.stuck == []
    assert (tmp_path / "run" / "results.json").is_file()


def test_pipelined_run_judges_what_a_sequential_run_judges(scripted_server, dataset, tmp_path):
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    assert run(srv, tmp_path / "a", "--dataset", dataset, "--concurrency", 1).exit_code == 0
    judged_a = srv.count(lambda b: b["model"] == "jdg")
    srv.reset()
    assert run(srv, tmp_path / "b", "--dataset", dataset, "--concurrency", 8).exit_code == 0
    assert srv.count(lambda b: b["model"] == "jdg") == judged_a     # each distinct question asked once
    for name in ("utility_judgments.jsonl", "safety_judgments.jsonl"):
        a = sorted((tmp_path / "a" / name).read_text().splitlines())
        b = sorted((tmp_path / "b" / name).read_text().splitlines())
        assert a == b


def test_longest_conversations_first():
    jobs = [Job("a", "q", "bc", flow_id="F", moves=("m",)), Job("b", "q", "oracle"),
            Job("c", "q", "nc", flow_id="F", moves=("m", "m", "m")), Job("d", "q", "bc", flow_id="F", moves=("m", "m", "m"))]
    assert [j.conversation_id for j in longest_first(jobs)] == ["c", "d", "a", "b"]


def test_judging_as_conversations_finish_writes_the_files_a_judge_pass_after_the_rollout_writes(
        scripted_server, dataset, tmp_path):
    """The pipelined run's judgment files, byte for byte and in the same order, are those of `carryon-eval judge`
    run afterwards on the same transcripts (a folder with the same transcripts and run.json, no cache)."""
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    assert run(srv, tmp_path / "a", "--dataset", dataset, "--concurrency", 8).exit_code == 0
    after = tmp_path / "b"
    after.mkdir()
    for name in ("run.json", "transcripts.jsonl"):
        (after / name).write_bytes((tmp_path / "a" / name).read_bytes())
    judged = CliRunner().invoke(cli, ["judge", str(after), "--concurrency", "8"], catch_exceptions=False)
    assert judged.exit_code == 0, judged.output
    files = sorted(p.name for p in (tmp_path / "a").glob("*_judgments.jsonl"))
    assert files == sorted(p.name for p in after.glob("*_judgments.jsonl"))
    assert {"utility_judgments.jsonl", "safety_judgments.jsonl"} <= set(files)
    for name in files:
        pipelined = (tmp_path / "a" / name).read_bytes()
        assert pipelined and pipelined == (after / name).read_bytes()
