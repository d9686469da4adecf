"""The builder's data sources, each one record (builder/sources/record.py): CASE-Bench (gated) and
OpenSafeIntent (Apache-2.0). The pipeline, the stages and the CLI never name a source: ``get_source`` gives one
by its --source-format name and ``detect`` picks the one whose files a path holds."""
from __future__ import annotations

from pathlib import Path

from .casebench import CASEBENCH
from .opensafeintent import OPENSAFEINTENT
from .record import CardText, Source, SourceError, SourceQuery, file_sha256, query_id_for

SOURCES: dict[str, Source] = {s.name: s for s in (CASEBENCH, OPENSAFEINTENT)}
SOURCE_FORMATS = tuple(SOURCES)

__all__ = ["CardText", "SOURCES", "SOURCE_FORMATS", "Source", "SourceError", "SourceQuery", "detect", "file_sha256",
           "get_source", "query_id_for"]


def get_source(name: str) -> Source:
    if name not in SOURCES:
        raise SourceError(f"--source-format {name!r}: expected one of {', '.join(SOURCES)}")
    return SOURCES[name]


def detect(path: Path) -> Source:
    """The source whose files ``path`` holds. When none fits, CASE-Bench (the default format), whose reader then
    names what is wrong in one line; SourceError (one line) when several fit."""
    fits = [s for s in SOURCES.values() if s.looks_like(Path(path))]
    if len(fits) > 1:
        raise SourceError(f"{path}: cannot tell the source format ({' and '.join(s.name for s in fits)} fit); "
                          f"pass --source-format {'|'.join(SOURCES)}")
    return fits[0] if fits else CASEBENCH
