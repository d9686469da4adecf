"""One writer at a time: a command that writes a run folder (a run, `rollout`/`judge`/`fidelity`/`report RUNDIR`)
or a sweep's folder holds its lock file (``.carryon.lock``, an flock) while it writes; a second writer is refused in
one line naming the first one's process id. The operating system lets go of the lock when its holder ends, however
it ends, so a lock left by a killed command is taken over by the next one (and said so).

    with hold(run.path, "carryon-eval judge"):
        ...                       # RunError "RUNDIR is being written by carryon-eval (PID 1234) ..." if held

Where the platform has no flock (Windows) nothing is locked.
"""
from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Iterator

from carryon_eval.run.folder import LOCK_FILE, RunError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("carryon.run")


@contextlib.contextmanager
def hold(folder: Path, what: str) -> Iterator[None]:
    """Hold ``folder``'s lock while ``what`` (the command, as the refusal names it) writes it; the folder is made
    if need be, and removed again when the command leaves nothing else in it. RunError when another process holds
    the lock, or the folder cannot be written."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise RunError(f"{folder} exists and is not a folder")
    made = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise RunError(f"cannot write in {folder}: {exc.strerror or exc}") from None
    try:
        _take(fd, folder)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {what}\n".encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    try:
        yield
    finally:
        _release(fd, folder, made)


def _take(fd: int, folder: Path) -> None:
    if fcntl is None:  # pragma: no cover
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid, _, holder = os.pread(fd, 400, 0).decode("utf-8", "replace").strip().partition(" ")
        raise RunError(f"{folder} is being written by {holder or 'another command'} (PID {pid or 'unknown'}); "
                       "wait for it to end, or use another folder") from None
    left = os.pread(fd, 400, 0).decode("utf-8", "replace").strip()
    if left:                               # its holder ended without letting go: killed, or its machine stopped
        log.warning("%s: took over the lock of %s (PID %s), which is no longer running", folder,
                    left.partition(" ")[2] or "a command", left.partition(" ")[0])


def _release(fd: int, folder: Path, made: bool) -> None:
    try:
        os.ftruncate(fd, 0)                # an unlocked, empty lock file: nobody writes here now
        if made and [p.name for p in folder.iterdir()] == [LOCK_FILE]:
            (folder / LOCK_FILE).unlink()
            folder.rmdir()                 # nothing written: nothing left behind
    except OSError:
        pass
    finally:
        os.close(fd)                       # closing lets go of the flock
