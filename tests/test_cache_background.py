"""The response cache's background writer: entries are visible at once, on disk after flush/close."""
from __future__ import annotations

import hashlib
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


def test_puts_are_written_by_another_thread(tmp_path):
    writers: list[str] = []
    cache = ResponseCache(tmp_path, background=True)
    original = cache._write

    def spy(k: str, data: bytes) -> None:
        writers.append(threading.current_thread().name)
        original(k, data)

    cache._write = spy  # type: ignore[method-assign]
    cache.put(key(1), {"text": "a"})
    cache.flush()
    assert writers == ["carryon-cache-writer"] and ResponseCache(tmp_path).get(key(1)) == {"text": "a"}
    cache.put(key(2), {"text": "b"})          # still usable after flush; close stops the thread
    cache.close()
    assert ResponseCache(tmp_path).get(key(2)) == {"text": "b"}


def test_default_cache_writes_synchronously(tmp_path):
    cache = ResponseCache(tmp_path)
    cache.put(key(3), {"text": "c"})
    assert ResponseCache(tmp_path).get(key(3)) == {"text": "c"}
