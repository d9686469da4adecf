"""What a scripted server answers: the outcomes (Reply, Fault) and the helpers that build handlers.

Import them from ``scripted_server`` (which re-exports every name here); see its docstring for their use.
"""
from __future__ import annotations

import re

import itertools
import threading
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable, Optional, Sequence, Union

__all__ = ["Reply", "Fault", "Outcome", "Handler", "script", "faults_then", "rate_limited", "by_model",
           "json_object_only", "last_user_text", "system_text", "message_text", "ScriptExhausted"]


# ---------------------------------------------------------------- outcomes
@dataclass(frozen=True)
class Reply:
    """A normal chat completion. Token counts default to whitespace-word counts."""
    text: Optional[str]
    logprobs: Optional[Sequence[tuple[str, float]]] = None
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    finish_reason: str = "stop"
    reasoning: Optional[str] = None             # sent as message.reasoning_content (its words join completion_tokens)
    cached_tokens: Optional[int] = None         # usage.prompt_tokens_details.cached_tokens (a provider's prompt cache)


@dataclass(frozen=True)
class Fault:
    """A scripted misbehaviour. Build with the class methods, not directly."""
    kind: str                                   # status | delay | malformed | empty | drop
    status_code: int = 200
    retry_after: Optional[float] = None
    message: Optional[str] = None
    seconds: float = 0.0
    then: Optional[Union[str, Reply]] = None
    body: Optional[str] = None
    content_type: str = "application/json"
    content: Optional[str] = None

    @classmethod
    def status(cls, code: int, *, retry_after: Optional[float] = None, message: Optional[str] = None) -> "Fault":
        """An OpenAI-style JSON error with HTTP ``code``; ``retry_after`` adds a Retry-After header."""
        return cls("status", status_code=int(code), retry_after=retry_after, message=message)

    @classmethod
    def delay(cls, seconds: float, then: Union[str, Reply] = "delayed reply") -> "Fault":
        """Sleep ``seconds`` (stop early if the client disconnects), then reply with ``then``."""
        return cls("delay", seconds=float(seconds), then=then)

    @classmethod
    def malformed(cls, body: str = '{"id": "chatcmpl-broken", "choices": [{"message": ',
                  content_type: str = "application/json") -> "Fault":
        """HTTP 200 whose body is not valid JSON."""
        return cls("malformed", body=body, content_type=content_type)

    @classmethod
    def empty(cls, content: Optional[str] = None) -> "Fault":
        """HTTP 200 with message content ``None`` (null) or ``""``."""
        return cls("empty", content=content)

    @classmethod
    def drop(cls) -> "Fault":
        """Close the connection without sending a response."""
        return cls("drop")


Outcome = Union[str, Reply, Fault]
Handler = Callable[[dict], Union[Outcome, Awaitable[Outcome]]]


class ScriptExhausted(AssertionError):
    """A ``script`` handler was called more often than it has outcomes."""


# ---------------------------------------------------------------- handler helpers
def _resolve(outcome: Any, body: dict) -> Any:
    return outcome(body) if callable(outcome) else outcome


def script(outcomes: Iterable[Any], *, then: Any = None) -> Handler:
    """Handler returning ``outcomes[i]`` on the i-th call (0-based), then ``then`` forever.

    Each outcome (and ``then``) is a str, Reply, Fault or a callable ``body -> outcome``.
    With ``then=None`` an extra call is an error (HTTP 418 + ``server.errors``).
    """
    items = list(outcomes)
    counter = itertools.count()
    lock = threading.Lock()

    def handler(body: dict) -> Any:
        with lock:
            i = next(counter)
        if i < len(items):
            return _resolve(items[i], body)
        if then is None:
            raise ScriptExhausted(f"script has {len(items)} outcome(s) but got call #{i + 1}")
        return _resolve(then, body)

    return handler


def faults_then(reply: Any, faults: Iterable[Fault]) -> Handler:
    """The given faults on the first calls, then ``reply`` (str, Reply or callable) on every later call."""
    return script(list(faults), then=reply)


