"""A run whose endpoints are gone stops: one line naming the role and its endpoint, everything done so far
written (results.json and the report marked incomplete), a non-zero exit, and the same command resumes to the
numbers of a run that was never interrupted. A hung pool member is taken out after one timeout."""
from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from carryon_eval.model.client import Endpoint, EndpointConfig
from carryon_eval.model.pool import EndpointPool
from support.eval_cli import invoke
from support.rollout_data import evaluator_handler, make_dataset
from support.scripted_server import Fault, ScriptedServer

from carryon_eval.cli import INCOMPLETE

GIVE_UP = "3"


def numbers(run: Path) -> dict[str, Any]:
    """results.json without what differs between two folders of the same run (paths, time)."""
    results = json.loads((run / "results.json").read_text())
    for key in ("generated", "run"):
        results.pop(key, None)
    return results


def args(tgt: ScriptedServer, jdg: ScriptedServer, data: Path, out: Path, *extra: Any) -> list[Any]:
    return ["--endpoint", tgt.base_url, "--model", "tgt", "--user-endpoint", tgt.base_url, "--user-model", "sim",
            "--judge-endpoint", jdg.base_url, "--judge-model", "jdg", "--dataset", data, "--out", out,
            "--conditions", "turn1,bc,nc", "--concurrency", "2", "--give-up-after", GIVE_UP, *extra]


class Killable:
    """A judge that dies (its server stops: connections refused) after answering `after` requests."""

    def __init__(self, after: int) -> None:
        self.after, self.n, self.lock = after, 0, threading.Lock()
        self.server: ScriptedServer | None = None

    def __call__(self, body: dict) -> Any:
        with self.lock:
            self.n += 1
            if self.n == self.after:
                threading.Thread(target=self.server.stop, daemon=True).start()   # killed mid-run
        return evaluator_handler(body)


def test_a_killed_judge_ends_the_run_non_zero_and_the_rerun_gives_the_uninterrupted_results(tmp_path):
    data = make_dataset(tmp_path / "data")
    with ScriptedServer(evaluator_handler, models=("tgt", "sim")) as tgt:
        with ScriptedServer(evaluator_handler, models=("jdg",)) as jdg:
            started = time.monotonic()
            assert invoke(*args(tgt, jdg, data, tmp_path / "whole")).exit_code == 0
            whole = time.monotonic() - started
        killable = Killable(after=12)
        jdg = ScriptedServer(killable, models=("jdg",))
        killable.server = jdg.start()
        port, out = jdg.port, tmp_path / "run"
        started = time.monotonic()
        result = invoke(*args(tgt, jdg, data, out))
        took = time.monotonic() - started
        jdg.stop()
        assert result.exit_code == INCOMPLETE, result.output
        # seconds after the judge died, not its retries' hours (the margin is wide: a loaded machine is slow)
        assert took < whole + 120, (took, whole)
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith(f"carryon-eval: the judge endpoint {jdg.base_url} (model 'jdg') has not answered "
                               f"for {GIVE_UP}s"), last
        assert last.endswith("rerun the same command to resume") and "Traceback" not in result.output
        incomplete = json.loads((out / "results.json").read_text())
        assert incomplete["judges"]["complete"] is False
        assert any(n.startswith("INCOMPLETE:") for n in incomplete["notes"])
        assert "INCOMPLETE:" in (out / "report.html").read_text()
        assert json.loads((out / "judge.json").read_text())["complete"] is False

        with ScriptedServer(evaluator_handler, models=("jdg",), port=port) as back:     # the judge is back
            again = invoke(*args(tgt, back, data, out))
            assert again.exit_code == 0, again.output
        assert numbers(out) == numbers(tmp_path / "whole")
        for name in ("transcripts.jsonl", "utility_judgments.jsonl", "safety_judgments.jsonl"):
            assert sorted((out / name).read_text().splitlines()) == \
                sorted((tmp_path / "whole" / name).read_text().splitlines()), name


def test_a_judge_that_hangs_ends_the_judge_command_non_zero(tmp_path):
    data = make_dataset(tmp_path / "data")
    with ScriptedServer(evaluator_handler, models=("tgt", "sim", "jdg", "slow")) as srv:
        out = tmp_path / "run"
        assert invoke(*args(srv, srv, data, out, "--conditions", "turn1")).exit_code == 0
        srv.handler = lambda body: Fault.delay(3600, then="1") if body["model"] == "slow" else evaluator_handler(body)
        started = time.monotonic()
        result = invoke("judge", out, "--judge-endpoint", srv.base_url, "--judge-model", "slow",
                        "--give-up-after", GIVE_UP)
        assert result.exit_code == INCOMPLETE, result.output
        assert time.monotonic() - started < 300         # given up after seconds, not the hour the judge hangs
        assert f"the judge endpoint {srv.base_url} (model 'slow') has not answered for 3s" in result.stderr
        judged = json.loads((out / "judge.json").read_text())["judges"]["slow"]
        assert judged["complete"] is False and judged["safety"]["missing"] == 3


