"""The response cache: one SQLite database per folder; the background writer's entries are visible at once and
committed in batches; a folder of the per-file layout of earlier versions is moved into the database once."""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import sqlite3
import threading

import pytest
from support.cache_entries import stored

from carryon_eval.model import cache as C
from carryon_eval.model.cache import DATABASE, CacheError, ResponseCache


def key(i: int) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()


def test_background_writes_are_visible_at_once_and_committed_after_close(tmp_path):
    cache = ResponseCache(tmp_path, background=True)
    for i in range(50):
        cache.put(key(i), {"text": f"reply {i}"})
        assert cache.get(key(i)) == {"text": f"reply {i}"}        # before the writer got to it
    cache.close()
    assert stored(tmp_path) == {key(i): {"text": f"reply {i}"} for i in range(50)}
    fresh = ResponseCache(tmp_path)
    assert all(fresh.get(key(i)) == {"text": f"reply {i}"} for i in range(50))
    fresh.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [DATABASE]     # the WAL folded back in: one file


def test_puts_on_an_event_loop_are_committed_once_per_turn_of_the_loop(tmp_path, monkeypatch):
    """Background mode: the puts of one turn of an event loop are one commit, made on the loop's own thread right
    after that turn (no other thread to wait for, no fsync); COMMIT_COUNT waiting entries are committed at once."""
    commits: list[tuple[str, int]] = []
    original = C._commit

    def spy(conn, batch, database):
        commits.append((threading.current_thread().name, len(batch)))
        original(conn, batch, database)

    monkeypatch.setattr(C, "_commit", spy)
    cache = ResponseCache(tmp_path, background=True)

    async def one_turn() -> tuple[int, int]:
        for i in range(100):
            cache.put(key(i), {"text": str(i)})
        before = len(stored(tmp_path))                 # not committed while this turn runs ...
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return before, len(stored(tmp_path))           # ... and committed right after it, all at once

    assert asyncio.run(one_turn()) == (0, 100)
    assert commits == [(threading.current_thread().name, 100)]

    async def many() -> None:
        for i in range(C.COMMIT_COUNT + 5):
            cache.put(key(1000 + i), {"text": str(i)})
    asyncio.run(many())
    assert [n for _, n in commits[1:]] == [C.COMMIT_COUNT, 5]
    cache.put(key(-1), {"text": "no loop"})          # no running loop: committed before put returns
    assert stored(tmp_path)[key(-1)] == {"text": "no loop"}
    cache.close()
    assert len(stored(tmp_path)) == 100 + C.COMMIT_COUNT + 5 + 1


def test_default_cache_commits_each_put(tmp_path):
    cache = ResponseCache(tmp_path)
    cache.put(key(3), {"text": "c"})
    assert stored(tmp_path) == {key(3): {"text": "c"}}
    assert ResponseCache(tmp_path).get(key(3)) == {"text": "c"}


def test_a_corrupt_entry_is_a_miss_and_the_next_put_replaces_it(tmp_path, caplog):
    cache = ResponseCache(tmp_path)
    cache.put(key(1), {"text": "a"})
    with contextlib.closing(sqlite3.connect(tmp_path / DATABASE)) as conn, conn:
        conn.execute("UPDATE responses SET value = ? WHERE key = ?", (b'{"text": "hal', key(1)))
    with caplog.at_level(logging.WARNING, logger="carryon.client"):
        assert cache.get(key(1)) is None
    assert "corrupt" in caplog.text
    cache.put(key(1), {"text": "again"})
    assert cache.get(key(1)) == {"text": "again"}


def test_a_file_that_is_not_a_database_is_one_error_naming_it(tmp_path):
    (tmp_path / DATABASE).write_bytes(b"this is not a database, it is a note" * 100)
    with pytest.raises(CacheError) as info:
        ResponseCache(tmp_path)
    assert str(tmp_path / DATABASE) in str(info.value) and "\n" not in str(info.value)


def test_the_per_file_layout_is_moved_into_the_database_once(tmp_path, caplog):
    """A cache folder of earlier versions (DIR/ab/<key>.json, and a temporary file of a write cut short) opens
    with every readable entry in the database and no file of the old layout left; the move is said once."""
    entries = {key(i): {"text": f"old {i}", "finish_reason": "stop"} for i in range(30)}
    for k, payload in entries.items():
        (tmp_path / k[:2]).mkdir(exist_ok=True)
        (tmp_path / k[:2] / f"{k}.json").write_text(json.dumps(payload, sort_keys=True))
    shard = tmp_path / key(0)[:2]
    (shard / f"{key(99)}.json").write_text('{"text": "cut sh')              # unreadable: asked again
    (shard / f".{key(0)[:8]}.12345.1-0.tmp").write_text('{"text"')       # an interrupted write
    with caplog.at_level(logging.WARNING, logger="carryon.client"):
        cache = ResponseCache(tmp_path, background=True)
    assert [r.getMessage() for r in caplog.records if "per-file layout" in r.getMessage()] == [
        f"cache {tmp_path}: moved 30 entr(ies) of the per-file layout into {DATABASE} (once)"]
    assert all(cache.get(k) == payload for k, payload in entries.items()) and cache.get(key(99)) is None
    cache.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [DATABASE]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="carryon.client"):
        ResponseCache(tmp_path).close()
    assert "per-file" not in caplog.text


def test_a_full_disk_is_said_once_per_cache_not_once_per_commit(tmp_path, caplog):
    """Every commit fails alike on a full disk (here: SQLite's own page limit, which fails a commit with
    SQLITE_FULL as a full disk does): the first is said, the others are asked again as it says, without a line
    each; the database stays usable."""
    cache = ResponseCache(tmp_path, background=True)
    conn = cache._connection()
    conn.execute(f"PRAGMA max_page_count={conn.execute('PRAGMA page_count').fetchone()[0]}")

    async def one_commit_per_turn() -> None:
        for i in range(20):
            cache.put(key(i), {"text": f"reply {i} " + "x" * 5000})
            await asyncio.sleep(0)
            await asyncio.sleep(0)

    with caplog.at_level(logging.WARNING, logger="carryon.client"):
        asyncio.run(one_commit_per_turn())
        cache.close()
    said = [r.getMessage() for r in caplog.records if "not written" in r.getMessage()]
    assert len(said) == 1 and "database or disk is full" in said[0], said
    assert "they and any other not written will be asked again" in said[0]
    fresh = ResponseCache(tmp_path)
    assert all(fresh.get(key(i)) is None for i in range(20))
    fresh.put(key(1), {"text": "room again"})
    assert fresh.get(key(1)) == {"text": "room again"}
