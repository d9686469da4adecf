"""A file as the manifests pin it: its sha256 and size (MANIFEST.json, croissant.json, verify, publish)."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any


def file_entry(path: Path) -> dict[str, Any]:
    data = Path(path).read_bytes()
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
