"""A crash of the embedded server, without the model: ServerWatch ends a waiting call as soon as the server is
gone (not after its retries), RoleWatch passes the crash on as it is, CrashRecord tells a repeated crash, and the
line names the signal and the log. The real server is killed in tests/model/test_local_model.py and end to end
in tests/app/test_e2e_local.py and tests/builder/test_builder_llm.py."""
from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Optional

import pytest

from carryon_eval.model.client import Endpoint
from carryon_eval.model.crash import CRASH_FILE, POLL, CrashRecord, LocalServerCrashed, ServerWatch, exit_description
from carryon_eval.model.endpoint import EndpointConfig
from carryon_eval.model.pool import RoleWatch
from support.scripted_server import Fault


def test_exit_description_names_the_signal():
    assert exit_description(-signal.SIGSEGV) == "killed by signal SIGSEGV"
    assert exit_description(-signal.SIGKILL) == "killed by signal SIGKILL"
    assert exit_description(3) == "exit code 3"


def test_the_crash_line_names_signal_and_log(tmp_path):
    crash = LocalServerCrashed("killed by signal SIGSEGV", tmp_path / "llama-server.log")
    line = str(crash) + crash.hint("; rerun the same command to resume")
    assert "\n" not in line
    assert line == (f"the embedded model server crashed (killed by signal SIGSEGV; its log: {tmp_path}/llama-server.log)"
                    "; what was done is written; rerun the same command to resume")


def test_the_same_crash_twice_drops_the_rerun_hint(tmp_path):
    record = CrashRecord(tmp_path)
    first = LocalServerCrashed("killed by signal SIGSEGV", tmp_path / "a.log")
    record.note(first)
    assert not first.repeated and first.hint("; rerun") == "; rerun"
    again = LocalServerCrashed("killed by signal SIGSEGV", tmp_path / "b.log")     # another log, the same crash
    record.note(again)
    assert again.repeated
    assert "rerun the same command" not in again.hint("; rerun the same command to resume")
    assert "a rerun will not help" in again.hint("; rerun the same command to resume")
    other = LocalServerCrashed("exit code 1", tmp_path / "c.log")
    record.note(other)
    assert not other.repeated
    record.clear()
    assert not (tmp_path / CRASH_FILE).exists()
    record.clear()                   # idempotent
    record.note(first)
    assert str(tmp_path) not in (tmp_path / CRASH_FILE).read_text()       # no machine path in the run folder


def test_a_server_killed_from_outside_twice_keeps_the_rerun_hint_and_results_name_no_log(tmp_path):
    """Two kills from outside (SIGKILL, SIGTERM: a user, the OOM killer) are no crash of the server's own: a rerun
    may well finish, so it is still suggested; what results.json says of a crash names no machine path."""
    from carryon_eval.app.commands import stopped_note

    record = CrashRecord(tmp_path)
    for how in ("killed by signal SIGKILL", "killed by signal SIGKILL", "killed by signal SIGTERM",
                "killed by signal SIGTERM"):
        crash = LocalServerCrashed(how, tmp_path / "server.log")
        record.note(crash)
        assert not crash.repeated and crash.hint("; rerun the same command to resume").startswith("; rerun"), how
    note = stopped_note(LocalServerCrashed("killed by signal SIGSEGV", tmp_path / "server.log"))
    assert note.startswith("STOPPED: the embedded model server crashed (killed by signal SIGSEGV);")
    assert str(tmp_path) not in note


class _Server:
    """What ServerWatch asks of a server: crashed() -> the error, once it has died."""

    def __init__(self) -> None:
        self.dead_at: Optional[float] = None

    def crashed(self) -> Optional[LocalServerCrashed]:
        if self.dead_at is not None and time.monotonic() >= self.dead_at:
            return LocalServerCrashed("killed by signal SIGSEGV", Path("/tmp/x.log"))
        return None


def test_a_waiting_call_ends_when_the_server_dies(scripted_server):
    """The call waits on a slow answer (as on a busy embedded model); the server dies 0.5 s in: the call ends
    within a poll, through the role's watch, as the crash itself (not a silent-role or failed-call error)."""
    srv = scripted_server(lambda body: Fault.delay(30, then="late"), models=("m",))
    server = _Server()

    async def go() -> float:
        ep = Endpoint(EndpointConfig(base_url=srv.base_url, model="m", timeout=60, max_retries=6))
        watched = RoleWatch(ServerWatch(ep, server.crashed), "target", give_up_after=600)
        server.dead_at = time.monotonic() + 0.5
        started = time.monotonic()
        with pytest.raises(LocalServerCrashed):
            await watched.chat([{"role": "user", "content": "hi"}], stage="t")
        took = time.monotonic() - started
        with pytest.raises(LocalServerCrashed):          # and every later call, at once
            await watched.chat([{"role": "user", "content": "hi"}], stage="t")
        await ep.aclose()
        return took

    assert asyncio.run(go()) < 0.5 + 4 * POLL


def test_a_call_on_a_live_server_is_unchanged(scripted_server):
    srv = scripted_server(lambda body: "fine", models=("m",))

    async def go() -> str:
        ep = Endpoint(EndpointConfig(base_url=srv.base_url, model="m"))
        try:
            return (await ServerWatch(ep, lambda: None).chat([{"role": "user", "content": "hi"}], stage="t")).text
        finally:
            await ep.aclose()

    assert asyncio.run(go()) == "fine"