def test_report_of_a_run_with_judgments_missing_exits_non_zero(tmp_path):
    data = make_dataset(tmp_path / "data")
    with ScriptedServer(evaluator_handler, models=("tgt", "sim", "jdg")) as srv:
        out = tmp_path / "run"
        assert invoke(*args(srv, srv, data, out, "--conditions", "turn1")).exit_code == 0
        lines = (out / "safety_judgments.jsonl").read_text().splitlines()
        (out / "safety_judgments.jsonl").write_text("\n".join(lines[1:]) + "\n")
        result = invoke("report", out)
        assert result.exit_code == INCOMPLETE, result.output
        assert "1 judgment(s) missing" in result.stderr
        assert json.loads((out / "results.json").read_text())["judges"]["complete"] is False


@pytest.mark.parametrize("hung_first", [True, False])
def test_a_hung_pool_member_is_taken_out_after_one_timeout(hung_first):
    hang = lambda body: Fault.delay(3600, then="1")                          # noqa: E731 - SIGSTOPped
    with ScriptedServer(lambda body: "fine", models=("m",)) as good, ScriptedServer(hang, models=("m",)) as hung:
        servers = [hung, good] if hung_first else [good, hung]
        # as the session makes a pool: members do not retry themselves, the pool does
        pool = EndpointPool([Endpoint(EndpointConfig(base_url=s.base_url, model="m", timeout=1, max_retries=0))
                             for s in servers], rounds=3)

        async def ask_four() -> list[str]:
            try:
                return [(await pool.chat([{"role": "user", "content": f"q{i}"}], stage="t", temperature=0.0,
                                         max_tokens=8, seed=None, response_format=None, top_logprobs=None)).text
                        for i in range(4)]
            finally:
                await pool.aclose()

        assert asyncio.run(ask_four()) == ["fine"] * 4
        assert hung.count() <= 1          # asked once at most (one timeout), not once per call: counted, not timed
        assert good.count() == 4


@pytest.mark.parametrize("role", ["target", "user"])
def test_a_dead_target_or_user_simulator_ends_with_exit_4_and_incomplete_results(tmp_path, role):
    """Connection refused mid-run on the target's (or the user simulator's) own server: exit 4, one line naming
    the role, and results.json, table.md and report.html of what was done, each saying INCOMPLETE."""
    data = make_dataset(tmp_path / "data")
    killable = Killable(after=1)
    dying = ScriptedServer(killable, models=("tgt", "sim"))
    killable.server = dying.start()
    with ScriptedServer(evaluator_handler, models=("tgt", "sim", "jdg")) as alive:
        tgt, usr = (dying, alive) if role == "target" else (alive, dying)
        out = tmp_path / "run"
        result = invoke("--endpoint", tgt.base_url, "--model", "tgt", "--user-endpoint", usr.base_url,
                        "--user-model", "sim", "--judge-endpoint", alive.base_url, "--judge-model", "jdg",
                        "--dataset", data, "--out", out, "--conditions", "turn1,bc,nc", "--concurrency", "1",
                        "--give-up-after", "600")    # the calls' own retries run out first
    dying.stop()
    assert result.exit_code == INCOMPLETE, result.output
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"carryon-eval: the {role} endpoint {dying.base_url} (model "), last
    assert last.endswith("rerun the same command to resume") and "Traceback" not in result.output
    results = json.loads((out / "results.json").read_text())
    assert any(n.startswith("INCOMPLETE:") for n in results["notes"]), results["notes"]
    why = last.removeprefix("carryon-eval: ").removesuffix("; rerun the same command to resume")
    assert results["notes"][0].startswith(f"STOPPED: {why}"), results["notes"]      # why it stopped, kept
    assert "INCOMPLETE" in (out / "table.md").read_text()
    assert "INCOMPLETE:" in (out / "report.html").read_text()


