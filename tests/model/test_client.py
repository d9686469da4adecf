"""Endpoint client against a real scripted HTTP server, through the real openai library."""
from __future__ import annotations

import asyncio
import dataclasses
import errno
import http.client
import json
import logging
import socket

import pytest

from carryon_eval.model.cache import ResponseCache
from carryon_eval.model.client import (
    ChatResult,
    Endpoint,
    EndpointConfig,
    EndpointError,
    UsageLedger,
    _AdaptiveLimiter,
    cache_key,
)
from support.scripted_server import Fault, Reply, by_model, faults_then, json_object_only, rate_limited, script

MODEL = "scripted-model"
MSGS = [{"role": "user", "content": "How do I bake bread?"}]


def fast_config(server, model: str = MODEL, **kw) -> EndpointConfig:
    kw.setdefault("backoff_base", 0.01)
    kw.setdefault("timeout", 5.0)
    kw.setdefault("max_retries", 3)
    return EndpointConfig(base_url=server.base_url, model=model, **kw)


def run(coro):
    return asyncio.run(coro)


async def one_chat(endpoint: Endpoint, messages=MSGS, **kw) -> ChatResult:
    try:
        return await endpoint.chat(messages, stage=kw.pop("stage", "test"), **kw)
    finally:
        await endpoint.aclose()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- happy path, cache, usage
def test_happy_path_sends_params_and_returns_result(scripted_server):
    srv = scripted_server(lambda body: Reply("Knead, rise, bake.", prompt_tokens=11, completion_tokens=4))
    usage = UsageLedger()
    ep = Endpoint(fast_config(srv), usage=usage)
    res = run(one_chat(ep, temperature=0.7, max_tokens=50, seed=3))
    assert res == ChatResult(text="Knead, rise, bake.", finish_reason="stop", prompt_tokens=11,
                             completion_tokens=4, cached=False, top_logprobs=None)
    (body,) = srv.requests
    assert body["model"] == MODEL and body["messages"] == MSGS
    assert body["temperature"] == 0.7 and body["max_tokens"] == 50 and body["seed"] == 3
    assert "response_format" not in body and "logprobs" not in body
    assert usage.snapshot() == {f"test/{MODEL}": {"calls": 1, "cache_hits": 0, "prompt_tokens": 11,
                                                  "completion_tokens": 4, "cached_prompt_tokens": 0,
                                                  "reasoning_tokens": 0}}
    assert usage.total_tokens() == 15 and usage.total_tokens("test") == 15 and usage.total_tokens("other") == 0


def test_cache_hit_makes_no_second_request(scripted_server, tmp_path):
    srv = scripted_server(lambda body: "cached answer")
    usage = UsageLedger()
    cache = ResponseCache(tmp_path / "cache")

    async def go():
        ep = Endpoint(fast_config(srv), cache=cache, usage=usage)
        a = await ep.chat(MSGS, stage="target")
        b = await ep.chat(MSGS, stage="target")
        c = await ep.chat(MSGS, stage="target", temperature=0.5)   # other params: a new call
        await ep.aclose()
        return a, b, c

    a, b, c = run(go())
    assert srv.count() == 2
    assert not a.cached and b.cached and not c.cached
    assert b.text == a.text == "cached answer"
    row = usage.snapshot()[f"target/{MODEL}"]
    assert row["calls"] == 3 and row["cache_hits"] == 1
    assert row["prompt_tokens"] == 2 * a.prompt_tokens       # the hit adds no tokens

    # a fresh endpoint (a rerun) is served from disk too
    again = run(one_chat(Endpoint(fast_config(srv), cache=cache), stage="target"))
    assert again.cached and again.text == "cached answer" and srv.count() == 2


def test_concurrent_identical_requests_share_one_call(scripted_server, tmp_path):
    srv = scripted_server(lambda body: Fault.delay(0.3, then="shared"))
    usage = UsageLedger()

    async def go():
        ep = Endpoint(fast_config(srv), cache=ResponseCache(tmp_path), usage=usage)
        results = await asyncio.gather(*[ep.chat(MSGS, stage="judge") for _ in range(3)])
        await ep.aclose()
        return results

    results = run(go())
    assert srv.count() == 1
    assert [r.text for r in results] == ["shared"] * 3
    assert sorted(r.cached for r in results) == [False, True, True]
    assert usage.snapshot()[f"judge/{MODEL}"]["cache_hits"] == 2


