"""What `carryon-eval` and `carryon-build` share on the command line.

- ``UsageError``: bad input ends with one line ``<prog>: error: <message>`` on stderr and exit code 2
  (no traceback, nothing half-written); each CLI subclasses it with its program name, and its command group is
  a ``OneLineGroup``, so that click's own usage errors end the same way.
- ``is_local(endpoint)``: no endpoint, or the word ``local``, means the embedded model (defined with the
  embedded model in carryon_eval.model.local).
- ``endpoint_options(prefix=...)``: the options of one role where both CLIs name them alike
  (``--endpoint``, ``--model``, ``--api-key-env``), and ``concurrency_option`` / ``timeout_option``.
- ``request_options(role)``: one role's request options, named alike in both CLIs (``--ROLE-max-tokens``,
  ``--ROLE-temperature`` (a number or ``default``), ``--ROLE-reasoning-effort``, ``--ROLE-system-prompt``
  (text, or ``@FILE``), ``--ROLE-extra-body JSON``); ``alias_option`` keeps an old spelling as a hidden
  alias and ``merge_aliases`` folds it into the new one.
- ``os_error_line(exc)``: a failed read or write (a full disk, a file-size limit, a folder this user may not
  write, a name too long) as one line; every command of a ``OneLineGroup`` ends with it (exit 2), never a
  traceback.
- ``verbose_option``: ``--verbose`` logs the package's INFO messages (the client's retries and rate
  limits) to stderr; without it only warnings and errors are shown.
"""
from __future__ import annotations

import errno
import logging
import sys
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import click

from carryon_eval import defaults, option
from carryon_eval.model.local import LOCAL_ENDPOINT, is_local
from carryon_eval.option import REQUEST_OPTIONS

