"""Request parameters per role, and what an endpoint refuses, learned once (real HTTP, the real openai client)."""
from __future__ import annotations

import asyncio
import logging

import pytest

from carryon_eval.model.cache import ResponseCache
from carryon_eval.model.client import ChatResult, Endpoint, EndpointConfig, EndpointRejected, UsageLedger, cache_key
from carryon_eval.model.endpoint import parse_temperature
from carryon_eval.parsing import strip_reasoning
from support.scripted_server import QUIRK_REASONING, Fault, Reply

MODEL = "scripted-model"
MSGS = [{"role": "user", "content": "How do I bake bread?"}]
SCHEMA = {"type": "json_schema", "json_schema": {"name": "a", "strict": True,
                                                  "schema": {"type": "object", "properties": {"answer": {"type": "string"}}}}}


def config(server, **kw) -> EndpointConfig:
    kw.setdefault("max_retries", 0)       # learning must not need a single transport retry
    return EndpointConfig(base_url=server.base_url, model=MODEL, timeout=5.0, backoff_base=0.01, **kw)


def chats(endpoint: Endpoint, *calls: dict) -> list[ChatResult]:
    async def go() -> list[ChatResult]:
        try:
            return [await endpoint.chat(c.pop("messages", MSGS), stage="target", **c) for c in calls]
        finally:
            await endpoint.aclose()
    return asyncio.run(go())


def test_reasoning_model_learns_max_completion_tokens_and_provider_default_temperature(scripted_server, caplog):
    srv = scripted_server(lambda body: "Knead, rise, bake.", quirks=("reasoning_model",))
    ep = Endpoint(config(srv))
    with caplog.at_level(logging.WARNING, logger="carryon"):
        first, second = chats(ep, dict(temperature=0.0, max_tokens=50, seed=1), dict(temperature=0.0, max_tokens=60))
    assert first.text == second.text == "Knead, rise, bake."
    assert srv.statuses == [400, 400, 200, 200]          # two refusals learned, then every call goes through
    refused_mt, refused_t, ok, later = srv.requests
    assert "max_tokens" in refused_mt and "max_tokens" not in refused_t and refused_t["max_completion_tokens"] == 50
    assert "temperature" not in ok and ok["max_completion_tokens"] == 50 and ok["seed"] == 1
    assert later["max_completion_tokens"] == 60 and "temperature" not in later and "max_tokens" not in later
    assert ep.sent_params() == {"max_tokens": "sent as max_completion_tokens",
                                "temperature": "not sent: provider default (refused 0.0)"}
    said = [r.getMessage() for r in caplog.records]
    assert sum("refuses max_tokens" in m for m in said) == 1 and sum("refuses temperature" in m for m in said) == 1


def test_learning_is_shared_by_concurrent_requests_and_keeps_the_structured_form(scripted_server):
    srv = scripted_server(lambda body: '{"answer": "yes"}', quirks=("reasoning_model",))
    ep = Endpoint(config(srv, concurrency=4))

    async def go() -> list[ChatResult]:
        try:
            return await asyncio.gather(*(ep.chat([{"role": "user", "content": f"q{i}"}], stage="judge",
                                                  response_format=SCHEMA) for i in range(4)))
        finally:
            await ep.aclose()
    results = asyncio.run(go())
    assert [r.structured for r in results] == ["json_schema"] * 4   # a parameter refusal is not a form refusal
    assert srv.statuses.count(200) == 4 and srv.statuses.count(400) <= 8
    assert all(b["response_format"]["type"] == "json_schema" for b in srv.requests)


def test_unsupported_seed_is_dropped_and_said(scripted_server):
    srv = scripted_server(lambda body: "fine", quirks=("no_seed",))
    ep = Endpoint(config(srv))
    (res,) = chats(ep, dict(seed=7))
    assert res.text == "fine" and srv.statuses == [400, 200] and "seed" not in srv.requests[1]
    assert ep.sent_params() == {"seed": "not sent (refused 7)"}


def test_any_other_refused_parameter_is_one_line_and_stops_spending(scripted_server):
    srv = scripted_server(lambda body: "never", quirks=("no_reasoning_effort",))
    ep = Endpoint(config(srv, reasoning_effort="high"))
    with pytest.raises(EndpointRejected) as info:
        chats(ep, {})
    message = str(info.value)
    assert "\n" not in message and srv.base_url in message and "parameter 'reasoning_effort'" in message
    assert "Unrecognized request argument supplied: reasoning_effort" in message
    with pytest.raises(EndpointRejected) as again:       # the endpoint refuses it itself: no more requests
        chats(ep, dict(messages=[{"role": "user", "content": "another"}]))
    assert str(again.value) == message and srv.count() == 1


