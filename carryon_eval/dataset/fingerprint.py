"""Where `datasets` prepares a local dataset folder: a cache folder per content fingerprint.

`datasets` caches a local folder by its name, so a rebuilt folder (or another folder of the same name)
could give stale rows, and its cache may hold several versions under one name. The loader used to
re-prepare every local folder on every run (``force_redownload``). Instead, ``cache_dir(folder)`` names
a cache folder by the folder's fingerprint, the sha256 over every file of the folder (relative path,
size and content; hidden files and folders left out): the same files reuse their prepared copy, changed
files get a fresh one, and a stale copy can never be read. Old copies stay in the `datasets` cache until
it is cleaned (``<datasets cache>/carryonbench-local/``).
"""
from __future__ import annotations

import hashlib
from pathlib import Path


def folder_fingerprint(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_dir() or any(part.startswith(".") for part in rel.parts):
            continue
        try:
            digest.update(f"{rel.as_posix()}\0{path.stat().st_size}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        except OSError as exc:         # a read that fails mid-file names no file: name it here
            raise OSError(exc.errno, exc.strerror, str(path)) from None
    return digest.hexdigest()


def cache_dir(folder: Path) -> Path:
    """The `datasets` cache folder for exactly these files."""
    import datasets

    return Path(datasets.config.HF_DATASETS_CACHE) / "carryonbench-local" / folder_fingerprint(folder)[:32]
