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
    _register(os.environ.get(env_name) if env_name else "")


def public_url(url: Optional[str]) -> Optional[str]:
    """``url`` as a file may record it: a user:password part and every query value replaced by MASK (and
    registered, so an echo of them is masked too). ``https://u:secret@host/v1?key=k`` -> ``https://[..]@host/v1?key=[..]``."""
    from urllib.parse import parse_qsl, urlsplit, urlunsplit

    if not url or "@" not in url and "?" not in url:
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        for secret in userinfo.split(":"):
            _register(secret)
        netloc = f"{MASK}@{host}"
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    for _, value in pairs:
        _register(value)
    query = "&".join(f"{k}={MASK if v else ''}" for k, v in pairs)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _register(value: str) -> None:
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