__all__ = ["LOCAL_ENDPOINT", "OneLineGroup", "REQUEST_OPTIONS", "UsageError", "alias_option", "os_error_line", "click_option", "click_options",
           "concurrency_option", "configure_logging", "endpoint_options", "is_local", "merge_aliases", "request_options",
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


#: what a user does about a failed read or write, by its errno
_OS_HINTS = {errno.ENOSPC: "the disk is full: free some space, then rerun the same command to resume",
             errno.EDQUOT: "the disk quota is spent: free some space, then rerun the same command to resume",
             errno.EFBIG: "the file outgrew the file-size limit (ulimit -f): raise it, then rerun the same command",
             errno.EACCES: "this user may not use it: change its permissions, or choose another folder",
             errno.EPERM: "this user may not use it: change its permissions, or choose another folder",
             errno.EROFS: "it is on a read-only file system: choose another folder",
             errno.ENAMETOOLONG: "a name in that path is too long for the file system: choose a shorter one"}


def os_error_line(exc: OSError) -> str:
    """A failed read or write as one line: what failed, on which file, and what to do."""
    what = exc.strerror or type(exc).__name__
    where = f" ({exc.filename})" if exc.filename else ""
    hint = _OS_HINTS.get(exc.errno or 0)
    return f"{what}{where}" + (f"; {hint}" if hint else "")


class LateParams:
    """A click command (or group) some of whose parameters are made when click first asks for its parameters
    (parsing a command line, its --help), not when the module that declares it is imported: ``late(params)``
    returns the full list. The options the registered suites bring are made so, so that importing the CLI imports
    no wing (carryon_eval.suite finds the wings when they are first asked for)."""

    def __init__(self, *args: Any, late: Optional[Callable[[list[click.Parameter]], list[click.Parameter]]] = None,
                 **kwargs: Any) -> None:
        self._late = late
        self._made: Optional[tuple[tuple[str, ...], list[click.Parameter]]] = None   # (for which suites, params)
        super().__init__(*args, **kwargs)

    @property
    def params(self) -> list[click.Parameter]:
        if self._late is None:
            return self._params
        suites = registered_suites()
        if self._made is None or self._made[0] != suites:     # made again when the registered suites change
            self._made = (suites, self._late(list(self._params)))   # a late function that fails is asked again
        return self._made[1]

    @params.setter
    def params(self, value: list[click.Parameter]) -> None:
        self._params = value


def registered_suites() -> tuple[str, ...]:
    """The names of the registered suites (finding the wings the first time): what late parameters are made of."""
    from carryon_eval.suite.registry import suites

    return tuple(s.name for s in suites())


class LateCommand(LateParams, click.Command):
    """A command with late parameters (LateParams)."""


class OneLineGroup(click.Group):
    """The command group of a CLI whose usage errors (an unknown option or command, a bad value, a missing
    argument), in the group or any of its subcommands, end like every bad input: one line
    ``<prog>: error: <what> (see '<command> --help')`` and exit 2, never click's usage block. ``error``: the
    CLI's UsageError subclass (its program name)."""

    error: type[UsageError] = UsageError

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as exc:
            raise self._one_line(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise self._one_line(exc) from None
        except OSError as exc:         # a full disk, a file-size limit, a folder it may not write: any command
            raise self.error(os_error_line(exc)) from None

    def _one_line(self, exc: click.UsageError) -> UsageError:
        sub = exc.ctx.command_path.split(" ")[1:] if exc.ctx is not None else []   # the program by its own name
        where = " ".join([self.error.prog, *sub])
        text = " ".join(exc.format_message().split())       # click's message, on one line
        return self.error(f"{text} (see '{where} --help')")


# ---------------------------------------------------------------- options
Decorator = Callable[[Any], Any]


def _stack(*decorators: Decorator) -> Decorator:
    def apply(fn: Any) -> Any:
        for deco in reversed(decorators):
            fn = deco(fn)
        return fn
    return apply


def endpoint_options(prefix: str = "", **kwargs: Any) -> Decorator:
    """--[PREFIX-]endpoint, --[PREFIX-]model, --[PREFIX-]api-key-env for one role (carryon_eval.option); ``repeatable``:
    the endpoint may be given several times (an endpoint pool; the value is then a tuple)."""
    return click_options(option.endpoint_options(prefix, **kwargs))


# ---------------------------------------------------------------- a role's request options
ALIAS = "__alias"          # dest suffix of a hidden old spelling (see merge_aliases)


def temperature_option_value(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Any:
    if value is None:
        return None
    try:
        return option.read_temperature(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _extra_body(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[dict[str, Any]]:
    if value is None:                                  # a dict: already read (passed on to a subcommand)
        return value
    try:
        return option.read_json_object(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _system_prompt(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[str]:
    if value is None or not value.startswith("@") or ctx.get_parameter_source(param.name or "") != \
            click.core.ParameterSource.COMMANDLINE:
        return value
    path = Path(value[1:])
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"cannot read the system prompt file {path}: {exc.__class__.__name__}") from None


def request_options(role: str, **kwargs: Any) -> Decorator:
    """--ROLE-max-tokens, --ROLE-temperature, --ROLE-reasoning-effort, --ROLE-system-prompt, --ROLE-extra-body
    (dests ROLE_max_tokens, ...; None when not given; carryon_eval.option). ``skip``: options the command defines
    itself."""
    return click_options(option.request_options(role, **kwargs))


def click_option(o: option.Option, callback: Optional[Callable[..., Any]] = None) -> Decorator:
    """The click option of an option record (its kind gives the type; ``callback`` overrides the kind's)."""
    kwargs: dict[str, Any] = {"help": o.help or None, "hidden": o.hidden, "metavar": o.metavar}
    if o.kind == "flag" and o.flag_value is not None:      # --no-X: sets X to flag_value when given
        kwargs.update(flag_value=o.flag_value, default=o.default)
    elif o.kind == "flag":
        kwargs.update(is_flag=True)
    else:
        kwargs.update(default=o.default, show_default=True if o.shown else None, multiple=o.multiple)
        kwargs["type"] = (click.Choice(o.choices) if o.choices else _TYPES.get(o.kind))
    made = {"temperature": temperature_option_value, "json": _extra_body, "system_prompt": _system_prompt}
    kwargs["callback"] = callback or made.get(o.kind) or (_reading(o.read) if o.read is not None else None)
    dest = f"{o.name}{ALIAS}" if o.alias_of is not None else o.name
    kept = {k: v for k, v in kwargs.items() if v is not None or (k == "default" and o.kind == "conditions")}
    return click.option(o.flag, dest, **kept)


def click_params(options: Sequence[option.Option]) -> list[click.Parameter]:
    """The click parameters of option records, in their order (for a command's late parameters, LateParams)."""
    def holder() -> None: ...

    for o in options:
        click_option(o)(holder)
    return list(getattr(holder, "__click_params__", []))


def place_params(params: list[click.Parameter], made: Sequence[click.Parameter],
                 before: str) -> list[click.Parameter]:
    """``params`` with ``made`` inserted before the parameter named ``before``."""
    at = next(i for i, p in enumerate(params) if p.name == before)
    return [*params[:at], *made, *params[at:]]


def click_options(options: Sequence[option.Option]) -> Decorator:
    return _stack(*(click_option(o) for o in options))


_TYPES: dict[str, Any] = {"count": click.IntRange(min=1), "int": int, "seconds": click.FloatRange(min=1),
                          "path": click.Path(path_type=Path)}


def _reading(read: Callable[[Any], Any]) -> Callable[..., Any]:
    """A click callback checking and spelling a value as ``read`` does (e.g. JudgeSettings' utility mode)."""
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return None
        try:
            return read(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
    return callback


def alias_option(old: str, dest: str, **kwargs: Any) -> Decorator:
    """An old spelling of option ``dest`` kept as a hidden alias (merge_aliases folds it in)."""
    return click.option(old, f"{dest}{ALIAS}", hidden=True, **kwargs)


def merge_aliases(opts: dict[str, Any], error: type[Exception] = click.UsageError) -> dict[str, Any]:
    """Fold hidden aliases into their option; both given with different values is refused (one line)."""
    out = {k: v for k, v in opts.items() if not k.endswith(ALIAS)}
    for key, value in opts.items():
        if not key.endswith(ALIAS) or value in (None, ()):
            continue
        dest = key[: -len(ALIAS)]
        given = out.get(dest)
        if isinstance(value, tuple):        # a repeatable option: both spellings' values, new ones last
            out[dest] = (*value, *(given or ()))
            continue
        if given not in (None, ()) and given != value:
            raise error(f"--{dest.replace('_', '-')} given twice, under an old name too, with different "
                                   f"values ({given!r} and {value!r})")
        out[dest] = value
    return out


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
