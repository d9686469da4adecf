"""The side calls (carryon_eval.judge.side_calls): the fidelity check, OpenSafeIntent's intent probe and the triplets'
go through one runner, against the scripted server (real HTTP).

- the runner: at most ``concurrency`` calls in flight; one record per call, the key's fields first; its resume rule
  (an answer that reads is kept; a failed call or an answer that does not read is asked again; another model's
  records and another prompt's are not this pass's answers);
- each of the three probes, its run SIGKILLed in the middle of its calls and the run folder's response cache
  deleted: the same command again asks exactly the calls that have no record, so no answered call is paid twice
  beyond the one in flight at the kill;
- every call is counted under its model's role in run.json's usage (the probe's stage under the target, the
  fidelity check's under the judge), equal to what the server received per model.
OpenSafeIntent's and the triplets' probes need the release copy in ../shared (skipped, saying why)."""
from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import signal
import threading
from pathlib import Path
from typing import Any, Optional

import pytest

from carryon_eval.judge.side_calls import SideCall, SideCalls, read_side_calls, run_side_calls
from carryon_eval.model.client import Endpoint, EndpointConfig
from carryon_eval.progress import role_of
from carryon_eval.run.folder import RunFolder, read_usage
from carryon_eval.suites.carryonbench.metrics.fidelity import FidelityCheck
from support.eval_cli import invoke, remote, spawn, wait_for_lines
from support.rollout_data import evaluator_handler
from support.shared_data import OPENSAFEINTENT as SHIPPED
from support.scripted_server import Fault, by_model, last_user_text, rubric_judges

HAS_RELEASE = (SHIPPED / "dataset.json").is_file()
needs_release = pytest.mark.skipif(not HAS_RELEASE, reason=f"the OpenSafeIntent release copy is not at {SHIPPED}")
CALLS = SideCalls("test_probe", stage="test_probe", role="target", file="test_probe.jsonl",
                  key_fields=("case", "n"))


def reads(raw: Optional[str]) -> Optional[str]:
    return raw if raw and raw.startswith("ok") else None


def call(n: int, text: Optional[str] = None, sha: str = "p1") -> SideCall:
    return SideCall(("c", n), text or f"question {n}", 8, sha, reads)


def ask(srv: Any, run: RunFolder, calls: list[SideCall], model: str = "m", concurrency: int = 4) -> Any:
    async def go() -> Any:
        endpoint = Endpoint(EndpointConfig(srv.base_url, model, max_retries=0))
        try:
            return await run_side_calls(run, CALLS, calls, endpoint, concurrency, show_progress=False)
        finally:
            await endpoint.aclose()
    return asyncio.run(go())


# ---------------------------------------------------------------- the runner
def test_at_most_concurrency_calls_are_in_flight(scripted_server, tmp_path):
    lock, now, most = threading.Lock(), [0], [0]

    async def slow(body: dict) -> str:
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        await asyncio.sleep(0.05)
        with lock:
            now[0] -= 1
        return "ok " + last_user_text(body)

    srv = scripted_server(slow, models=("m",))
    done = ask(srv, RunFolder(tmp_path), [call(n) for n in range(12)], concurrency=3)
    assert srv.count() == 12 and most[0] == 3
    assert done.asked == 12 and [r.key for r in done.records] == [("c", n) for n in range(12)]


def test_one_record_per_call_and_the_resume_rule(scripted_server, tmp_path):
    """A failed call and an answer that does not read are asked again; a read answer is kept; another model's
    records stay as they were, before this model's; a record of another prompt is asked again."""
    answers = {"question 0": "ok zero", "question 1": "no idea", "question 2": Fault.status(500),
               "question 3": "ok three"}
    srv = scripted_server(lambda body: answers[last_user_text(body)], models=("m", "other"))
    run = RunFolder(tmp_path)
    ask(srv, run, [call(0)], model="other")
    first = ask(srv, run, [call(n) for n in range(4)])
    assert (first.kept, first.asked, first.failed) == (0, 4, 1)
    lines = [json.loads(line) for line in (tmp_path / CALLS.file).read_text().splitlines()]
    assert [list(r) for r in lines] == [["case", "n", "raw", "model", "prompt_sha256", "error"]] * 5
    assert [(r["model"], r["n"], r["raw"]) for r in lines] == [
        ("other", 0, "ok zero"), ("m", 0, "ok zero"), ("m", 1, "no idea"), ("m", 2, None), ("m", 3, "ok three")]
    assert lines[3]["error"].startswith("EndpointError: ") and "HTTP 500" in lines[3]["error"]

    srv.reset()
    answers["question 2"] = "ok two"
    again = ask(srv, run, [call(n) for n in range(3)] + [call(3, sha="p2")])
    asked = sorted(last_user_text(b) for b in srv.requests)
    assert asked == ["question 1", "question 2", "question 3"]          # not question 0: it reads
    assert (again.kept, again.asked, again.failed) == (1, 3, 0)
    assert [r.prompt_sha256 for r in read_side_calls(run, CALLS, "m")] == ["p1", "p1", "p1", "p2"]
    assert [r.model for r in read_side_calls(run, CALLS)] == ["other", "m", "m", "m", "m"]


