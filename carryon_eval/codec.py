"""Records to and from JSON: a dataclass's fields are its JSON keys, in their order, so that no reader walks a
file by string keys and no writer spells them twice.

    @dataclass
    class Share(Record):
        value: Optional[float] = None
        n: int = 0
        note: Optional[str] = field(default=None, metadata=OMIT_NONE)   # written only when set

    Share.from_json({"value": 0.5, "n": 4}).to_json() == {"value": 0.5, "n": 4}

``to_json`` writes every field under its name (``metadata={"key": ...}`` renames it; ``omit``: a test of the value
that leaves the key out), a nested record by its own ``to_json``, lists and dicts item by item. ``from_json`` reads
each key back by the field's type hint (a record, ``Optional``, ``list``, ``tuple`` and ``dict`` of them); numbers and
strings are kept as they were read (never coerced: 3 stays 3, so what is read is written back byte for byte); a key
the file lacks takes the field's default; keys the record does not know are ignored. A record whose layout is not
its fields (e.g. numbers keyed by name) overrides both methods.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from functools import lru_cache
from typing import Any, Callable, Mapping, TypeVar, Union

R = TypeVar("R", bound="Record")


class _Absent:
    """The value of a field whose key the file does not have (e.g. a condition's redundancy, only where it has
    conversations): written back as no key at all."""
    _instance: "_Absent | None" = None

    def __new__(cls) -> "_Absent":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()

#: field metadata: the key is written only when the value is not None
OMIT_NONE: Mapping[str, Any] = {"omit": lambda v: v is None}
#: field metadata: the key is written only when the value is truthy
OMIT_EMPTY: Mapping[str, Any] = {"omit": lambda v: not v}


#: field metadata: the key is written only when the value is not ABSENT
OMIT_ABSENT: Mapping[str, Any] = {"omit": lambda v: v is ABSENT}


def absent() -> Any:
    """A field whose key a file may lack: ABSENT until set, and then written."""
    return dataclasses.field(default=ABSENT, metadata=OMIT_ABSENT)


def present(x: Any) -> bool:
    """Whether a field read from a file had its key (it is not ABSENT)."""
    return x is not ABSENT


def json_keys(cls: type) -> tuple[str, ...]:
    """The JSON keys of a record's fields, in order."""
    return tuple(f.metadata.get("key", f.name) for f in dataclasses.fields(cls) if not f.name.startswith("_"))


def omit_if(test: Callable[[Any], bool]) -> Mapping[str, Any]:
    """Field metadata: the key is left out when ``test(value)`` holds."""
    return {"omit": test}


def encode(x: Any) -> Any:
    """The JSON value of a record, a list or dict of them, or a plain value."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        method = getattr(x, "to_json", None)
        return method() if method is not None else fields_json(x)
    if isinstance(x, Mapping):
        return {k: encode(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [encode(v) for v in x]
    return x


def fields_json(record: Any) -> dict[str, Any]:
    """A dataclass's fields as a JSON object, in field order (Record.to_json's work)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(record):
        if f.name.startswith("_"):
            continue
        value = getattr(record, f.name)
        omit = f.metadata.get("omit")
        if omit is not None and omit(value):
            continue
        out[f.metadata.get("key", f.name)] = encode(value)
    return out


@lru_cache(maxsize=None)
def field_types(cls: type) -> dict[str, Any]:
    """A record's fields' types by name, as ``from_json`` reads them (cached; a type named only under TYPE_CHECKING
    cannot be resolved: then {}, and its fields read as they are)."""
    try:
        return typing.get_type_hints(cls)
    except NameError:
        return {}


def _is_record(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def decode(tp: Any, x: Any) -> Any:
    """``x`` (JSON) read as type ``tp``: records by their ``from_json``, containers item by item, anything else as is."""
    if x is None or tp is Any:
        return x
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Union or (hasattr(types, "UnionType") and isinstance(tp, getattr(types, "UnionType"))):
        kinds = [a for a in args if a is not type(None)]
        return decode(kinds[0], x) if len(kinds) == 1 else x
    if _is_record(tp):
        if not isinstance(x, Mapping):
            return x
        reader = getattr(tp, "from_json", None)
        return reader(x) if reader is not None else fields_of(tp, x)
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        value = args[1] if len(args) == 2 else Any
        return {k: decode(value, v) for k, v in x.items()} if isinstance(x, Mapping) else x
    if origin in (list, typing.Sequence) or tp is list:
        item = args[0] if args else Any
        return [decode(item, v) for v in x] if isinstance(x, list) else x
    if origin is tuple:
        item = args[0] if args else Any
        return tuple(decode(item, v) for v in x) if isinstance(x, list) else x
    return x


def fields_of(cls: type[R], d: Mapping[str, Any]) -> R:
    """A dataclass read from a JSON object by its fields' type hints (Record.from_json's work)."""
    hints = field_types(cls)
    values = {}
    for f in dataclasses.fields(cls):
        key = f.metadata.get("key", f.name)
        if f.init and key in d:
            values[f.name] = decode(hints.get(f.name, Any), d[key])
        elif f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            values[f.name] = None           # a required field the file lacks (an older file): None
    return cls(**values)


class Record:
    """A dataclass written to JSON and read back by its fields (see the module's docstring)."""

    def to_json(self) -> dict[str, Any]:
        return fields_json(self)

    @classmethod
    def from_json(cls: type[R], d: Mapping[str, Any]) -> R:
        return fields_of(cls, d)
