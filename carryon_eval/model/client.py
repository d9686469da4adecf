"""The one client every model call goes through (builder LLM stages, user simulator, target, judges).

    endpoint = Endpoint(EndpointConfig(base_url="http://127.0.0.1:8000/v1", model="m"),
                        cache=ResponseCache(run_dir / "cache"), usage=UsageLedger())
    await endpoint.check()                      # fail fast before spending anything
    result = await endpoint.chat(messages, stage="judge_utility", top_logprobs=5)
    await endpoint.aclose()

Behaviour
- Talks to any OpenAI-compatible server through the real ``openai.AsyncOpenAI`` client with the
  library's own retries disabled; retries are done here: exponential backoff with jitter
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
- Exhausted retries and non-retryable errors raise ``EndpointError`` with a one-line message.
- Empty replies (content None or "") are returned as they are, never retried here and never
  cached, so a rerun asks again.
- With a ``ResponseCache`` the reply is looked up before calling and stored after a successful,
  non-empty call. Concurrent identical requests (same ``cache_key``) share one HTTP call.
- The API key is read from the environment variable NAMED by ``api_key_env`` ("EMPTY" if unset)
  and never appears in logs, cache entries, ``public()``, reprs or exception messages.
- The module is a little over 450 lines: the retry loop, the AIMD limiter it feeds and the reading of a
  completion are one concern (one HTTP call made robust); the structured-output ladder lives in structured.py.
- The ``openai.AsyncOpenAI`` client is made on first use, in the running event loop, and closed by
  ``aclose()``: an endpoint lives in one event loop (every command runs in one, see carryon_eval.app.commands);
  after ``aclose()`` it may be used again, in another loop.
"""
from __future__ import annotations

import asyncio
import collections
import dataclasses
import email.utils
import logging
import math
import os
import random
import re
import time
from typing import TYPE_CHECKING, Any, Optional

import openai

if TYPE_CHECKING:  # pragma: no cover
    from carryon_eval.model.cache import ResponseCache

from carryon_eval.model.endpoint import (PARAM_NAMES, ChatResult, EndpointConfig, EndpointError, EndpointRejected, UsageLedger,
                       cache_key)
from carryon_eval.model.structured import FormProbe, StructuredForms

__all__ = ["PARAM_NAMES", "ChatResult", "Endpoint", "EndpointConfig", "EndpointError", "EndpointRejected",
           "UsageLedger", "cache_key"]

log = logging.getLogger("carryon.client")

_MAX_RETRY_AFTER = 300.0   # never sleep longer than this on a single Retry-After
_MSG_LIMIT = 300           # max characters of server text quoted in an EndpointError

# ---------------------------------------------------------------- adaptive concurrency (AIMD)
class _AdaptiveLimiter:
    """A semaphore whose size halves on a rate limit and grows back by ~1/size per success."""

    def __init__(self, ceiling: int, start: Optional[float] = None) -> None:
        self.ceiling = max(1, int(ceiling))
        self.limit = float(min(self.ceiling, start)) if start else float(self.ceiling)
        self.in_flight = 0
        self.generation = 0   # bumped on each decrease; a 429 on an older request does not halve again
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    def allowed(self) -> int:
        return max(1, int(self.limit))

    async def acquire(self) -> int:
        while self.in_flight >= self.allowed():
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self._wake()          # pass our wake-up on
                raise
            finally:
                try:
                    self._waiters.remove(fut)
                except ValueError:
                    pass
        self.in_flight += 1
        return self.generation

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        free = self.allowed() - self.in_flight
        for fut in list(self._waiters):
            if free <= 0:
                break
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


class _Malformed(Exception):
    """Internal: a 200 response whose body is not a usable chat completion."""