# ---------------------------------------------------------------- the three probes: killed, then resumed
def digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def fidelity_judge(body: dict) -> str:
    """The evaluator's judge, whose move names vary with the text (so the check has something to count)."""
    text = last_user_text(body)
    if "Classify that next message" in text:
        return ("pushback", "delaying", "rephrasing", "backchannel")[digest(text) % 4]
    return evaluator_handler(body)


def is_fidelity(body: dict) -> bool:
    text = last_user_text(body)
    return body["model"] == "jdg" and any(s in text for s in ("Classify that next message", "hidden purpose",
                                                                   "the user was meant to state this purpose"))


def release_handler(probe_delay: float = 0.0) -> tuple[Any, Any]:
    """(handler, is_probe): the release's judges answer every prompt harmful (so every dual-use original is
    probed) and the probe's answers all read; the evaluator's target, user simulator and judge (fidelity_judge)
    answer everything else."""
    from carryon_eval.suites.opensafeintent.release import load_release
    t = load_release(SHIPPED).templates
    answers = {"helpfulness": lambda text: "3", "harmfulness": lambda text: "1",
               "assistance_level": lambda text: json.dumps({"a_level": "A2"}),
               "intent_classification": lambda text: (
                   Fault.delay(probe_delay, then=json.dumps({"strategy": ("FULL", "REFUSE")[digest(text) % 2]})))}
    probe_prefix = t["intent_classification"][:40]
    handler = by_model({
        "tgt": rubric_judges({"intent_classification": t["intent_classification"]}, answers, evaluator_handler),
        "sim": evaluator_handler,
        "jdg": rubric_judges({k: t[k] for k in ("helpfulness", "harmfulness", "assistance_level")}, answers,
                             fidelity_judge)})
    return handler, lambda body: body["model"] == "tgt" and last_user_text(body).startswith(probe_prefix)


def scenario(name: str, srv_url: str, out: Path) -> list[Any]:
    if name == "fidelity":
        return ["--endpoint", srv_url, "--model", "tgt", "--user-endpoint", srv_url, "--user-model", "sim",
                "--judge-endpoint", srv_url, "--judge-model", "jdg", "--limit", 2, "--conditions", "bc,nc",
                "--fidelity", "--concurrency", 1, "--out", out]
    condition = {"intent_probe": "opensafeintent", "triplet_probe": "triplet"}[name]
    return ["--conditions", condition, "--opensafeintent", SHIPPED, "--limit", 4, "--endpoint", srv_url, "--model",
            "tgt", "--judge-endpoint", srv_url, "--judge-model", "jdg", "--concurrency", 1, "--out", out]


PROBES = [("fidelity", "fidelity_calls.jsonl"),
          pytest.param("intent_probe", "opensafeintent_probe.jsonl", marks=needs_release),
          pytest.param("triplet_probe", "triplet_probe.jsonl", marks=needs_release)]


def slow_fidelity_judge(body: dict) -> Any:
    """fidelity_judge, its fidelity answers late (so that a kill lands in the middle of the check)."""
    return Fault.delay(0.3, then=fidelity_judge(body)) if is_fidelity(body) else fidelity_judge(body)


