"""A scripted Ben-Util judge that answers the per-item and the grouped prompts consistently.

The verdict of (reply, item) is a fixed function of the two texts (``verdict``), so a per-item run and a
grouped run of the same replies must give the same verdicts. ``grouped_answer`` answers a grouped prompt (the
items it lists as ``[id] question``) with one JSON object keyed by id; ``omit`` and ``mislabel`` make it leave
items out or name them by a wrong id, for the tests of the re-ask."""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Callable, Optional

from support.rollout_data import evaluator_handler
from support.scripted_server import last_user_text

PER_ITEM = "Checklist item: "
GROUPED = "specific pieces of information"


def reply_of(prompt: str) -> str:
    return prompt.split("<reply>\n", 1)[1].split("\n</reply>", 1)[0]


def verdict(reply: str, question: str) -> bool:
    """Yes or no, decided by the texts alone (about half of each)."""
    return hashlib.sha256(f"{reply}|{question}".encode()).digest()[0] % 2 == 0


def grouped_items(prompt: str) -> list[tuple[str, str]]:
    return re.findall(r"^\[([^\]]+)\] (.+)$", prompt.split("Checklist:\n", 1)[1], re.M)


def grouped_answer(prompt: str, omit: Callable[[str, str], bool] = lambda r, i: False,
                   mislabel: Callable[[str, str], bool] = lambda r, i: False) -> str:
    reply = reply_of(prompt)
    answer = {}
    for item_id, question in grouped_items(prompt):
        if omit(reply, item_id):
            continue
        key = f"{item_id}-x" if mislabel(reply, item_id) else item_id
        answer[key] = "yes" if verdict(reply, question) else "no"
    return json.dumps(answer)


def per_item_answer(prompt: str) -> str:
    question = prompt.rsplit("Checklist item: ", 1)[1].split("\n\n", 1)[0].strip()
    return "yes" if verdict(reply_of(prompt), question) else "no"


def consistent_handler(omit: Optional[Callable[[str, str], bool]] = None,
                       mislabel: Optional[Callable[[str, str], bool]] = None,
                       alone: Optional[Callable[[str], Any]] = None) -> Callable[[dict], Any]:
    """evaluator_handler with this module's Ben-Util judge (``alone``: another answer to per-item prompts)."""
    def handler(body: dict) -> Any:
        if body["model"] == "jdg":
            text = last_user_text(body)
            if GROUPED in text:
                return grouped_answer(text, omit or (lambda r, i: False), mislabel or (lambda r, i: False))
            if PER_ITEM in text:
                return alone(text) if alone is not None else per_item_answer(text)
        return evaluator_handler(body)
    return handler
