"""What `carryon-eval` and `carryon-build` share on the command line.

- ``UsageError``: bad input ends with one line ``<prog>: error: <message>`` on stderr and exit code 2
  (no traceback, nothing half-written); each CLI subclasses it with its program name.
- ``is_local(endpoint)``: no endpoint, or the word ``local``, means the embedded model (defined with the
  embedded model in carryon_eval.model.local).
- ``endpoint_options(prefix=...)``: the options of one role where both CLIs name them alike
  (``--endpoint``, ``--model``, ``--api-key-env``), and ``concurrency_option`` / ``timeout_option``.
- ``request_options(role)``: one role's request options, named alike in both CLIs (``--ROLE-max-tokens``,
  ``--ROLE-temperature`` (a number or ``default``), ``--ROLE-reasoning-effort``, ``--ROLE-system-prompt``
  (text, or ``@FILE``), ``--ROLE-extra-body JSON``); ``alias_option`` keeps an old spelling as a hidden
  alias and ``merge_aliases`` folds it into the new one.
- ``verbose_option``: ``--verbose`` logs the package's INFO messages (the client's retries and rate
  limits) to stderr; without it only warnings and errors are shown.
"""
from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import click

from carryon_eval import defaults
from carryon_eval.model.local import LOCAL_ENDPOINT, is_local

__all__ = ["LOCAL_ENDPOINT", "REQUEST_OPTIONS", "UsageError", "alias_option", "concurrency_option", "configure_logging",
           "endpoint_options", "is_local", "merge_aliases", "request_options", "timeout_option", "verbose_option"]

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


# ---------------------------------------------------------------- a role's request options
#: The request options every role takes, as ``--ROLE-<name>`` (dest ``ROLE_<name>``).
REQUEST_OPTIONS = ("max_tokens", "temperature", "reasoning_effort", "system_prompt", "extra_body")
ALIAS = "__alias"          # dest suffix of a hidden old spelling (see merge_aliases)


def temperature_option_value(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Any:
    from carryon_eval.model.endpoint import parse_temperature
    if value is None:
        return None
    try:
        return parse_temperature(value)
    except ValueError:
        raise click.BadParameter(f"expected a number in 0-2 or 'default' (the provider's), got {value!r}") from None


def _extra_body(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[dict[str, Any]]:
    if value is None or isinstance(value, dict):      # a dict: already read (passed on to a subcommand)
        return value
    try:
        body = json.loads(value)
    except ValueError as exc:
        raise click.BadParameter(f"expected a JSON object, e.g. '{{\"top_p\": 0.9}}' ({exc})") from None
    if not isinstance(body, dict):
        raise click.BadParameter(f"expected a JSON object, got {type(body).__name__}")
    return body


def _system_prompt(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[str]:
    if value is None or not value.startswith("@") or ctx.get_parameter_source(param.name or "") != \
            click.core.ParameterSource.COMMANDLINE:
        return value
    path = Path(value[1:])
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"cannot read the system prompt file {path}: {exc.__class__.__name__}") from None


def request_options(role: str, *, what: Optional[str] = None, max_tokens_help: str = "",
                    temperature_help: str = "", hidden: bool = False, skip: tuple[str, ...] = ()) -> Decorator:
    """--ROLE-max-tokens, --ROLE-temperature, --ROLE-reasoning-effort, --ROLE-system-prompt, --ROLE-extra-body
    (dests ROLE_max_tokens, ...; None when not given). ``skip``: options the command defines itself."""
    flag, dest, what = role.replace("_", "-"), role.replace("-", "_"), what or f"the {role}"
    made = {
        "max_tokens": click.option(f"--{flag}-max-tokens", f"{dest}_max_tokens", type=click.IntRange(min=1),
                                   metavar="N", hidden=hidden,
                                   help=f"Max tokens of each reply of {what}{max_tokens_help}."),
        "temperature": click.option(f"--{flag}-temperature", f"{dest}_temperature", metavar="T|default",
                                    callback=temperature_option_value, hidden=hidden,
                                    help=f"Temperature of {what}{temperature_help}; 'default': none is sent "
                                         "(the provider's default; reasoning models take no other)."),
        "reasoning_effort": click.option(f"--{flag}-reasoning-effort", f"{dest}_reasoning_effort", metavar="LEVEL",
                                         hidden=hidden,
                                         help=f"reasoning_effort sent with every request of {what} (e.g. low, "
                                              "medium, high) [default: none sent]."),
        "system_prompt": click.option(f"--{flag}-system-prompt", f"{dest}_system_prompt", metavar="TEXT|@FILE",
                                      callback=_system_prompt, hidden=hidden,
                                      help=f"A system message before every request of {what} [default: none]."),
        "extra_body": click.option(f"--{flag}-extra-body", f"{dest}_extra_body", metavar="JSON",
                                   callback=_extra_body, hidden=hidden,
                                   help=f"JSON object merged into every request body of {what} (e.g. top_p, "
                                        "vLLM's chat_template_kwargs)."),
    }
    return _stack(*(deco for name, deco in made.items() if name not in skip))


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
