"""The one client every model call goes through (builder LLM stages, user simulator, target, judges).

    endpoint = Endpoint(EndpointConfig(base_url="http://127.0.0.1:8000/v1", model="m"),
                        cache=ResponseCache(run_dir / "cache"), usage=UsageLedger())
    await endpoint.check()                      # fail fast before spending anything
    result = await endpoint.chat(messages, stage="judge_utility", top_logprobs=5)
    await endpoint.aclose()

Behaviour
- Talks to any OpenAI-compatible server through the real ``openai.AsyncOpenAI`` client, on aiohttp's
  transport by default (``EndpointConfig.http_client``: "aiohttp" or "httpx") with at most ``concurrency``
  connections, and the library's own retries disabled. A chat completion is the client's public ``post`` of
  the body as it is sent, its raw response read as JSON here (the SDK's per-call request transform and
  response models cost more CPU than the rest of a call; bench/README.md). Retries are done here: exponential backoff with jitter
  (``EndpointConfig.backoff_base`` * 2**attempt) on HTTP 429, 5xx and 408, timeouts, dropped
  connections and malformed (non-JSON / unparseable) bodies. A 429's Retry-After header is
  honoured, and a 429 halves the number of requests allowed in flight (AIMD); each success
  grows it back by ~1/limit, up to ``EndpointConfig.concurrency``.
- Other 4xx are not retried. A request with ``response_format`` learns, once per endpoint, which form
  of structured output the server takes (``carryon_eval.model.structured``): json_schema, then json_object
  with the same schema, then none; a 400/422, or the 500 with which llama.cpp-style servers refuse a form
  they do not know, moves it to the next form without spending a retry. What it learned is remembered
  (one log line) and later requests start at the first form the endpoint takes; ``ChatResult.structured``
  says which form each reply was obtained with.
- A 400 that refuses ``max_tokens`` (OpenAI's reasoning models: "use max_completion_tokens"), a temperature
  or ``seed`` is learned once per endpoint (``carryon_eval.model.refusals``) and the request sent again the way
  the endpoint takes it, without spending a retry; ``Endpoint.sent_params()`` says what was learned. Any
  other 400 naming a parameter is one line (endpoint, parameter, provider's message) and the endpoint
  refuses every later call itself, so nothing more is spent.
- The role's request options in ``EndpointConfig`` (temperature override, reasoning_effort, system_prompt,
  extra_body) go into every request, and into the cache key only when set.
- Reasoning a provider returns beside the answer (``reasoning_content`` / ``reasoning``) is kept in
  ``ChatResult.text`` as a leading ``<think>`` block, which every reader of replies already strips before a
  judge or parser sees it; its tokens are in the reported completion tokens.
- Exhausted retries and non-retryable errors raise ``EndpointError`` with a one-line message.
- Empty replies (content None or "") are returned as they are, never retried here and never
  cached, so a rerun asks again.
- With a ``ResponseCache`` the reply is looked up before calling and stored after a successful,
  non-empty call. Concurrent identical requests (same ``cache_key``) share one HTTP call.
- The API key is read from the environment variable NAMED by ``api_key_env`` ("EMPTY" if unset)
  and never appears in logs, cache entries, ``public()``, reprs or exception messages.
- The module is over 550 lines: the retry loop, the AIMD limiter it feeds and the handling of a
  completion are one concern (one HTTP call made robust); the structured-output ladder lives in structured.py,
  the request body and the reading of a response body (shared with Batch API files) in wire.py.
- The ``openai.AsyncOpenAI`` client is made on first use, in the running event loop, and closed by
  ``aclose()``: an endpoint lives in one event loop (every command runs in one, see carryon_eval.app.commands);
  after ``aclose()`` it may be used again, in another loop.
"""
from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import heapq
import importlib
import itertools
import json
import logging
import math
import os
import random
import re
import sys
import time
from typing import TYPE_CHECKING, Any, Optional

import openai

if TYPE_CHECKING:  # pragma: no cover
    from carryon_eval.model.cache import ResponseCache

from carryon_eval.defaults import HTTP_CLIENTS
from carryon_eval.model.endpoint import (PARAM_NAMES, ChatResult, EndpointConfig, EndpointError, GenParams,
                                        EndpointRejected, MODEL_REJECTED, ModelRejected, ParameterRefused, UsageLedger,
                                        cache_key,
                                        keyed_request)