def test_a_refusal_of_one_request_is_not_latched(scripted_server):
    srv = scripted_server(lambda body: Fault.status(400, message="This model's maximum context length is 8 tokens")
                          if "long" in body["messages"][-1]["content"] else "short answer")
    ep = Endpoint(config(srv))
    with pytest.raises(EndpointRejected):
        chats(ep, dict(messages=[{"role": "user", "content": "a long prompt"}]))
    (res,) = chats(ep, {})
    assert res.text == "short answer"


def test_reasoning_content_is_kept_hidden_from_readers_and_counted(scripted_server, tmp_path):
    srv = scripted_server(lambda body: Reply("Bake at 220C."), quirks=("reasoning_content",))
    usage = UsageLedger()
    ep = Endpoint(config(srv), usage=usage, cache=ResponseCache(tmp_path / "c"))
    (res,) = chats(ep, {})
    assert res.text == f"<think>{QUIRK_REASONING}</think>\nBake at 220C."
    assert strip_reasoning(res.text) == "Bake at 220C."
    assert res.completion_tokens == len("Bake at 220C.".split()) + len(QUIRK_REASONING.split())
    assert usage.snapshot()[f"target/{MODEL}"]["completion_tokens"] == res.completion_tokens
    (hit,) = chats(Endpoint(config(srv), cache=ResponseCache(tmp_path / "c")), {})
    assert hit.cached and hit.text == res.text and srv.count() == 1


def test_role_options_are_sent_and_keyed_and_old_keys_stay(scripted_server, tmp_path):
    srv = scripted_server(lambda body: "ok")
    params = {"temperature": 0.0, "max_tokens": 1024, "seed": None, "response_format": None, "top_logprobs": None}
    old_key = cache_key(MODEL, MSGS, params)
    cache = ResponseCache(tmp_path / "c")
    chats(Endpoint(config(srv), cache=cache), {})
    assert cache.get(old_key) is not None                 # no option set: the key of every earlier run

    ep = Endpoint(config(srv, temperature="default", reasoning_effort="low", system_prompt="Be brief.",
                         extra_body={"top_p": 0.9, "chat_template_kwargs": {"enable_thinking": False}}), cache=cache)
    chats(ep, {})
    body = srv.requests[-1]
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, *MSGS]
    assert "temperature" not in body and body["reasoning_effort"] == "low" and body["top_p"] == 0.9
    assert body["chat_template_kwargs"] == {"enable_thinking": False} and srv.count() == 2
    chats(Endpoint(config(srv, temperature="default", reasoning_effort="low", system_prompt="Be brief.",
                          extra_body={"top_p": 0.9, "chat_template_kwargs": {"enable_thinking": False}}),
                   cache=cache), {})
    assert srv.count() == 2                               # the same options: a cache hit
    chats(Endpoint(config(srv, reasoning_effort="high"), cache=cache), {})
    assert srv.count() == 3                               # other options: another request


def test_system_prompt_joins_a_system_message_already_first(scripted_server):
    srv = scripted_server(lambda body: "ok")
    chats(Endpoint(config(srv, system_prompt="Role text.")),
          dict(messages=[{"role": "system", "content": "Stage text."}, *MSGS]))
    assert srv.requests[0]["messages"][0] == {"role": "system", "content": "Role text.\n\nStage text."}


def test_temperature_option_values():
    assert parse_temperature("default") == "default" and parse_temperature("0.7") == 0.7
    with pytest.raises(ValueError):
        parse_temperature("-1")
    with pytest.raises(ValueError):
        parse_temperature("hot")


def test_wrappers_key_and_export_requests_as_the_client_sends_them(scripted_server, tmp_path):
    from carryon_eval.judge.batch import Deferred, ExportingEndpoint
    from carryon_eval.model.cache import lookup

    srv = scripted_server(lambda body: "ok")
    options = dict(temperature="default", reasoning_effort="low", system_prompt="Judge fairly.",
                   extra_body={"top_p": 0.5})
    cache = ResponseCache(tmp_path / "c")
    chats(Endpoint(config(srv, **options), cache=cache), dict(max_tokens=8))
    live = srv.requests[0]
    key, _, hit = lookup(cache, config(srv, **options), MSGS, {"max_tokens": 8})
    assert hit is not None and hit.text == "ok"                     # the budget's and the batch's lookups hit
    exporter = ExportingEndpoint(EndpointConfig(base_url="batch", model=MODEL, **options), ResponseCache(tmp_path / "e"))
    with pytest.raises(Deferred):
        asyncio.run(exporter.chat(MSGS, stage="judge", max_tokens=8))
    (line,) = exporter.requests.values()
    assert line["custom_id"] == key and line["body"] == live        # the body the live client sent
