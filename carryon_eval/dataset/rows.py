"""The columns of a dataset row that the loader, the subsets and the reports read: every table's ids, a flow's moves,
length and condition, a conversation's optional condition, a query's text, domain and intents, a checklist item's
question. A row is read into ``RowKeys`` where
these are needed; the row itself is kept as the dataset has it (extra columns included, and hashed as read).

    keys = RowKeys.from_json(row)        # keys.flow_id, keys.n_turns, ... (None where the row lacks the column)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from carryon_eval.codec import Record


@dataclass(frozen=True)
class RowKeys(Record):
    """A row's identifying columns, each as the dataset has it (None where the row lacks it)."""
    query_id: Any = None
    item_id: Any = None
    flow_id: Any = None
    conversation_id: Any = None
    condition: Any = None
    moves: Any = None
    n_turns: Any = None
    benign_intent: Any = None
    malicious_intent: Any = None
    query: Any = None
    domain: Any = None
    question: Any = None


def keys(row: Mapping[str, Any]) -> RowKeys:
    """The row's ``RowKeys``."""
    return RowKeys.from_json(row)