def test_a_hung_pool_member_is_failed_over_within_seconds_without_changing_results(tmp_path):
    """A target pool of a member that accepts and never answers (as if SIGSTOPped) and a healthy one: the run ends
    well inside the 120 s request timeout (hedging after HEDGE_AFTER s) with the healthy member's results."""
    data = make_dataset(tmp_path / "data")
    hang = lambda body: Fault.delay(3600, then="1")                          # noqa: E731 - never answers
    with ScriptedServer(evaluator_handler, models=("tgt", "sim", "jdg")) as good, \
            ScriptedServer(hang, models=("tgt",)) as hung:
        started = time.monotonic()
        assert invoke(*args(good, good, data, tmp_path / "alone", "--give-up-after", "600")).exit_code == 0
        alone = time.monotonic() - started
        started = time.monotonic()
        result = invoke("--endpoint", hung.base_url, *args(good, good, data, tmp_path / "pool",
                                                           "--give-up-after", "600"))
        took = time.monotonic() - started
        assert result.exit_code == 0, result.output
        assert 1 <= hung.count() <= 2                    # asked, then taken out once another member answered
    # hedged, not waited out: a run that waited for the 120 s request timeout would take at least 120 s longer than
    # the run alone; the margin is wide so that a loaded machine's slower second run cannot fail it
    assert took < alone + 60, (took, alone)
    assert numbers(tmp_path / "pool")["conditions"] == numbers(tmp_path / "alone")["conditions"]
    for name in ("transcripts.jsonl", "utility_judgments.jsonl", "safety_judgments.jsonl"):
        assert sorted((tmp_path / "pool" / name).read_text().splitlines()) == \
            sorted((tmp_path / "alone" / name).read_text().splitlines()), name


def test_a_slow_answer_is_taken_when_no_other_pool_member_answers(monkeypatch):
    import carryon_eval.model.pool as pool_module
    monkeypatch.setattr(pool_module, "HEDGE_AFTER", 0.3)
    with ScriptedServer(lambda body: Fault.delay(1.5, then="late"), models=("m",)) as slow, \
            ScriptedServer(lambda body: "never", models=("m",)) as gone:
        gone.stop()                                                           # connection refused
        pool = EndpointPool([Endpoint(EndpointConfig(base_url=s.base_url, model="m", timeout=30, max_retries=0))
                             for s in (slow, gone)], rounds=1)

        async def ask() -> str:
            try:
                return (await pool.chat([{"role": "user", "content": "q"}], stage="t", temperature=0.0,
                                        max_tokens=8, seed=None, response_format=None, top_logprobs=None)).text
            finally:
                await pool.aclose()

        assert asyncio.run(ask()) == "late"
        assert slow.count() == 1


def test_a_role_waiting_behind_another_on_the_same_server_is_not_given_up():
    """One busy server (the embedded model) answers the roles in turn: the target's call waits longer than the
    give-up time while the judge's calls are answered, so the server is there and the target waits on; a role
    alone on a silent server is given up as before."""
    from carryon_eval.model.pool import EndpointGone, Heard, RoleWatch

    def handler(body: dict) -> Any:
        return Fault.delay(2.5, then="late") if body["model"] == "tgt" else "judged"

    with ScriptedServer(handler, models=("tgt", "jdg")) as srv:
        def watch(model: str, heard: Heard) -> RoleWatch:
            return RoleWatch(Endpoint(EndpointConfig(base_url=srv.base_url, model=model, timeout=30, max_retries=0)),
                             model, give_up_after=1.0, heard=heard)

        async def ask(ep: RoleWatch, text: str) -> str:
            return (await ep.chat([{"role": "user", "content": text}], stage="t", temperature=0.0, max_tokens=8,
                                  seed=None, response_format=None, top_logprobs=None)).text

        async def shared() -> list[str]:
            heard = Heard()
            tgt, jdg = watch("tgt", heard), watch("jdg", heard)
            try:
                async def judge_every_half_second() -> list[str]:
                    out = []
                    for i in range(6):
                        out.append(await ask(jdg, f"j{i}"))
                        await asyncio.sleep(0.5)
                    return out
                late, judged = await asyncio.gather(ask(tgt, "t"), judge_every_half_second())
                return [late, *judged]
            finally:
                await tgt.aclose()
                await jdg.aclose()

        async def alone() -> None:
            tgt = watch("tgt", Heard())
            try:
                await ask(tgt, "t2")
            finally:
                await tgt.aclose()

        assert asyncio.run(shared()) == ["late"] + ["judged"] * 6
        with pytest.raises(EndpointGone, match="the tgt endpoint .* has not answered for 1s"):
            asyncio.run(alone())
