"""Every record written to a run folder or read back from it, typed: run.json, judge.json, results.json.

Readers never walk these files as dicts by string paths: they load the record (`RunMeta.read(path)`,
...) and use its fields. Each record has `to_json()` / `from_json()` and a `schema_version`; the
per-line records of the JSONL files (transcripts, judgments) live in carryon_eval.schema.
"""
from __future__ import annotations

from dataclasses import dataclass, field  # noqa: F401
from typing import Any, Optional  # noqa: F401

SCHEMA_VERSION = 1


# ======================================================================== run.json
# (section owned by the application-layer work: RunMeta and its parts)




# ======================================================================== judge.json
# (section owned by the scorers work: JudgeSummary and its parts)




# ======================================================================== results.json
# (section owned by the application-layer work: Results and its parts)
