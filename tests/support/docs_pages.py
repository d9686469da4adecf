"""What the tests read out of docs/: the names of docs/layout.md's run folder table."""
from __future__ import annotations

import re

from support.shared_data import REPO

LAYOUT = REPO / "docs" / "layout.md"


def run_folder_table() -> list[str]:
    """The names in the first column of docs/layout.md's run folder table (`a`, `b` in one cell give both)."""
    text = LAYOUT.read_text(encoding="utf-8").split("\n## A run folder\n", 1)[1]
    table = text.split("\n\n| `compare --out DIR`", 1)[0]
    return [name for cell in re.findall(r"^\| (`[^|]+`) \|", table, re.M) for name in re.findall(r"`([^`]+)`", cell)]
