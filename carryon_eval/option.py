"""One option of a command line as a record (``Option``: flag, name, default, choices, help, how its value is
read), and the options of a role that both CLIs name alike (``endpoint_options``, ``request_options``).

No click here: ``cli_common.click_option`` makes the click option of a record, the Python API reads its keywords
with ``read_value``; the table of `carryon-eval`'s options is carryon_eval.app.options.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Collection, Mapping, Optional, Sequence

#: How a value is read. text: a string; count: a whole number >= 1; int: a whole number; seconds: a number >= 1;
#: path: a file or folder; flag: given or not; temperature: a number in 0-2 or 'default'; json: a JSON object;
#: system_prompt: text or @FILE; conditions: the suites' conditions (carryon_eval.suite).
KINDS = ("text", "count", "int", "seconds", "path", "flag", "temperature", "json", "system_prompt", "conditions")


@dataclass(frozen=True)
class Option:
    """One option. ``name``: click's dest and the field it sets (``EvaluateConfig``'s, or a role's request option
    ``ROLE_<option>``); ``keyword``: the Python API's keyword (the long flag, underscored). A flag whose
    ``flag_value`` is given sets ``name`` to it when given (``--no-model-check``: model_check=False)."""
    flag: str
    help: str = ""
    name: str = ""
    default: Any = None
    kind: str = "text"
    choices: tuple[str, ...] = ()
    read: Optional[Callable[[Any], Any]] = None   # the value's own check and spelling (e.g. JudgeSettings')
    multiple: bool = False
    metavar: Optional[str] = None
    show_default: Optional[bool] = None         # None: shown when there is a default
    hidden: bool = False
    alias_of: Optional[str] = None              # an old spelling of option ``alias_of`` (hidden)
    flag_value: Any = None
    #: (name, value): the option means something only beside that option set to that value (``--calibrate``
    #: beside ``--utility-judge grouped``); given without it, it is refused (``refused_alone``), never ignored
    beside: Optional[tuple[str, Any]] = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"option {self.flag}: unknown kind {self.kind!r}")
        if not self.name:
            object.__setattr__(self, "name", self.flag.lstrip("-").replace("-", "_"))

    @property
    def keyword(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def shown(self) -> bool:
        return self.default is not None if self.show_default is None else self.show_default

    def of_run(self, help: Optional[str] = None, **changes: Any) -> "Option":
        """This option on a subcommand of a run folder: no default (None: as run.json says)."""
        return dataclasses.replace(self, default=None, show_default=False,
                                   help=self.help + " [default: the run's]" if help is None else help, **changes)

    def given(self, value: Any) -> Any:
        """The field's value of a flag given (True) or not (False); other kinds: the value."""
        if self.kind != "flag" or self.flag_value is None:
            return value
        return self.flag_value if value else self.default


def refused_alone(table: Sequence[Option], values: Mapping[str, Any],
                  given: Optional[Collection[str]] = None) -> Optional[str]:
    """Why an option of ``table`` that was given means nothing here: the option it means something beside
    (``Option.beside``) is not set to what it needs in ``values`` (names to values, defaults included); None when
    every given option means something. ``given``: the names given (default: those whose value is not the
    option's default, which means the same as not giving it)."""
    by_name = {o.name: o for o in table}
    if given is None:
        given = {o.name for o in table if values.get(o.name) not in (None, o.default)}
    for o in table:
        if o.beside is None or o.name not in given or values.get(o.beside[0]) == o.beside[1]:
            continue
        name, wanted = o.beside
        other = by_name[name]
        return (f"{o.flag} {values.get(o.name)} only means something with {other.flag} {wanted} (here "
                f"{other.flag} is {values.get(name)}); add {other.flag} {wanted}, or leave {o.flag} out")
    return None


# ---------------------------------------------------------------- reading a value (the Python API's check)
def read_value(option: Option, value: Any) -> Any:
    """``value`` as the option takes it, or ValueError saying what was expected (without the option's name).
    None is "not given" (the default)."""
    if value is None:
        return None
    if option.multiple and not option.kind == "conditions":
        values = (value,) if isinstance(value, (str, Path)) else tuple(value)
        return tuple(read_value(dataclasses.replace(option, multiple=False), v) for v in values)
    kind = option.kind
    if kind in ("count", "int"):
        if isinstance(value, bool) or not isinstance(value, int) or (kind == "count" and value < 1):
            raise ValueError(f"expected a whole number{' >= 1' if kind == 'count' else ''}, got {value!r}")
    elif kind == "seconds":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1:
            raise ValueError(f"expected a number of seconds >= 1, got {value!r}")
        value = float(value)
    elif kind == "flag":
        value = bool(value)
    elif kind == "path":
        value = Path(value)
    elif kind == "temperature":
        value = read_temperature(value)
    elif kind == "json":
        value = read_json_object(value)
    elif kind in ("text", "system_prompt"):
        value = str(value)
    if option.read is not None:
        return option.read(value)
    if option.choices and value not in option.choices:
        raise ValueError(f"expected one of {', '.join(option.choices)}, got {value!r}")
    return value


