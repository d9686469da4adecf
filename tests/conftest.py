"""Shared pytest fixtures. Keep each section small; add new fixtures under their own heading.

Helpers that several test modules use live in tests/helpers/ (a test module never imports another one):
- helpers/rollout_data.py: a made-up minimum-column dataset folder (`make_dataset`) and the scripted target,
  user simulator and judge that play it (`rollout_handler`, `evaluator_handler`);
- helpers/judged_run.py: a two-query benchmark, transcripts, a run folder and a scripted judge;
- helpers/builder_models.py: the builder's scripted stage models, `cli_args` and `read` for a built dataset,
  and `SOURCE`, where the gated CASE-Bench source is read from;
- helpers/hang_up_server.py: a TCP listener that hangs up on every connection (fixture `hang_up_server`).
- helpers/eval_cli.py: `carryon-eval` in tests: `invoke`, `one_error_line`, `remote`; a run in a subprocess
  (`slowly`, `spawn`, `wait_for_lines`) to signal it.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

# Make `from scripted_server import ...` and `from helpers... import ...` work from every test file,
# whatever the import mode.
_TESTS_DIR = str(Path(__file__).resolve().parent)
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

from helpers.hang_up_server import HangUpServer  # noqa: E402
from helpers.rollout_data import make_dataset  # noqa: E402
from scripted_server import ScriptedServer  # noqa: E402


# ---------------------------------------------------------------- scripted OpenAI-compatible servers
@pytest.fixture
def scripted_server() -> Iterator[Any]:
    """Factory: ``srv = scripted_server(handler, models=("m",), **options)`` starts a ScriptedServer
    (see tests/scripted_server.py) that is stopped when the test ends. Call it more than once for
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
    """A fresh minimum-column dataset folder (helpers/rollout_data.py), uniquely named under tmp_path."""
    return make_dataset(tmp_path / "data")


# ---------------------------------------------------------------- (other fixtures go below, one section each)


# ---------------------------------------------------------------- the fast inner loop
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `slow` what starts the embedded model or a browser, so that `python -m pytest -m "not slow"` is the
    inner loop while editing (the README's test command still runs everything)."""
    for item in items:
        name = item.nodeid.lower()
        if item.get_closest_marker("local_model") or "browser" in name or "chromium" in name or "headless" in name:
            item.add_marker(pytest.mark.slow)
