"""What `carryon-eval` and `carryon-build` share on the command line.

- ``UsageError``: bad input ends with one line ``<prog>: error: <message>`` on stderr and exit code 2
  (no traceback, nothing half-written); each CLI subclasses it with its program name.
- ``is_local(endpoint)``: no endpoint, or the word ``local``, means the embedded model (defined with the
  embedded model in carryon_eval.model.local).
- ``endpoint_options(prefix=...)``: the options of one role where both CLIs name them alike
  (``--endpoint``, ``--model``, ``--api-key-env``), and ``concurrency_option`` / ``timeout_option``.
- ``verbose_option``: ``--verbose`` logs the package's INFO messages (the client's retries and rate
  limits) to stderr; without it only warnings and errors are shown.
"""
from __future__ import annotations

import logging
import sys
from typing import Any, Callable, Optional

import click

from carryon_eval import defaults
from carryon_eval.model.local import LOCAL_ENDPOINT, is_local

__all__ = ["LOCAL_ENDPOINT", "UsageError", "concurrency_option", "configure_logging", "endpoint_options", "is_local",
           "timeout_option", "verbose_option"]

LOGGER = "carryon"            # every module logs under carryon.<module>


class UsageError(click.ClickException):
    """One line on stderr, ``<prog>: error: <first line of message>``, then exit ``code`` (2 = bad input).
    Each CLI subclasses it with its ``prog`` name."""

    prog = "carryon"

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = code

    def show(self, file: Any = None) -> None:
        text = str(self.message).strip()
        first = text.splitlines()[0] if text else "failed"
        click.echo(f"{self.prog}: error: {first}", err=True)


# ---------------------------------------------------------------- options
Decorator = Callable[[Any], Any]


def _stack(*decorators: Decorator) -> Decorator:
    def apply(fn: Any) -> Any:
        for deco in reversed(decorators):
            fn = deco(fn)
        return fn
    return apply


def endpoint_options(prefix: str = "", *, role: str = "the target model", api_key_default: Optional[str] = None,
                     endpoint_help: Optional[str] = None, model_help: Optional[str] = None,
                     key_help: Optional[str] = None, repeatable: bool = False) -> Decorator:
    """--[PREFIX-]endpoint, --[PREFIX-]model, --[PREFIX-]api-key-env for one role; ``repeatable``: the
    endpoint may be given several times (an endpoint pool; the value is then a tuple)."""
    dash = f"{prefix}-" if prefix else ""
    key_opts: dict[str, Any] = {"metavar": "NAME"}
    if api_key_default is not None:
        key_opts.update(default=api_key_default, show_default=True)
    return _stack(
        click.option(f"--{dash}endpoint", metavar="URL|local", multiple=repeatable,
                     help=endpoint_help or f"OpenAI-compatible base URL (…/v1) of {role}; 'local': the embedded model."),
        click.option(f"--{dash}model", metavar="NAME", help=model_help or f"Model name of {role}."),
        click.option(f"--{dash}api-key-env", **key_opts,
                     help=key_help or f"Environment variable holding the API key of {role} (never written anywhere)."),
    )


def concurrency_option(default: int = defaults.CONCURRENCY, help: str = "Requests in flight per endpoint.") -> Decorator:
    return click.option("--concurrency", type=click.IntRange(min=1), default=default, show_default=True, help=help)


def timeout_option(name: str = "--timeout") -> Decorator:
    return click.option(name, type=click.FloatRange(min=0.1), default=defaults.TIMEOUT, show_default=True,
                        help="Seconds per request before it is retried.")


# ---------------------------------------------------------------- logging
class _Stderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (click's test runner swaps it)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def configure_logging(verbose: bool) -> None:
    """INFO and up of the package's loggers on stderr with --verbose; without it Python's default
    (WARNING and up, message only)."""
    logger = logging.getLogger(LOGGER)
    ours = [h for h in logger.handlers if isinstance(h, _Stderr)]
    if verbose:
        logger.setLevel(logging.INFO)
        if not ours:
            logger.addHandler(_Stderr())
        return
    logger.setLevel(logging.NOTSET)
    for handler in ours:
        logger.removeHandler(handler)


def _on_verbose(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    if value or not ctx.meta.get("carryon.verbose"):
        configure_logging(value)
    ctx.meta["carryon.verbose"] = ctx.meta.get("carryon.verbose") or value
    return value


verbose_option: Decorator = click.option(
    "--verbose", "-v", is_flag=True, expose_value=False, is_eager=True, callback=_on_verbose,
    help="Log retries, rate limits and other progress messages to stderr.")
