"""A run SIGKILLed just after the server answered a burst of calls pays again on resume at most the calls that
were in flight at the kill (every answered call reached the cache's database before the process could die) and
ends with the results of a run never killed; a run folder whose cache has the per-file layout of earlier versions
resumes without paying again."""
from __future__ import annotations

import json
import logging
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.eval_cli import invoke, remote, slowly, spawn
from support.scripted_server import Fault
from support.rollout_data import evaluator_handler as handler
from support.cache_entries import stored
from support.grouped_judge import consistent_handler

from carryon_eval.model.cache import DATABASE


SETTLE = 0.05      # s: an answer the server sent this shortly before the kill may not be in the client's cache yet


def results_of(run: Path) -> str:
    """results.json but for the moment it was written."""
    return re.sub(r'"at": "[^"]*"', '"at": "<at>"', (run / "results.json").read_text())


def kill_after_burst(proc, srv, burst_answered, wait: float = 0.1) -> tuple[list, list]:
    """SIGKILL ``proc`` ``wait`` seconds after ``burst_answered()`` holds (polled for up to 120 s); returns the
    server's statuses as they were SETTLE seconds before the kill and at the kill."""
    try:
        deadline = time.monotonic() + 120
        while not burst_answered() and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(max(0.0, wait - SETTLE))
        before = srv.statuses
        time.sleep(SETTLE)
        statuses = srv.statuses
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=10)
    return before, statuses


