"""Content-addressed, crash-safe disk cache of model replies: one SQLite database per cache folder.

Layout: ``DIR/responses.sqlite3`` (the standard library's sqlite3, WAL mode), one row per key (a sha256 hex
digest, see ``carryon_eval.model.client.cache_key``) holding the reply as JSON. While the cache is open SQLite
keeps its ``-wal`` and ``-shm`` files beside it; the last connection to close folds them back in.

- ``ResponseCache(dir)`` commits each ``put`` before it returns (the builder's ``DIR.cache``, the batch import).
- ``ResponseCache(dir, background=True)`` (the evaluator's run folders) batches the commits on a writer thread:
  ``put`` hands the entry over and returns (``get`` sees it at once), and the writer commits what is waiting
  once ``COMMIT_COUNT`` entries are or the oldest has waited ``COMMIT_SECONDS``, so a commit holds many calls
  and an event loop never waits for one. ``close()`` (or ``flush()``) commits everything waiting.
- Nothing is fsynced per call (``synchronous=NORMAL``: a commit is in the kernel when it returns; SQLite syncs
  the WAL at its checkpoints). A process killed at any point (SIGKILL included) leaves every committed entry
  and a consistent database; what it loses is at most the answers of its last ``COMMIT_SECONDS``, calls that
  were in flight, which the next run asks again. A power loss may lose the last commits, never corrupt one.
- ``get`` treats an entry that is not a JSON object as a miss (``None``); the next ``put`` for that key
  overwrites it. A file that is not a SQLite database is a ``CacheError`` naming it (a cache is never silently
  dropped: every call it held would be paid again).
- A folder written by the per-file layout of earlier versions (``DIR/ab/abcdef....json``) is moved into the
  database once, when the cache is first opened, with one line saying so: a run folder made before resumes
  without paying again.

The cache stores whatever JSON object it is given; the endpoint client stores only the reply
(text, finish_reason, token counts, top_logprobs) - never request headers, API keys or the key.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Optional

from carryon_eval.model.endpoint import ChatResult, EndpointConfig, cache_key, keyed_request
from carryon_eval.model.redact import redact_obj

log = logging.getLogger("carryon.client")

#: A chat call's generation parameters when the caller leaves them out (as carryon_eval.model.client.Endpoint.chat).
DEFAULT_PARAMS: dict[str, Any] = {"temperature": 0.0, "max_tokens": 1024, "seed": None, "response_format": None,
                                  "top_logprobs": None}

DATABASE = "responses.sqlite3"
COMMIT_SECONDS = 0.01        # background mode: the longest an answered call waits for its commit
COMMIT_COUNT = 256           # background mode: a commit as soon as this many entries wait
BUSY_SECONDS = 30.0          # another process sharing the cache holds the write lock: wait this long

_KEY_RE = re.compile(r"^[0-9a-f]{16,128}$")
_SHARD_RE = re.compile(r"^[0-9a-f]{2}$")


class CacheError(Exception):
    """The cache's database cannot be used (not a SQLite database, unreadable); the message names the file."""