def test_endpoint_reopens_in_a_new_event_loop_after_aclose(scripted_server):
    """Commands run in one event loop (carryon_eval.app.commands); an endpoint closed there opens again in another."""
    srv = scripted_server(lambda body: "ok")
    ep = Endpoint(fast_config(srv))

    async def check_then_close() -> None:
        try:
            await ep.check()
        finally:
            await ep.aclose()

    run(check_then_close())
    assert run(one_chat(ep)).text == "ok"
    assert run(one_chat(ep, seed=1)).text == "ok"


# ---------------------------------------------------------------- retries
def test_429_honours_retry_after_then_succeeds(scripted_server):
    # The server refuses (429 again) any retry that comes before its Retry-After has passed; the client's
    # own backoff (backoff_base 0.01 s) would retry far too early, 3 times, and fail.
    srv = scripted_server(rate_limited(1, "after the wait"))
    ep = Endpoint(fast_config(srv, concurrency=4))
    res = run(one_chat(ep))
    assert res.text == "after the wait"
    assert srv.count() == 2
    assert srv.statuses == [429, 200]      # the one retry came after the window: never refused early


@pytest.mark.parametrize("fault", [
    Fault.status(500),
    Fault.status(503),
    Fault.malformed(),
    Fault.malformed(body="<html>Bad gateway</html>", content_type="text/html"),
    Fault.malformed(body='{"object": "chat.completion"}'),     # JSON, but no choices
    Fault.malformed(body='{"choices": [{"message": "hi"}]}'),   # a message that is not an object
    Fault.malformed(body='{"choices": [{"message": {"content": 7}}]}'),   # content that is not a string
    Fault.malformed(body='[1, 2]'),                              # JSON, not an object
    Fault.drop(),
], ids=["500", "503", "malformed-json", "malformed-html", "no-choices", "message-not-object", "content-not-string",
        "not-an-object", "drop"])
def test_transient_fault_then_success(scripted_server, fault):
    srv = scripted_server(faults_then("recovered", [fault]))
    res = run(one_chat(Endpoint(fast_config(srv))))
    assert res.text == "recovered"
    assert srv.count() == 2
    assert srv.errors == []


def test_timeout_then_success(scripted_server):
    srv = scripted_server(faults_then("in time", [Fault.delay(2.0, then="too late")]))
    res = run(one_chat(Endpoint(fast_config(srv, timeout=0.3))))
    assert res.text == "in time"
    assert srv.count() == 2
    assert srv.wait_idle() == [499, 200]    # the client hung up on the slow reply: it did not wait for it


def test_retries_exhausted_raise_one_line_error(scripted_server):
    srv = scripted_server(lambda body: Fault.status(500, message="GPU on fire\nsecond line"))
    with pytest.raises(EndpointError) as info:
        run(one_chat(Endpoint(fast_config(srv, max_retries=2))))
    msg = str(info.value)
    assert srv.count() == 3
    assert "\n" not in msg
    assert "3 attempt" in msg and "HTTP 500" in msg and "GPU on fire" in msg and MODEL in msg


def test_non_retryable_4xx_is_not_retried(scripted_server):
    srv = scripted_server(lambda body: Fault.status(403, message="forbidden content"))
    with pytest.raises(EndpointError, match="HTTP 403"):
        run(one_chat(Endpoint(fast_config(srv))))
    assert srv.count() == 1


def test_unknown_model_in_chat_is_a_clear_error(scripted_server):
    srv = scripted_server(lambda body: "never", models=("other",))
    with pytest.raises(EndpointError, match="HTTP 404"):
        run(one_chat(Endpoint(fast_config(srv))))
    assert srv.count() == 1


def test_empty_reply_is_returned_not_retried_not_cached(scripted_server, tmp_path):
    srv = scripted_server(script([Fault.empty(), Fault.empty(""), "finally"]))
    cache = ResponseCache(tmp_path)
    ep = Endpoint(fast_config(srv), cache=cache)
    first = run(one_chat(ep))
    assert first.text is None and not first.cached and srv.count() == 1
    second = run(one_chat(ep))
    assert second.text == "" and srv.count() == 2
    third = run(one_chat(ep))
    assert third.text == "finally" and srv.count() == 3
    assert run(one_chat(ep)).cached


