"""Endpoint pools: a repeated endpoint option makes a pool; one server dying mid-run changes no result."""
from __future__ import annotations

import asyncio
import itertools
import json
import threading
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from support.rollout_data import evaluator_handler
from support.scripted_server import Fault

from carryon_eval.model.cache import ResponseCache
from carryon_eval.model.client import Endpoint, EndpointConfig
from carryon_eval.cli import cli
from carryon_eval.model.pool import EndpointPool

MODELS = ("tgt", "sim", "jdg")
FILES = ("transcripts.jsonl", "utility_judgments.jsonl", "safety_judgments.jsonl")


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


class DiesAfter:
    """Answers like evaluator_handler for `n` chat requests, then hangs up on every one (a dead server)."""

    def __init__(self, n: int) -> None:
        self.n, self.seen, self.lock = n, itertools.count(), threading.Lock()

    def __call__(self, body: dict) -> Any:
        with self.lock:
            i = next(self.seen)
        return evaluator_handler(body) if i < self.n else Fault.drop()


def sorted_lines(path: Path) -> list[str]:
    return sorted(path.read_text().splitlines())


def test_a_pool_with_a_server_dying_mid_run_gives_the_single_server_results(scripted_server, dataset, tmp_path):
    single = scripted_server(evaluator_handler, models=MODELS)
    args = ["--model", "tgt", "--user-model", "sim", "--judge-model", "jdg", "--dataset", dataset]
    assert invoke("--endpoint", single.base_url, *args, "--out", tmp_path / "one").exit_code == 0

    steady = scripted_server(evaluator_handler, models=MODELS)
    dying = scripted_server(DiesAfter(6), models=MODELS)
    pooled = invoke("--endpoint", steady.base_url, "--endpoint", dying.base_url, *args, "--out", tmp_path / "pool")
    assert pooled.exit_code == 0, pooled.output
    assert dying.count() > 6 and 499 in dying.statuses               # it did die, mid-run
    assert steady.count() > 0
    for name in FILES:
        assert sorted_lines(tmp_path / "pool" / name) == sorted_lines(tmp_path / "one" / name)
    roles = json.loads((tmp_path / "pool" / "run.json").read_text())["roles"]
    assert roles["judge"]["pool"] == [steady.base_url, dying.base_url]     # the role's default: the target's
    assert "pool" not in json.loads((tmp_path / "one" / "run.json").read_text())["roles"]["judge"]


def test_requests_go_to_the_member_with_fewest_in_flight_and_a_dead_one_comes_back(scripted_server, tmp_path):
    released = threading.Event()
    stuck: list[bool] = []

    async def held(body: dict) -> Any:          # x answers only once y has a request: y got the second
        stuck.append(not await asyncio.to_thread(released.wait, 30.0))
        return "x"

    def y_answers(body: dict) -> Any:
        released.set()
        return "y"

    x = scripted_server(held, models=("m",))
    y = scripted_server(y_answers, models=("m",))

    def member(srv: Any) -> Endpoint:
        return Endpoint(EndpointConfig(base_url=srv.base_url, model="m", max_retries=0),
                        cache=ResponseCache(tmp_path / "cache"))

    def ask(pool: EndpointPool, text: str) -> Any:
        return pool.chat([{"role": "user", "content": text}], stage="t")

    async def main() -> list[str]:
        pool = EndpointPool([member(x), member(y)], strikes=1, cool_down=0.0)
        try:
            first = asyncio.ensure_future(ask(pool, "1"))     # a tie: the first member, x
            await asyncio.sleep(0)                           # let it be dispatched (x: one in flight)
            second = await ask(pool, "2")                    # so this one goes to y
            answers = [(await first).text, second.text]
            x.handler = lambda body: Fault.drop()            # x dies: its request fails over to y
            answers.append((await ask(pool, "3")).text)
            x.handler = lambda body: "x"                     # x is back: tried again after its cool-down
            answers.append((await ask(pool, "4")).text)
            return answers
        finally:
            await pool.aclose()

    assert asyncio.run(main()) == ["x", "y", "y", "x"]
    assert stuck == [False] and x.count() == 3 and y.count() == 2
