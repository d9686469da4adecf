"""Which request parameters an endpoint refuses, learned once per endpoint by the client.

Providers disagree on the chat parameters. OpenAI's reasoning models (o-series, the GPT-5 family) answer
HTTP 400 to ``max_tokens`` ("Unsupported parameter: 'max_tokens' is not supported with this model. Use
'max_completion_tokens' instead.", param ``max_tokens``, code ``unsupported_parameter``) and to any temperature
but the default ("Unsupported value: 'temperature' does not support 0 with this model. Only the default (1)
value is supported.", param ``temperature``, code ``unsupported_value``); some servers refuse ``seed``.

The first such 400 teaches the endpoint what to send instead, and the request is sent again at once, without
spending one of the client's transport retries:

    max_tokens   ->  max_completion_tokens (the same number)
    temperature  ->  not sent: the provider's default (which changes what the numbers mean: run.json,
                     results.json's notes and the report say so)
    seed         ->  not sent (said in run.json too)

Every later request of that endpoint is sent the learned way. A 400 that names another parameter (or a
parameter already adapted) is a refusal the client cannot work around: ``rejection`` words it as one line
naming the endpoint, the parameter and the provider's message, and the endpoint then refuses every later
call itself, so that nothing more is spent on a request the provider will refuse again. A 400 about one
request's content (its length, a content filter), or about a feature its caller falls back from by itself
(logprobs, response_format), is not latched.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Optional

from carryon_eval.model.wire import ApiError, error_of

#: What the client does instead of sending a refused parameter (run.json's "sent" of the role).
INSTEAD = {
    "max_tokens": "sent as max_completion_tokens",
    "temperature": "not sent: provider default",
    "seed": "not sent",
}

# Errors about one request's content, not the endpoint's parameters: never latched.
_PER_REQUEST_CODES = {"context_length_exceeded", "content_filter", "content_policy_violation", "invalid_prompt",
                      "string_above_max_length"}
_PER_REQUEST_PARAMS = {"messages", "prompt", "input"}
# Features a caller asks for per request and falls back from itself (the judges' logprobs and structured output).
_CALLER_FALLBACKS = {"logprobs", "top_logprobs", "response_format"}
_QUOTED = re.compile(r"['\"`]([a-z_][a-z0-9_.]*)['\"`]")
_REFUSAL_WORDS = re.compile(r"unsupported|not supported|does not support|not allowed|not permitted|unrecognized|"
                            r"unknown|extra (?:inputs|fields)|invalid", re.IGNORECASE)


def error_fields(body: Any, message: str) -> tuple[Optional[str], Optional[str], str]:
    """(param, code, message) of an OpenAI-style error body; param and code None when it names none."""
    err = error_of(body) if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return None, None, message
    read = ApiError.from_json(err)
    return (read.param if isinstance(read.param, str) else None, read.code if isinstance(read.code, str) else None,
            read.message if isinstance(read.message, str) else message)


def named_param(param: Optional[str], message: str, sent: dict[str, Any]) -> Optional[str]:
    """The request parameter an error is about: its ``param`` field, else the first parameter of the request
    that the message quotes (or, with refusal words, mentions)."""
    if param:
        return param.split(".")[0]
    for quoted in _QUOTED.findall(message):
        if quoted in sent:
            return quoted
    if _REFUSAL_WORDS.search(message):
        for name in sent:
            if name not in ("model", "messages") and re.search(rf"\b{re.escape(name)}\b", message):
                return name
    return None


class ParamRefusals:
    """What one endpoint has refused: the parameters sent another way from now on, and a refusal that
    stops the endpoint (see the module docstring)."""

    def __init__(self) -> None:
        self.learned: dict[str, str] = {}      # param -> what is done instead (INSTEAD's wording)
        self.refused: dict[str, Any] = {}      # param -> the value the endpoint refused (temperature: 0)
        self.fatal: Optional[str] = None       # the one-line refusal every later call raises

    def adapt(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments of a call as this endpoint takes them."""
        out = dict(kwargs)
        if "max_tokens" in self.learned and "max_tokens" in out:
            out["max_completion_tokens"] = out.pop("max_tokens")
        for name in ("temperature", "seed"):
            if name in self.learned:
                out.pop(name, None)
        return out

    def learn(self, status: int, body: Any, message: str, sent: dict[str, Any]) -> Optional[str]:
        """A 400/422 to the call ``sent``: the parameter it refused, when the client can send the request
        without it (it is then learned for this endpoint); None when it cannot."""
        if status not in (400, 422):
            return None
        param, code, message = error_fields(body, message)
        name = named_param(param, message, sent)
        if name not in INSTEAD or name not in sent:
            return None
        if name == "max_tokens" and code != "unsupported_parameter" and "max_completion_tokens" not in message:
            return None   # a max_tokens the server finds too large is not a parameter it refuses
        if name not in self.learned:
            self.learned[name] = INSTEAD[name]
            self.refused[name] = sent[name]
        return name

    def rejection(self, where: str, status: int, body: Any, message: str, sent: dict[str, Any],
                  scrub: Callable[[str], str] = str) -> str:
        """The one line of a refusal the client cannot work around (``scrub`` masks a key the server echoed);
        latched unless it is about one request."""
        param, code, message = error_fields(body, message)
        name = named_param(param, message, sent)
        text = scrub(f"{where} rejected the request" + (f" parameter '{name}'" if name else "")
                     + f": HTTP {status}: {message}")
        if name and name not in _PER_REQUEST_PARAMS | _CALLER_FALLBACKS and code not in _PER_REQUEST_CODES:
            self.fatal = text
        return text

    def sent(self) -> dict[str, str]:
        """What run.json records: each refused parameter and what is done instead."""
        return {name: (f"{how} (refused {self.refused[name]!r})" if name != "max_tokens" else how)
                for name, how in self.learned.items()}
