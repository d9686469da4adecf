"""Whether a local dataset folder must be prepared again by `datasets`, decided by a fingerprint.

`datasets` caches a local folder by its name only, so a rebuilt folder (or another folder of the same
name) would silently give stale rows. Instead of re-preparing every local folder on every run (it used
to be ``force_redownload`` each time), the loader asks ``download_mode(folder, config)``:

- the fingerprint is the sha256 over every file of the folder (relative path and content; hidden files
  and folders left out);
- a marker per folder NAME (as `datasets` keys its cache) in ``<datasets cache>/carryonbench-fingerprints/``
  remembers the fingerprint each config was last prepared from;
- same fingerprint: None (reuse `datasets`' prepared copy); otherwise "force_redownload", and the marker
  is updated once the config has loaded (``remember``).
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Optional

FORCE = "force_redownload"


def folder_fingerprint(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_dir() or any(part.startswith(".") for part in rel.parts):
            continue
        digest.update(f"{rel.as_posix()}\0{path.stat().st_size}\0".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@lru_cache(maxsize=1)
def _markers() -> Path:
    import datasets

    return Path(datasets.config.HF_DATASETS_CACHE) / "carryonbench-fingerprints"


def _marker(folder: Path) -> Path:
    return _markers() / f"{hashlib.sha256(folder.name.encode()).hexdigest()[:24]}.json"


def _read(folder: Path) -> dict[str, str]:
    try:
        data = json.loads(_marker(folder).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def download_mode(folder: Path, config: str, fingerprint: str) -> Optional[str]:
    """None when `datasets` prepared this config from exactly these files last time, else FORCE."""
    return None if _read(folder).get(config) == fingerprint else FORCE


def remember(folder: Path, config: str, fingerprint: str) -> None:
    """Record that `config` of `folder` is now prepared from `fingerprint` (best effort, atomic)."""
    data = {**_read(folder), config: fingerprint}
    target = _marker(folder)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".fp.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, target)
    except OSError:
        pass            # no marker: the next run prepares the folder again, as before
