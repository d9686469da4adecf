"""API key values never land in a file: every key a run uses is registered here, and every writer of the run
folder (run.py's writers, the judgment appender, the response cache) and every reply a role returns
(pool.RoleWatch) replaces it with ``MASK``. A server that echoes the request's Authorization header into its
reply leaks nothing into transcripts, judgments, reports or the cache.

    register_key_of("OPENAI_API_KEY")        # the value of that variable, if it is set
    redact(text), redact_obj(payload)
"""
from __future__ import annotations

import os
from typing import Any, Optional

MASK = "[redacted API key]"
MIN_LENGTH = 6              # shorter values ("EMPTY" placeholders aside) would mask ordinary text
_KEYS: set[str] = set()


def register_key_of(env_name: Optional[str]) -> None:
    """Mask the value of environment variable ``env_name`` in everything written from now on."""
    value = os.environ.get(env_name) if env_name else None
    if value and value != "EMPTY" and len(value) >= MIN_LENGTH:
        _KEYS.add(value)


def redact(text: str) -> str:
    if not _KEYS or not isinstance(text, str):
        return text
    for key in _KEYS:
        if key in text:
            text = text.replace(key, MASK)
    return text


def redact_obj(obj: Any) -> Any:
    """``obj`` (JSON-like) with every string redacted; the same object when there is nothing to mask."""
    if not _KEYS:
        return obj
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redact(k): redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v) for v in obj]
    return obj
