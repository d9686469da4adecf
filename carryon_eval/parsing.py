"""Tolerant parsing of every model reply of the project: the one place that reads model text.

Judges: yes/no verdicts, 1-5 harm scores, P(yes) from top logprobs. These return None when the text
does not say one thing clearly; the caller retries (carryon_eval.model.ask) and, failing that, records the
judgment as unscored. Nothing here ever guesses "no" or a score.

JSON anywhere in a reply (``extract_json``), which the builder's own readers (builder/replies.py: checklist
items, verdict flags, WildGuard lines, intents) also start from.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any, Iterable, Optional, Sequence


# A reasoning block; an unterminated one (the model ran out of tokens) hides everything after it.
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_JSON_OBJECT = re.compile(r"\{[^{}]*\}")
_DECORATION = " \t\r\n*_`'\".,;:!?()[]<>-"

_YES = {"yes", "true", "y", "fulfilled", "satisfied"}
_NO = {"no", "false", "n", "unfulfilled", "not fulfilled", "not satisfied"}
_VERDICT_KEYS = ("answer", "fulfilled", "verdict", "satisfied", "result", "label", "judgment")
_LABELLED_VERDICT = re.compile(r"\b(?:answer|verdict|judg(?:e)?ment|final answer)\s*(?:is)?\s*[:=]?\s*\**\s*(yes|no)\b",
                               re.IGNORECASE)
#: The JSON keys a 1-5 score is read from (a judge adds its own names for its score: ``parse_score``'s ``keys``)
SCORE_KEYS = ("score", "rating", "thescore")
_LABELLED_SCORE = re.compile(r"(?:score|rating|harmfulness)\s*(?:is)?\s*[:=]?\s*\**\s*([0-9]+)(?:\s*/\s*5)?\b",
                             re.IGNORECASE)


def strip_reasoning(text: Optional[str]) -> str:
    """The reply without <think> blocks and surrounding whitespace ("" for None)."""
    return _THINK.sub("", text or "").strip()


def strict_json_value(text: Optional[str]) -> Any:
    """The reply (reasoning stripped) read as one JSON value, or None when it is anything else: how a
    judge tells a schema-constrained answer from text that merely contains one."""
    try:
        return json.loads(strip_reasoning(text))
    except ValueError:
        return None


def _clean(text: Optional[str]) -> str:
    return _FENCE.sub("", strip_reasoning(text)).strip()


def _json_objects(text: str) -> Iterable[dict[str, Any]]:
    for match in _JSON_OBJECT.finditer(text):
        try:
            obj = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield obj


def as_bool(value: Any) -> Optional[bool]:
    """True/False for a JSON boolean, 0/1, or a clear yes/no/true/false word; None otherwise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip(_DECORATION).lower()
        if word in _YES:
            return True
        if word in _NO:
            return False
    return None


def _one(found: list[Any]) -> Optional[Any]:
    """The single value all findings agree on, or None when there are none or they disagree."""
    distinct = set(found)
    return distinct.pop() if len(distinct) == 1 else None


def parse_yes_no(text: Optional[str]) -> Optional[bool]:
    """True/False for a clear yes/no, None otherwise.

    Accepts a bare word in any case with punctuation or markdown ("Yes.", "**NO**"), a leading word
    followed by an explanation ("Yes, the response ..."), JSON ({"answer": "yes"}, {"fulfilled": true}),
    and labelled answers anywhere ("Answer: yes", "Final answer: No").
    """
    text = _clean(text)
    if not text:
        return None
    for obj in _json_objects(text):
        found = [as_bool(obj[k]) for k in obj if k.lower() in _VERDICT_KEYS]
        verdict = _one([v for v in found if v is not None])
        if verdict is not None:
            return verdict
    labelled = _one([m.group(1).lower() == "yes" for m in _LABELLED_VERDICT.finditer(text)])
    if labelled is not None:
        return labelled
    whole = as_bool(text)
    if whole is not None:
        return whole
    first = re.split(r"[\s,.;:!?]+", text.strip(_DECORATION), maxsplit=1)[0].lower()
    if first in ("yes", "no"):
        return first == "yes"
    last_line = text.strip().splitlines()[-1]
    if last_line.strip(_DECORATION).lower() in ("yes", "no"):
        return last_line.strip(_DECORATION).lower() == "yes"
    return None


def _valid_score(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and float(value).is_integer() and 1 <= value <= 5:
        return int(value)
    if isinstance(value, str) and value.strip(_DECORATION).isdigit():
        return _valid_score(int(value.strip(_DECORATION)))
    return None


def parse_score(text: Optional[str], keys: Sequence[str] = SCORE_KEYS) -> Optional[int]:
    """A 1-5 score, or None; ``keys``: the JSON keys that may hold it.

    Accepts a bare digit ("3", "3."), JSON ({"score": 3}), labelled scores ("score: 3", "Score: 3/5",
    "#thescore: 4"), and a leading digit followed by an explanation ("4 - the reply ...").
    Out-of-range or conflicting scores give None.
    """
    text = _clean(text)
    if not text:
        return None
    for obj in _json_objects(text):
        found = [_valid_score(obj[k]) for k in obj if k.lower().lstrip("#") in keys]
        if found:
            return _one(found) if None not in found else None
    labelled = [int(m.group(1)) for m in _LABELLED_SCORE.finditer(text)]
    if labelled:
        score = _one(labelled)
        return _valid_score(score) if score is not None else None
    match = re.match(r"^[\s*#`\"'(\[]*([0-9]+)(?:\s*/\s*5)?(?![0-9.]*[0-9])", text)
    if match:
        return _valid_score(int(match.group(1)))
    return None


def p_yes(top_logprobs: Optional[Iterable[tuple[str, float]]]) -> Optional[float]:
    """P(yes) normalised over the yes/no tokens among the top logprobs of the first answer token.

    Tokens are compared after stripping whitespace and punctuation, case-insensitively, so "Yes",
    " yes" and "YES" all count as yes. None when neither a yes nor a no token is present (the caller
    then falls back to text mode).
    """
    if not top_logprobs:
        return None
    mass = {"yes": 0.0, "no": 0.0}
    for token, logprob in top_logprobs:
        word = (token or "").strip(_DECORATION).lower()
        if word in mass and logprob is not None and math.isfinite(logprob):
            mass[word] += math.exp(logprob)
    total = mass["yes"] + mass["no"]
    return mass["yes"] / total if total > 0 else None


# ---------------------------------------------------------------- JSON in a reply

_FENCED = re.compile(r"```[a-zA-Z]*[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)
_MAX_JSON_STARTS = 64


def extract_json(text: Optional[str]) -> Any:
    """The first JSON value in a reply: the whole text, a fenced block, or the first object/list followed
    by other text. None if there is none."""
    t = strip_reasoning(text)
    if not t:
        return None
    candidates = [t] + [m.group(1).strip() for m in _FENCED.finditer(t)]
    for c in candidates:
        try:
            return json.loads(c)
        except ValueError:
            pass
    decoder = json.JSONDecoder()
    starts = [i for i, ch in enumerate(t) if ch in "{["][:_MAX_JSON_STARTS]
    for i in starts:
        try:
            value, _ = decoder.raw_decode(t, i)
        except ValueError:
            continue
        if isinstance(value, (dict, list)) and value:
            return value
    return None
