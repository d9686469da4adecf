"""Shared pytest fixtures. Keep each section small; add new fixtures under their own heading."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

# Make `from scripted_server import ...` work from every test file, whatever the import mode.
_TESTS_DIR = str(Path(__file__).resolve().parent)
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

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


# ---------------------------------------------------------------- (other fixtures go below, one section each)
