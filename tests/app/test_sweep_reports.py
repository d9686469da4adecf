"""A sweep never waits on a report: a target that finishes long before the others has its report written in a
worker process while the other targets' requests go on (the scripted server's timeline), and the sweep's shared
judge lets the runs' requests in by their order in the plan, so that they end one after another."""
from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

from support.eval_cli import invoke
from support.rollout_data import unique_replies

SLOW = ("t2", "t3")


class Timeline:
    """The scripted models; the slow targets answer 1.5 s late until the first target's report is written (so
    that they still have work then, however long the report takes), then at once. Each request's (start, end,
    model) as the server saw it."""

    def __init__(self, report: Path) -> None:
        self.report = report
        self.spans: list[tuple[float, float, str]] = []
        self.lock = threading.Lock()

    async def __call__(self, body: dict) -> Any:
        start = time.time()
        slow = body["model"] in SLOW and not self.report.exists()
        await asyncio.sleep(1.5 if slow else 0.005)
        answer = unique_replies({**body, "model": "tgt" if body["model"].startswith("t") else body["model"]})
        with self.lock:
            self.spans.append((start, time.time(), body["model"]))
        return answer


def test_a_finished_targets_report_is_written_while_the_other_targets_go_on(scripted_server, dataset, tmp_path):
    first = tmp_path / "sweep" / "t1"
    timeline = Timeline(first / "report.html")
    srv = scripted_server(timeline, models=("t1", *SLOW, "sim", "jdg"))
    plan = tmp_path / "plan.toml"
    plan.write_text(f'dataset = "{dataset}"\nuser-endpoint = "{srv.base_url}"\nuser-model = "sim"\n'
                    f'judge-endpoint = "{srv.base_url}"\njudge-model = "jdg"\nconcurrency = 2\n'
                    + "".join(f'\n[[target]]\nname = "{m}"\nendpoint = "{srv.base_url}"\nmodel = "{m}"\n'
                              for m in ("t1", *SLOW)))
    res = invoke("sweep", plan, "--out", tmp_path / "sweep")
    assert res.exit_code == 0, res.output
    # t1's report: from the end of its judge pass (judge.json) to its last file (report.html)
    start, end = (first / "judge.json").stat().st_mtime, (first / "report.html").stat().st_mtime
    others = sorted(s for s, _, model in timeline.spans if model in SLOW)
    assert others[-1] > start + 2                       # t1's calls ended long before the others'
    # while t1's report was written (up to the others' last request, should they run out of work first), the others'
    # requests went on: a report on the sweep's event loop would have let none start
    during = [s for s in others if start <= s <= min(end, others[-1])]
    assert len(during) >= 3, (start, end, others)
    results = json.loads((first / "results.json").read_text())
    assert results["conditions"]["bc"]["n_conversations"] > 0
    ends = {m: max(e for _, e, model in timeline.spans if model == m) for m in ("t1", *SLOW)}
    assert ends["t1"] < ends["t2"] <= ends["t3"] + 0.5  # the first target of the plan ended first
