"""A real, scripted OpenAI-compatible HTTP server for tests.

Every test that needs "a model" runs one of these instead of mocking the client: the product's
``carryon_eval.model.client.Endpoint`` (and the real ``openai`` library under it) talk real HTTP to a
Starlette app served by uvicorn in a background thread on a free 127.0.0.1 port.

Quick start
-----------
    from support.scripted_server import ScriptedServer, Reply, Fault, script, faults_then
    # (pyproject's pytest settings put tests/ on the path, so this import works from any test file;
    #  the outcomes and handler helpers are defined in tests/support/scripted_outcomes.py and re-exported here)

    def handler(body: dict):                      # body = the JSON of POST /v1/chat/completions
        return "Sure, here is how ..."           # str | Reply | Fault

    with ScriptedServer(handler, models=("target", "judge")) as srv:
        cfg = EndpointConfig(base_url=srv.base_url, model="target")
        ...
        assert srv.count() == 1                   # chat requests received
        assert srv.count(lambda b: b["model"] == "judge") == 0

In pytest, prefer the ``scripted_server`` fixture from ``tests/conftest.py`` (also available as
``make_server``); it stops every server it started when the test ends:

    def test_x(scripted_server):
        srv = scripted_server(handler, models=("m",))

Routes
------
- ``GET  /v1/models``            -> ``{"object": "list", "data": [{"id": ...}, ...]}`` for ``models``.
- ``POST /v1/chat/completions``  -> the handler's outcome as an OpenAI chat completion. A request
  for a model not in ``models`` gets a 404 ``model_not_found`` error like OpenAI's, without calling
  the handler (it is still recorded in ``.requests``).

Handler outcomes
----------------
``handler(body) -> str | Reply | Fault`` (it may also be ``async def``).

- ``"text"``                          200 with that content, finish_reason "stop".
- ``Reply(text, logprobs=[(tok, lp), ...], prompt_tokens=, completion_tokens=, finish_reason=)``.
  ``logprobs`` become the first generated token's ``top_logprobs`` (trimmed to the request's
  ``top_logprobs``) and are only sent when the request asked for ``logprobs``.
- ``Fault.status(429, retry_after=1)`` an OpenAI-style error with that status (+ Retry-After header).
- ``Fault.status(500)``               idem; any status works (400, 401, 503, ...).
- ``Fault.delay(seconds, then="...")`` wait, then reply normally (to trigger client timeouts);
  the wait ends early if the client hangs up.
- ``Fault.malformed()``               200 whose body is not JSON (``content_type`` and ``body`` settable).
- ``Fault.empty()`` / ``Fault.empty("")``  200 with message content ``null`` / ``""``.
- ``Fault.drop()``                    close the TCP connection without sending any response.

If the handler raises (or a ``script`` runs out of outcomes), the server answers HTTP 418 (which the
client does not retry, so the test fails fast with the message) and records the error in
``.errors``.

Helpers to build handlers
-------------------------
- ``script([o1, o2, ...], then=None)``  call i gets outcome i; afterwards ``then`` (or an error if
  None). Outcomes and ``then`` may be callables ``body -> outcome``.
- ``faults_then(reply, [Fault..., ...])``  the faults first, then ``reply`` forever.
- ``rate_limited(seconds, then)``  a rate limiter: the first call opens a window of ``seconds`` and gets a
  429 with that Retry-After; calls inside the window get 429 again (Retry-After = the time left);
  after it, ``then``. A client that retries before Retry-After is refused, and the test sees it.
- ``by_model({"target": h1, "judge": h2})``  dispatch on the request's model id.
- ``by_prefix({"opening": h1}, default)``  dispatch on how the last user message starts.
- ``rubric_judges(templates, answers, default)``  answer rubric judge prompts (e.g. OpenSafeIntent's prompt
  files, filled by the product): the template a request fills says which judge is asked, ``answers[name](text)``
  gives its answer; anything else gets ``default``.
- ``last_user_text(body)`` / ``system_text(body)``  pick message text out of a request body.

Options
-------
- ``supports_response_format=False``: requests carrying ``response_format`` get HTTP 400 (like
  servers without structured output) and never reach the handler.
- ``quirks=("reasoning_model", ...)``: provider behaviours, with the real providers' error bodies (the request
  is refused before the handler sees it, and recorded):
  ``reasoning_model``: like OpenAI's o-series / GPT-5 models, HTTP 400 to ``max_tokens`` ("Unsupported
  parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.") and to any
  ``temperature`` but 1 ("Unsupported value: 'temperature' does not support 0 with this model. Only the
  default (1) value is supported."); ``no_seed``: HTTP 400 to ``seed`` (OpenAI's unsupported_parameter form);
  ``no_reasoning_effort``: HTTP 400 to ``reasoning_effort``; ``reasoning_content``: every reply carries
  ``message.reasoning_content`` ("Let me think about this request."), whose words count as completion tokens
  (a ``Reply(reasoning=...)`` does that for one reply).
- ``api_key="sk-..."``: require ``Authorization: Bearer sk-...`` (401 otherwise). Headers are not
  recorded, unless ``log_authorization=True``: then ``.authorizations`` lists the Authorization header of every
  request (``GET /v1/models`` and chat, refused ones too), in arrival order ("" when none was sent), so that a test
  sees which key reached which server.
- ``cut_at_max_tokens=True`` (or a set of model ids): like a real server, a text reply longer than the
  request's ``max_tokens`` (counted in whitespace words) is cut to that many words and answered with
  ``finish_reason: "length"`` (a model that stops on length, e.g. a reasoning model cut before its answer).
- ``cached_tokens=fn``: ``fn(body) -> int`` is reported as ``usage.prompt_tokens_details.cached_tokens`` (a
  provider's prompt cache; at most the prompt tokens); ``Reply(cached_tokens=N)`` does that for one reply. A reply
  with reasoning also reports ``usage.completion_tokens_details.reasoning_tokens`` (its words).
- ``port=N``: listen on that port (e.g. to bring a stopped server back where a run expects it; default: a free one).
- ``echo_authorization=True``: every reply ends with the request's Authorization header (a server that leaks the
  key it was sent, to test that no key is ever written).
- ``.handler`` may be reassigned while the server runs; ``.reset()`` clears ``requests``/``errors``.

What the server observed
------------------------
- ``.requests`` / ``.count(pred)``: the chat request bodies, in arrival order.
- ``.statuses``: the HTTP status each of those requests was answered with (same order; ``None`` while it
  is still being handled; 499 = the client hung up before the reply, or ``Fault.drop()``).
- ``.peers``: the distinct client (host, port) pairs chat requests came from, i.e. the connections the client
  used (a client with keep-alive reuses a few; one without opens one per request).
- ``.wait_idle()``: block until no chat request is being handled (e.g. until the server has noticed
  that a client which timed out hung up), then return ``.statuses``.
"""
from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import socket
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from support.scripted_outcomes import (Fault, Handler, Outcome, Reply, ScriptExhausted, by_model, by_prefix, faults_then,
                               json_object_only, last_user_text, message_text, rate_limited, rubric_judges, script,
                               system_text)

