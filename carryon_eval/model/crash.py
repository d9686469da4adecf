"""The embedded server died: how it is told (LocalServerCrashed, one line with the signal and the log), how
waiting calls learn it at once (ServerWatch), and whether it is the same crash as last time (CrashRecord).

A crash is an EndpointGone: every phase already ends on one and writes what was done. Unlike a silent
endpoint, it is not waited out - a call on a dead server ends within POLL seconds, not after its retries.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any, Callable, Optional

from carryon_eval.model.endpoint import ChatResult, EndpointWrapper
from carryon_eval.model.pool import EndpointGone

POLL = 0.25                      # seconds between looks at the server process while a call waits
CRASH_FILE = "embedded_crash.json"
#: how a server ends when something outside kills it (not a crash of its own)
OUTSIDE = {f"killed by signal {s.name}" for s in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}


def exit_description(returncode: int) -> str:
    """``-11`` -> "killed by signal SIGSEGV"; ``1`` -> "exit code 1"."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return f"killed by signal {name}"
    return f"exit code {returncode}"


class LocalServerCrashed(EndpointGone):
    """The embedded model server exited while it was serving: its signal or exit code, and its log file."""

    def __init__(self, how: str, log_path: Optional[Path]) -> None:
        self.how, self.log_path = how, log_path
        self.repeated = False      # set when the last run ended in the same crash (a rerun will not help)
        super().__init__(f"the embedded model server crashed ({how}; its log: {log_path}); what was done is written")

    def public(self) -> str:
        """The crash as a shared file may say it: its signal or exit code, not the machine's log path."""
        return f"the embedded model server crashed ({self.how})"

    @property
    def from_outside(self) -> bool:
        """Whether a signal from outside ended it (a kill, Ctrl-C, a hang-up, the OOM killer): the same again is
        no sign that a rerun will crash too."""
        return self.how in OUTSIDE

    def record(self) -> dict[str, str]:
        """What is compared between two runs (no path, no time: a run folder may be shared)."""
        return {"how": self.how}

    def hint(self, resume: str) -> str:
        """``resume`` (e.g. "; rerun the same command to resume"), unless the same crash ended the last try."""
        if self.repeated:
            return ("; it crashed the same way on the last try, so a rerun will not help: see its log, or serve "
                    "the model elsewhere and pass --endpoint URL")
        return resume


class CrashRecord:
    """The last crash of the embedded server for one output folder (FOLDER/embedded_crash.json)."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / CRASH_FILE

    def note(self, crash: LocalServerCrashed) -> None:
        """Record ``crash``; mark it repeated when the recorded one is the same."""
        try:
            crash.repeated = crash.repeated or (not crash.from_outside
                                                and json.loads(self.path.read_text()) == crash.record())
        except (OSError, ValueError):
            pass
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(crash.record()) + "\n")
            os.replace(tmp, self.path)
        except OSError:
            pass                 # a full disk must not hide the crash itself

    def clear(self) -> None:
        """The command ended without a crash: the next crash is a first one again."""
        self.path.unlink(missing_ok=True)


class ServerWatch(EndpointWrapper):
    """An endpoint on the embedded server whose calls end with LocalServerCrashed as soon as the server process
    has exited (``crashed()`` returns the error), instead of retrying a dead port."""

    def __init__(self, inner: Any, crashed: Callable[[], Optional[LocalServerCrashed]]) -> None:
        super().__init__(inner)
        self.crashed = crashed

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    async def chat(self, messages: list[dict], *, stage: str, **params: Any) -> ChatResult:
        crash = self.crashed()
        if crash is not None:
            raise crash
        call = asyncio.ensure_future(self.inner.chat(messages, stage=stage, **params))
        try:
            while True:
                done, _ = await asyncio.wait({call}, timeout=POLL)
                crash = self.crashed()
                if crash is not None:        # also when the call failed because the server had gone
                    raise crash
                if done:
                    return call.result()
        finally:
            if not call.done():
                call.cancel()
            await asyncio.gather(call, return_exceptions=True)   # its error is retrieved, never left dangling
