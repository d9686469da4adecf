"""Ask until the reply is usable: the one retry-until-usable loop of the project.

Every caller that needs a *usable* reply, not just an HTTP 200, goes through ``ask``: the rollout
(an empty target reply is asked again), the user simulator (an empty turn is asked again with the
next seed), the judges (an unparseable verdict is asked again with a stricter instruction) and the
builder's stages (an empty reply is asked again; a malformed one gets a repair prompt).

    asked = await ask(endpoint, Request(messages, temperature=0.0, max_tokens=8), parse_verdict,
                      stage="judge_utility", retry=strict_suffix(strict_prompt_text, JUDGE_RETRIES))
    asked.value, asked.raw, asked.attempts, asked.problem

- ``parse(text) -> (value, problem)``: ``problem`` is None when ``value`` is usable, else a short
  reason (it becomes the record's problem, and the builder's repair prompt quotes it). An empty reply
  (nothing left after reasoning blocks are stripped) never reaches ``parse``: its problem is EMPTY.
- ``retry(first, history) -> Request | None``: the next request after a failed attempt, or None to
  stop. ``history`` holds every attempt so far (oldest first). Policies below cover every caller.
- Transport failures are not retried here: the endpoint client already retried them, and its
  ``EndpointError`` propagates to the caller, which knows whether to count, skip or abort.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Optional, TypeVar

from carryon_eval.model.endpoint import ChatEndpoint, ChatResult
from carryon_eval.parsing import strip_reasoning

T = TypeVar("T")

EMPTY = "the model returned an empty reply"


@dataclass(frozen=True)
class Request:
    """One chat request: messages and generation parameters (the client's keyword arguments)."""
    messages: list[dict[str, str]]
    temperature: float = 0.0
    max_tokens: int = 1024
    seed: Optional[int] = None
    response_format: Optional[dict[str, Any]] = None
    top_logprobs: Optional[int] = None

    def replace(self, **changes: Any) -> "Request":
        return dataclasses.replace(self, **changes)

    def params(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed,
                "response_format": self.response_format, "top_logprobs": self.top_logprobs}


@dataclass(frozen=True)
class Attempt:
    """What one attempt gave: the raw reply, and why it was not usable (None when it was)."""
    request: Request
    result: ChatResult
    problem: Optional[str]

    @property
    def empty(self) -> bool:
        return self.problem == EMPTY


@dataclass(frozen=True)
class Asked(Generic[T]):
    """The outcome of ``ask``: value (None when nothing usable came back), the last raw reply, the
    number of attempts, and the problem of the last attempt (None on success)."""
    value: Optional[T]
    raw: Optional[str]
    attempts: int
    problem: Optional[str]
    finish_reason: Optional[str] = None
    history: tuple[Attempt, ...] = field(default=(), repr=False)

    @property
    def ok(self) -> bool:
        return self.problem is None

    @property
    def empty_retries(self) -> int:
        """Attempts that were asked again because the reply before them was empty."""
        return sum(1 for a in self.history[:-1] if a.empty)

    @property
    def repairs(self) -> int:
        """Attempts that were asked again because the reply before them could not be used."""
        return sum(1 for a in self.history[:-1] if a.problem is not None and not a.empty)


Parse = Callable[[Optional[str]], "tuple[Optional[T], Optional[str]]"]
Retry = Callable[[Request, "tuple[Attempt, ...]"], Optional[Request]]


async def ask(endpoint: ChatEndpoint, request: Request, parse: Parse[T], *, stage: str,
              retry: Optional[Retry] = None) -> Asked[T]:
    """Send ``request``; while the reply is unusable and ``retry`` gives a next request, ask again."""
    history: list[Attempt] = []
    current: Optional[Request] = request
    while current is not None:
        result = await endpoint.chat(current.messages, stage=stage, **current.params())
        if not strip_reasoning(result.text):
            value, problem = None, EMPTY
        else:
            value, problem = parse(result.text)
        history.append(Attempt(current, result, problem))
        if problem is None:
            break
        current = retry(request, tuple(history)) if retry is not None else None
    last = history[-1]
    return Asked(value=value if last.problem is None else None, raw=last.result.text, attempts=len(history),
                 problem=last.problem, finish_reason=last.result.finish_reason, history=tuple(history))


# ---------------------------------------------------------------- retry policies
def same_request(times: int) -> Retry:
    """Ask the identical request again, at most ``times`` more times, after an EMPTY reply only
    (empty replies are never cached, so the same request reaches the model again)."""
    def policy(first: Request, history: tuple[Attempt, ...]) -> Optional[Request]:
        return first if history[-1].empty and len(history) <= times else None
    return policy


def next_seed(times: int) -> Retry:
    """Ask again with seed + 1, + 2, ... (at most ``times`` more times), whatever the problem."""
    def policy(first: Request, history: tuple[Attempt, ...]) -> Optional[Request]:
        if len(history) > times:
            return None
        return first.replace(seed=(first.seed or 0) + len(history))
    return policy


def strict_suffix(suffix: str, times: int) -> Retry:
    """Judges: ask again with ``suffix`` appended to the last user message and seed = attempt number."""
    def policy(first: Request, history: tuple[Attempt, ...]) -> Optional[Request]:
        if len(history) > times:
            return None
        messages = [dict(m) for m in first.messages]
        messages[-1]["content"] = messages[-1]["content"].rstrip("\n") + "\n\n" + suffix.strip()
        return first.replace(messages=messages, seed=len(history))
    return policy


def repair(render_repair: Callable[[Attempt], list[dict[str, str]]], *, repairs: int, empties: int) -> Retry:
    """Builder stages: an EMPTY reply is asked again unchanged (at most ``empties`` times); any other
    problem continues the conversation with the model's reply and the repair prompt
    ``render_repair(failed_attempt)`` (at most ``repairs`` times)."""
    def policy(first: Request, history: tuple[Attempt, ...]) -> Optional[Request]:
        last = history[-1]
        if last.empty:
            n_empty = sum(1 for a in history if a.empty)
            return last.request if n_empty <= empties else None
        n_repairs = sum(1 for a in history[:-1] if a.problem is not None and not a.empty)
        if n_repairs >= repairs:
            return None
        messages = list(last.request.messages) + [{"role": "assistant", "content": last.result.text or ""}]
        return last.request.replace(messages=messages + render_repair(last))
    return policy
