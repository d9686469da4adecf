"""A suite declared as data: a wing's ``suite.toml``, read into its Suite record without importing the wing.

A wing whose record is only names (its conditions, options, files, rank, the functions its hooks are) can write it
as a TOML file beside its modules; the registry reads it when it looks for the suites, so a run that evaluates other
wings imports not one module of it (not even its package). Each hook is a function's name: a bare name lives in
the module ``hooks`` names, ``"module:name"`` anywhere; it is imported when a run first calls it
(carryon_eval.suite.lazy). The keys are the Suite record's fields (suite/records.py), its nested records as tables
(``[[uses]]``, ``[[probes]]``, ``[[files]]``, ``[[options]]``, ``[[judge_roles]]``, ``[report]``,
``[report.inspect]``), and three of the declaration's own:

    hooks = "carryon_eval.suites.opensafeintent.hooks"   # where bare hook names live
    needs = ["opensafeintent"]     # ``load`` is called only when these options are given (else: no inputs, no import)
    needs_rows = ["triplets"]      # ... and when the dataset has rows of these optional configs
    [[configs]]                    # an optional config of the dataset and the columns it has at least
    name = "triplets"
    columns = ["set_id", "variant"]

A record that holds what a TOML file cannot (Python options, settings, computed defaults) stays a module
(``record.py``) that registers its Suite on import.
"""
from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional

from carryon_eval.codec import Record, json_keys
from carryon_eval.dataset.configs import register_columns
from carryon_eval.run.folder import RunFile
from carryon_eval.suite.inputs import InputsRecord, SuiteOptions
from carryon_eval.suite.lazy import Hook
from carryon_eval.suite.records import (InspectPart, JudgeRole, Probe, ScorerUse, Suite, SuiteError, SuiteOption,
                                        SuiteReport)

if TYPE_CHECKING:       # types only
    from carryon_eval.dataset.load import Benchmark

DECLARATION = "suite.toml"        # a wing's suite record as data, beside its modules
#: the nested records: a key of the record -> the record type of its table (or of each table of its array)
_NESTED: dict[str, type] = {"uses": ScorerUse, "probes": Probe, "checks": Probe, "files": RunFile,
                            "options": SuiteOption, "judge_roles": JudgeRole, "report": SuiteReport,
                            "inspect": InspectPart}


@dataclass(frozen=True)
class Config(Record):
    """An optional config of the dataset a wing reads, and the columns it has at least."""
    name: str = ""
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class Own(Record):
    """The declaration's keys of its own, beside the Suite record's."""
    hooks: str = ""                 # the module where its bare hook names live
    needs: tuple[str, ...] = ()     # the options its load needs
    needs_rows: tuple[str, ...] = ()    # the optional configs whose rows its load needs
    configs: tuple[Config, ...] = ()


_OWN = json_keys(Own)


@dataclass(frozen=True)
class Needs:
    """A declared suite's ``load``: its hook, called only when the run gives the options it needs and the dataset
    has rows of the configs it needs (else None: the suite has no inputs, and nothing of the wing is imported)."""
    hook: Hook
    options: tuple[str, ...] = ()
    rows: tuple[str, ...] = ()

    def __call__(self, bench: "Benchmark", options: SuiteOptions,
                 recorded: Optional[InputsRecord]) -> Optional[InputsRecord]:
        if any(options.get(name) is None for name in self.options) or \
                not all(getattr(bench, config, None) for config in self.rows):
            return None
        return self.hook(bench, options, recorded)


def read_declaration(path: Path) -> Suite:
    """The Suite a ``suite.toml`` declares (its optional configs' columns registered); SuiteError, one line naming
    the file and the key, for a file that is not one."""
    table = _load(path)
    own = Own.from_json(table)
    where = _Where(path, own.hooks)
    if not isinstance(own.hooks, str) or not own.hooks:
        raise SuiteError(f"{path}: 'hooks' must name the module of its hooks (a dotted module name)")
    for i, config in enumerate(own.configs):
        if not (isinstance(config, Config) and config.name and config.columns):
            raise SuiteError(f"{path}: configs[{i}] must have a 'name' and a list of 'columns'")
        register_columns(config.name, config.columns)
    suite = _record(Suite, {k: v for k, v in table.items() if k not in _OWN}, where, "")
    if suite.load is not None:
        suite = dataclasses.replace(suite, load=Needs(suite.load, tuple(own.needs), tuple(own.needs_rows)))
    return suite


@dataclass(frozen=True)
class _Where:
    path: Path
    module: Any

    def hook(self, value: Any, key: str) -> Hook:
        if not isinstance(value, str) or not value:
            raise SuiteError(f"{self.path}: {key} must name a function (NAME of its hooks module, or MODULE:NAME)")
        module, _, name = value.rpartition(":")
        return Hook(module or self.module, name)


def _load(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the project supports 3.10 through tomli
        import tomli as tomllib
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read the suite's declaration ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{path}: not a TOML file ({exc})") from None


def _record(cls: type, table: Any, where: _Where, at: str) -> Any:
    """One record of type ``cls`` from its table: hooks for its function fields, records for its nested tables,
    tuples for its tuple fields."""
    if not isinstance(table, Mapping):
        raise SuiteError(f"{where.path}: {at or 'the file'} must be a table")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [k for k in table if k not in fields]
    if unknown:
        raise SuiteError(f"{where.path}: {at + '.' if at else ''}{unknown[0]} is not a key of a {cls.__name__} "
                         f"(known: {', '.join(fields)})")
    values = {k: _value(fields[k], v, where, f"{at}.{k}" if at else k) for k, v in table.items()}
    try:
        return cls(**values)
    except TypeError as exc:
        raise SuiteError(f"{where.path}: {at or 'the file'}: {exc}") from None


def _value(f: dataclasses.Field, value: Any, where: _Where, key: str) -> Any:
    kind = str(f.type)
    nested = _NESTED.get(f.name)
    if nested is not None:
        if isinstance(value, list):
            return tuple(_record(nested, item, where, f"{key}[{i}]") for i, item in enumerate(value))
        return _record(nested, value, where, key)
    if "Callable" in kind or "Hook" in kind:
        return where.hook(value, key)
    if isinstance(value, Mapping):
        raise SuiteError(f"{where.path}: {key} cannot be declared as data (declare the suite in a record module)")
    if kind.startswith("tuple") and isinstance(value, list):
        return tuple(value)
    return value
