"""Tolerant readers of the builder's stage replies: checklist items, verdict flags, WildGuard lines, intents,
answers, paraphrases, and the check that a reply does not repeat the builder's instructions.

These return (value, None) or (None, problem): the problem is a short reason that goes into the repair prompt and,
if repairs fail, into the provenance. Nothing here raises on a bad reply. JSON is found anywhere in a reply by
carryon_eval.parsing.extract_json, which the evaluator's readers share.
"""
from __future__ import annotations

import json
import re
from typing import Any, Optional, Sequence

from carryon_eval.parsing import as_bool, extract_json, strip_reasoning
from carryon_eval.schema import ITEM_CATEGORIES

_FLAT_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)
_LIST_LINE = re.compile(r"^\s*(?:\d{1,3}\s*[.):]|[-*\u2022])\s+(.+?)\s*$")
_BRACKET_PREFIX = re.compile(r"^\[([^\]]{2,40})\]\s*(.+)$")
_TAG_SUFFIX = re.compile(r"^(.+?)\s*(?:[\[(]\s*(?:category\s*:\s*)?([^\])]{2,40})[\])]|[-\u2013\u2014|]\s*"
                         r"category\s*:\s*(.{2,40}))\s*$", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"<[^<>]{2,60}>")
_ECHO = re.compile(r"\(CarryOnBench builder, (?:stage: \w+|repair)\)")   # the marker line of our prompts
MIN_QUESTION_WORDS = 3


def normalize_category(raw: Any) -> tuple[str, bool]:
    """(category, known): a case/spacing/plural-tolerant match to ITEM_CATEGORIES; unknown -> Other."""
    if not isinstance(raw, str) or not raw.strip():
        return "Other", False
    key = _cat_key(raw)
    for name in ITEM_CATEGORIES:
        if _cat_key(name) == key:
            return name, True
    return "Other", False


def _cat_key(s: str) -> str:
    s = re.sub(r"[^a-z]+", " ", s.lower()).strip()
    words = [w[:-1] if w.endswith("s") and len(w) > 3 else w for w in s.split()]
    return " ".join(words)


def _is_category(s: str) -> bool:
    return normalize_category(s)[1]


def _question_text(q: Any) -> str:
    """The item's question, or "" if it is not one (too short, a copied placeholder such as "...")."""
    if not isinstance(q, str):
        return ""
    q = " ".join(q.split())
    q = re.sub(r"^(?:\d{1,3}\s*[.):]|[-*\u2022])\s+", "", q)
    q = q.strip(" \"'`*")
    if len(re.findall(r"[A-Za-z]{2,}", q)) < MIN_QUESTION_WORDS or _PLACEHOLDER.fullmatch(q):
        return ""
    return q


def _entry(e: Any) -> Optional[tuple[str, Any]]:
    if isinstance(e, str):
        q = _question_text(e)
        return (q, None) if q else None
    if isinstance(e, dict):
        lower = {str(k).lower(): v for k, v in e.items()}
        q = next((lower[k] for k in ("question", "item", "text", "q", "checklist_item") if k in lower), None)
        cat = next((lower[k] for k in ("category", "type", "label", "tag") if k in lower), None)
        q = _question_text(q)
        return (q, cat) if q else None
    return None


def _list_lines(text: str) -> list[tuple[str, Any]]:
    out = []
    for line in text.splitlines():
        m = _LIST_LINE.match(line)
        if not m:
            continue
        body, cat = m.group(1).strip(), None
        bm = _BRACKET_PREFIX.match(body)
        if bm and _is_category(bm.group(1)):
            cat, body = bm.group(1), bm.group(2)
        else:
            tm = _TAG_SUFFIX.match(body)
            if tm and _is_category(tm.group(2) or tm.group(3) or ""):
                body, cat = tm.group(1), tm.group(2) or tm.group(3)
        q = _question_text(body)
        if q:
            out.append((q, cat))
    return out


def parse_items(text: Optional[str]) -> tuple[list[tuple[str, Any]], Optional[str]]:
    """[(question, raw category)] from a decomposer/merger reply, and a problem description if none."""
    value = extract_json(text)
    entries: Optional[list[Any]] = None
    if isinstance(value, dict):
        lower = {str(k).lower(): v for k, v in value.items()}
        for key in ("items", "checklist", "questions", "checklist_items"):
            if isinstance(lower.get(key), list):
                entries = lower[key]
                break
        if entries is None and _entry(value):
            entries = [value]
    elif isinstance(value, list):
        entries = value
    items: list[tuple[str, Any]] = []
    if entries is not None:
        items = [x for x in (_entry(e) for e in entries) if x]
    if not items:   # truncated JSON: salvage the complete item objects; else a numbered or bulleted list
        t = strip_reasoning(text)
        for m in _FLAT_OBJECT.finditer(t):
            try:
                x = _entry(json.loads(m.group(0)))
            except ValueError:
                continue
            if x:
                items.append(x)
        if not items:
            items = _list_lines(t)
    if not items:
        return [], "it contains no checklist items (expected a JSON object with a list of items)"
    return items, None


