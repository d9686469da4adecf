"""A sweep never waits on a report: a target that finishes long before the others has its report written in a
worker process while the other targets' requests go on. What is checked is the scripted server's log of request
spans against the report's own span as the sweep recorded it (app.reports.ReportWorker.write, timed around the
real call): inside that span, up to the others' last request, there is no stretch of more than 1 s with no request
in flight. Nothing here depends on how fast the machine is: the other targets' requests wait at the server until
the first target's report has started (so they have all their work left then), and each then takes 0.2 s while
that report is written, so a report that held the sweep's event loop would leave the server idle for its whole
length, and no request would start before it ended."""
from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest
from support.eval_cli import invoke
from support.rollout_data import unique_replies

from carryon_eval.app.reports import ReportWorker

FIRST, SLOW = "t1", ("t2", "t3")
HOLD = 0.2                         # each of the others' requests while the first target's report is written
GAP = 1.0                          # the longest stretch with nothing in flight the sweep may show meanwhile


class Timeline:
    """The scripted models; each request's (arrival, answer, model) as the server saw it. The slow targets' requests
    wait until the first target's report has started, then take HOLD seconds each until it has been written."""

    def __init__(self) -> None:
        self.started, self.written = threading.Event(), threading.Event()
        self.spans: list[tuple[float, float, str]] = []
        self.lock = threading.Lock()

    async def __call__(self, body: dict) -> Any:
        arrived = time.time()
        if body["model"] in SLOW:
            deadline = time.monotonic() + 600           # a hang guard only: the report starts long before
            while not self.started.is_set() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            if not self.written.is_set():
                await asyncio.sleep(HOLD)
        answer = unique_replies({**body, "model": "tgt" if body["model"].startswith("t") else body["model"]})
        with self.lock:
            self.spans.append((arrived, time.time(), body["model"]))
        return answer


def idle_stretches(spans: list[tuple[float, float]], start: float, end: float) -> list[float]:
    """The lengths of the stretches of [start, end] with no span in flight."""
    out, covered = [], start
    for a, b in sorted(spans):
        if b <= covered:
            continue
        if a > covered:
            out.append(min(a, end) - covered)
        covered = max(covered, b)
        if covered >= end:
            break
    if covered < end:
        out.append(end - covered)
    return [x for x in out if x > 0]


def test_idle_stretches_are_the_holes_between_spans():
    assert idle_stretches([(0, 1), (0.5, 2), (3, 4)], 0, 5) == [1, 1]
    assert idle_stretches([(0, 6)], 1, 5) == []
    assert idle_stretches([], 1, 2) == [1]


def timed_reports(monkeypatch: pytest.MonkeyPatch, timeline: Timeline) -> dict[str, tuple[float, float]]:
    """Each run's report span as the sweep saw it (the worker's real write, timed around it), by run folder name;
    the first target's opens and closes the timeline's gate."""
    spans: dict[str, tuple[float, float]] = {}
    original = ReportWorker.write

    async def timed(self, bench, run, out, judge, bootstrap, notes=()):
        start = time.time()
        if run.path.name == FIRST:
            timeline.started.set()
        try:
            return await original(self, bench, run, out, judge, bootstrap, notes)
        finally:
            spans[run.path.name] = (start, time.time())
            if run.path.name == FIRST:
                timeline.written.set()

    monkeypatch.setattr(ReportWorker, "write", timed)
    return spans


def test_a_finished_targets_report_is_written_while_the_other_targets_go_on(scripted_server, dataset, tmp_path,
                                                                            monkeypatch):
    timeline = Timeline()
    reports = timed_reports(monkeypatch, timeline)
    srv = scripted_server(timeline, models=(FIRST, *SLOW, "sim", "jdg"))
    plan = tmp_path / "plan.toml"
    plan.write_text(f'dataset = "{dataset}"\nuser-endpoint = "{srv.base_url}"\nuser-model = "sim"\n'
                    f'judge-endpoint = "{srv.base_url}"\njudge-model = "jdg"\nconcurrency = 2\n'
                    + "".join(f'\n[[target]]\nname = "{m}"\nendpoint = "{srv.base_url}"\nmodel = "{m}"\n'
                              for m in (FIRST, *SLOW)))
    res = invoke("sweep", plan, "--out", tmp_path / "sweep")
    assert res.exit_code == 0, res.output
    assert sorted(reports) == [FIRST, *SLOW]                  # every report went through the worker
    start, end = reports[FIRST]
    others = [(a, b) for a, b, model in timeline.spans if model != FIRST]
    assert not [a for a, _, model in timeline.spans if model == FIRST and a > start]    # its calls were over
    last = max(a for a, _ in others)                           # up to the others' last request: work remained
    idle = idle_stretches(others, start, min(end, last))
    assert max(idle, default=0.0) <= GAP, (idle, start, end, last)
    # and the sweep's event loop went on meanwhile: requests were sent while the report was being written (a report
    # holding the loop lets none start before it ends, and lasts far longer than one HOLD on any machine)
    assert [a for a, _ in others if start < a < end], (start, end, sorted(a for a, _ in others))
    results = json.loads((tmp_path / "sweep" / FIRST / "results.json").read_text())
    assert results["conditions"]["bc"]["n_conversations"] > 0
