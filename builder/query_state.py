"""What the LLM stages know about one query as it moves through them, and the decisions they record.

Each stage reads a QueryState (intent, answers, candidate items, ...), adds to it, and records every
keep/drop decision as a Row; builder/provenance.py turns the rows into the provenance config. A query
that a stage drops keeps its rows but takes part in no later stage.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Optional

from .sources.record import SourceQuery


@dataclass
class Item:
    """One checklist item of the merged checklist."""
    n: int                  # 1-based position in the merged checklist
    question: str
    category: str
    final_id: Optional[str] = None


@dataclass
class Row:
    """One keep/drop decision (a provenance row before its ids are known)."""
    stage: str
    decision: str
    reason: str
    detail: str
    item: Optional[Item] = None
    unit: str = ""          # "answer" or "item" for unit-level rows, "" for query-level ones


@dataclass
class QueryState:
    q: SourceQuery
    rows: list[Row] = field(default_factory=list)
    intent: str = ""
    oracle_user: str = ""                       # the oracle request's user message (query + intent)
    answers: dict[int, str] = field(default_factory=dict)    # generator index -> answer text
    harmless: list[int] = field(default_factory=list)
    candidates: list[tuple[str, str]] = field(default_factory=list)
    merged: list[Item] = field(default_factory=list)
    final: list[Item] = field(default_factory=list)
    malicious_intent: str = ""                  # triplets: the unsafe context's intent, user's voice
    paraphrases: list[str] = field(default_factory=list)    # of the bare query, its ambiguity kept
    dropped_at: Optional[str] = None

    def add(self, stage: str, decision: str, reason: str, detail: str, item: Optional[Item] = None,
            unit: str = "") -> None:
        self.rows.append(Row(stage, decision, reason, detail, item, "item" if item is not None else unit))

    def drop(self, stage: str, reason: str, detail: str) -> None:
        self.dropped_at = stage
        self.add(stage, "dropped", reason, detail)


@dataclass
class Outcome:
    """What one stage call gave: a usable value, or why there is none."""
    value: Any = None
    problem: Optional[str] = None      # why nothing usable came back (None on success)
    failed_call: bool = False          # the endpoint itself failed (EndpointError)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def plural(n: int, word: str) -> str:
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word[:-1]}ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else f"{n} {word}s"


def short(text: str, n: int = 40) -> str:
    """A reply fragment for a reason: one line, at most ``n`` characters, quoted."""
    text = " ".join(text.split())
    return repr(text if len(text) <= n else text[: n - 3] + "...")
