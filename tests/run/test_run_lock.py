"""One writer at a time (carryon_eval.run.lock): while a run writes its folder, a second run, `judge RUNDIR` or a
second sweep into the same folder is refused in one line naming the first one's PID, before it asks anything; a
lock left by a killed run is taken over by the next command, which resumes."""
from __future__ import annotations

import signal

from support.eval_cli import invoke, one_error_line, remote, slowly, spawn, wait_for_lines
from support.rollout_data import evaluator_handler

from carryon_eval.run.folder import LOCK_FILE


def test_a_second_writer_is_refused_naming_the_first_and_a_dead_ones_lock_is_taken_over(scripted_server, dataset,
                                                                                       tmp_path, caplog):
    srv = scripted_server(slowly(evaluator_handler, 0.3), models=("tgt", "sim", "jdg"))
    other = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"), log_authorization=True)
    out = tmp_path / "run"
    args = ["--dataset", dataset, "--out", out, "--conditions", "turn1,bc", "--concurrency", "1"]
    first = spawn(*remote(srv), *args, text=True)
    try:
        wait_for_lines(first, out / "transcripts.jsonl", 1)
        for again in (invoke(*remote(other), *args), invoke("judge", out, "--judge-endpoint", other.base_url),
                      invoke("report", out)):
            assert one_error_line(again) == (f"carryon-eval: error: {out} is being written by carryon-eval "
                                             f"(PID {first.pid}); wait for it to end, or use another folder")
        assert other.authorizations == []             # refused before asking anything
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate()
    assert (out / LOCK_FILE).read_text().startswith(f"{first.pid} ")     # killed: its lock file says who held it

    resumed = invoke(*remote(other), *args)
    assert resumed.exit_code == 0, resumed.output
    assert f"took over the lock of carryon-eval (PID {first.pid}), which is no longer running" in caplog.text
    assert (out / LOCK_FILE).read_text() == ""                           # let go: nobody writes here now