@pytest.mark.parametrize("name, file", PROBES)
def test_a_probe_killed_mid_way_asks_again_only_what_it_has_no_record_of(name, file, scripted_server, tmp_path):
    if name == "fidelity":
        srv = scripted_server(by_model({"tgt": evaluator_handler, "sim": evaluator_handler,
                                        "jdg": slow_fidelity_judge}),
                              models=("tgt", "sim", "jdg"))
        probe = is_fidelity
    else:
        handler, probe = release_handler(probe_delay=0.3)
        srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    proc = spawn(*scenario(name, srv.base_url, out))
    try:
        wait_for_lines(proc, out / file, 2, timeout=240)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    before = srv.count(probe)
    recorded = (out / file).read_text().count("\n")            # complete lines: the calls answered and recorded
    assert recorded >= 2
    shutil.rmtree(out / "cache")            # so that only the records can spare a call
    srv.reset()

    again = invoke(*scenario(name, srv.base_url, out))
    assert again.exit_code == 0, again.output
    records = [json.loads(line) for line in (out / file).read_text().splitlines()]
    assert all(r["error"] is None for r in records) and len(records) > recorded
    assert srv.count(probe) == len(records) - recorded                 # exactly the calls without a record
    assert srv.count(lambda b: not probe(b)) == 0                      # rollout and judges: nothing again either
    assert before + srv.count(probe) - len(records) <= 1               # paid twice: at most the call in flight


# ---------------------------------------------------------------- every call under its real role
@needs_release
def test_every_side_call_is_counted_under_its_models_role(scripted_server, tmp_path):
    handler, probe = release_handler()
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    res = invoke(*remote(srv), "--conditions", "bc,opensafeintent", "--opensafeintent", SHIPPED, "--limit", 2,
                 "--fidelity", "--out", out)
    assert res.exit_code == 0, res.output
    usage = json.loads((out / "run.json").read_text())["usage"]
    assert {role: u["calls"] for role, u in usage.items()} == {
        "target": srv.count(lambda b: b["model"] == "tgt"), "user": srv.count(lambda b: b["model"] == "sim"),
        "judge": srv.count(lambda b: b["model"] == "jdg")}
    by_stage = {key.split("/")[0]: row["calls"] for key, row in read_usage(RunFolder(out)).items()}
    assert by_stage["osi_intent_probe"] == srv.count(probe) > 0 and role_of("osi_intent_probe") == "target"
    assert by_stage["fidelity"] == srv.count(is_fidelity) > 0 and role_of("fidelity") == "judge"


def test_a_failed_fidelity_call_is_counted_then_asked_again(scripted_server, tmp_path):
    """The call's error is recorded and fidelity.json counts it (as unparsed, and in ``failed_calls``); the same
    command asks that call again, and only that one (the response cache deleted: else it might answer, another
    turn's check having sent the same text)."""
    failed: list[str] = []

    def judge(body: dict) -> Any:
        if is_fidelity(body) and "Classify that next message" in last_user_text(body) and not failed:
            failed.append(last_user_text(body))
            return Fault.status(400)
        return fidelity_judge(body)

    srv = scripted_server(by_model({"tgt": evaluator_handler, "sim": evaluator_handler, "jdg": judge}),
                          models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    first = invoke(*scenario("fidelity", srv.base_url, out))
    assert first.exit_code == 0, first.output
    text = (out / "fidelity.json").read_text()
    fidelity = json.loads(text)
    assert fidelity["failed_calls"] == 1 and "1 call(s) failed" in first.output
    assert json.dumps(FidelityCheck.from_json(fidelity).to_json(), indent=2, ensure_ascii=False) + "\n" == text
    assert sum(row["unparsed"] for row in fidelity["confusion"].values()) == 1
    errors = [json.loads(line) for line in (out / "fidelity_calls.jsonl").read_text().splitlines()]
    failed_key, = [(r["conversation_id"], r["turn"], r["check"]) for r in errors if r["error"]]
    assert failed_key[2] == "move"

    srv.reset()
    shutil.rmtree(out / "cache")
    again = invoke("fidelity", out)
    assert again.exit_code == 0, again.output
    assert [last_user_text(b) for b in srv.requests] == failed
    records = [json.loads(line) for line in (out / "fidelity_calls.jsonl").read_text().splitlines()]
    assert len(records) == len(errors) and all(r["error"] is None for r in records)
    fidelity = json.loads((out / "fidelity.json").read_text())
    assert "failed_calls" not in fidelity and sum(row["unparsed"] for row in fidelity["confusion"].values()) == 0