class ResponseCache:
    """Disk cache of JSON objects keyed by a hex digest. Safe to share between threads and processes."""

    def __init__(self, directory: str | os.PathLike[str], *, background: bool = False) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.database = self.directory / DATABASE
        self.background = background
        self._lock = threading.Lock()                    # the reading connection, and the writer's state
        self._reader: Optional[sqlite3.Connection] = None
        self._pending: dict[str, bytes] = {}             # handed to the writer thread, not committed yet
        self._queued: list[str] = []                     # their keys, in order
        self._since = 0.0                                # when the oldest queued entry was put
        self._wake = threading.Condition(self._lock)
        self._busy = 0                                   # entries the writer took and has not committed yet
        self._stop = False
        self._writer: Optional[threading.Thread] = None
        with self._lock:
            migrate_files(self.directory, self._connection())

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.directory)!r})"

    # ------------------------------------------------------------ connections
    def _connection(self) -> sqlite3.Connection:
        """The reading (and, without a writer thread, writing) connection; made on first use (callers hold the lock)."""
        if self._reader is None:
            self._reader = connect(self.database)
        return self._reader

    # ------------------------------------------------------------ reading
    def get(self, key: str) -> Optional[dict[str, Any]]:
        """The stored object, or None if absent or unreadable (a corrupt entry is a miss)."""
        check_key(key)
        pending = self._pending.get(key) if self._pending else None   # a dict read is atomic under the GIL
        if pending is not None:
            return json.loads(pending)
        with self._lock:
            row = _read(self._connection(), key, self.database)
        if row is None:
            return None
        try:
            obj = json.loads(row)
        except (UnicodeDecodeError, ValueError):
            log.warning("cache entry %s of %s is corrupt; treating as a miss", key[:12], self.database)
            return None
        if not isinstance(obj, dict):
            log.warning("cache entry %s of %s is not a JSON object; treating as a miss", key[:12], self.database)
            return None
        return obj

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def keys(self) -> Iterator[str]:
        """Every committed key (and those still waiting for their commit)."""
        self.flush()
        with self._lock:
            found = [k for (k,) in self._connection().execute("SELECT key FROM responses")]
        return iter(found)

    # ------------------------------------------------------------ writing
    def put(self, key: str, payload: dict[str, Any]) -> None:
        """Store ``payload`` (a JSON-serialisable dict) under ``key``: committed before this returns, or in
        background mode within ``COMMIT_SECONDS`` (visible to ``get`` at once)."""
        if not isinstance(payload, dict):
            raise TypeError("cache payload must be a dict")
        check_key(key)
        data = json.dumps(redact_obj(payload), ensure_ascii=False, sort_keys=True).encode("utf-8")
        if not self.background:
            with self._lock:
                _commit(self._connection(), [(key, data)], self.database)
            return
        with self._lock:
            self._pending[key] = data
            self._queued.append(key)
            if len(self._queued) == 1:
                self._since = time.monotonic()
            if self._writer is None:
                self._stop = False
                self._writer = threading.Thread(target=self._drain, name="carryon-cache-writer", daemon=True)
                self._writer.start()
            elif len(self._queued) in (1, COMMIT_COUNT):   # the writer may be asleep: wake it for a new batch
                self._wake.notify()

    def flush(self) -> None:
        """Wait until every queued entry is committed (background mode); a no-op otherwise."""
        with self._lock:
            if self._writer is None:
                return
            self._since = 0.0                           # commit what waits now
            self._wake.notify()
            self._wake.wait_for(lambda: not self._queued and not self._busy)

    def close(self) -> None:
        """Commit what waits, stop the writer thread and close the database (a later call opens it again)."""
        with self._lock:
            writer, self._writer = self._writer, None
            self._stop = True
            self._wake.notify_all()
        if writer is not None:
            writer.join()
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None

    def _due(self) -> bool:
        """A batch is due: enough entries wait, or the oldest has waited long enough, or the cache closes."""
        return bool(self._queued) and (self._stop or len(self._queued) >= COMMIT_COUNT
                                       or time.monotonic() - self._since >= COMMIT_SECONDS)

    def _drain(self) -> None:
        """The writer thread: commit the queued entries in batches, on a connection of its own."""
        conn = connect(self.database)
        try:
            while True:
                with self._lock:
                    while not self._due():
                        if self._stop and not self._queued:
                            self._wake.notify_all()
                            return
                        wait = None if not self._queued else max(0.0, self._since + COMMIT_SECONDS - time.monotonic())
                        self._wake.wait(wait)
                    keys, self._queued = self._queued, []
                    batch = [(k, self._pending[k]) for k in dict.fromkeys(keys)]
                    self._busy = len(batch)
                try:
                    _commit(conn, batch, self.database)
                except CacheError as exc:
                    log.warning("%s; %d answer(s) will be asked again", exc, len(batch))
                finally:
                    self._finish(batch)
        finally:
            conn.close()

    def _finish(self, batch: list[tuple[str, bytes]]) -> None:
        """A batch is committed (or failed): drop it from the pending entries, wake flush()."""
        with self._lock:
            for key, data in batch:
                if self._pending.get(key) is data:
                    del self._pending[key]
            self._busy = 0
            self._wake.notify_all()


def check_key(key: str) -> None:
    if not isinstance(key, str) or not _KEY_RE.match(key):
        raise ValueError(f"invalid cache key {key!r}: expected a lowercase hex digest")


def connect(database: Path) -> sqlite3.Connection:
    """A connection to the cache's database (made, in WAL mode, when absent); a file that is not one is a
    CacheError naming it."""
    try:
        conn = sqlite3.connect(database, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID")
    except sqlite3.DatabaseError as exc:
        raise CacheError(f"{database} is not a response cache this version reads ({exc}); move it away to start "
                         "the cache again (every call it held is then paid again)") from None
    return conn


def _read(conn: sqlite3.Connection, key: str, database: Path) -> Optional[bytes]:
    try:
        row = conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
    except sqlite3.DatabaseError as exc:
        log.warning("cache %s unreadable (%s); treating entry %s as a miss", database, exc, key[:12])
        return None
    return None if row is None else bytes(row[0])


def _commit(conn: sqlite3.Connection, batch: list[tuple[str, bytes]], database: Path) -> None:
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", batch)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        raise CacheError(f"cache {database}: {len(batch)} entr(ies) not written ({exc})") from None


# ---------------------------------------------------------------- the per-file layout of earlier versions
def migrate_files(directory: Path, conn: sqlite3.Connection) -> int:
    """Move the entries of the per-file layout (``DIR/ab/<key>.json``) into the database, once: every readable
    entry is committed first, then the files are removed (a kill in between leaves files that the next open
    moves again, the same entries). Unreadable entries and temporary files of interrupted writes go with them
    (the calls they would have held are asked again). Returns how many entries were moved."""
    shards = [p for p in directory.iterdir() if p.is_dir() and _SHARD_RE.match(p.name)]
    if not shards:
        return 0
    rows = []
    for shard in shards:
        for path in shard.glob("*.json"):
            if not _KEY_RE.match(path.stem):
                continue
            try:
                obj = json.loads(path.read_bytes().decode("utf-8"))
            except (OSError, UnicodeDecodeError, ValueError):
                continue
            if isinstance(obj, dict):
                rows.append((path.stem, json.dumps(obj, ensure_ascii=False, sort_keys=True).encode("utf-8")))
    if rows:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT OR IGNORE INTO responses (key, value) VALUES (?, ?)", rows)
        conn.execute("COMMIT")
    for shard in shards:
        shutil.rmtree(shard, ignore_errors=True)
    log.warning("cache %s: moved %d entr(ies) of the per-file layout into %s (once)", directory, len(rows), DATABASE)
    return len(rows)


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
