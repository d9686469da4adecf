"""The Python API: run an evaluation from a script or a notebook and get its results back, typed.

    from carryon_eval import evaluate

    results = evaluate(endpoint="http://localhost:8000/v1", model="my-model", limit=2, out="runs/demo")
    results.conditions["bc"]["utility"]        # the numbers of results.json (results.to_json() is that file)

``evaluate`` takes the options of ``carryon-eval`` as keyword arguments, named like the long options with
dashes as underscores (``--judge-model`` -> ``judge_model``, ``--no-shared-turn1`` -> ``no_shared_turn1=True``,
``--price`` -> ``price=["judge=0.15/0.60"]``; a repeatable option takes a list). It builds the same
``EvaluateConfig`` the command line builds and awaits the same ``carryon_eval.app.commands.evaluate``
(rollout -> [fidelity] -> judge -> report, resumable into the same ``out``), so a run started here and one
started with ``carryon-eval`` write the same run folder.

Where no event loop is running (a script), it runs in ``asyncio.run``. Where one is (Jupyter, an async
application), it runs in a worker thread with its own event loop and blocks until that finishes; in async
code ``await evaluate_async(...)`` runs it in the caller's loop instead. Ctrl-C (KeyboardInterrupt) cancels
the run the way it cancels the command: endpoints and the embedded model are closed, and rerunning into the
same ``out`` resumes.

Errors are the package's own exceptions with a one-line message, as the command line prints them:
``ConfigError`` (options that cannot run together, or a bad value), ``DatasetError``, ``RunError``,
``EndpointError``... A run whose judge answered nothing usable for some condition writes everything and
raises ``NothingScored`` (the command's exit 3), whose ``results`` holds what was written.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import sys
import threading
from pathlib import Path
from typing import Any, Coroutine, Optional, Sequence, TypeVar

from carryon_eval.app import commands as app
from carryon_eval.app import options
from carryon_eval.app.config import ConfigError, EvaluateConfig, Output, config_of
from carryon_eval.app.phases import NothingScored
from carryon_eval.cli_common import configure_logging
from carryon_eval.option import read_value
from carryon_eval.run.results import Results

__all__ = ["ConfigError", "NothingScored", "PrintOutput", "evaluate", "evaluate_async"]

T = TypeVar("T")

class PrintOutput:
    """app.Output on the console, as the command line writes it: results to stdout, progress to stderr."""

    def info(self, text: str) -> None:
        print(text, file=sys.stdout, flush=True)

    def note(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- options -> the command line's config record
def _suite_options(given: dict[str, Any]) -> dict[str, Any]:
    """The suites' own options (carryon_eval.suite.SuiteOption, e.g. ``opensafeintent=DIR``), checked."""
    from carryon_eval.suite import suite_options

    known = {o.key: o for o in suite_options()}
    out: dict[str, Any] = {o.key: o.default for o in known.values() if o.default is not None}   # the CLI's defaults
    for key, value in given.items():
        if value is None:
            continue
        option = known[key]
        out[key] = Path(value) if option.path else _choice(key, str(value), option.choices) if option.choices \
            else str(value)
    return out


def _choice(name: str, value: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ConfigError(f"{name}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def evaluate_config(**given: Any) -> EvaluateConfig:
    """The ``carryon_eval.app.config.EvaluateConfig`` that ``carryon-eval`` builds from the same options: one keyword
    per long option of its table (carryon_eval.app.options.EVALUATE), and the suites' own options; a bad value
    raises ConfigError naming the option, an unknown keyword TypeError."""
    from carryon_eval.suite import suite_options

    suites = {o.key for o in suite_options()}
    values: dict[str, Any] = {}             # given ones; the others are the table's defaults
    own: dict[str, Any] = {}
    for keyword, value in given.items():
        option = options.BY_KEYWORD.get(keyword)
        if option is None and keyword in suites:
            own[keyword] = value
            continue
        if option is None:             # as Python says it for any other keyword
            raise TypeError(f"evaluate() got an unexpected keyword argument {keyword!r}")
        if option.kind == "conditions":
            continue
        try:
            value = option.given(read_value(option, value))
        except ValueError as exc:
            raise ConfigError(f"{keyword}: {exc}") from None
        if value is not None and values.get(option.name, value) != value:      # an old spelling too
            raise ConfigError(f"{keyword} given twice, under an old name too, with different values "
                              f"({values[option.name]!r} and {value!r})")
        values[option.name] = value
    try:
        values["conditions"], every = options.read_conditions(given.get("conditions"))
    except ValueError as exc:
        raise ConfigError(f"conditions: {exc}") from None
    values["suite_options"] = _suite_options(own)
    defaults = {name: o.given(False) if o.kind == "flag" else o.default for name, o in options.BY_NAME.items()}
    return config_of({**defaults, **values}, conditions_all=every)


# ---------------------------------------------------------------- running it
async def evaluate_async(*, output: Optional[Output] = None, verbose: bool = False,
                         **options: Any) -> Optional[Results]:
    """``evaluate`` in the caller's event loop (``await evaluate_async(...)``); same options, same result."""
    cfg = evaluate_config(**options)
    if verbose:
        configure_logging(True)
    return await app.evaluate(cfg, output if output is not None else PrintOutput())


def evaluate(*, output: Optional[Output] = None, verbose: bool = False, **options: Any) -> Optional[Results]:
    """Run ``carryon-eval`` with these options (keyword arguments named like its long options, underscored)
    and return its results: the ``Results`` record whose ``to_json()`` equals the run's results.json. With
    ``dry_run=True`` it prints the cost table and returns None. A suite's own options are keywords too
    (``opensafeintent=DIR``). ``output``: where the lines the command prints
    go (an object with ``info(text)`` and ``note(text)``; default: stdout and stderr); ``verbose``: the
    package's INFO log (retries, rate limits) on stderr, like ``--verbose``."""
    cfg = evaluate_config(**options)          # a bad option fails here, in the caller's thread
    if verbose:
        configure_logging(True)
    return run_sync(app.evaluate(cfg, output if output is not None else PrintOutput()))


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` to the end from synchronous code: in ``asyncio.run`` where no event loop runs in this
    thread, else in a worker thread with an event loop of its own (a notebook's loop is never blocked into
    or re-entered). KeyboardInterrupt while waiting cancels the coroutine, waits for its cleanup, re-raises."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    return _in_worker_loop(coro)


def _in_worker_loop(coro: Coroutine[Any, Any, T]) -> T:
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    task: Optional[asyncio.Task[T]] = None

    def worker() -> T:
        nonlocal task
        asyncio.set_event_loop(loop)
        try:
            task = loop.create_task(coro)
            ready.set()
            return loop.run_until_complete(task)
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                asyncio.set_event_loop(None)
                loop.close()

    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="carryon-eval") as pool:
        future = pool.submit(worker)
        try:
            return future.result()
        except KeyboardInterrupt:
            ready.wait()
            if task is not None:
                with contextlib.suppress(RuntimeError):      # the loop may have finished meanwhile
                    loop.call_soon_threadsafe(task.cancel)
            try:
                future.result()
            except (asyncio.CancelledError, Exception):
                pass
            raise