from carryon_eval.model.redact import public_url, register_key_of
from carryon_eval.model.refusals import ParamRefusals, error_fields, named_param
from carryon_eval.model.structured import FormProbe, StructuredForms
from carryon_eval.model.wire import Malformed as _Malformed
from carryon_eval.model.wire import parse_completion as _parse_completion
from carryon_eval.model.wire import ApiError, error_of, request_fields

__all__ = ["PARAM_NAMES", "ChatResult", "Endpoint", "EndpointConfig", "EndpointError", "EndpointRejected",
           "UsageLedger", "cache_key"]

log = logging.getLogger("carryon.client")

_MAX_RETRY_AFTER = 300.0   # never sleep longer than this on a single Retry-After
_MSG_LIMIT = 300           # max characters of server text quoted in an EndpointError
_CHAT_PATH = "/chat/completions"

# ---------------------------------------------------------------- adaptive concurrency (AIMD)
class _AdaptiveLimiter:
    """A semaphore whose size halves on a rate limit and grows back by ~1/size per success. A request waiting
    for a slot is let in by its priority (lower first; ties in arrival order): a sweep's runs share one limiter
    per judge and simulator, and the first run's requests going first makes the runs end one after another, so
    that each run's report is written while the later runs still call (sweep.py)."""

    def __init__(self, ceiling: int, start: Optional[float] = None) -> None:
        self.ceiling = max(1, int(ceiling))
        self.limit = float(min(self.ceiling, start)) if start else float(self.ceiling)
        self.in_flight = 0
        self.generation = 0   # bumped on each decrease; a 429 on an older request does not halve again
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []     # a heap: (priority, arrival, future)
        self._arrivals = itertools.count()

    def allowed(self) -> int:
        return max(1, int(self.limit))

    async def acquire(self, priority: int = 0) -> int:
        while self.in_flight >= self.allowed():
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            entry = (priority, next(self._arrivals), fut)
            heapq.heappush(self._waiters, entry)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self._wake()          # pass our wake-up on
                raise
            finally:
                if entry in self._waiters:
                    self._waiters.remove(entry)
                    heapq.heapify(self._waiters)
        self.in_flight += 1
        return self.generation

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        free = self.allowed() - self.in_flight
        while free > 0 and self._waiters:          # the first by priority, then by arrival; a cancelled one is dropped
            _, _, fut = heapq.heappop(self._waiters)
            if not fut.done():
                fut.set_result(None)
                free -= 1

    def on_success(self) -> None:
        if self.limit < self.ceiling:
            self.limit = min(float(self.ceiling), self.limit + 1.0 / self.limit)
            self._wake()

    def on_rate_limit(self, generation: int) -> bool:
        """Halve the limit, once per generation. True if it was lowered."""
        if generation != self.generation:
            return False
        self.generation += 1
        old = self.limit
        self.limit = max(1.0, self.limit / 2.0)
        return self.limit < old


def shared_limiter(concurrency: int) -> _AdaptiveLimiter:
    """A limiter several Endpoints of one server and model share (``Endpoint(limiter=...)``): at most
    ``concurrency`` requests in flight among all of them."""
    return _AdaptiveLimiter(concurrency)


