"""The wire format of a chat completion, as the client sends and reads it: the request's fields and body
(``request_fields``, ``request_body``) and the reading of a response body (``parse_completion``). The live client
(carryon_eval.model.client) and the Batch API files (carryon_eval.judge.batch) both use it, so an exported request
is the body the live client would send and a batch result line is read like a live reply.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from carryon_eval.codec import Record, absent, fields_of, present
from carryon_eval.model.endpoint import PROVIDER_DEFAULT, ChatResult, GenParams


class Malformed(Exception):
    """A 200 response whose body is not a usable chat completion (the client retries it)."""


def request_fields(model: str, messages: list[dict], params: GenParams,
                   response_format: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """The fields of one chat completion request for these parameters, without ``extra_body`` (the client
    passes it apart); ``response_format``: the structured-output form to ask with (None: none). A parameter
    that is not set is not sent (nor a temperature "default": the provider's)."""
    fields: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": params.max_tokens}
    sent = {"temperature": None if params.temperature == PROVIDER_DEFAULT else params.temperature,
            "seed": params.seed, "response_format": response_format,
            "logprobs": True if params.top_logprobs is not None else None, "top_logprobs": params.top_logprobs,
            "reasoning_effort": params.reasoning_effort}
    fields.update((name, value) for name, value in sent.items() if value is not None)
    return fields


def request_body(model: str, messages: list[dict], params: GenParams) -> dict[str, Any]:
    """The JSON body the live client sends for these parameters: the fields, ``extra_body`` merged in."""
    body = request_fields(model, messages, params, params.response_format)
    body.update(params.extra_body or {})
    return body


# A response body as this module reads it: small records of the fields it uses (any other key is ignored), each
# field as the server sent it (a record where the server sent an object), checked where it is read.
@dataclass
class _Details(Record):
    """usage.completion_tokens_details / usage.prompt_tokens_details (a provider's prompt cache: OpenAI's field)."""
    reasoning_tokens: Any = None
    cached_tokens: Any = None


@dataclass
class _Usage(Record):
    prompt_tokens: Any = None
    completion_tokens: Any = None
    completion_tokens_details: Optional[_Details] = None
    prompt_tokens_details: Optional[_Details] = None


@dataclass
class _Message(Record):
    """The reply: its content, and the reasoning a provider returns beside the answer: ``reasoning_content``
    (vLLM, DeepSeek, llama.cpp) or ``reasoning`` (OpenRouter, newer vLLM)."""
    content: Any = None
    reasoning_content: Any = None
    reasoning: Any = None

    def reasoning_text(self) -> Optional[str]:
        for value in (self.reasoning_content, self.reasoning):
            if isinstance(value, str) and value.strip():
                return value.strip()
        return None


@dataclass
class _Alternative(Record):
    """One of the first token's top logprobs."""
    token: Any = absent()
    logprob: Any = absent()


@dataclass
class _Token(Record):
    top_logprobs: Any = None


@dataclass
class _Logprobs(Record):
    content: Any = None


@dataclass
class _Choice(Record):
    message: Optional[_Message] = None
    finish_reason: Any = None
    logprobs: Optional[_Logprobs] = None


@dataclass
class _Completion(Record):
    choices: Any = None
    usage: Optional[_Usage] = None


def _top_logprobs(choice: _Choice) -> Optional[list[tuple[str, float]]]:
    """The first generated token's top logprobs (None where the reply has none)."""
    content = choice.logprobs.content if isinstance(choice.logprobs, _Logprobs) else None
    if not (isinstance(content, list) and content and isinstance(content[0], dict)):
        return None
    given = _Token.from_json(content[0]).top_logprobs
    if not (isinstance(given, list) and given):
        return None
    try:
        return [_alternative(t) for t in given]
    except (KeyError, TypeError, ValueError) as exc:
        raise Malformed(f"unexpected shape: top_logprobs ({exc.__class__.__name__})") from None


def _alternative(given: Any) -> tuple[str, float]:
    if not isinstance(given, dict):
        raise TypeError("an alternative is not an object")
    alternative = fields_of(_Alternative, given)
    if not (present(alternative.token) and present(alternative.logprob)):
        raise KeyError("token" if not present(alternative.token) else "logprob")
    return str(alternative.token), float(alternative.logprob)


@dataclass
class ApiError(Record):
    """An OpenAI-style error object, the fields read from it (each as the server sent it)."""
    message: Any = None
    param: Any = None
    code: Any = None


@dataclass
class _ErrorBody(Record):
    error: Any = absent()


def error_of(body: dict[str, Any]) -> Any:
    """The error an error body holds: its ``error`` (an object or a text), else the body itself."""
    held = _ErrorBody.from_json(body).error
    return held if present(held) else body


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def parse_completion(body: Any, want_logprobs: bool) -> ChatResult:
    """A ChatResult from the JSON body of a chat completion (as the server sent it, or a batch output line's)."""
    if not isinstance(body, dict):
        raise Malformed("body is not a JSON chat completion")
    completion = _Completion.from_json(body)
    choices = completion.choices
    if not isinstance(choices, list) or not choices:
        raise Malformed("no choices")
    if not isinstance(choices[0], dict):
        raise Malformed("unexpected shape: a choice is not an object")
    choice = _Choice.from_json(choices[0])
    if choice.message is not None and not isinstance(choice.message, _Message):
        raise Malformed("unexpected shape: the message is not an object")
    message = choice.message or _Message()
    text = message.content
    if text is not None and not isinstance(text, str):
        raise Malformed("content is not a string")
    reasoning = message.reasoning_text()
    if reasoning and text:   # kept with the answer, as the <think> block every reader strips
        text = f"<think>{reasoning}</think>\n{text}"
    finish_reason = choice.finish_reason
    usage = completion.usage if isinstance(completion.usage, _Usage) else _Usage()
    prompt_tokens, completion_tokens = _count(usage.prompt_tokens), _count(usage.completion_tokens)
    details = usage.completion_tokens_details
    reasoning_tokens = _count(details.reasoning_tokens) if isinstance(details, _Details) else 0
    if reasoning_tokens > completion_tokens:   # a server that counts the reasoning apart from the answer
        completion_tokens += reasoning_tokens
    prompt_details = usage.prompt_tokens_details
    cached_tokens = _count(prompt_details.cached_tokens) if isinstance(prompt_details, _Details) else 0
    top = _top_logprobs(choice) if want_logprobs else None
    return ChatResult(text=text, finish_reason=finish_reason if isinstance(finish_reason, str) else None,
                      prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                      cached=False, top_logprobs=top, cached_prompt_tokens=min(cached_tokens, prompt_tokens),
                      reasoning_tokens=reasoning_tokens)
