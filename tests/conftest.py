"""Shared pytest fixtures. Keep each section small; add new fixtures under their own heading.

The tests mirror the packages (tests/app/ tests carryon_eval/app/, tests/suites/opensafeintent/ the OpenSafeIntent
wing, tests/builder/ the builder, ...); only the tests of the whole repository (packaging, import graph,
complexity) sit here. Code that several test modules use lives in the package tests/support/ (the scripted
servers, the browser, the helpers below), imported as `support.X` (pyproject's pytest settings put tests/ on the
path; a test module never imports another one):
- support/scripted_server.py (with support/scripted_outcomes.py): the scripted OpenAI-compatible server;
  support/hub_server.py: a local Hugging Face Hub; support/browser.py: headless Chromium;
- support/rollout_data.py: a made-up minimum-column dataset folder (`make_dataset`) and the scripted target,
  user simulator and judge that play it (`rollout_handler`, `evaluator_handler`);
- support/judged_run.py: a two-query benchmark, transcripts, a run folder and a scripted judge;
- support/builder_models.py: the builder's scripted stage models, `cli_args` and `read` for a built dataset,
  and `SOURCE`, where the gated CASE-Bench source is read from;
- support/hang_up_server.py: a TCP listener that hangs up on every connection (fixture `hang_up_server`).
- support/eval_cli.py: `carryon-eval` in tests: `invoke`, `one_error_line`, `remote`; a run in a subprocess
  (`slowly`, `spawn`, `wait_for_lines`) to signal it.
- support/embedded.py: the embedded model in tests (`needs_local`, its server processes, a run whose server is
  killed mid-call); the fixture `embedded_server` below is one real server for the whole session.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from support.hang_up_server import HangUpServer
from support.rollout_data import make_dataset
from support.scripted_server import ScriptedServer


# ---------------------------------------------------------------- the environment's API keys
@pytest.fixture(autouse=True)
def no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests' servers are scripted: a developer's own OPENAI_API_KEY is never sent to one, and a role on
    another endpoint than the target's is keyless (not refused) as on a clean machine (carryon_eval.model.keys)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


# ---------------------------------------------------------------- scripted OpenAI-compatible servers
@pytest.fixture
def scripted_server() -> Iterator[Any]:
    """Factory: ``srv = scripted_server(handler, models=("m",), **options)`` starts a ScriptedServer
    (see tests/support/scripted_server.py) that is stopped when the test ends. Call it more than once for
    several servers."""
    started: list[ScriptedServer] = []

    def make(handler: Any, models: Any = ("scripted-model",), **options: Any) -> ScriptedServer:
        server = ScriptedServer(handler, models=models, **options).start()
        started.append(server)
        return server

    yield make
    for server in reversed(started):
        server.stop()


@pytest.fixture
def make_server(scripted_server: Any) -> Any:
    """Alias of ``scripted_server``."""
    return scripted_server


@pytest.fixture
def hang_up_server() -> Iterator[HangUpServer]:
    """A server on 127.0.0.1 that closes every connection unanswered; ``.connections()`` counts them."""
    server = HangUpServer()
    yield server
    server.stop()


# ---------------------------------------------------------------- a made-up evaluator dataset
@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """A fresh minimum-column dataset folder (support/rollout_data.py), uniquely named under tmp_path."""
    return make_dataset(tmp_path / "data")


# ---------------------------------------------------------------- the embedded model, one server per session
@pytest.fixture(scope="session")
def embedded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One real LocalModelServer (Gemma 3 270M) shared by every test that only needs the model to answer; tests
    about the server's own life start their own. Skips without the [local] extra."""
    from support.embedded import HAVE_ENGINE, HAVE_GEMMA, NEEDS_LOCAL, model_cache_dir

    if not (HAVE_ENGINE and HAVE_GEMMA):
        pytest.skip(NEEDS_LOCAL)
    from carryon_eval.model.local import LocalModelServer

    cache = model_cache_dir(tmp_path_factory.getbasetemp())
    mp = pytest.MonkeyPatch()
    mp.setenv("CARRYON_CACHE_DIR", str(cache))
    try:
        with LocalModelServer() as server:
            yield server
    finally:
        mp.undo()


# ---------------------------------------------------------------- (other fixtures go below, one section each)


# ---------------------------------------------------------------- the fast inner loop
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `slow` what starts the embedded model or a browser, so that `python -m pytest -m "not slow"` is the
    inner loop while editing (the README's test command still runs everything)."""
    for item in items:
        name = item.nodeid.lower()
        if item.get_closest_marker("local_model") or "browser" in name or "chromium" in name or "headless" in name:
            item.add_marker(pytest.mark.slow)
