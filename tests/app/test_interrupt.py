"""Ctrl-C (SIGINT) in the middle of a run, while the judge works beside the rollout: the command stops (the
judge too: no judgment is asked for after it), says one line and exits 130; the rerun resumes."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

from support.eval_cli import remote, wait_for_lines
from support.rollout_data import evaluator_handler, make_dataset
from support.scripted_server import ScriptedServer

# Ctrl-C as a terminal delivers it: SIGINT handled even where the tests were started with it ignored (a shell's
# background job), which the child would inherit
CLI = [sys.executable, "-c", "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
       "from carryon_eval.cli import main; main()"]


def slow(body: dict) -> object:
    time.sleep(0.3)                      # the server's worker thread: calls stay in flight for a while
    return evaluator_handler(body)


def test_ctrl_c_stops_the_rollout_and_the_judge(tmp_path):
    data = make_dataset(tmp_path / "data")
    with ScriptedServer(slow, models=("tgt", "sim", "jdg")) as srv:
        cmd = CLI + remote(srv, "--dataset", data, "--out", tmp_path / "run", "--conditions", "turn1,bc",
                           "--concurrency", "1")
        proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_lines(proc, tmp_path / "run" / "transcripts.jsonl", 1, timeout=240)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=240)     # a bound against a hang, not a speed claim
        asked = srv.count()
        assert proc.returncode == 130, (out, err)
        assert err.strip().splitlines()[-1] == "carryon-eval: interrupted; rerun the same command to resume", err
        time.sleep(1)
        assert srv.count() == asked                  # nothing asked after the command ended