# ---------------------------------------------------------------- the endpoint
class _Retry(Exception):
    """Internal: a retryable failure of one attempt."""

    def __init__(self, reason: str, retry_after: Optional[float] = None, rate_limited: bool = False,
                 status: Optional[int] = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.rate_limited = rate_limited
        self.status = status


class Endpoint:
    """One model on one OpenAI-compatible server. See the module docstring."""

    def __init__(self, config: EndpointConfig, *, cache: "ResponseCache | None" = None,
                 usage: Optional[UsageLedger] = None, model_check: bool = True,
                 limiter: Optional["_AdaptiveLimiter"] = None, priority: int = 0) -> None:
        self.config = config
        self.priority = priority      # its place when it waits on a shared limiter (a sweep's run: its index)
        register_key_of(config.api_key_env)     # whoever makes an endpoint (evaluator or builder): its key is masked
        public_url(config.base_url)             # and so is a credential inside its URL
        self.model_check = model_check     # False: check() asks nothing (servers whose /models is incomplete)
        self.cache = cache
        self.usage = usage
        self.structured_forms = StructuredForms()   # which response_format forms this endpoint takes
        self.refusals = ParamRefusals()              # which request parameters it refuses
        # The HTTP client is made on first use, in the running event loop, and lives until aclose():
        # every command runs in one loop (carryon_eval.app.commands), so one endpoint is used in one loop.
        self._client: Optional[openai.AsyncOpenAI] = None
        # ``limiter``: one shared with other endpoints of the same server and model (a sweep's shared judge)
        self._limiter = limiter if limiter is not None else _AdaptiveLimiter(config.concurrency)
        self._inflight: dict[str, list[Any]] = {}   # cache key -> [task, waiters]

    def __repr__(self) -> str:
        return f"Endpoint(base_url={self.config.base_url!r}, model={self.config.model!r})"

    @property
    def supports_response_format(self) -> Optional[bool]:
        """None until a structured request succeeded; then whether the endpoint takes any response_format."""
        return self.structured_forms.supports_response_format

    def sent_params(self) -> dict[str, str]:
        """The parameters this endpoint refused and what was sent instead ({} when it took them all)."""
        return self.refusals.sent()

    @property
    def structured_form(self) -> Optional[str]:
        """The most specific structured-output form this endpoint took so far (None: not known yet)."""
        return self.structured_forms.learned

    # ---------------------------------------------------------------- plumbing
    def _api_key(self) -> str:
        name = self.config.api_key_env
        return (os.environ.get(name) if name else None) or "EMPTY"

    def _scrub(self, text: str) -> str:
        """One line, bounded, with the key value (should a server echo it) masked."""
        text = " ".join(str(text).split())
        key = self._api_key()
        if key != "EMPTY" and len(key) >= 4:
            text = text.replace(key, "***")
        return text if len(text) <= _MSG_LIMIT else text[: _MSG_LIMIT - 3] + "..."

    def _where(self) -> str:
        return f"model '{self.config.model}' at {public_url(self.config.base_url)}"

    def _http(self) -> openai.AsyncOpenAI:
        if self._client is None:
            cfg = self.config
            self._client = openai.AsyncOpenAI(base_url=cfg.base_url, api_key=self._api_key(), max_retries=0,
                                              timeout=cfg.timeout,
                                              http_client=http_client(cfg.http_client, cfg.concurrency))
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client; a later call opens a new one (in whatever loop then runs)."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    # ---------------------------------------------------------------- check
    async def check(self) -> None:
        """GET /models; raise EndpointError if the server is unreachable or lacks the model (EndpointRejected
        when it answers and refuses). Without `model_check` nothing is asked: the first call tells."""
        if not self.model_check:
            return
        url = self.config.base_url
        timeout = min(self.config.timeout, 15.0)
        try:
            page = await asyncio.wait_for(self._http().models.list(timeout=timeout), timeout + 1.0)
            ids = [str(m.id) for m in page.data]
        except (asyncio.TimeoutError, openai.APITimeoutError) as exc:
            failed = _not_a_timeout(exc)
            raise EndpointError(f"cannot reach endpoint {url}: "
                                f"{self._scrub(failed) if failed else f'timed out after {timeout:g}s'}") from None
        except openai.APIConnectionError as exc:
            raise EndpointError(f"cannot reach endpoint {url}: {self._scrub(_cause(exc))}") from None
        except openai.AuthenticationError as exc:
            raise EndpointRejected(
                f"cannot reach endpoint {url}: the server refused the API key from "
                f"${self.config.api_key_env} (HTTP {exc.status_code})") from None
        except openai.APIStatusError as exc:
            hint = " (is the base URL right? it usually ends in /v1)" if exc.status_code == 404 else ""
            refused = EndpointRejected if exc.status_code < 500 else EndpointError
            raise refused(f"cannot reach endpoint {url}: GET models returned HTTP "
                          f"{exc.status_code}{hint}: {self._scrub(_status_message(exc))}") from None
        except Exception as exc:   # malformed model list
            raise EndpointError(f"cannot reach endpoint {url}: unexpected reply to GET models "
                                f"({exc.__class__.__name__})") from None
        if self.config.model not in ids:
            served = ", ".join(ids) if ids else "nothing"
            raise EndpointRejected(f"endpoint {url} does not serve model '{self.config.model}' (it serves: {served})")

    # ---------------------------------------------------------------- chat
    async def chat(self, messages: list[dict], *, stage: str, temperature: Any = 0.0, max_tokens: int = 1024,
                   seed: Optional[int] = None, response_format: Optional[dict] = None,
                   top_logprobs: Optional[int] = None) -> ChatResult:
        """``temperature`` may be "default" (or None): not sent, the provider's default."""
        key, messages, params = keyed_request(self.config, messages, GenParams(
            temperature, max_tokens, seed, response_format, top_logprobs))
        inflight = self._inflight

        # No await between the cache lookup and joining/starting the in-flight call, so two
        # identical concurrent requests can never both reach the server.
        if self.cache is not None:
            payload = self.cache.get(key)
            hit = ChatResult.from_payload(payload) if payload is not None else None
            if hit is not None:
                self._record(stage, hit)
                return hit

        entry = inflight.get(key)
        shared = entry is not None
        if entry is None:
            task = asyncio.ensure_future(self._fetch(key, messages, params, stage))
            entry = inflight[key] = [task, 0]

            def _done(t: "asyncio.Future[ChatResult]", k: str = key) -> None:
                if inflight.get(k, [None])[0] is t:
                    del inflight[k]
                if not t.cancelled():
                    t.exception()   # mark retrieved even if every waiter went away
            task.add_done_callback(_done)
        task = entry[0]
        entry[1] += 1
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            entry[1] -= 1
            if entry[1] <= 0 and not task.done():
                task.cancel()
            raise
        entry[1] -= 1
        if shared:
            result = dataclasses.replace(result, cached=True)
        self._record(stage, result)
        return result

    def _record(self, stage: str, result: ChatResult) -> None:
        if self.usage is not None:
            self.usage.add(stage, self.config.model, result)

    async def _fetch(self, key: str, messages: list[dict], params: GenParams, stage: str) -> ChatResult:
        rf = params.response_format
        probe: Optional[FormProbe] = self.structured_forms.probe(rf) if rf is not None else None
        result = await self._call_until_answered(messages, params, probe, stage)
        if probe is not None:
            result = dataclasses.replace(result, structured=probe.form)
            self._learned(probe)
        if self.cache is not None and result.text:
            self.cache.put(key, result.to_payload())
        return result

    async def _call_until_answered(self, messages: list[dict], params: GenParams, probe: Optional[FormProbe],
                                   stage: str) -> ChatResult:
        """One request sent until it is answered: a retryable failure is retried (max_retries, with backoff),
        a form or parameter the endpoint refuses is sent again without it for free, any other refusal raises."""
        limiter = self._limiter
        attempt = 0
        while True:
            attempt += 1
            if self.refusals.fatal is not None:   # the endpoint refused a parameter every call sends
                raise ParameterRefused(self.refusals.fatal)
            generation = await limiter.acquire(self.priority)
            if probe is not None:
                probe.refresh()   # the endpoint may have been learned while this request waited
            kwargs = self._request(messages, params, probe)
            try:
                result = await self._attempt(kwargs, want_logprobs=params.top_logprobs is not None)
            except _Retry as exc:
                limiter.release()
                if await self._after_failure(exc, probe, generation, attempt, stage):
                    attempt -= 1   # the server does not know this form: the next form is free
                continue
            except openai.APIStatusError as exc:
                limiter.release()
                self._after_rejection(exc, kwargs, probe)
                attempt -= 1       # sent again the way the endpoint takes it (or the next form): free
                continue
            except BaseException:
                limiter.release()
                raise
            limiter.release()
            limiter.on_success()
            return result

    async def _after_failure(self, exc: _Retry, probe: Optional[FormProbe], generation: int, attempt: int,
                             stage: str) -> bool:
        """A retryable failure: True when it refused the structured-output form (the next form is sent, free);
        else the limiter learns of a rate limit and the retry waits its backoff, or EndpointError when the
        attempts are spent."""
        if probe is not None and exc.status is not None and probe.refused(exc.status, exc.reason):
            return True
        if probe is not None:
            probe.server_failed(exc.status)
        limiter = self._limiter
        if exc.rate_limited and limiter.on_rate_limit(generation):
            log.info("%s rate limited: at most %d request(s) in flight for now", self._where(), limiter.allowed())
        attempts = self.config.max_retries + 1
        if attempt >= attempts:
            raise EndpointError(f"{self._where()} failed after {attempts} attempt(s): "
                                f"{self._scrub(exc.reason)}") from None
        delay = self._backoff(attempt, exc.retry_after)
        log.info("stage %s: %s: %s; retry %d/%d in %.2fs", stage, self._where(),
                 self._scrub(exc.reason), attempt, self.config.max_retries, delay)
        await asyncio.sleep(delay)
        return False

    def _after_rejection(self, exc: openai.APIStatusError, kwargs: dict[str, Any], probe: Optional[FormProbe]) -> None:
        """A 4xx the endpoint answered: returns when the request can be sent again for free (a parameter it can go
        without, now learned, or a structured-output form it does not know); else raises its one-line error."""
        if self._learn_refusal(exc, kwargs):
            return
        if probe is not None and self._about_form(exc, kwargs) and probe.refused(
                exc.status_code, f"{_status_message(exc)} {json.dumps(exc.body, default=str)}"):
            return
        line = self.refusals.rejection(self._where(), exc.status_code, exc.body, _status_message(exc),
                                       kwargs, self._scrub)
        kind = (ParameterRefused if self.refusals.fatal else
                ModelRejected if exc.status_code in MODEL_REJECTED else EndpointRejected)
        raise kind(line) from None

    def _request(self, messages: list[dict], params: GenParams, probe: Optional[FormProbe]) -> dict[str, Any]:
        """The keyword arguments of one HTTP call (the structured-output form the probe is at)."""
        kwargs = request_fields(self.config.model, messages, params,
                                response_format=probe.response_format if probe is not None else None)
        kwargs = self.refusals.adapt(kwargs)
        if params.extra_body:
            kwargs.update(extra_body=dict(params.extra_body))
        return kwargs

    def _learn_refusal(self, exc: openai.APIStatusError, kwargs: dict[str, Any]) -> bool:
        """True when the 400 refused a parameter the endpoint can go without (learned now, once)."""
        sent = {k: v for k, v in kwargs.items() if k != "extra_body"}
        sent.update(kwargs.get("extra_body") or {})
        before = dict(self.refusals.learned)
        name = self.refusals.learn(exc.status_code, exc.body, _status_message(exc), sent)
        if name is None:
            return False
        if name not in before:
            log.warning("%s refuses %s=%r: %s from now on (%s)", self._where(), name, sent[name],
                        self.refusals.learned[name], self._scrub(_status_message(exc)))
        return True

    @staticmethod
    def _about_form(exc: openai.APIStatusError, kwargs: dict[str, Any]) -> bool:
        """False when a 4xx names a request parameter other than response_format (not a form refusal)."""
        param, _, message = error_fields(exc.body, _status_message(exc))
        name = named_param(param, message, kwargs)
        return name is None or name == "response_format"

    def _learned(self, probe: FormProbe) -> None:
        rejected = probe.succeeded()
        if not rejected:
            return
        if probe.form == "none":
            log.warning("%s rejects response_format (%s); sending requests without structured output from now on",
                        self._where(), ", ".join(rejected))
        else:
            log.warning("%s rejects response_format %s; using the %s form from now on",
                        self._where(), ", ".join(rejected), probe.form)

    async def _attempt(self, kwargs: dict, *, want_logprobs: bool) -> ChatResult:
        """One HTTP call. Raises _Retry for retryable failures, APIStatusError for the rest.

        The request goes through the client's public ``post`` with the body as it is sent (``kwargs`` are
        already plain JSON; ``extra_body`` merged in last, as the SDK merges it) and comes back as the raw
        HTTP response, read here: the SDK's per-call request transform and response-model construction are
        skipped, while its transport, headers, authentication and status errors are the same."""
        timeout = self.config.timeout
        body = kwargs
        if "extra_body" in kwargs:
            body = {k: v for k, v in kwargs.items() if k != "extra_body"}
            body.update(kwargs["extra_body"])
        try:
            resp = await _within(self._http().post(_CHAT_PATH, body=body, cast_to=_httpx().Response), timeout)
            data = resp.json()
        except (asyncio.TimeoutError, openai.APITimeoutError) as exc:
            failed = _not_a_timeout(exc)
            raise _Retry(f"connection failed: {failed}" if failed else f"timed out after {timeout:g}s") from None
        except openai.APIConnectionError as exc:
            raise _Retry(f"connection failed: {_cause(exc)}") from None
        except openai.APIResponseValidationError as exc:
            raise _Retry(f"malformed response ({exc.__class__.__name__})") from None
        except openai.APIStatusError as exc:
            code = exc.status_code
            if code == 429:
                raise _Retry(f"HTTP 429: {_status_message(exc)}", _retry_after(exc.response.headers),
                             rate_limited=True, status=code) from None
            if code >= 500 or code == 408:
                raise _Retry(f"HTTP {code}: {_status_message(exc)}", _retry_after(exc.response.headers),
                             status=code) from None
            raise
        except (ValueError, UnicodeDecodeError) as exc:   # a body that is not JSON (json.JSONDecodeError)
            raise _Retry(f"malformed response (not JSON: {exc.__class__.__name__})") from None
        try:
            return _parse_completion(data, want_logprobs)
        except _Malformed as exc:
            raise _Retry(f"malformed response ({exc})") from None

    def _backoff(self, attempt: int, retry_after: Optional[float]) -> float:
        cfg = self.config
        jitter = random.uniform(0.0, 0.5) * cfg.backoff_base
        if retry_after is not None:
            return min(retry_after, _MAX_RETRY_AFTER) + jitter
        expo = cfg.backoff_base * (2 ** (attempt - 1)) * random.uniform(0.5, 1.5)
        return min(expo, cfg.backoff_max)


# ---------------------------------------------------------------- the HTTP transport
def http_client(name: str, concurrency: int) -> Any:
    """The openai client's HTTP client: aiohttp's transport (``openai[aiohttp]``) or httpx's, with at most as many
    connections as the requests this endpoint lets in flight (the AIMD ceiling). aiohttp keeps all of them alive;
    httpx keeps at most ``HTTPX_KEEPALIVE`` idle ones, the SDK's own default: its pool walks every connection it
    holds on each request, and keeping 256 alive costs more than reopening some (bench/README.md)."""
    if name not in HTTP_CLIENTS:
        raise ValueError(f"unknown HTTP client {name!r}; expected one of {list(HTTP_CLIENTS)}")
    size = max(1, concurrency)
    if name == "aiohttp":
        return openai.DefaultAioHttpClient(limits=_httpx().Limits(max_connections=size, max_keepalive_connections=size))
    return openai.DefaultAsyncHttpxClient(limits=_httpx().Limits(max_connections=size,
                                                                 max_keepalive_connections=min(size, HTTPX_KEEPALIVE)))


HTTPX_KEEPALIVE = 100
_HTTPX: list[Any] = []


def _httpx() -> Any:
    """The httpx flavour this openai is built on (httpx2 from openai 3 on, httpx before)."""
    if not _HTTPX:
        for name in ("httpx2", "httpx"):
            try:
                module = importlib.import_module(name)
            except ImportError:
                continue
            if issubclass(openai.DefaultAsyncHttpxClient, module.AsyncClient):
                _HTTPX.append(module)
                break
        else:  # pragma: no cover - an openai without either
            raise RuntimeError("cannot find the httpx package the openai library uses")
    return _HTTPX[0]


async def _within(awaitable: Any, seconds: float) -> Any:
    """``await awaitable`` with a deadline for the whole of it; asyncio.timeout (3.11+) makes no task of its own."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)  # pragma: no cover - Python 3.10


# ---------------------------------------------------------------- helpers
def _retry_after(headers: Any) -> Optional[float]:
    """Seconds from retry-after-ms / Retry-After (seconds or HTTP date), or None."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            parsed = email.utils.parsedate_tz(value)
            if parsed is None:
                continue
            seconds = email.utils.mktime_tz(parsed) - time.time()
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def _status_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        err = error_of(body)
        said = ApiError.from_json(err).message if isinstance(err, dict) else None
        if isinstance(said, str):
            return said
        if isinstance(err, str):
            return err
        said = ApiError.from_json(body).message
        if isinstance(said, str):
            return said
    if isinstance(body, str) and body.strip():
        return body
    return re.sub(r"^Error code: \d+ - ?", "", exc.message or "") or "no message"


def _not_a_timeout(exc: BaseException) -> Optional[str]:
    """The connection failure behind an openai APITimeoutError that is none (aiohttp's transport reports a
    refused or dropped connection as a connect timeout), or None for a real timeout."""
    seen: set[int] = set()
    cur: Optional[BaseException] = exc.__cause__ or exc.__context__
    chain = []
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    if not chain or any(isinstance(e, TimeoutError) for e in chain):
        return None
    if any(isinstance(e, OSError) or type(e).__module__.startswith("aiohttp") for e in chain):
        return _cause(exc)
    return None


def _cause(exc: BaseException) -> str:
    """The most specific reason in an exception chain, e.g. '[Errno 111] Connection refused'."""
    reason = str(exc) or exc.__class__.__name__
    seen: set[int] = set()
    cur: Optional[BaseException] = exc.__cause__ or exc.__context__
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        text = str(cur).strip()
        if text:
            reason = text
        cur = cur.__cause__ or cur.__context__
    return reason
