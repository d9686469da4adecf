"""The response cache's background writer: entries are visible at once, on disk after flush/close."""
from __future__ import annotations

import hashlib
import json
import threading

from carryon_eval.model.cache import ResponseCache


def key(i: int) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()


def test_background_writes_are_visible_at_once_and_on_disk_after_close(tmp_path):
    cache = ResponseCache(tmp_path, background=True)
    for i in range(50):
        cache.put(key(i), {"text": f"reply {i}"})
        assert cache.get(key(i)) == {"text": f"reply {i}"}        # before the writer got to it
    cache.close()
    fresh = ResponseCache(tmp_path)
    assert all(fresh.get(key(i)) == {"text": f"reply {i}"} for i in range(50))
    assert not list(tmp_path.rglob("*.tmp"))                      # nothing half-written left behind


def test_a_put_is_in_the_file_at_once_and_fsynced_by_another_thread(tmp_path, monkeypatch):
    """What a killed process must not lose is written before put returns (a SIGKILL keeps what the kernel
    holds); only the fsyncs, which wait for the disk, run on the writer thread."""
    import carryon_eval.model.cache as C

    syncers: list[str] = []
    original = C._fsync_file

    def spy(path: str) -> None:
        syncers.append(threading.current_thread().name)
        original(path)

    monkeypatch.setattr(C, "_fsync_file", spy)
    cache = ResponseCache(tmp_path, background=True)
    cache.put(key(1), {"text": "a"})
    assert json.loads(cache.path(key(1)).read_text()) == {"text": "a"}     # on disk before any flush
    cache.flush()
    assert syncers == ["carryon-cache-writer"] and ResponseCache(tmp_path).get(key(1)) == {"text": "a"}
    cache.put(key(2), {"text": "b"})          # still usable after flush; close stops the thread
    cache.close()
    assert ResponseCache(tmp_path).get(key(2)) == {"text": "b"}


def test_default_cache_writes_synchronously(tmp_path):
    cache = ResponseCache(tmp_path)
    cache.put(key(3), {"text": "c"})
    assert ResponseCache(tmp_path).get(key(3)) == {"text": "c"}


def test_a_full_disk_is_said_once_per_cache_not_once_per_entry(tmp_path, caplog):
    """Every write fails alike on a full disk (here: each entry's folder is a file, so none can be made): the
    first is said, the others are asked again as it says, without a line each."""
    cache = ResponseCache(tmp_path, background=True)
    for i in range(20):
        (tmp_path / key(i)[:2]).write_text("a file where the entry's folder goes")
    for i in range(20):
        cache.put(key(i), {"text": f"reply {i}"})
    cache.close()
    said = [r.getMessage() for r in caplog.records if "not written" in r.getMessage()]
    assert len(said) == 1 and "it and any other not written will be asked again" in said[0], said
    assert all(ResponseCache(tmp_path).get(key(i)) is None for i in range(20))
