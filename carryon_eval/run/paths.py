"""The one way a path is written into a file people share (run.json, results.json, report.html, compare.json,
leaderboard.jsonl): relative to the folder that file describes, never the machine's absolute path, so that a
run folder or a leaderboard can be sent, moved or published without leaking a home directory. A Hub id and the
built-in sample (``builtin:sample``) are not paths and are written as they are.

`local_path` reads such a record back: relative to the folder it was written for (an absolute path written by an
older version is used as it is)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional


def shared_path(path: Optional[str | os.PathLike], base: str | os.PathLike) -> Optional[str]:
    """``path`` as a shared file records it: relative to the folder ``base`` (POSIX separators) when it is an
    absolute path on this machine; else unchanged (already relative, a Hub id, ``builtin:sample``)."""
    if path is None:
        return None
    text = str(path)
    if not os.path.isabs(text):         # already shared ("../x"), a Hub id or the sample
        return text
    rel = Path(os.path.relpath(Path(text).expanduser().resolve(), Path(base).resolve())).as_posix()
    return rel if rel.startswith(".") else f"./{rel}"      # "./x", never "x": a path never reads as a Hub id


def local_path(recorded: Optional[str], base: str | os.PathLike) -> Optional[str]:
    """A path as `shared_path` wrote it, on this machine: resolved against ``base`` when relative ("./x", "../x"); a Hub id, ``builtin:sample`` or an absolute path (older files) unchanged."""
    if recorded is None or os.path.isabs(recorded):
        return recorded
    if recorded.startswith("."):
        return str((Path(base) / recorded).resolve())
    return recorded