def read_temperature(value: Any) -> Any:
    """A temperature as given: a number in 0-2, or 'default' (the provider's: none is sent)."""
    from carryon_eval.model.endpoint import parse_temperature
    try:
        return parse_temperature(str(value))
    except ValueError:
        raise ValueError(f"expected a number in 0-2 or 'default' (the provider's), got {value!r}") from None


def read_json_object(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    try:
        body = json.loads(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"expected a JSON object, e.g. '{{\"top_p\": 0.9}}' ({exc})") from None
    if not isinstance(body, dict):
        raise ValueError(f"expected a JSON object, got {type(body).__name__}")
    return body


# ---------------------------------------------------------------- a role's options (both CLIs name them alike)
#: The request options every role takes, as ``--ROLE-<name>`` (dest ``ROLE_<name>``).
REQUEST_OPTIONS = ("max_tokens", "temperature", "reasoning_effort", "system_prompt", "extra_body")


def endpoint_options(prefix: str = "", *, role: str = "the target model", api_key_default: Optional[str] = None,
                     endpoint_help: Optional[str] = None, model_help: Optional[str] = None,
                     key_help: Optional[str] = None, repeatable: bool = False) -> tuple[Option, ...]:
    """--[PREFIX-]endpoint, --[PREFIX-]model, --[PREFIX-]api-key-env for one role; ``repeatable``: the
    endpoint may be given several times (an endpoint pool; the value is then a tuple)."""
    dash = f"{prefix}-" if prefix else ""
    return (
        Option(f"--{dash}endpoint", metavar="URL|local", multiple=repeatable,
               help=endpoint_help or f"OpenAI-compatible base URL (…/v1) of {role}; 'local': the embedded model."),
        Option(f"--{dash}model", metavar="NAME", help=model_help or f"Model name of {role}."),
        Option(f"--{dash}api-key-env", metavar="NAME", default=api_key_default,
               help=key_help or f"Environment variable holding the API key of {role} (never written anywhere)."),
    )


def request_options(role: str, *, what: Optional[str] = None, max_tokens_help: str = "",
                    temperature_help: str = "", hidden: bool = False,
                    skip: tuple[str, ...] = ()) -> tuple[Option, ...]:
    """--ROLE-max-tokens, --ROLE-temperature, --ROLE-reasoning-effort, --ROLE-system-prompt, --ROLE-extra-body
    (names ROLE_max_tokens, ...; None when not given). ``skip``: options the command defines itself."""
    flag, dest, what = role.replace("_", "-"), role.replace("-", "_"), what or f"the {role}"
    made = {
        "max_tokens": Option(f"--{flag}-max-tokens", name=f"{dest}_max_tokens", kind="count", metavar="N",
                             hidden=hidden, help=f"Max tokens of each reply of {what}{max_tokens_help}."),
        "temperature": Option(f"--{flag}-temperature", name=f"{dest}_temperature", kind="temperature",
                              metavar="T|default", hidden=hidden,
                              help=f"Temperature of {what}{temperature_help}; 'default': none is sent "
                                   "(the provider's default; reasoning models take no other)."),
        "reasoning_effort": Option(f"--{flag}-reasoning-effort", name=f"{dest}_reasoning_effort", metavar="LEVEL",
                                   hidden=hidden, help=f"reasoning_effort sent with every request of {what} (e.g. "
                                                       "low, medium, high) [default: none sent]."),
        "system_prompt": Option(f"--{flag}-system-prompt", name=f"{dest}_system_prompt", kind="system_prompt",
                                metavar="TEXT|@FILE", hidden=hidden,
                                help=f"A system message before every request of {what} [default: none]."),
        "extra_body": Option(f"--{flag}-extra-body", name=f"{dest}_extra_body", kind="json", metavar="JSON",
                             hidden=hidden, help=f"JSON object merged into every request body of {what} (e.g. "
                                                 "top_p, vLLM's chat_template_kwargs)."),
    }
    return tuple(o for name, o in made.items() if name not in skip)


def alias(old: str, option: str, **kwargs: Any) -> Option:
    """An old spelling of option ``option`` kept as a hidden alias (the CLI folds it in: cli_common.merge_aliases)."""
    return Option(old, name=option, alias_of=option, hidden=True, **kwargs)
