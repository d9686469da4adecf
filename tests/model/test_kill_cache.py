"""A run SIGKILLed just after the server answered a burst of calls pays again on resume at most the calls that
were in flight at the kill: every answered call reached the cache before the process could die."""
from __future__ import annotations

import signal
import time

from support.eval_cli import invoke, remote, slowly, spawn
from support.rollout_data import evaluator_handler as handler


def test_a_sigkill_after_a_burst_costs_at_most_the_calls_in_flight(scripted_server, dataset, tmp_path):
    srv = scripted_server(slowly(handler, 0.05), models=("tgt", "sim", "jdg"))
    clean = invoke(*remote(srv), "--dataset", dataset, "--out", tmp_path / "clean", "--concurrency", 4)
    assert clean.exit_code == 0, clean.output
    needed = srv.count()                          # the calls one uninterrupted run pays
    srv.reset()

    out = tmp_path / "run"
    proc = spawn(*remote(srv), "--dataset", dataset, "--out", out, "--concurrency", 4)
    try:
        deadline = time.monotonic() + 120
        while sum(s == 200 for s in srv.statuses) < needed // 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)                           # 0.1 s after the server answered the burst
        statuses = srv.statuses
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=10)
    answered = sum(s == 200 for s in statuses)
    in_flight = sum(s is None for s in srv.statuses[: len(statuses)]) + (len(srv.statuses) - len(statuses))
    assert 0 < answered < needed

    srv.reset()
    resumed = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--concurrency", 4)
    assert resumed.exit_code == 0, resumed.output
    paid_twice = answered + srv.count() - needed
    assert paid_twice <= in_flight, (answered, srv.count(), needed, in_flight)