def test_response_format_rejected_is_retried_without(scripted_server, caplog):
    srv = scripted_server(lambda body: '{"verdict": "yes"}', supports_response_format=False)
    ep = Endpoint(fast_config(srv))
    rf = {"type": "json_object"}

    async def go():
        a = await ep.chat(MSGS, stage="judge", response_format=rf)
        b = await ep.chat(MSGS + [{"role": "user", "content": "again"}], stage="judge", response_format=rf)
        await ep.aclose()
        return a, b

    with caplog.at_level(logging.INFO, logger="carryon.client"):
        a, b = run(go())
    assert a.text == b.text == '{"verdict": "yes"}'
    with_rf = srv.count(lambda body: "response_format" in body)
    assert with_rf == 1 and srv.count() == 3          # rejected once, then remembered
    assert ep.supports_response_format is False
    lines = [r for r in caplog.records if "response_format" in r.getMessage()]
    assert len(lines) == 1


def test_requests_waiting_for_a_slot_learn_that_response_format_is_rejected(scripted_server):
    """With one request in flight at a time, only the first of a wave is sent with response_format."""
    srv = scripted_server(lambda body: '{"ok": true}', supports_response_format=False)
    ep = Endpoint(dataclasses.replace(fast_config(srv), concurrency=1))
    rf = {"type": "json_object"}

    async def go():
        out = await asyncio.gather(*(ep.chat([{"role": "user", "content": f"q{i}"}], stage="s", response_format=rf)
                                     for i in range(5)))
        await ep.aclose()
        return out

    assert [r.text for r in run(go())] == ['{"ok": true}'] * 5
    assert srv.count(lambda body: "response_format" in body) == 1 and srv.count() == 6


def test_response_format_accepted_is_sent(scripted_server):
    srv = scripted_server(lambda body: "{}")
    ep = Endpoint(fast_config(srv))
    run(one_chat(ep, response_format={"type": "json_object"}))
    assert srv.requests[0]["response_format"] == {"type": "json_object"}
    assert ep.supports_response_format is True


# ---------------------------------------------------------------- check()
def test_check_wrong_port_fails_fast():
    url = f"http://127.0.0.1:{free_port()}/v1"
    ep = Endpoint(EndpointConfig(base_url=url, model=MODEL))
    with pytest.raises(EndpointError) as info:
        run(ep.check())
    msg = str(info.value)
    assert msg.startswith(f"cannot reach endpoint {url}: ") and "\n" not in msg
    assert f"[Errno {errno.ECONNREFUSED}]" in msg       # the refusal itself, not a wait for a timeout


@pytest.mark.parametrize("http_client,connections", [("httpx", 1), ("aiohttp", 2)])
def test_check_is_one_attempt_not_retried(hang_up_server, http_client, connections):
    """check() on a server that closes every connection unanswered: one attempt, then the error, whatever
    max_retries says (aiohttp itself sends an idempotent GET once more after a dropped connection, RFC 9112)."""
    url = f"http://127.0.0.1:{hang_up_server.port}/v1"
    with pytest.raises(EndpointError) as info:
        run(Endpoint(EndpointConfig(base_url=url, model=MODEL, max_retries=3, http_client=http_client)).check())
    assert str(info.value).startswith(f"cannot reach endpoint {url}: ")
    assert hang_up_server.connections() == connections


def test_check_unknown_model_lists_served_models(scripted_server):
    srv = scripted_server(lambda body: "x", models=("alpha", "beta"))
    with pytest.raises(EndpointError) as info:
        run(Endpoint(fast_config(srv, model="gamma")).check())
    assert str(info.value) == f"endpoint {srv.base_url} does not serve model 'gamma' (it serves: alpha, beta)"
    run(Endpoint(fast_config(srv, model="beta")).check())   # served: no error


def test_check_wrong_path_hints_at_v1(scripted_server):
    srv = scripted_server(lambda body: "x")
    url = srv.base_url[: -len("/v1")]
    with pytest.raises(EndpointError, match="404.*/v1"):
        run(Endpoint(EndpointConfig(base_url=url, model=MODEL)).check())


# ---------------------------------------------------------------- secrets
SECRET = "sk-test-SECRET-0123456789"