def test_a_sigkill_after_a_burst_costs_at_most_the_calls_in_flight(scripted_server, dataset, tmp_path):
    srv = scripted_server(slowly(handler, 0.05), models=("tgt", "sim", "jdg"))
    clean = invoke(*remote(srv), "--dataset", dataset, "--out", tmp_path / "clean", "--concurrency", 4)
    assert clean.exit_code == 0, clean.output
    needed = srv.count()                          # the calls one uninterrupted run pays
    srv.reset()

    out = tmp_path / "run"
    proc = spawn(*remote(srv), "--dataset", dataset, "--out", out, "--concurrency", 4)
    before, statuses = kill_after_burst(proc, srv, lambda: sum(s == 200 for s in srv.statuses) >= needed // 3)
    answered = sum(s == 200 for s in statuses)
    # in flight at the kill: not answered by then, or answered in its last SETTLE seconds (the answer on its way
    # to the client's cache: one such call failed a CI run)
    in_flight = (sum(s is None for s in srv.statuses[: len(statuses)]) + (len(srv.statuses) - len(statuses))
                 + answered - sum(s == 200 for s in before))
    assert 0 < answered < needed

    srv.reset()
    resumed = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--concurrency", 4)
    assert resumed.exit_code == 0, resumed.output
    paid_twice = answered + srv.count() - needed
    assert paid_twice <= in_flight, (answered, srv.count(), needed, in_flight)
    assert results_of(out) == results_of(tmp_path / "clean")


@pytest.mark.parametrize("share", [0.25, 0.6, 0.97])
def test_a_sigkill_0_1_s_after_an_answered_burst_pays_again_at_most_the_calls_held(scripted_server, dataset,
                                                                                  tmp_path, share):
    """--concurrency 8, 20 ms per answer: the server answers the first calls (a burst), holds every later one, and
    the run is killed 0.1 s after the last answer of the burst. Every answered call is in the cache by then: the
    resume pays again at most the calls held (in flight at the kill), wherever the kill falls (rollout, judge)."""
    gate = {"open": True, "answer": 0}
    lock = threading.Lock()

    def gated(body):
        with lock:
            gate["answer"] -= 1
            held = not gate["open"] and gate["answer"] < 0
        return Fault.delay(60) if held else Fault.delay(0.02, then=handler(body))

    srv = scripted_server(gated, models=("tgt", "sim", "jdg"))
    args = [*remote(srv), "--dataset", dataset, "--concurrency", 8]
    assert invoke(*args, "--out", tmp_path / "clean").exit_code == 0
    needed = srv.count()
    srv.reset()
    gate.update(open=False, answer=max(1, int(needed * share)))

    proc = spawn(*args, "--out", tmp_path / "run")
    _, statuses = kill_after_burst(proc, srv, lambda: gate["answer"] < 0
                                and sum(s == 200 for s in srv.statuses) == int(needed * share))
    answered = sum(s == 200 for s in statuses)
    in_flight = sum(s is None for s in statuses)
    assert answered == int(needed * share) and in_flight > 0, (answered, in_flight)

    gate["open"] = True
    srv.reset()
    resumed = invoke(*args, "--out", tmp_path / "run")
    assert resumed.exit_code == 0, resumed.output
    paid_twice = answered + srv.count() - needed
    assert paid_twice <= in_flight, (answered, srv.count(), needed, in_flight)


def test_a_run_folder_with_the_per_file_cache_of_earlier_versions_resumes_without_paying_again(
        scripted_server, dataset, tmp_path, caplog):
    """The cache of a finished run written out in the per-file layout of earlier versions (RUNDIR/cache/ab/<key>.json,
    each entry as they wrote it), every file but run.json and the cache removed: the rerun plays and judges the
    whole run from the cache (no call), says once that it moved the entries, and writes the same results."""
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    args = [*remote(srv), "--dataset", dataset, "--concurrency", 4]
    out = tmp_path / "run"
    assert invoke(*args, "--out", out).exit_code == 0
    before = results_of(out)
    entries = per_file_cache(out)
    assert len(entries) == srv.count()
    for path in out.iterdir():
        if path.name not in ("run.json", "cache"):
            path.unlink() if path.is_file() else None
    srv.reset()
    with caplog.at_level(logging.WARNING, logger="carryon.client"):
        resumed = invoke(*args, "--out", out)
    assert resumed.exit_code == 0, resumed.output
    assert srv.count() == 0
    said = [r.getMessage() for r in caplog.records if "per-file layout" in r.getMessage()]
    assert len(said) == 1 and f"moved {len(entries)} entr(ies)" in said[0], said
    assert results_of(out) == before
    assert sorted(p.name for p in (out / "cache").iterdir()) == [DATABASE]


def per_file_cache(out: Path) -> dict[str, Any]:
    """Write the run's cache out in the per-file layout of earlier versions (RUNDIR/cache/ab/<key>.json, each
    entry as they wrote it) in place of its database; returns the entries."""
    entries = stored(out / "cache")
    for path in (out / "cache").iterdir():
        path.unlink()
    for key, payload in entries.items():
        (out / "cache" / key[:2]).mkdir(exist_ok=True)
        (out / "cache" / key[:2] / f"{key}.json").write_text(json.dumps(payload, ensure_ascii=False, sort_keys=True))
    return entries


def test_a_grouped_run_folder_of_the_previous_version_stopped_while_judging_resumes_without_paying_again(
        scripted_server, dataset, tmp_path):
    """A grouped run folder as the previous version left it when its judge phase stopped half-way: the per-file
    cache, each grouped record repeating its call's raw answer (no answers file), judge.json without its record of
    the files. The rerun asks nothing (what is missing comes from the cache), writes the results of the run never
    stopped, and the grouped file as this version writes it: each raw answer once."""
    srv = scripted_server(consistent_handler(), models=("tgt", "sim", "jdg"))
    args = [*remote(srv), "--dataset", dataset, "--concurrency", 4, "--utility-judge", "grouped"]
    out = tmp_path / "run"
    assert invoke(*args, "--out", out).exit_code == 0
    before = results_of(out)
    per_file_cache(out)
    answers = {a["answer"]: a["raw"] for a in rows_of(out / "utility_grouped_answers.jsonl")}
    (out / "utility_grouped_answers.jsonl").unlink()
    old = [{k: v for k, v in r.items() if k != "answer"} | {"raw": answers[r["answer"]]}
           for r in rows_of(out / "utility_grouped_judgments.jsonl")]
    (out / "utility_grouped_judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old[:len(old) // 2]))
    summary = json.loads((out / "judge.json").read_text())
    summary.pop("files")
    (out / "judge.json").write_text(json.dumps(summary))
    for name in ("results.json", "table.md", "report.html", "conversation_scores.jsonl"):
        (out / name).unlink()
    srv.reset()
    resumed = invoke(*args, "--out", out)
    assert resumed.exit_code == 0, resumed.output
    assert srv.count() == 0
    assert results_of(out) == before
    kept = rows_of(out / "utility_grouped_judgments.jsonl")
    assert len(kept) == len(old) and all("raw" not in r for r in kept[len(old) // 2:])
    texts = [a["raw"] for a in rows_of(out / "utility_grouped_answers.jsonl")]
    assert len(texts) == len(set(texts)) > 0


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]
