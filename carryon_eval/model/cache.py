"""Content-addressed, crash-safe disk cache of model replies.

Layout: ``DIR/ab/abcdef....json`` where ``abcdef...`` is the key (a sha256 hex digest, see
``carryon_eval.model.client.cache_key``) and ``ab`` its first two characters.

- ``put`` writes a temporary file in the same directory, fsyncs it and ``os.replace``s it into
  place, so a crash mid-write never leaves a half-written entry under the real name.
- A temporary file left by a writer that died mid-``put`` (its pid, in the name, no longer runs) is
  removed when the cache is next opened.
- ``get`` treats a missing, unreadable, truncated or otherwise corrupt entry as a miss
  (``None``); the next ``put`` for that key overwrites it.

- ``ResponseCache(dir, background=True)`` (the evaluator's run folders) takes writes off the caller's
  thread: ``put`` keeps the entry in memory (``get`` sees it at once) and a writer thread writes and
  fsyncs the queued entries in batches, so an event loop never waits for a disk. ``close()`` (or
  ``flush()``) waits until every queued entry is on disk; entries still queued when the process is
  killed are lost, which costs a call again, never a wrong or half-written entry.

The cache stores whatever JSON object it is given; the endpoint client stores only the reply
(text, finish_reason, token counts, top_logprobs) - never request headers, API keys or the key.
"""
from __future__ import annotations

import json
import logging
import os
import queue
import re
import tempfile
import threading
from pathlib import Path
from typing import Any, Optional

from carryon_eval.model.endpoint import ChatResult, cache_key
from carryon_eval.model.redact import redact_obj

log = logging.getLogger("carryon.client")

#: A chat call's generation parameters when the caller leaves them out (as carryon_eval.model.client.Endpoint.chat).
DEFAULT_PARAMS: dict[str, Any] = {"temperature": 0.0, "max_tokens": 1024, "seed": None, "response_format": None,
                                  "top_logprobs": None}

_KEY_RE = re.compile(r"^[0-9a-f]{16,128}$")


class ResponseCache:
    """Disk cache of JSON objects keyed by a hex digest. Safe to share between processes."""

    def __init__(self, directory: str | os.PathLike[str], *, background: bool = False) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        remove_stray_tmp(self.directory)
        self.background = background
        self._pending: dict[str, dict[str, Any]] = {}     # queued for the writer thread, not on disk yet
        self._lock = threading.Lock()
        self._queue: "queue.Queue[Optional[str]]" = queue.Queue()
        self._writer: Optional[threading.Thread] = None

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.directory)!r})"

    def path(self, key: str) -> Path:
        """Where the entry for ``key`` lives (whether or not it exists)."""
        if not isinstance(key, str) or not _KEY_RE.match(key):
            raise ValueError(f"invalid cache key {key!r}: expected a lowercase hex digest")
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Optional[dict[str, Any]]:
        """The stored object, or None if absent or unreadable (a corrupt entry is a miss)."""
        path = self.path(key)
        with self._lock:
            pending = self._pending.get(key)
        if pending is not None:
            return pending
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("cache entry %s unreadable (%s); treating as a miss", path, exc.__class__.__name__)
            return None
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            log.warning("cache entry %s is corrupt; treating as a miss", path)
            return None
        if not isinstance(obj, dict):
            log.warning("cache entry %s is not a JSON object; treating as a miss", path)
            return None
        return obj

    def put(self, key: str, payload: dict[str, Any]) -> None:
        """Store ``payload`` (a JSON-serialisable dict) atomically under ``key``."""
        if not isinstance(payload, dict):
            raise TypeError("cache payload must be a dict")
        data = json.dumps(redact_obj(payload), ensure_ascii=False, sort_keys=True).encode("utf-8")
        if not self.background:
            self._write(key, data)
            _fsync_dir(self.path(key).parent)
            return
        with self._lock:
            self._pending[key] = json.loads(data)
            if self._writer is None:
                self._writer = threading.Thread(target=self._drain, name="carryon-cache-writer", daemon=True)
                self._writer.start()
        self._queue.put(key)

    def flush(self) -> None:
        """Wait until every queued entry is on disk (background mode); a no-op otherwise."""
        if self._writer is not None:
            self._queue.join()

    def close(self) -> None:
        """Flush and stop the writer thread; a later ``put`` starts a new one."""
        with self._lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            self._queue.put(None)
            writer.join()

    def _drain(self) -> None:
        """The writer thread: write every queued entry, one directory fsync per batch and directory."""
        while True:
            batch = [self._queue.get()]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            keys = [k for k in batch if k is not None]
            dirs = set()
            for key in keys:
                with self._lock:
                    payload = self._pending.get(key)
                try:
                    if payload is not None:
                        self._write(key, json.dumps(payload, ensure_ascii=False, sort_keys=True).encode("utf-8"))
                        dirs.add(self.path(key).parent)
                except OSError as exc:
                    log.warning("cache entry %s not written (%s); it will be asked again", key[:12], exc)
                with self._lock:
                    if self._pending.get(key) is payload:
                        del self._pending[key]
            for directory in dirs:
                _fsync_dir(directory)
            for _ in batch:
                self._queue.task_done()
            if len(keys) < len(batch):        # close() was called
                return

    def _write(self, key: str, data: bytes) -> None:
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}.{os.getpid()}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None


_TMP_RE = re.compile(r"^\.[0-9a-f]{8}\.(?:(\d+)\.)?.*\.tmp$")


def remove_stray_tmp(directory: Path) -> int:
    """Remove the temporary files of `put`s whose writer no longer runs (killed between mkstemp and
    os.replace); those of a live process sharing the cache are left alone. Returns how many went."""
    removed = 0
    for path in directory.glob("*/.*.tmp"):
        found = _TMP_RE.match(path.name)
        if not found or (found.group(1) and _alive(int(found.group(1)))):
            continue
        try:
            path.unlink()
            removed += 1
        except OSError:
            pass
    if removed:
        log.info("cache %s: removed %d temporary file(s) of an interrupted write", directory, removed)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:            # exists, owned by someone else
        return True
    return True


def lookup(cache: Optional[ResponseCache], model: str, messages: list[dict],
           given: dict[str, Any]) -> tuple[str, dict[str, Any], Optional[ChatResult]]:
    """(cache key, full generation params, the cached reply or None) of one chat call, keyed exactly as
    the HTTP client keys it; for wrappers that look into the cache before (or instead of) calling."""
    params = {name: given.get(name, default) for name, default in DEFAULT_PARAMS.items()}
    key = cache_key(model, messages, params)
    payload = cache.get(key) if cache is not None else None
    return key, params, ChatResult.from_payload(payload) if payload is not None else None


def _fsync_dir(directory: Path) -> None:
    """Best effort: persist the directory entry of a freshly renamed file (POSIX only)."""
    if os.name != "posix":
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