def parse_flag(text: Optional[str], keys: Sequence[str]) -> tuple[Optional[bool], Optional[str]]:
    """A boolean verdict under one of ``keys`` (JSON, or "key: yes/no/true/false" anywhere)."""
    value = extract_json(text)
    objs = [value] if isinstance(value, dict) else [v for v in value if isinstance(v, dict)] \
        if isinstance(value, list) else []
    for obj in objs:
        lower = {str(k).lower(): v for k, v in obj.items()}
        for key in keys:
            if key in lower and as_bool(lower[key]) is not None:
                return as_bool(lower[key]), None
    t = strip_reasoning(text)
    found = set()
    for key in keys:
        pat = re.escape(key).replace("_", "[ _]")
        for m in re.finditer(rf'"?\b{pat}\b"?\s*[:=]\s*\**\s*"?(true|false|yes|no)\b', t, re.IGNORECASE):
            found.add(as_bool(m.group(1)))
    if len(found) == 1:
        return found.pop(), None
    if len(found) > 1:
        return None, f"it gives contradictory values for {keys[0]}"
    return None, f"it has no clear {keys[0]} verdict (expected true or false)"


_WILDGUARD = re.compile(r"harmful\s+response\s*:\s*\**\s*(yes|no)\b", re.IGNORECASE)


def parse_wildguard(text: Optional[str]) -> tuple[Optional[bool], Optional[str]]:
    found = {m.group(1).lower() == "yes" for m in _WILDGUARD.finditer(strip_reasoning(text))}
    if len(found) == 1:
        return found.pop(), None
    return None, 'it has no single "Harmful response: yes/no" line'


def parse_intent(text: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    value = extract_json(text)
    intent: Any = None
    if isinstance(value, dict):
        lower = {str(k).lower(): v for k, v in value.items()}
        intent = next((lower[k] for k in ("intent", "benign_intent", "text") if isinstance(lower.get(k), str)), None)
        if intent is None:
            return None, 'its JSON has no "intent" string'
    elif value is None:   # plain text is fine for an intent
        intent = re.sub(r"^\s*(?:benign\s+)?intent\s*:\s*", "", strip_reasoning(text), flags=re.IGNORECASE)
    if not isinstance(intent, str):
        return None, 'it is not a JSON object with an "intent" string'
    intent = " ".join(intent.split()).strip("\"'` ")
    if _PLACEHOLDER.search(intent):
        return None, "it repeats a template placeholder in angle brackets instead of writing the intent"
    words = len(intent.split())
    if words < 5:
        return None, "the intent is empty or too short (expected 2 to 4 sentences)"
    if words > 150:
        return None, f"the intent is too long ({words} words; at most 80)"
    return intent, None


def parse_answer(text: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    """A generator's answer: free text, or the {"answer": "..."} a grammar-constrained server was asked for."""
    cleaned = strip_reasoning(text)
    if cleaned.startswith("{"):
        value = extract_json(cleaned)
        if isinstance(value, dict) and isinstance(value.get("answer"), str):
            return value["answer"].strip(), None
    return cleaned, None


def echoes_prompt(text: Optional[str]) -> bool:
    """True when a reply repeats the builder's instructions (their marker line) instead of answering."""
    return bool(_ECHO.search(strip_reasoning(text)))


def parse_paraphrases(text: Optional[str], n: int) -> tuple[Optional[list[str]], Optional[str]]:
    """Exactly ``n`` distinct paraphrases from a JSON object {"paraphrases": [...]}, a JSON list or a numbered list."""
    value = extract_json(text)
    if isinstance(value, dict):
        lower = {str(k).lower(): v for k, v in value.items()}
        value = next((lower[k] for k in ("paraphrases", "rewrites", "items") if isinstance(lower.get(k), list)), None)
    if isinstance(value, list):
        found = [" ".join(v.split()) for v in value if isinstance(v, str) and v.strip()]
    else:
        found = [m.group(1) for m in map(_LIST_LINE.match, strip_reasoning(text).splitlines()) if m]
    found = list(dict.fromkeys(f.strip("\"'` ") for f in found if f.strip("\"'` ")))
    if any(_PLACEHOLDER.search(f) for f in found):
        return None, "it repeats a template placeholder in angle brackets instead of writing paraphrases"
    if len(found) < n:
        return None, f"it has {len(found)} distinct paraphrases (expected {n})"
    return found[:n], None
