"""The endpoint client on both HTTP transports (aiohttp, the default, and httpx), against the scripted server:
the same replies, the same retries, the same one-line errors, and a connection pool no larger than the
requests the endpoint lets in flight."""
from __future__ import annotations

import asyncio
import errno
import json
import socket

import pytest
from click.testing import CliRunner
from support.rollout_data import evaluator_handler

from carryon_eval.cli import cli
from carryon_eval.model.client import ChatResult, Endpoint, EndpointConfig, EndpointError, http_client
from carryon_eval.defaults import HTTP_CLIENT
from support.scripted_server import Fault, Reply, faults_then

MODEL = "scripted-model"
MSGS = [{"role": "user", "content": "How do I bake bread?"}]
TRANSPORTS = ("aiohttp", "httpx")


def config(srv, transport, **kw) -> EndpointConfig:
    kw.setdefault("backoff_base", 0.01)
    kw.setdefault("timeout", 5.0)
    kw.setdefault("max_retries", 3)
    return EndpointConfig(base_url=srv.base_url, model=MODEL, http_client=transport, **kw)


async def chats(ep: Endpoint, n: int = 1, **kw) -> list[ChatResult]:
    try:
        return list(await asyncio.gather(*(ep.chat([{"role": "user", "content": f"q{i}"}] if n > 1 else MSGS,
                                                   stage="test", **kw) for i in range(n))))
    finally:
        await ep.aclose()


def test_aiohttp_is_the_default():
    assert HTTP_CLIENT == "aiohttp" and EndpointConfig(base_url="http://x/v1", model="m").http_client == "aiohttp"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_reply_params_and_logprobs(scripted_server, transport):
    srv = scripted_server(lambda body: Reply("yes", logprobs=[("yes", -0.1), ("no", -2.5)], prompt_tokens=7,
                                             completion_tokens=1))
    (res,) = asyncio.run(chats(Endpoint(config(srv, transport)), temperature=0.5, max_tokens=3, seed=2,
                               top_logprobs=2))
    assert res == ChatResult(text="yes", finish_reason="stop", prompt_tokens=7, completion_tokens=1, cached=False,
                             top_logprobs=[("yes", -0.1), ("no", -2.5)])
    (body,) = srv.requests
    assert body["temperature"] == 0.5 and body["max_tokens"] == 3 and body["seed"] == 2 and body["top_logprobs"] == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_faults_are_retried_then_answered(scripted_server, transport):
    faults = [Fault.status(503), Fault.status(429, retry_after=0), Fault.malformed(), Fault.drop()]
    srv = scripted_server(faults_then("finally", faults))
    (res,) = asyncio.run(chats(Endpoint(config(srv, transport, max_retries=4))))
    assert res.text == "finally" and len(srv.requests) == 5


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_400_is_one_line_and_not_retried(scripted_server, transport):
    srv = scripted_server(lambda body: Fault.status(400, message="bad request here"))
    with pytest.raises(EndpointError) as info:
        asyncio.run(chats(Endpoint(config(srv, transport))))
    assert "HTTP 400: bad request here" in str(info.value) and "\n" not in str(info.value)
    assert len(srv.requests) == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_whole_request_times_out(scripted_server, transport):
    srv = scripted_server(lambda body: Fault.delay(3.0, then="late"))
    with pytest.raises(EndpointError) as info:
        asyncio.run(chats(Endpoint(config(srv, transport, timeout=0.3, max_retries=1))))
    assert "timed out after 0.3s" in str(info.value)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_refused_connection_says_so(transport):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ep = Endpoint(EndpointConfig(base_url=f"http://127.0.0.1:{port}/v1", model=MODEL, http_client=transport,
                                 max_retries=1, backoff_base=0.01))
    with pytest.raises(EndpointError) as info:
        asyncio.run(chats(ep))
    assert "connection failed" in str(info.value) and f"[Errno {errno.ECONNREFUSED}]" in str(info.value)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_no_more_connections_than_the_concurrency(scripted_server, transport):
    """20 concurrent calls through an endpoint of concurrency 3: the server sees at most 3 connections."""
    in_flight, most = [0], [0]

    async def handler(body):
        in_flight[0] += 1
        most[0] = max(most[0], in_flight[0])
        await asyncio.sleep(0.02)
        in_flight[0] -= 1
        return "ok"

    srv = scripted_server(handler)
    results = asyncio.run(chats(Endpoint(config(srv, transport, concurrency=3)), n=20))
    assert [r.text for r in results] == ["ok"] * 20
    assert most[0] <= 3 and 1 <= len(srv.peers) <= 3


def test_an_unknown_transport_is_refused():
    with pytest.raises(ValueError, match="unknown HTTP client 'curl'"):
        http_client("curl", 5)


def test_the_transport_is_chosen_on_the_command_line_and_recorded_per_role(scripted_server, dataset, tmp_path):
    """`carryon-eval --http-client httpx` runs every role on httpx and run.json says so; the subcommands take the
    option too (here `judge RUNDIR --http-client aiohttp`), and refuse a transport they do not know."""
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    args = ["--endpoint", srv.base_url, "--model", "tgt", "--user-model", "sim", "--judge-model", "jdg",
            "--dataset", str(dataset), "--http-client", "httpx", "--out", str(out)]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    roles = json.loads((out / "run.json").read_text())["roles"]
    assert {role: r["http_client"] for role, r in roles.items()} == {"target": "httpx", "user": "httpx",
                                                                      "judge": "httpx"}
    judged = CliRunner().invoke(cli, ["judge", str(out), "--http-client", "aiohttp"], catch_exceptions=False)
    assert judged.exit_code == 0, judged.output
    refused = CliRunner().invoke(cli, ["rollout", str(out), "--http-client", "curl"])
    assert refused.exit_code == 2 and "'curl' is not one of" in refused.output