def test_api_key_never_leaks(scripted_server, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("CARRYON_TEST_KEY", SECRET)
    srv = scripted_server(lambda body: "authorised", api_key=SECRET)
    cfg = fast_config(srv, api_key_env="CARRYON_TEST_KEY")
    cache = ResponseCache(tmp_path / "cache")
    with caplog.at_level(logging.DEBUG):
        res = run(one_chat(Endpoint(cfg, cache=cache)))    # the key is sent: the server accepts it
        assert res.text == "authorised"
        # a server echoing the key in its error message
        echo = scripted_server(lambda body: Fault.status(401, message=f"Incorrect API key provided: {SECRET}"))
        with pytest.raises(EndpointError) as info:
            run(one_chat(Endpoint(fast_config(echo, api_key_env="CARRYON_TEST_KEY"))))
        down = Endpoint(EndpointConfig(base_url=f"http://127.0.0.1:{free_port()}/v1", model=MODEL,
                                       api_key_env="CARRYON_TEST_KEY"))
        with pytest.raises(EndpointError) as info2:
            run(down.check())
    assert SECRET not in str(info.value) and "HTTP 401" in str(info.value)
    assert SECRET not in str(info2.value)
    assert SECRET not in json.dumps(cfg.public()) and SECRET not in repr(cfg) and SECRET not in repr(down)
    assert cfg.public() == {"base_url": srv.base_url, "model": MODEL, "api_key_env": "CARRYON_TEST_KEY",
                            "concurrency": 8, "timeout": 5.0, "max_retries": 3, "http_client": "aiohttp"}
    files = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert len(files) == 1
    for p in files:
        assert SECRET not in p.read_text()
    all_logs = "\n".join(r.getMessage() for r in caplog.records)   # ours, openai's and httpx's
    assert SECRET not in all_logs


def test_unset_key_env_uses_empty(scripted_server, monkeypatch):
    monkeypatch.delenv("CARRYON_UNSET_KEY", raising=False)
    srv = scripted_server(lambda body: "ok", api_key="EMPTY")
    assert run(one_chat(Endpoint(fast_config(srv, api_key_env="CARRYON_UNSET_KEY")))).text == "ok"


# ---------------------------------------------------------------- disk cache robustness
def test_truncated_cache_file_is_a_miss(scripted_server, tmp_path):
    srv = scripted_server(lambda body: "fresh answer")
    cache = ResponseCache(tmp_path)
    run(one_chat(Endpoint(fast_config(srv), cache=cache)))
    (entry,) = [p for p in tmp_path.rglob("*.json")]
    key = entry.stem
    assert entry.parent.name == key[:2]
    payload = json.loads(entry.read_text())
    assert set(payload) == {"text", "finish_reason", "prompt_tokens", "completion_tokens", "top_logprobs"}
    entry.write_bytes(entry.read_bytes()[:10])          # a crash mid-write (without our atomic rename)
    assert cache.get(key) is None
    res = run(one_chat(Endpoint(fast_config(srv), cache=cache)))
    assert not res.cached and srv.count() == 2
    assert cache.get(key)["text"] == "fresh answer"     # rewritten whole
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_cache_key_is_canonical_and_validated(tmp_path):
    params = {"temperature": 0.0, "max_tokens": 10, "seed": None, "response_format": None, "top_logprobs": None}
    k = cache_key("m", MSGS, params)
    assert len(k) == 64 and k == cache_key("m", [dict(reversed(list(MSGS[0].items())))], dict(reversed(params.items())))
    assert k != cache_key("m", MSGS, {**params, "seed": 1}) and k != cache_key("n", MSGS, params)
    cache = ResponseCache(tmp_path)
    with pytest.raises(ValueError):
        cache.get("../../etc/passwd")
    cache.put(k, {"text": "x"})
    assert cache.get(k) == {"text": "x"} and k in cache


# ---------------------------------------------------------------- logprobs
def test_top_logprobs_returned_and_cached(scripted_server, tmp_path):
    srv = scripted_server(lambda body: Reply("Yes", logprobs=[("Yes", -0.05), ("No", -3.0), ("yes", -4.5)]))
    cache = ResponseCache(tmp_path)
    res = run(one_chat(Endpoint(fast_config(srv), cache=cache), top_logprobs=2, max_tokens=1))
    assert res.top_logprobs == [("Yes", -0.05), ("No", -3.0)]
    body = srv.requests[0]
    assert body["logprobs"] is True and body["top_logprobs"] == 2
    again = run(one_chat(Endpoint(fast_config(srv), cache=cache), top_logprobs=2, max_tokens=1))
    assert again.cached and again.top_logprobs == res.top_logprobs and srv.count() == 1


def test_logprobs_not_given_are_none(scripted_server):
    srv = scripted_server(lambda body: "Yes")
    assert run(one_chat(Endpoint(fast_config(srv)), top_logprobs=5)).top_logprobs is None


# ---------------------------------------------------------------- concurrency
def test_concurrency_limit_is_respected(scripted_server):
    state = {"now": 0, "peak": 0}

    async def handler(body):
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.05)
        state["now"] -= 1
        return "ok"

    srv = scripted_server(handler)

    async def go():
        ep = Endpoint(fast_config(srv, concurrency=2))
        await asyncio.gather(*[ep.chat([{"role": "user", "content": f"q{i}"}], stage="s") for i in range(6)])
        await ep.aclose()

    run(go())
    assert srv.count() == 6 and state["peak"] == 2


