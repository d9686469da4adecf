"""The wire format of a chat completion, as the client sends and reads it: the request's fields and body
(``request_fields``, ``request_body``) and the reading of a response body (``parse_completion``). The live client
(carryon_eval.model.client) and the Batch API files (carryon_eval.judge.batch) both use it, so an exported request
is the body the live client would send and a batch result line is read like a live reply.
"""
from __future__ import annotations

from typing import Any, Optional

from carryon_eval.model.endpoint import PROVIDER_DEFAULT, ChatResult


class Malformed(Exception):
    """A 200 response whose body is not a usable chat completion (the client retries it)."""


def request_fields(model: str, messages: list[dict], params: dict[str, Any],
                   response_format: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """The fields of one chat completion request for these parameters, without ``extra_body`` (the client
    passes it apart); ``response_format``: the structured-output form to ask with (None: none)."""
    fields: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": params["max_tokens"]}
    if params["temperature"] not in (None, PROVIDER_DEFAULT):
        fields["temperature"] = params["temperature"]
    if params.get("seed") is not None:
        fields["seed"] = params["seed"]
    if response_format is not None:
        fields["response_format"] = response_format
    if params.get("top_logprobs") is not None:
        fields["logprobs"] = True
        fields["top_logprobs"] = params["top_logprobs"]
    if params.get("reasoning_effort") is not None:
        fields["reasoning_effort"] = params["reasoning_effort"]
    return fields


def request_body(model: str, messages: list[dict], params: dict[str, Any]) -> dict[str, Any]:
    """The JSON body the live client sends for these parameters: the fields, ``extra_body`` merged in."""
    body = request_fields(model, messages, params, params.get("response_format"))
    body.update(params.get("extra_body") or {})
    return body


def _reasoning_of(message: dict) -> Optional[str]:
    """The reasoning a provider returns beside the answer: ``reasoning_content`` (vLLM, DeepSeek, llama.cpp)
    or ``reasoning`` (OpenRouter, newer vLLM)."""
    for name in ("reasoning_content", "reasoning"):
        value = message.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def parse_completion(body: Any, want_logprobs: bool) -> ChatResult:
    """A ChatResult from the JSON body of a chat completion (as the server sent it, or a batch output line's)."""
    if not isinstance(body, dict):
        raise Malformed("body is not a JSON chat completion")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise Malformed("no choices")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise Malformed("unexpected shape: a choice is not an object")
    message = choice.get("message")
    if message is not None and not isinstance(message, dict):
        raise Malformed("unexpected shape: the message is not an object")
    message = message or {}
    text = message.get("content")
    if text is not None and not isinstance(text, str):
        raise Malformed("content is not a string")
    reasoning = _reasoning_of(message)
    if reasoning and text:   # kept with the answer, as the <think> block every reader strips
        text = f"<think>{reasoning}</think>\n{text}"
    finish_reason = choice.get("finish_reason")
    usage = body.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    prompt_tokens, completion_tokens = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    details = usage.get("completion_tokens_details")
    reasoning_tokens = _count(details.get("reasoning_tokens")) if isinstance(details, dict) else 0
    if reasoning_tokens > completion_tokens:   # a server that counts the reasoning apart from the answer
        completion_tokens += reasoning_tokens
    prompt_details = usage.get("prompt_tokens_details")      # a provider's prompt cache (OpenAI's field)
    cached_tokens = _count(prompt_details.get("cached_tokens")) if isinstance(prompt_details, dict) else 0
    top: Optional[list[tuple[str, float]]] = None
    if want_logprobs:
        lp = choice.get("logprobs")
        content = lp.get("content") if isinstance(lp, dict) else None
        if isinstance(content, list) and content and isinstance(content[0], dict):
            given = content[0].get("top_logprobs")
            if isinstance(given, list) and given:
                try:
                    top = [(str(t["token"]), float(t["logprob"])) for t in given]
                except (KeyError, TypeError, ValueError) as exc:
                    raise Malformed(f"unexpected shape: top_logprobs ({exc.__class__.__name__})") from None
    return ChatResult(text=text, finish_reason=finish_reason if isinstance(finish_reason, str) else None,
                      prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                      cached=False, top_logprobs=top, cached_prompt_tokens=min(cached_tokens, prompt_tokens),
                      reasoning_tokens=reasoning_tokens)
