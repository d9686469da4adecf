"""A suite's hooks named by where they live, imported when first called: what lets a wing's record be a light
declaration (its name, conditions, options, files, rank: what the CLI and the registry read before a run starts)
while a run imports only the wings it evaluates.

    h = hooks_of("carryon_eval.suites.opensafeintent.hooks")
    Suite(name="opensafeintent", ..., plan=h.plan, report=SuiteReport(section="opensafeintent", summarize=h.summarize))

A ``Hook`` is a callable: calling it imports its module (once) and calls the function there; ``is None`` tests
and the record's other fields cost nothing. ``modules_of`` names the modules a record's hooks live in (the
registry imports them where a wing must be loaded without a hook being called: its scorers, its stages).
"""
from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping


@dataclass(frozen=True)
class Hook:
    """The function ``name`` of module ``module``, imported when first called (or ``resolve``d)."""
    module: str
    name: str

    def resolve(self) -> Callable[..., Any]:
        found = getattr(importlib.import_module(self.module), self.name, None)
        if not callable(found):
            raise AttributeError(f"suite hook {self.module}:{self.name} is not a function of that module")
        return found

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Hook({self.module}:{self.name})"


class HooksOf:
    """``hooks_of(module).name`` is ``Hook(module, name)``: a wing's record names its hooks module once."""

    def __init__(self, module: str) -> None:
        self.module = module

    def __getattr__(self, name: str) -> Hook:
        if name.startswith("__"):
            raise AttributeError(name)
        return Hook(self.module, name)


def hooks_of(module: str) -> HooksOf:
    return HooksOf(module)


def resolved(fn: Any) -> Any:
    """A hook's function (imported), any other value as it is."""
    return fn.resolve() if isinstance(fn, Hook) else fn


def hooks_in(value: Any) -> Iterator[Hook]:
    """Every Hook in a record: its fields, tuples, lists and mappings, recursively."""
    if isinstance(value, Hook):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        if not getattr(value, "LOADED_WITH_THE_WING", True):     # hooks only their own stage calls (an extra's)
            return
        for f in dataclasses.fields(value):
            yield from hooks_in(getattr(value, f.name))
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from hooks_in(item)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from hooks_in(item)


def modules_of(value: Any) -> list[str]:
    """The modules a record's hooks live in, in order."""
    return list(dict.fromkeys(h.module for h in hooks_in(value)))


def load_modules(value: Any) -> None:
    """Import the modules of a record's hooks (a wing's hooks module registers its scorers and stages)."""
    for module in modules_of(value):
        importlib.import_module(module)