__all__ = ["ScriptedServer", "Reply", "Fault", "Outcome", "Handler", "script", "faults_then", "rate_limited",
           "by_model", "by_prefix", "json_object_only", "last_user_text", "rubric_judges", "system_text",
           "ScriptExhausted"]


# ---------------------------------------------------------------- the server
def _error(status: int, message: str, type_: str, code: Optional[str] = None,
           headers: Optional[dict[str, str]] = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": type_, "param": None, "code": code}},
                        status_code=status, headers=headers)


def _words(text: str) -> int:
    return len(text.split())


class _RawSend:
    """Outermost ASGI layer: exposes the server's own ``send`` so a route can reach the socket."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            scope["scripted.raw_send"] = send
        await self.app(scope, receive, send)


class _PromptServer(uvicorn.Server):
    """uvicorn polls ``should_exit`` every 0.1 s; wake up at once on ``request_stop`` instead,
    so tests that start many servers do not pay for it at teardown."""

    _stop_event: Optional[asyncio.Event] = None
    _stop_loop: Optional[asyncio.AbstractEventLoop] = None

    async def main_loop(self) -> None:
        self._stop_event = asyncio.Event()
        self._stop_loop = asyncio.get_running_loop()
        await self.on_tick(0)
        while not self.should_exit:
            try:
                await asyncio.wait_for(self._stop_event.wait(), 1.0)
            except asyncio.TimeoutError:
                await self.on_tick(0)   # refreshes the Date header, checks limits

    def request_stop(self) -> None:
        self.should_exit = True
        loop, event = self._stop_loop, self._stop_event
        if loop is not None and event is not None:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:   # loop already closed
                pass


QUIRKS = ("reasoning_model", "no_seed", "no_reasoning_effort", "reasoning_content")
QUIRK_REASONING = "Let me think about this request."


def _unsupported(param: str, message: str, code: str = "unsupported_parameter") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "invalid_request_error", "param": param,
                                   "code": code}}, status_code=400)


def _quirk_refusal(quirks: Sequence[str], body: dict) -> Optional[JSONResponse]:
    """The error a provider with these quirks answers this request with (its real body), or None."""
    if "reasoning_model" in quirks:
        if "max_tokens" in body:
            return _unsupported("max_tokens", "Unsupported parameter: 'max_tokens' is not supported with this "
                                              "model. Use 'max_completion_tokens' instead.")
        temperature = body.get("temperature")
        if temperature is not None and temperature != 1:
            return _unsupported("temperature", f"Unsupported value: 'temperature' does not support {temperature:g} "
                                               "with this model. Only the default (1) value is supported.",
                                "unsupported_value")
    if "no_seed" in quirks and "seed" in body:
        return _unsupported("seed", "Unsupported parameter: 'seed' is not supported with this model.")
    if "no_reasoning_effort" in quirks and "reasoning_effort" in body:
        return _unsupported("reasoning_effort", "Unrecognized request argument supplied: reasoning_effort")
    return None


@dataclass
class _Exchange:
    """One chat request as the server saw it: its body and the status it was answered with."""
    body: dict
    status: Optional[int] = None


class ScriptedServer:
    """A scripted OpenAI-compatible server in a background thread. Use as a context manager."""

    def __init__(self, handler: Handler, models: Sequence[str] = ("scripted-model",), *,
                 supports_response_format: bool = True, api_key: Optional[str] = None, port: int = 0,
                 echo_authorization: bool = False, quirks: Sequence[str] = (),
                 cut_at_max_tokens: Any = False, cached_tokens: Optional[Callable[[dict], int]] = None,
                 log_authorization: bool = False) -> None:
        unknown = set(quirks) - set(QUIRKS)
        if unknown:
            raise ValueError(f"unknown quirk(s) {sorted(unknown)}; known: {QUIRKS}")
        self.quirks = tuple(quirks)
        self.handler = handler
        self.cut_at_max_tokens = cut_at_max_tokens
        self.cached_tokens = cached_tokens
        self.models = tuple(models)
        self.supports_response_format = supports_response_format
        self.api_key = api_key
        self.log_authorization = log_authorization
        self._authorizations: list[str] = []
        self._lock = threading.Lock()
        self._exchanges: list[_Exchange] = []
        self._peers: set[tuple[str, int]] = set()
        self._errors: list[str] = []
        self._idle = threading.Condition(self._lock)
        self._in_flight = 0
        self._ids = itertools.count(1)
        self._server: Optional[_PromptServer] = None
        self._thread: Optional[threading.Thread] = None
        self._sock: Optional[socket.socket] = None
        self.port: Optional[int] = port or None
        self._want_port = port
        self.echo_authorization = echo_authorization

    # ---------------------------------------------------------------- public state
    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` - what EndpointConfig.base_url wants."""
        if self.port is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict]:
        """Copies of the JSON bodies of all chat requests received so far, in arrival order."""
        with self._lock:
            return [e.body for e in self._exchanges]

    @property
    def peers(self) -> set[tuple[str, int]]:
        """The distinct client (host, port) pairs of the chat requests so far: one per connection used."""
        with self._lock:
            return set(self._peers)

    @property
    def statuses(self) -> list[Optional[int]]:
        """The HTTP status each chat request was answered with, in arrival order (None: not answered yet;
        499: the client hung up before the reply, or ``Fault.drop()``)."""
        with self._lock:
            return [e.status for e in self._exchanges]

    @property
    def authorizations(self) -> list[str]:
        """The Authorization header of every request so far ("" when none), with ``log_authorization=True``."""
        if not self.log_authorization:
            raise RuntimeError("start the server with log_authorization=True to see the keys it received")
        with self._lock:
            return list(self._authorizations)

    def wait_idle(self, timeout: float = 10.0) -> list[Optional[int]]:
        """Block until no chat request is being handled (at most ``timeout`` s); return ``statuses``."""
        with self._idle:
            if not self._idle.wait_for(lambda: self._in_flight == 0, timeout):
                raise AssertionError(f"the scripted server still handles {self._in_flight} request(s)")
        return self.statuses

    @property
    def errors(self) -> list[str]:
        """Handler exceptions (formatted), e.g. a script that ran out of outcomes."""
        with self._lock:
            return list(self._errors)

    def count(self, predicate: Optional[Callable[[dict], bool]] = None) -> int:
        """Number of chat requests received (matching ``predicate(body)`` if given)."""
        reqs = self.requests
        return len(reqs) if predicate is None else sum(1 for b in reqs if predicate(b))

    def reset(self) -> None:
        with self._lock:
            self._exchanges.clear()
            self._authorizations.clear()
            self._peers.clear()
            self._errors.clear()

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> "ScriptedServer":
        if self._server is not None:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self._want_port))
        self._sock = sock
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self._app(), log_config=None, log_level="warning", access_log=False,
                                lifespan="off", http="h11", ws="none", proxy_headers=False,
                                timeout_graceful_shutdown=1)
        self._server = _PromptServer(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name=f"scripted-server-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("scripted server failed to start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is not None:
            server.request_stop()
        if thread is not None:
            thread.join(timeout=5)
            if thread.is_alive() and server is not None:
                server.force_exit = True
                thread.join(timeout=5)
        if self._sock is not None:
            self._sock.close()
        self._server = self._thread = self._sock = None

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ---------------------------------------------------------------- app
    def _app(self) -> Any:
        app = Starlette(routes=[
            Route("/v1/models", self._models, methods=["GET"]),
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
        ])
        return _RawSend(app)

    def _unauthorized(self, request: Request) -> Optional[Response]:
        if self.log_authorization:
            with self._lock:
                self._authorizations.append(request.headers.get("authorization", ""))
        if self.api_key is None:
            return None
        if request.headers.get("authorization") == f"Bearer {self.api_key}":
            return None
        return _error(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")

    async def _models(self, request: Request) -> Response:
        denied = self._unauthorized(request)
        if denied is not None:
            return denied
        return JSONResponse({"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "scripted"} for m in self.models]})

    async def _chat(self, request: Request) -> Response:
        denied = self._unauthorized(request)
        if denied is not None:
            return denied
        try:
            body = json.loads(await request.body())
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError:
            return _error(400, "We could not parse the JSON body of your request.", "invalid_request_error")
        exchange = _Exchange(body)
        with self._lock:
            self._exchanges.append(exchange)
            if request.client is not None:
                self._peers.add((request.client.host, request.client.port))
            self._in_flight += 1
        response: Optional[Response] = None
        try:
            response = await self._answer(request, body)
            return response
        finally:
            with self._idle:
                exchange.status = response.status_code if response is not None else None
                self._in_flight -= 1
                self._idle.notify_all()

    async def _answer(self, request: Request, body: dict) -> Response:
        model = body.get("model")
        if model not in self.models:
            return _error(404, f"The model `{model}` does not exist or you do not have access to it.",
                          "invalid_request_error", "model_not_found")
        if body.get("response_format") is not None and not self.supports_response_format:
            return _error(400, "response_format is not supported by this server", "invalid_request_error")
        refused = _quirk_refusal(self.quirks, body)
        if refused is not None:
            return refused
        try:
            outcome = self.handler(body)
            if inspect.isawaitable(outcome):
                outcome = await outcome
            if self.echo_authorization:
                leak = f" [{request.headers.get('authorization', '')}]"
                if isinstance(outcome, str):
                    outcome = outcome + leak
                elif isinstance(outcome, Reply) and outcome.text is not None:
                    outcome = Reply(outcome.text + leak, logprobs=outcome.logprobs,
                                    prompt_tokens=outcome.prompt_tokens, completion_tokens=outcome.completion_tokens,
                                    finish_reason=outcome.finish_reason)
            return await self._render(request, body, outcome)
        except Exception as exc:   # a broken script: fail the client fast and loudly
            with self._lock:
                self._errors.append("".join(traceback.format_exception(exc)))
            return _error(418, f"scripted handler failed: {exc.__class__.__name__}: {exc}", "scripted_error")

    async def _render(self, request: Request, body: dict, outcome: Any) -> Response:
        if isinstance(outcome, str):
            return self._completion(body, Reply(outcome))
        if isinstance(outcome, Reply):
            return self._completion(body, outcome)
        if not isinstance(outcome, Fault):
            raise TypeError(f"handler returned {type(outcome).__name__}; expected str, Reply or Fault")
        kind = outcome.kind
        if kind == "status":
            headers = {"retry-after": f"{outcome.retry_after:g}"} if outcome.retry_after is not None else None
            code = outcome.status_code
            type_ = {429: "rate_limit_exceeded"}.get(code, "server_error" if code >= 500 else "invalid_request_error")
            return _error(code, outcome.message or f"scripted HTTP {code}", type_, headers=headers)
        if kind == "delay":
            deadline = time.monotonic() + outcome.seconds
            while time.monotonic() < deadline:
                if await request.is_disconnected():
                    return Response(status_code=499)   # nobody is listening any more
                await asyncio.sleep(min(0.02, max(0.0, deadline - time.monotonic())))
            return await self._render(request, body, outcome.then if outcome.then is not None else "")
        if kind == "malformed":
            return Response(content=(outcome.body or "").encode("utf-8"), status_code=200,
                            media_type=outcome.content_type)
        if kind == "empty":
            return self._completion(body, Reply(outcome.content, completion_tokens=0))
        if kind == "drop":
            raw_send = request.scope.get("scripted.raw_send")
            transport = getattr(getattr(raw_send, "__self__", None), "transport", None)
            if transport is None:
                raise RuntimeError("Fault.drop(): cannot reach the connection with this uvicorn version")
            transport.close()
            await asyncio.sleep(0.05)   # let the server notice the disconnect; the reply below is discarded
            return Response(status_code=499)
        raise ValueError(f"unknown fault kind {kind!r}")

    def _cut(self, body: dict, reply: Reply) -> Reply:
        """The reply cut at the request's max_tokens (whitespace words) when this server cuts, else as is."""
        cut = self.cut_at_max_tokens
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        if not cut or (cut is not True and body.get("model") not in cut) or not isinstance(limit, int) \
                or reply.text is None or _words(reply.text) <= limit:
            return reply
        return Reply(" ".join(reply.text.split()[:limit]), reply.logprobs, reply.prompt_tokens, limit, "length",
                     cached_tokens=reply.cached_tokens)

    def _completion(self, body: dict, reply: Reply) -> JSONResponse:
        reply = self._cut(body, reply)
        text = reply.text
        prompt_tokens = reply.prompt_tokens
        if prompt_tokens is None:
            prompt_tokens = sum(_words(message_text(m)) for m in body.get("messages") or [] if isinstance(m, dict))
        reasoning = reply.reasoning or (QUIRK_REASONING if "reasoning_content" in self.quirks and text else None)
        completion_tokens = reply.completion_tokens
        if completion_tokens is None:
            completion_tokens = _words(text or "") + _words(reasoning or "")
        logprobs = None
        if body.get("logprobs") and reply.logprobs:
            n = body.get("top_logprobs")
            tops = list(reply.logprobs)[: n if isinstance(n, int) and n > 0 else None]
            entries = [{"token": t, "logprob": float(lp), "bytes": list(t.encode("utf-8"))} for t, lp in tops]
            first = dict(entries[0])
            logprobs = {"content": [{**first, "top_logprobs": entries}], "refusal": None}
        usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                 "total_tokens": prompt_tokens + completion_tokens}
        cached = reply.cached_tokens if reply.cached_tokens is not None else \
            (self.cached_tokens(body) if self.cached_tokens is not None else None)
        if cached is not None:                 # as OpenAI reports a prompt-cache hit
            usage["prompt_tokens_details"] = {"cached_tokens": min(int(cached), prompt_tokens)}
        if reasoning:
            usage["completion_tokens_details"] = {"reasoning_tokens": _words(reasoning)}
        return JSONResponse({
            "id": f"chatcmpl-scripted-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text,
                            **({"reasoning_content": reasoning} if reasoning else {})},
                "logprobs": logprobs,
                "finish_reason": reply.finish_reason,
            }],
            "usage": usage,
        })