def test_burst_of_429s_halves_concurrency_once(scripted_server):
    srv = scripted_server(script([Fault.status(429, retry_after=0)] * 8, then="ok"))

    async def go():
        ep = Endpoint(fast_config(srv, concurrency=8))
        results = await asyncio.gather(*[ep.chat([{"role": "user", "content": f"q{i}"}], stage="s")
                                         for i in range(8)])
        limit = ep._limiter.limit
        await ep.aclose()
        return results, limit

    results, limit = run(go())
    assert [r.text for r in results] == ["ok"] * 8 and srv.count() == 16
    assert 4 <= limit < 6      # one halving for the whole burst, then slow growth over 8 successes


def test_rate_limit_halves_concurrency_and_grows_back():
    async def go():
        lim = _AdaptiveLimiter(8)
        gen = await lim.acquire()
        lim.release()
        assert lim.on_rate_limit(gen) and lim.allowed() == 4
        assert not lim.on_rate_limit(gen)               # same generation: only one halving
        gen = await lim.acquire()
        lim.release()
        assert lim.on_rate_limit(gen) and lim.allowed() == 2
        for _ in range(3):
            lim.on_success()
        assert 2 < lim.limit < 4                        # slow (additive) growth
        for _ in range(200):
            lim.on_success()
        assert lim.allowed() == 8                       # never above the configured ceiling
    run(go())


def test_a_shared_limiter_lets_waiting_requests_in_by_priority_then_arrival():
    """A sweep's runs share a limiter: the first run's waiting requests go first (then each run's in arrival order),
    so that the runs end one after another; a waiter cancelled before its turn passes it on."""
    async def go():
        lim = _AdaptiveLimiter(1)
        await lim.acquire()
        order = []

        async def wait(name, priority):
            await lim.acquire(priority)
            order.append(name)
            lim.release()
        tasks = [asyncio.ensure_future(wait(name, prio)) for name, prio in
                 (("c1", 2), ("a1", 0), ("b1", 1), ("a2", 0), ("gone", 0), ("c2", 2))]
        await asyncio.sleep(0)
        tasks[4].cancel()
        lim.release()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert order == ["a1", "a2", "b1", "c1", "c2"] and lim.in_flight == 0
    run(go())


def test_by_model_and_script_helpers(scripted_server):
    srv = scripted_server(by_model({"target": "from target", "judge": script(["j1", "j2"])}),
                          models=("target", "judge"))

    async def go():
        t = Endpoint(fast_config(srv, model="target"))
        j = Endpoint(fast_config(srv, model="judge"))
        out = [(await t.chat(MSGS, stage="t")).text, (await j.chat(MSGS, stage="j")).text,
               (await j.chat(MSGS, stage="j", seed=2)).text]
        with pytest.raises(EndpointError, match="418"):          # the script ran out
            await j.chat(MSGS, stage="j", seed=3)
        await t.aclose()
        await j.aclose()
        return out

    assert run(go()) == ["from target", "j1", "j2"]
    assert len(srv.errors) == 1 and "ScriptExhausted" in srv.errors[0]


# ---------------------------------------------------------------- the scripted server itself, on the wire
def _post(srv, body: dict):
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    try:
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body),
                     headers={"content-type": "application/json"})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def test_scripted_server_faults_on_the_wire(scripted_server):
    srv = scripted_server(script([Fault.status(429, retry_after=1), Fault.malformed(), Fault.empty(),
                                  Fault.drop(), "fine"]))
    req = {"model": MODEL, "messages": MSGS}
    status, headers, _ = _post(srv, req)
    assert status == 429 and headers.get("retry-after") == "1"
    status, _, raw = _post(srv, req)
    assert status == 200
    with pytest.raises(ValueError):
        json.loads(raw)
    status, _, raw = _post(srv, req)
    assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] is None
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        _post(srv, req)
    status, _, raw = _post(srv, req)
    assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] == "fine"
    status, _, raw = _post(srv, {"model": "nope", "messages": MSGS})
    assert status == 404 and json.loads(raw)["error"]["code"] == "model_not_found"
    assert srv.count() == 6 and srv.count(lambda b: b["model"] == "nope") == 1
    assert srv.wait_idle() == [429, 200, 200, 499, 200, 404]     # as the server answered them, in order


