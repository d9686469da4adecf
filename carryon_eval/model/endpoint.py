"""The one seam between the evaluator (and builder) and every model: what an endpoint is.

Phases and stages depend on this module only, never on how an endpoint is implemented:

    class ChatEndpoint(Protocol):
        config: EndpointConfig                  # at least .model and .public()
        usage: UsageLedger | None
        async def chat(messages, *, stage, temperature, max_tokens, seed, response_format,
                       top_logprobs) -> ChatResult
        async def check() -> None               # fail fast before anything is spent
        async def aclose() -> None

``carryon_eval.model.client.Endpoint`` (HTTP, retries, cache) is the implementation; the embedded model
is that same client pointed at a local llama.cpp server. Pools, batch import and caches wrap this
protocol rather than becoming special cases in the phases.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol, runtime_checkable

from carryon_eval.codec import OMIT_EMPTY, OMIT_NONE, Record, encode, fields_of
from carryon_eval.model.redact import public_url
from carryon_eval import defaults

#: Generation parameters that take part in the cache key, in this order.
PARAM_NAMES: tuple[str, ...] = ("temperature", "max_tokens", "seed", "response_format", "top_logprobs")

#: A temperature that is not sent at all: the provider's own default (reasoning models take no other).
PROVIDER_DEFAULT = "default"

#: A role's request options (EndpointConfig fields) that join the cache key when they are set; when none is
#: set the key is the one it always was, so caches written before these options existed still hit.
ROLE_PARAM_NAMES: tuple[str, ...] = ("reasoning_effort", "extra_body")


MAX_TEMPERATURE = 2.0      # the OpenAI API's range is 0-2; a larger value is a typo, not a setting


def parse_temperature(value: Any) -> Any:
    """A temperature option: a number >= 0, or "default" (the provider's default: nothing is sent)."""
    if value is None or value == PROVIDER_DEFAULT:
        return value
    text = str(value).strip().lower()
    if text in (PROVIDER_DEFAULT, "provider-default", "provider default", "none"):
        return PROVIDER_DEFAULT
    number = float(text)
    if not 0 <= number <= MAX_TEMPERATURE:
        raise ValueError(f"a temperature is a number in 0-{MAX_TEMPERATURE:g} or 'default', got {value!r}")
    return number


def describe_temperature(value: Any) -> str:
    return "provider default" if value in (None, PROVIDER_DEFAULT) else f"{value:g}"



class EndpointError(Exception):
    """A model call failed for good (non-retryable error or retries exhausted). One-line message."""


class EndpointRejected(EndpointError):
    """The server refused the request itself (a bad key, a bad request, an unknown model): rerunning the same
    command cannot help, the options must change."""


#: The statuses of an endpoint that refuses the key or does not serve the model: every call of the role fails alike.
MODEL_REJECTED = (401, 403, 404)


class ModelRejected(EndpointRejected):
    """The endpoint refused the key or does not serve the model (HTTP 401/403/404): a phase stops at the first
    one, whatever the role, instead of failing each remaining call."""


class ParameterRefused(EndpointRejected):
    """The endpoint refuses a parameter every call of the role sends (carryon_eval.model.refusals): a phase
    stops at it instead of counting one failure per remaining call."""


@dataclass
class EndpointConfig:
    base_url: str                           # e.g. http://127.0.0.1:8000/v1
    model: str
    api_key_env: str = defaults.API_KEY_ENV     # NAME of the env var holding the key; unset -> "EMPTY"
    concurrency: int = defaults.CONCURRENCY     # max requests in flight (the AIMD ceiling)
    timeout: float = defaults.TIMEOUT           # per request, seconds (whole request, not per read)
    max_retries: int = defaults.MAX_RETRIES     # retries after the first attempt
    backoff_base: float = defaults.BACKOFF_BASE  # first backoff in seconds; doubles per retry, with jitter
    backoff_max: float = defaults.BACKOFF_MAX   # cap of one backoff sleep (Retry-After is capped separately)
    http_client: str = defaults.HTTP_CLIENT     # the openai client's transport: "aiohttp" or "httpx"
    # The role's request options, applied by the client to every call through this endpoint (None: not set,
    # the request is as it always was). They take part in the cache key only when set.
    temperature: Any = None                 # overrides each call's temperature: a number, or "default" (not sent)
    reasoning_effort: Optional[str] = None  # sent as reasoning_effort (OpenAI's o-series / GPT-5: low/medium/high)
    system_prompt: Optional[str] = None     # a system message before every request's messages
    extra_body: Optional[dict[str, Any]] = None   # merged into the request body (top_p, chat_template_kwargs ...)

    def request_options(self) -> dict[str, Any]:
        """The role's request options that are set (what run.json records for them)."""
        return {name: getattr(self, name) for name in REQUEST_OPTION_NAMES if getattr(self, name) is not None}

    def public(self) -> dict[str, Any]:
        """Settings safe to write into run metadata (the key's env var NAME, never its value)."""
        return {
            "base_url": public_url(self.base_url),      # a credential inside the URL is masked
            "model": self.model,
            "api_key_env": self.api_key_env,
            "concurrency": self.concurrency,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "http_client": self.http_client,
            **self.request_options(),
        }


#: EndpointConfig's request options, in the order run.json lists them.
REQUEST_OPTION_NAMES: tuple[str, ...] = ("temperature", "reasoning_effort", "system_prompt", "extra_body")


@dataclass(frozen=True)
class GenParams(Record):
    """One chat call's generation parameters, as its cache key holds them (``PARAM_NAMES``, the defaults of a call
    that leaves them out), and a role's ``ROLE_PARAM_NAMES`` only when set: a call without them has the key it
    always had."""
    temperature: Any = 0.0                  # a number, or "default" (None): not sent, the provider's
    max_tokens: int = 1024
    seed: Optional[int] = None
    response_format: Optional[dict[str, Any]] = None
    top_logprobs: Optional[int] = None
    reasoning_effort: Optional[str] = field(default=None, metadata=OMIT_NONE)
    extra_body: Optional[dict[str, Any]] = field(default=None, metadata=OMIT_NONE)

    @classmethod
    def given(cls, values: dict[str, Any]) -> "GenParams":
        """The parameters a chat call was given by name (``PARAM_NAMES``; the others left out take their default)."""
        return cls(**{name: values[name] for name in PARAM_NAMES if name in values})


@dataclass
class ChatResult:
    text: Optional[str]                     # None if the server returned no content
    finish_reason: Optional[str]
    prompt_tokens: int                      # as reported for the original call (also when cached)
    completion_tokens: int
    cached: bool                            # no HTTP call of its own: disk cache or a shared in-flight call
    top_logprobs: Optional[list[tuple[str, float]]] = None   # first generated token's top logprobs
    #: How structured output was obtained for this reply: the response_format form the server accepted
    #: ("json_schema", "json_object" = {"type": "json_object", "schema": ...}, or "none" when the endpoint
    #: takes none of them and the request went without); None when no structured output was asked for.
    structured: Optional[str] = None
    #: Of prompt_tokens, those the provider served from its prompt cache (usage.prompt_tokens_details.cached_tokens),
    #: and of completion_tokens, those spent reasoning (usage.completion_tokens_details.reasoning_tokens).
    cached_prompt_tokens: int = 0
    reasoning_tokens: int = 0

    def to_payload(self) -> dict[str, Any]:
        """What goes into the disk cache: the reply only."""
        top = [[t, lp] for t, lp in self.top_logprobs] if self.top_logprobs is not None else None
        return CachedReply(self.text, self.finish_reason, self.prompt_tokens, self.completion_tokens, top,
                           self.structured, self.cached_prompt_tokens, self.reasoning_tokens).to_json()

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Optional["ChatResult"]:
        """A cached result, or None if the payload is not a usable cache entry."""
        try:
            reply = CachedReply.from_json(payload)
            if not isinstance(reply.text, str) or reply.text == "":
                return None
            top = reply.top_logprobs
            return cls(
                text=reply.text,
                finish_reason=reply.finish_reason,
                prompt_tokens=int(reply.prompt_tokens or 0),
                completion_tokens=int(reply.completion_tokens or 0),
                cached=True,
                top_logprobs=[(str(t), float(lp)) for t, lp in top] if top is not None else None,
                structured=reply.structured if isinstance(reply.structured, str) else None,
                cached_prompt_tokens=int(reply.cached_prompt_tokens or 0),
                reasoning_tokens=int(reply.reasoning_tokens or 0),
            )
        except (AttributeError, TypeError, ValueError):
            return None


@dataclass
class CachedReply(Record):
    """A reply as the disk cache holds it (ChatResult.to_payload / from_payload): only replies to structured
    requests say how they were obtained, and the provider's cached and reasoning tokens only when it reported them."""
    text: Optional[str]
    finish_reason: Optional[str] = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    top_logprobs: Optional[list[list[Any]]] = None       # [[token, logprob], ...]
    structured: Optional[str] = field(default=None, metadata=OMIT_NONE)
    cached_prompt_tokens: int = field(default=0, metadata=OMIT_EMPTY)
    reasoning_tokens: int = field(default=0, metadata=OMIT_EMPTY)


@dataclass
class Tokens(Record):
    """Calls and tokens of one stage and model (a UsageLedger row, a row of usage.json): a cached (or shared
    in-flight) result counts as a call and a cache hit, with no new tokens; ``cached_prompt_tokens`` (of
    prompt_tokens, those the provider's prompt cache served) and ``reasoning_tokens`` (of completion_tokens, those
    spent reasoning) are as the provider reported them."""
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    reasoning_tokens: int = 0

    def add(self, result: ChatResult) -> None:
        self.calls += 1
        if result.cached:
            self.cache_hits += 1
        else:
            self.prompt_tokens += int(result.prompt_tokens or 0)
            self.completion_tokens += int(result.completion_tokens or 0)
            self.cached_prompt_tokens += int(result.cached_prompt_tokens or 0)
            self.reasoning_tokens += int(result.reasoning_tokens or 0)


class UsageLedger:
    """Calls and tokens (``Tokens``) per (stage, model). Safe to share between threads and tasks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str], Tokens] = {}

    def add(self, stage: str, model: str, result: ChatResult) -> None:
        with self._lock:
            self._rows.setdefault((stage, model), Tokens()).add(result)

    def rows(self) -> dict[str, Tokens]:
        """{"stage/model": its Tokens (a copy)}, sorted."""
        with self._lock:
            return {f"{s}/{m}": fields_of(Tokens, row.to_json()) for (s, m), row in sorted(self._rows.items())}

    def snapshot(self) -> dict[str, dict[str, int]]:
        """``rows`` as JSON (usage.json's rows)."""
        return {name: row.to_json() for name, row in self.rows().items()}

    def total_tokens(self, stage: Optional[str] = None) -> int:
        with self._lock:
            return sum(row.prompt_tokens + row.completion_tokens
                       for (s, _), row in self._rows.items() if stage is None or s == stage)


def with_system_prompt(messages: list[dict], system_prompt: Optional[str]) -> list[dict]:
    """The role's system prompt before the messages (joined with a system message already first)."""
    if not system_prompt:
        return messages
    if messages and messages[0].get("role") == "system":
        first = {**messages[0], "content": f"{system_prompt}\n\n{messages[0].get('content') or ''}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": system_prompt}, *messages]


def keyed_request(config: EndpointConfig, messages: list[dict],
                  params: GenParams) -> tuple[str, list[dict], GenParams]:
    """(cache key, messages, params) of one call as the client sends and keys it: the role's request options
    applied (its temperature override, its system prompt before the messages, its reasoning_effort / extra_body
    when set)."""
    role = {name: getattr(config, name) for name in ("temperature", *ROLE_PARAM_NAMES)
            if getattr(config, name, None) is not None}
    params = dataclasses.replace(params, **role)
    messages = with_system_prompt(messages, config.system_prompt)
    return cache_key(config.model, messages, params), messages, params


def cache_key(model: str, messages: list[dict], params: "GenParams | dict[str, Any]") -> str:
    """sha256 hex of the canonical JSON of (model, messages, generation params)."""
    blob = json.dumps({"model": model, "messages": messages, "params": encode(params)},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@runtime_checkable
class ChatEndpoint(Protocol):
    """What every phase calls. See the module docstring."""

    config: EndpointConfig
    usage: Optional[UsageLedger]

    async def chat(self, messages: list[dict], *, stage: str, temperature: float = 0.0,
                   max_tokens: int = defaults.TARGET_MAX_TOKENS, seed: Optional[int] = None,
                   response_format: Optional[dict] = None,
                   top_logprobs: Optional[int] = None) -> ChatResult: ...

    async def check(self) -> None: ...

    async def aclose(self) -> None: ...


class EndpointWrapper:
    """A ChatEndpoint around another (``inner``): its config, usage, check and aclose are the inner one's, and
    ``chat`` passes the call on; a wrapper overrides ``chat`` (a call budget, a watch on a silent role)."""

    def __init__(self, inner: ChatEndpoint) -> None:
        self.inner = inner

    @property
    def config(self) -> EndpointConfig:
        return self.inner.config

    @property
    def usage(self) -> Optional[UsageLedger]:
        return self.inner.usage

    async def chat(self, messages: list[dict], *, stage: str, **params: Any) -> ChatResult:
        return await self.inner.chat(messages, stage=stage, **params)

    async def check(self) -> None:
        await self.inner.check()

    async def aclose(self) -> None:
        await self.inner.aclose()