def rate_limited(seconds: float, then: Any) -> Handler:
    """A rate limiter: the first call gets a 429 with ``Retry-After: seconds`` and opens that window;
    calls inside the window get a 429 again (Retry-After = the time left); later calls get ``then``
    (str, Reply, Fault or callable)."""
    lock = threading.Lock()
    window: dict[str, float] = {}

    def handler(body: dict) -> Any:
        now = time.monotonic()
        with lock:
            if "until" not in window:
                window["until"] = now + seconds
                return Fault.status(429, retry_after=seconds)
            left = window["until"] - now
        return Fault.status(429, retry_after=round(left, 3)) if left > 0 else _resolve(then, body)

    return handler


def by_model(handlers: dict[str, Any]) -> Handler:
    """Dispatch on ``body["model"]``; values are handlers or fixed outcomes."""
    def handler(body: dict) -> Any:
        try:
            h = handlers[body.get("model")]
        except KeyError:
            raise AssertionError(f"no scripted handler for model {body.get('model')!r}") from None
        return _resolve(h, body)
    return handler


#: What llama-cpp-python's OpenAI server answers a response_format it does not know (measured: HTTP 500).
JSON_SCHEMA_REFUSAL = ("1 validation error for CreateChatCompletionRequest response_format.type: "
                       "Input should be 'text' or 'json_object'")


def json_object_only(then: Any) -> Handler:
    """Like llama-cpp-python's server: a ``json_schema`` response_format gets HTTP 500 (its validation error);
    ``json_object`` (with or without a "schema") and requests without response_format get ``then``."""
    def handler(body: dict) -> Any:
        rf = body.get("response_format")
        if isinstance(rf, dict) and rf.get("type") not in ("text", "json_object"):
            return Fault.status(500, message=JSON_SCHEMA_REFUSAL)
        return _resolve(then, body)
    return handler


def message_text(message: dict) -> str:
    """The text of one chat message (content parts joined)."""
    content = message.get("content")
    if isinstance(content, list):   # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def last_user_text(body: dict) -> str:
    """Content of the last user message of a chat request body ("" if none)."""
    for m in reversed(body.get("messages") or []):
        if m.get("role") == "user":
            return message_text(m)
    return ""


def system_text(body: dict) -> str:
    """Concatenated content of the system messages of a chat request body ("" if none)."""
    return "\n".join(message_text(m) for m in body.get("messages") or [] if m.get("role") == "system")


def by_prefix(routes: dict[str, Any], default: Any) -> Handler:
    """Dispatch on how the last user message starts: the first prefix of ``routes`` it starts with picks the
    handler (or fixed outcome); any other message gets ``default``. E.g. a judge prompt file's opening text."""
    def handler(body: dict) -> Any:
        text = last_user_text(body)
        for prefix, h in routes.items():
            if prefix and text.startswith(prefix):
                return _resolve(h, body)
        return _resolve(default, body)
    return handler


_PLACEHOLDER = re.compile(r"\{\{(?:prompt|response|PROMPT)\}\}|\{(?:prompt|response)\}")


def fills(template: str, text: str) -> bool:
    """Whether ``text`` is ``template`` with its placeholders ({prompt}, {{response}}, ...) filled in: its fixed
    parts in order, the first at the start and the last at the end."""
    parts = _PLACEHOLDER.split(template)
    if not text.startswith(parts[0]) or not text.endswith(parts[-1]):
        return False
    at = len(parts[0])
    for part in parts[1:-1]:
        at = text.find(part, at)
        if at < 0:
            return False
        at += len(part)
    return len(parts) == 1 or len(text) - len(parts[-1]) >= at


def rubric_judges(templates: dict[str, str], answers: dict[str, Callable[[str], Any]], default: Any) -> Handler:
    """A judge that answers rubric prompts: ``templates`` maps a judge name to its prompt file's text (filled
    by the product with the prompt and reply), ``answers`` maps the same name to ``text -> outcome`` (the
    filled prompt it was sent in, the answer out). The template a request fills (its fixed parts, in order)
    says which judge it is for; anything else gets ``default`` (e.g. the target's replies)."""
    def handler(body: dict) -> Any:
        text = last_user_text(body)
        for name, template in templates.items():
            if fills(template, text):
                return answers[name](text)
        return _resolve(default, body)
    return handler