# ---------------------------------------------------------------- which structured-output form an endpoint takes
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
          "required": ["answer"], "additionalProperties": False}
JSON_SCHEMA_RF = {"type": "json_schema", "json_schema": {"name": "t", "strict": True, "schema": SCHEMA}}


def rf_type(body: dict):
    return (body.get("response_format") or {}).get("type")


def test_a_server_refusing_json_schema_with_500_is_asked_with_json_object_and_the_schema(scripted_server, caplog):
    """llama-cpp-python answers json_schema with HTTP 500: the next form is tried at once, for free, and
    remembered; the reply says which form it was obtained with."""
    srv = scripted_server(json_object_only('{"answer": "yes"}'))
    ep = Endpoint(fast_config(srv, max_retries=0))   # no transport retry to spend: the form probe needs none

    async def go():
        out = [await ep.chat([{"role": "user", "content": f"q{i}"}], stage="judge", response_format=JSON_SCHEMA_RF)
               for i in range(3)]
        await ep.aclose()
        return out

    with caplog.at_level(logging.INFO, logger="carryon.client"):
        out = run(go())
    assert [r.text for r in out] == ['{"answer": "yes"}'] * 3
    assert [r.structured for r in out] == ["json_object"] * 3
    assert [rf_type(b) for b in srv.requests] == ["json_schema", "json_object", "json_object", "json_object"]
    assert srv.statuses == [500, 200, 200, 200]
    assert all(b["response_format"] == {"type": "json_object", "schema": SCHEMA} for b in srv.requests[1:])
    assert ep.structured_form == "json_object" and ep.supports_response_format is True
    learned = [r.getMessage() for r in caplog.records if "response_format" in r.getMessage()]
    assert len(learned) == 1 and "json_schema" in learned[0] and "json_object" in learned[0]


def test_after_learning_the_form_a_500_is_an_ordinary_retry(scripted_server):
    """Once the endpoint took json_object, a 500 on it is the server failing: retried with backoff under the
    same form (max_retries counts), never sent without response_format."""
    faults = iter([Fault.status(500), Fault.status(500)])

    def handler(body: dict):
        if body["messages"][0]["content"] == "second":
            fault = next(faults, None)
            if fault is not None:
                return fault
        return '{"answer": "no"}'

    srv = scripted_server(json_object_only(handler))
    ep = Endpoint(fast_config(srv, max_retries=2))

    async def go():
        a = await ep.chat([{"role": "user", "content": "first"}], stage="s", response_format=JSON_SCHEMA_RF)
        b = await ep.chat([{"role": "user", "content": "second"}], stage="s", response_format=JSON_SCHEMA_RF)
        await ep.aclose()
        return a, b

    a, b = run(go())
    assert a.structured == b.structured == "json_object" and b.text == '{"answer": "no"}'
    second = [(rf_type(body), status) for body, status in zip(srv.requests, srv.statuses)
              if body["messages"][0]["content"] == "second"]
    assert second == [("json_object", 500), ("json_object", 500), ("json_object", 200)]


def test_a_server_failing_every_form_spends_its_retries_and_learns_nothing(scripted_server):
    """A 500 on every form (the server is down): after the free probe of the lower forms, each retry is
    counted; the endpoint is not marked as refusing structured output."""
    srv = scripted_server(lambda body: Fault.status(500))
    ep = Endpoint(fast_config(srv, max_retries=2))
    with pytest.raises(EndpointError, match=r"failed after 3 attempt\(s\): HTTP 500"):
        run(one_chat(ep, response_format=JSON_SCHEMA_RF))
    # probe json_schema, json_object, none (attempt 1), then back to json_schema for attempts 2 and 3
    assert [rf_type(b) for b in srv.requests] == ["json_schema", "json_object", None, "json_schema", "json_schema"]
    assert ep.supports_response_format is None and ep.structured_form is None


def test_the_cache_keeps_the_form_a_reply_was_obtained_with(scripted_server, tmp_path):
    srv = scripted_server(json_object_only('{"answer": "yes"}'))
    cache = ResponseCache(tmp_path)
    first = run(one_chat(Endpoint(fast_config(srv), cache=cache), response_format=JSON_SCHEMA_RF))
    again = run(one_chat(Endpoint(fast_config(srv), cache=cache), response_format=JSON_SCHEMA_RF))
    assert first.structured == again.structured == "json_object"
    assert again.cached and srv.count() == 2
