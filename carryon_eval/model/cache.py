"""Content-addressed, crash-safe disk cache of model replies.

Layout: ``DIR/ab/abcdef....json`` where ``abcdef...`` is the key (a sha256 hex digest, see
``carryon_eval.model.client.cache_key``) and ``ab`` its first two characters.

- ``put`` writes a temporary file in the same directory, fsyncs it and ``os.replace``s it into
  place, so a crash mid-write never leaves a half-written entry under the real name.
- A temporary file left by a writer that died mid-``put`` (its pid, in the name, no longer runs) is
  removed when the cache is next opened.
- ``get`` treats a missing, unreadable, truncated or otherwise corrupt entry as a miss
  (``None``); the next ``put`` for that key overwrites it.

- ``ResponseCache(dir, background=True)`` (the evaluator's run folders) takes the fsyncs off the caller's
  thread: ``put`` writes the entry (a temporary file renamed into place) at once, so the kernel holds every
  answered call before ``put`` returns and a killed process (SIGKILL included) loses none of them; a writer
  thread fsyncs the written entries and their folders in batches, so an event loop never waits for a disk
  flush. ``close()`` (or ``flush()``) waits until every entry is fsynced; after a power loss an entry not
  fsynced yet may be unreadable, which ``get`` reads as a miss (a call asked again, never a wrong entry).

The cache stores whatever JSON object it is given; the endpoint client stores only the reply
(text, finish_reason, token counts, top_logprobs) - never request headers, API keys or the key.
"""
from __future__ import annotations

import itertools
import json
import logging
import os
import re
import threading
from pathlib import Path
from typing import Any, Optional

from carryon_eval.model.endpoint import ChatResult, EndpointConfig, cache_key, keyed_request
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
        self._root = os.fspath(self.directory)
        self._made: set[str] = set()                     # shard folders known to exist
        self._tmp = itertools.count()                    # temporary names: pid + a counter (no mkstemp)
        self._pending: dict[str, bytes] = {}             # queued for the writer thread, not on disk yet
        self._queued: list[str] = []                     # their keys, in order
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._busy = 0                                   # keys taken by the writer and not written yet
        self._unwritten = 0                              # entries a write failed for (said once)
        self._stop = False
        self._writer: Optional[threading.Thread] = None

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.directory)!r})"

    def _not_written(self, key: str, exc: OSError) -> None:
        """Say once per cache that entries go unwritten (a full disk fails every one of them alike)."""
        self._unwritten += 1
        if self._unwritten == 1:
            log.warning("cache entry %s not written (%s); it and any other not written will be asked again",
                        key[:12], exc.strerror or exc)

    def path(self, key: str) -> Path:
        """Where the entry for ``key`` lives (whether or not it exists)."""
        return Path(self._file(key))

    def _file(self, key: str) -> str:
        if not isinstance(key, str) or not _KEY_RE.match(key):
            raise ValueError(f"invalid cache key {key!r}: expected a lowercase hex digest")
        return f"{self._root}{os.sep}{key[:2]}{os.sep}{key}.json"

    def get(self, key: str) -> Optional[dict[str, Any]]:
        """The stored object, or None if absent or unreadable (a corrupt entry is a miss)."""
        path = self._file(key)
        pending = self._pending.get(key) if self._pending else None   # a dict read is atomic under the GIL
        if pending is not None:
            return json.loads(pending)
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
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
        path = self._file(key)
        data = json.dumps(redact_obj(payload), ensure_ascii=False, sort_keys=True).encode("utf-8")
        if not self.background:
            self._write(key, data)
            _fsync_dir(os.path.dirname(path))
            return
        try:
            self._write(key, data, sync=False)   # in the kernel before put returns: a kill loses nothing
        except OSError as exc:
            self._not_written(key, exc)
            return
        with self._lock:
            self._pending[key] = data
            self._queued.append(key)
            if self._writer is None:
                self._stop = False
                self._writer = threading.Thread(target=self._drain, name="carryon-cache-writer", daemon=True)
                self._writer.start()
            elif len(self._queued) == 1:           # the writer may be asleep: one wake-up per batch, not per put
                self._wake.notify()

    def flush(self) -> None:
        """Wait until every queued entry is on disk (background mode); a no-op otherwise."""
        with self._lock:
            if self._writer is None:
                return
            self._wake.notify()
            self._wake.wait_for(lambda: not self._queued and not self._busy)

    def close(self) -> None:
        """Flush and stop the writer thread; a later ``put`` starts a new one."""
        with self._lock:
            writer, self._writer = self._writer, None
            self._stop = True
            self._wake.notify_all()
        if writer is not None:
            writer.join()

    def _drain(self) -> None:
        """The writer thread: write every queued entry, one directory fsync per batch and directory."""
        while True:
            with self._lock:
                self._wake.wait_for(lambda: self._queued or self._stop)
                if not self._queued:                 # close() and nothing left
                    self._wake.notify_all()
                    return
                keys, self._queued = self._queued, []
                batch = [(k, self._pending.get(k)) for k in keys]
                self._busy = len(keys)
            dirs = set()
            try:
                for key, data in batch:
                    if data is None:
                        continue
                    try:
                        _fsync_file(self._file(key))
                        dirs.add(os.path.dirname(self._file(key)))
                    except OSError as exc:
                        self._not_written(key, exc)
                for directory in dirs:
                    _fsync_dir(directory)
            finally:
                self._finish(batch)

    def _finish(self, batch: list[tuple[str, Optional[bytes]]]) -> None:
        """A batch is on disk (or failed): drop it from the pending entries, wake flush()."""
        with self._lock:
            for key, data in batch:
                if self._pending.get(key) is data:
                    del self._pending[key]
            self._busy = 0
            self._wake.notify_all()

    def _write(self, key: str, data: bytes, sync: bool = True) -> None:
        path = self._file(key)
        folder = os.path.dirname(path)
        if folder not in self._made:
            os.makedirs(folder, exist_ok=True)
            self._made.add(folder)
        tmp = f"{folder}{os.sep}.{key[:8]}.{os.getpid()}.{threading.get_ident()}-{next(self._tmp)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                if sync:
                    os.fsync(fd)
            finally:
                os.close(fd)
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


def lookup(cache: Optional[ResponseCache], model: "str | EndpointConfig", messages: list[dict],
           given: dict[str, Any]) -> tuple[str, dict[str, Any], Optional[ChatResult]]:
    """(cache key, full generation params, the cached reply or None) of one chat call, keyed exactly as
    the HTTP client keys it; for wrappers that look into the cache before (or instead of) calling. Given the
    endpoint's config (not only its model name), the role's request options are keyed as the client keys them."""
    params = {name: given.get(name, default) for name, default in DEFAULT_PARAMS.items()}
    if isinstance(model, EndpointConfig):
        key, _, params = keyed_request(model, messages, params)
    else:
        key = cache_key(model, messages, params)
    payload = cache.get(key) if cache is not None else None
    return key, params, ChatResult.from_payload(payload) if payload is not None else None


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(directory: str | os.PathLike[str]) -> None:
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
