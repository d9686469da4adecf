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
import os
import sys
import threading
from pathlib import Path
from typing import Any, Coroutine, Optional, Sequence, TypeVar, Union

from carryon_eval import defaults
from carryon_eval.app import commands as app
from carryon_eval.app.config import ConfigError, EvaluateConfig, Output, RoleChoice
from carryon_eval.app.phases import NothingScored
from carryon_eval.cli_common import configure_logging
from carryon_eval.run.records import Results

__all__ = ["ConfigError", "NothingScored", "PrintOutput", "evaluate", "evaluate_async"]

T = TypeVar("T")
Endpoints = Union[str, Sequence[str], None]          # a repeatable --*-endpoint: one URL, or a pool of URLs

UTILITY_MODES = {"text": "text", "logprob": "logprobs", "logprobs": "logprobs"}   # --utility-mode's choices
JUDGE_FORMATS = ("json_schema", "text")
SUBSETS = ("full", "quick")


class PrintOutput:
    """app.Output on the console, as the command line writes it: results to stdout, progress to stderr."""

    def info(self, text: str) -> None:
        print(text, file=sys.stdout, flush=True)

    def note(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- options -> the command line's config record
def _role(endpoints: Endpoints, model: Optional[str], key: Optional[str]) -> RoleChoice:
    urls = (endpoints,) if isinstance(endpoints, (str, os.PathLike)) else tuple(endpoints or ())
    return RoleChoice(str(urls[0]) if urls else None, model, key, pool=tuple(str(u) for u in urls[1:]))


def _conditions(value: Union[str, Sequence[str], None]) -> tuple[tuple[str, ...], bool]:
    """As --conditions reads them: the registered suites' (carryon_eval.suite) default set, ``all``, or a list;
    and whether it was ``all`` (then suites with inputs of their own join only when those are given)."""
    from carryon_eval.suite import SuiteError, all_conditions, default_conditions, resolve_conditions, without_inputs

    if value is None:
        return default_conditions(), False
    items = [c.strip().lower() for c in (value.split(",") if isinstance(value, str) else value) if c.strip()]
    try:
        if not items:
            raise SuiteError("no condition given")
        resolved = resolve_conditions(items)
    except SuiteError:
        raise ConfigError(f"conditions: expected 'all' or a subset of {','.join(all_conditions())}, "
                          f"got {value!r}") from None
    if "all" in items:                   # as on the command line: suites with inputs of their own join when given
        return tuple(without_inputs(resolved)), True
    return tuple(resolved), False


def _suite_options(given: dict[str, Any]) -> dict[str, Any]:
    """The suites' own options (carryon_eval.suite.SuiteOption, e.g. ``opensafeintent=DIR``), checked."""
    from carryon_eval.suite import suite_options

    known = {o.key: o for o in suite_options()}
    unknown = sorted(set(given) - set(known))
    if unknown:                        # as Python says it for any other keyword
        raise TypeError(f"evaluate() got an unexpected keyword argument {unknown[0]!r}")
    out: dict[str, Any] = {o.key: o.default for o in known.values() if o.default is not None}   # the CLI's defaults
    for key, value in given.items():
        if value is None:
            continue
        option = known[key]
        out[key] = Path(value) if option.path else _choice(key, str(value), option.choices) if option.choices \
            else str(value)
    return out


def _at_least_one(name: str, value: Optional[int]) -> Optional[int]:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"{name}: expected a whole number >= 1, got {value!r}")
    return value


def _choice(name: str, value: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ConfigError(f"{name}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def evaluate_config(*, endpoint: Endpoints = None, model: Optional[str] = None,
                    api_key_env: str = defaults.API_KEY_ENV,
                    user_endpoint: Endpoints = None, user_model: Optional[str] = None,
                    user_api_key_env: Optional[str] = None,
                    judge_endpoint: Endpoints = None, judge_model: Optional[str] = None,
                    judge_api_key_env: Optional[str] = None,
                    dataset: Union[str, os.PathLike[str], None] = None, revision: Optional[str] = None,
                    out: Union[str, os.PathLike[str], None] = None, limit: Optional[int] = None,
                    conditions: Union[str, Sequence[str], None] = None, concurrency: int = defaults.CONCURRENCY,
                    max_tokens: Optional[int] = None, judge_max_tokens: Optional[int] = None,
                    temperature: float = defaults.TARGET_TEMPERATURE, seed: int = defaults.SEED,
                    no_shared_turn1: bool = False, fidelity: bool = False, utility_mode: str = "text",
                    no_model_check: bool = False, judge_format: str = "json_schema", subset: str = "full",
                    dry_run: bool = False, json: bool = False, price: Union[str, Sequence[str]] = (),
                    max_calls: Optional[int] = None, **suite_options: Any) -> EvaluateConfig:
    """The ``carryon_eval.app.config.EvaluateConfig`` that ``carryon-eval`` builds from the same options; a
    bad value raises ConfigError naming the option."""
    for name, value in (("limit", limit), ("concurrency", concurrency), ("max_tokens", max_tokens),
                        ("judge_max_tokens", judge_max_tokens), ("max_calls", max_calls)):
        _at_least_one(name, value)
    chosen, every = _conditions(conditions)
    return EvaluateConfig(
        target=_role(endpoint, model, api_key_env), user=_role(user_endpoint, user_model, user_api_key_env),
        judge=_role(judge_endpoint, judge_model, judge_api_key_env),
        dataset=None if dataset is None else os.fspath(dataset), revision=revision,
        out=None if out is None else Path(out), limit=limit,
        conditions=chosen, conditions_all=every,
        concurrency=concurrency, max_tokens=max_tokens, judge_max_tokens=judge_max_tokens,
        temperature=float(temperature), seed=int(seed), shared_turn1=not no_shared_turn1, fidelity=bool(fidelity),
        utility_mode=UTILITY_MODES[_choice("utility_mode", utility_mode, tuple(UTILITY_MODES))],
        model_check=not no_model_check, judge_format=_choice("judge_format", judge_format, JUDGE_FORMATS),
        dry_run=bool(dry_run), dry_run_json=bool(json), prices=(price,) if isinstance(price, str) else tuple(price), max_calls=max_calls,
        subset=_choice("subset", subset, SUBSETS),
        suite_options=_suite_options(suite_options))


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
