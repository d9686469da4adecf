"""The response cache's committed entries, read straight from its SQLite database by a connection of the test's
own (what another process finds there), for the tests that look inside the cache."""
from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from carryon_eval.model.cache import DATABASE


def stored(cache: Any) -> dict[str, dict[str, Any]]:
    """{key: payload} of a ResponseCache, or of the cache folder given as a path (e.g. RUNDIR/cache)."""
    database = cache.database if hasattr(cache, "database") else Path(os.fspath(cache)) / DATABASE
    with contextlib.closing(sqlite3.connect(database)) as conn:
        return {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM responses")}
