"""Content-addressed, crash-safe disk cache of model replies: one SQLite database per cache folder.

Layout: ``DIR/responses.sqlite3`` (the standard library's sqlite3, WAL mode), one row per key (a sha256 hex
digest, see ``carryon_eval.model.client.cache_key``) holding the reply as JSON. While the cache is open SQLite
keeps its ``-wal`` and ``-shm`` files beside it; the last connection to close folds them back in.

- ``ResponseCache(dir)`` commits each ``put`` before it returns (the builder's ``DIR.cache``, the batch import).
- ``ResponseCache(dir, background=True)`` (the evaluator's run folders) batches the commits: a ``put`` made on a
  thread running an event loop is committed with every other put of the same turn of the loop, in one commit
  the loop runs as soon as the callbacks of that turn are done (``get`` sees an entry at once); ``COMMIT_COUNT``
  waiting entries are committed at once; a put without a running loop commits before it returns. So an answer
  is committed within a turn of the loop of its arrival, on the loop's own thread (no other thread has to be
  scheduled first), and an event loop never waits for a disk flush: a checkpointer thread folds the WAL into the
  database every ``CHECKPOINT_SECONDS`` (the one place SQLite syncs to disk).
- Nothing is fsynced per call (``synchronous=NORMAL``: a commit is in the kernel when it returns). A process killed
  at any point (SIGKILL included) leaves every committed entry and a consistent database; what it loses is the
  answers of the loop turn it died in, calls still in flight, which the next run asks again. A power loss may lose
  the last commits, never corrupt one.
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

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import sqlite3
import threading
from pathlib import Path
from typing import Any, Optional

from carryon_eval.model.endpoint import ChatResult, EndpointConfig, GenParams, cache_key, keyed_request
from carryon_eval.model.redact import redact_obj

log = logging.getLogger("carryon.client")

DATABASE = "responses.sqlite3"
COMMIT_COUNT = 256           # background mode: a commit as soon as this many entries wait
CHECKPOINT_SECONDS = 1.0     # background mode: the WAL folded into the database this long after a commit
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
        self._lock = threading.Lock()                    # the connection and the waiting entries
        self._conn: Optional[sqlite3.Connection] = None
        self._pending: dict[str, bytes] = {}             # put, not committed yet
        self._scheduled = False                          # a commit is scheduled on the putting loop
        self._checkpoints: Optional[_Checkpointer] = None
        self._unwritten = 0                              # entries a commit failed for (said once per cache)
        with self._lock:
            migrate_files(self.directory, self._connection())

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.directory)!r})"

    def _connection(self) -> sqlite3.Connection:
        """The connection (made on first use; callers hold the lock). In background mode SQLite does not
        checkpoint on commit (which would sync the disk on the committing thread): the checkpointer does."""
        if self._conn is None:
            self._conn = connect(self.database)
            if self.background:
                self._conn.execute("PRAGMA wal_autocheckpoint=0")
        return self._conn

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

    # ------------------------------------------------------------ writing
    def put(self, key: str, payload: dict[str, Any]) -> None:
        """Store ``payload`` (a JSON-serialisable dict) under ``key``: committed before this returns, or in
        background mode on an event loop's thread when the loop's current turn is done (visible to ``get`` at once)."""
        if not isinstance(payload, dict):
            raise TypeError("cache payload must be a dict")
        check_key(key)
        data = json.dumps(redact_obj(payload), ensure_ascii=False, sort_keys=True).encode("utf-8")
        loop = _running_loop() if self.background else None
        with self._lock:
            self._pending[key] = data
            if loop is not None and len(self._pending) < COMMIT_COUNT:
                if not self._scheduled:
                    self._scheduled = True
                    loop.call_soon(self.flush)
                return
            self._commit_pending()

    def flush(self) -> None:
        """Commit every entry put and not committed yet."""
        with self._lock:
            self._commit_pending()

    def close(self) -> None:
        """Commit what waits, stop the checkpointer and close the database, folding its WAL in (a later call opens
        it again)."""
        with self._lock:
            self._commit_pending()
            checkpoints, self._checkpoints = self._checkpoints, None
        if checkpoints is not None:
            checkpoints.stop()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _not_written(self, exc: CacheError, count: int) -> None:
        """Say once per cache that entries go unwritten (a full disk fails every commit alike)."""
        self._unwritten += count
        if self._unwritten == count:
            log.warning("%s; they and any other not written will be asked again", exc)

    def _commit_pending(self) -> None:
        """Commit the waiting entries (callers hold the lock); a failed commit is said, its calls asked again."""
        self._scheduled = False
        if not self._pending:
            return
        batch, self._pending = list(self._pending.items()), {}
        try:
            _commit(self._connection(), batch, self.database)
        except CacheError as exc:
            self._not_written(exc, len(batch))
            return
        if self.background:
            if self._checkpoints is None:
                self._checkpoints = _Checkpointer(self.database)
            self._checkpoints.committed()


class _Checkpointer:
    """A thread folding the WAL into the database every CHECKPOINT_SECONDS after a commit (PASSIVE: it never waits
    for, or holds up, a writer), so that the committing thread never syncs the disk itself."""

    def __init__(self, database: Path) -> None:
        self.database = database
        self._dirty = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="carryon-cache-checkpoint", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        self._dirty.set()

    def stop(self) -> None:
        self._stopped.set()
        self._dirty.set()
        self._thread.join()

    def _run(self) -> None:
        conn: Optional[sqlite3.Connection] = None
        try:
            while not self._stopped.is_set():
                self._dirty.wait()
                if self._stopped.wait(CHECKPOINT_SECONDS):
                    return
                self._dirty.clear()
                try:
                    conn = conn or connect(self.database)
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except (sqlite3.Error, CacheError) as exc:
                    log.warning("cache %s: checkpoint failed (%s); the next one folds it in", self.database, exc)
        finally:
            if conn is not None:
                conn.close()


def _running_loop() -> Any:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


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
        name = getattr(exc, "sqlite_errorname", "")
        if not name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")):
            _why_not_written(database, exc)
        raise CacheError(f"{database} is not a response cache this version reads ({exc}); move it away to start "
                         "the cache again (every call it held is then paid again)") from None
    return conn


PROBE_BYTES = 64 * 1024      # more than SQLite's shared-memory index (32 KiB), the first file it grows


def _why_not_written(database: Path, exc: sqlite3.Error) -> None:
    """A database that cannot be opened for a reason of the disk (SQLite says "disk I/O error", never which):
    the OSError a write of about the size SQLite needs meets in its folder (a full disk, a file-size limit, a
    folder this user may not write), naming the database; else a CacheError with SQLite's words."""
    probe = database.with_name(f".{database.name}.{os.getpid()}.probe")
    try:
        with open(probe, "wb") as fh:
            fh.write(bytes(PROBE_BYTES))
    except OSError as cause:
        raise OSError(cause.errno, cause.strerror, str(database)) from None
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    raise CacheError(f"{database} cannot be opened ({exc})") from None


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
        conn.executemany("INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", batch)
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        if conn.in_transaction:           # SQLite rolls back some failures itself (a full disk), not all
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
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
           given: dict[str, Any]) -> tuple[str, GenParams, Optional[ChatResult]]:
    """(cache key, full generation params, the cached reply or None) of one chat call, keyed exactly as
    the HTTP client keys it; for wrappers that look into the cache before (or instead of) calling. Given the
    endpoint's config (not only its model name), the role's request options are keyed as the client keys them."""
    params = GenParams.given(given)
    if isinstance(model, EndpointConfig):
        key, _, params = keyed_request(model, messages, params)
    else:
        key = cache_key(model, messages, params)
    payload = cache.get(key) if cache is not None else None
    return key, params, ChatResult.from_payload(payload) if payload is not None else None