class Endpoint:
    """One model on one OpenAI-compatible server. See the module docstring."""

    def __init__(self, config: EndpointConfig, *, cache: "ResponseCache | None" = None,
                 usage: Optional[UsageLedger] = None, model_check: bool = True) -> None:
        self.config = config
        self.model_check = model_check     # False: check() asks nothing (servers whose /models is incomplete)
        self.cache = cache
        self.usage = usage
        self.structured_forms = StructuredForms()   # which response_format forms this endpoint takes
        # The HTTP client is made on first use, in the running event loop, and lives until aclose():
        # every command runs in one loop (carryon_eval.app.commands), so one endpoint is used in one loop.
        self._client: Optional[openai.AsyncOpenAI] = None
        self._limiter = _AdaptiveLimiter(config.concurrency)
        self._inflight: dict[str, list[Any]] = {}   # cache key -> [task, waiters]

    def __repr__(self) -> str:
        return f"Endpoint(base_url={self.config.base_url!r}, model={self.config.model!r})"

    @property
    def supports_response_format(self) -> Optional[bool]:
        """None until a structured request succeeded; then whether the endpoint takes any response_format."""
        return self.structured_forms.supports_response_format

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
        return f"model '{self.config.model}' at {self.config.base_url}"

    def _http(self) -> openai.AsyncOpenAI:
        if self._client is None:
            self._client = openai.AsyncOpenAI(base_url=self.config.base_url, api_key=self._api_key(),
                                              max_retries=0, timeout=self.config.timeout)
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
        except (asyncio.TimeoutError, openai.APITimeoutError):
            raise EndpointError(f"cannot reach endpoint {url}: timed out after {timeout:g}s") from None
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
    async def chat(self, messages: list[dict], *, stage: str, temperature: float = 0.0, max_tokens: int = 1024,
                   seed: Optional[int] = None, response_format: Optional[dict] = None,
                   top_logprobs: Optional[int] = None) -> ChatResult:
        params = {"temperature": temperature, "max_tokens": max_tokens, "seed": seed,
                  "response_format": response_format, "top_logprobs": top_logprobs}
        key = cache_key(self.config.model, messages, params)
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

    async def _fetch(self, key: str, messages: list[dict], params: dict, stage: str) -> ChatResult:
        cfg = self.config
        limiter = self._limiter
        rf = params["response_format"]
        probe: Optional[FormProbe] = self.structured_forms.probe(rf) if rf is not None else None
        attempts = cfg.max_retries + 1
        attempt = 0
        while True:
            attempt += 1
            generation = await limiter.acquire()
            if probe is not None:
                probe.refresh()   # the endpoint may have been learned while this request waited
            kwargs = self._request(messages, params, probe)
            try:
                result = await self._attempt(kwargs, want_logprobs=params["top_logprobs"] is not None)
            except _Retry as exc:
                limiter.release()
                if probe is not None and exc.status is not None and probe.refused(exc.status):
                    attempt -= 1   # the server does not know this form: the next form is free
                    continue
                if probe is not None:
                    probe.server_failed(exc.status)
                if exc.rate_limited and limiter.on_rate_limit(generation):
                    log.info("%s rate limited: at most %d request(s) in flight for now",
                             self._where(), limiter.allowed())
                if attempt >= attempts:
                    raise EndpointError(f"{self._where()} failed after {attempts} attempt(s): "
                                        f"{self._scrub(exc.reason)}") from None
                delay = self._backoff(attempt, exc.retry_after)
                log.info("stage %s: %s: %s; retry %d/%d in %.2fs", stage, self._where(),
                         self._scrub(exc.reason), attempt, cfg.max_retries, delay)
                await asyncio.sleep(delay)
                continue
            except openai.APIStatusError as exc:
                limiter.release()
                if probe is not None and probe.refused(exc.status_code):
                    attempt -= 1   # the next form is free
                    continue
                raise EndpointRejected(f"{self._where()} rejected the request: HTTP {exc.status_code}: "
                                       f"{self._scrub(_status_message(exc))}") from None
            except BaseException:
                limiter.release()
                raise
            limiter.release()
            limiter.on_success()
            break

        if probe is not None:
            result = dataclasses.replace(result, structured=probe.form)
            self._learned(probe)
        if self.cache is not None and result.text:
            self.cache.put(key, result.to_payload())
        return result

    def _request(self, messages: list[dict], params: dict, probe: Optional[FormProbe]) -> dict[str, Any]:
        """The keyword arguments of one HTTP call (the structured-output form the probe is at)."""
        kwargs: dict[str, Any] = {"model": self.config.model, "messages": messages,
                                  "temperature": params["temperature"], "max_tokens": params["max_tokens"]}
        if params["seed"] is not None:
            kwargs["seed"] = params["seed"]
        if probe is not None and probe.response_format is not None:
            kwargs["response_format"] = probe.response_format
        if params["top_logprobs"] is not None:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = params["top_logprobs"]
        return kwargs

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
        """One HTTP call. Raises _Retry for retryable failures, APIStatusError for the rest."""
        timeout = self.config.timeout
        try:
            resp = await asyncio.wait_for(self._http().chat.completions.create(**kwargs), timeout)
        except (asyncio.TimeoutError, openai.APITimeoutError):
            raise _Retry(f"timed out after {timeout:g}s") from None
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
        except ValueError as exc:   # body announced as JSON but is not (json.JSONDecodeError)
            raise _Retry(f"malformed response (not JSON: {exc.__class__.__name__})") from None
        try:
            return _parse_completion(resp, want_logprobs)
        except _Malformed as exc:
            raise _Retry(f"malformed response ({exc})") from None

    def _backoff(self, attempt: int, retry_after: Optional[float]) -> float:
        cfg = self.config
        jitter = random.uniform(0.0, 0.5) * cfg.backoff_base
        if retry_after is not None:
            return min(retry_after, _MAX_RETRY_AFTER) + jitter
        expo = cfg.backoff_base * (2 ** (attempt - 1)) * random.uniform(0.5, 1.5)
        return min(expo, cfg.backoff_max)


# ---------------------------------------------------------------- helpers
def _parse_completion(resp: Any, want_logprobs: bool) -> ChatResult:
    if isinstance(resp, (str, bytes)) or resp is None:
        raise _Malformed("body is not a JSON chat completion")
    try:
        choices = resp.choices
        if not choices:
            raise _Malformed("no choices")
        choice = choices[0]
        message = choice.message
        text = message.content if message is not None else None
        if text is not None and not isinstance(text, str):
            raise _Malformed("content is not a string")
        finish_reason = choice.finish_reason
        usage = getattr(resp, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0) if usage is not None else 0
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0) if usage is not None else 0
        top: Optional[list[tuple[str, float]]] = None
        if want_logprobs:
            lp = getattr(choice, "logprobs", None)
            content = getattr(lp, "content", None) if lp is not None else None
            if content:
                first = content[0]
                given = getattr(first, "top_logprobs", None)
                if given:
                    top = [(str(t.token), float(t.logprob)) for t in given]
    except _Malformed:
        raise
    except (AttributeError, TypeError, ValueError, IndexError, KeyError) as exc:
        raise _Malformed(f"unexpected shape: {exc.__class__.__name__}") from None
    return ChatResult(text=text, finish_reason=finish_reason if isinstance(finish_reason, str) else None,
                      prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                      cached=False, top_logprobs=top)


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
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(err, str):
            return err
        if isinstance(body.get("message"), str):
            return body["message"]
    if isinstance(body, str) and body.strip():
        return body
    return re.sub(r"^Error code: \d+ - ?", "", exc.message or "") or "no message"


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
