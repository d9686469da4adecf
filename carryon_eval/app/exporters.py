"""`carryon-eval export RUNDIR --format NAME --out FILE`: the formats a run folder can be written as.

One small registry: a format is a name, a one-line description and the dotted path of a function
``write(rundir: Path, out: Path) -> str`` (it writes FILE atomically and returns the line to print). The
function is imported only when its format is asked for, so a format that needs an optional extra (inspect-ai
for ``inspect``) costs nothing to the others. A format whose extra is missing raises ExportError, one line.

    register_exporter(Exporter("inspect", "inspect-ai eval log (.eval)", "carryon_eval.inspect_bridge.export:write"))
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


class ExportError(Exception):
    """A run folder cannot be exported in the asked format (missing extra, unusable folder); one line."""


@dataclass(frozen=True)
class Exporter:
    name: str             # the --format value
    description: str      # for --help
    target: str           # "package.module:function"; function(rundir, out) -> summary line

    def load(self) -> Callable[[Path, Path], str]:
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)


EXPORTERS: dict[str, Exporter] = {}


def register_exporter(exporter: Exporter) -> Exporter:
    EXPORTERS[exporter.name] = exporter
    return exporter


def export_run(fmt: str, rundir: Path, out: Path) -> str:
    """Write run folder ``rundir`` as format ``fmt`` into ``out``; returns the summary line."""
    try:
        exporter = EXPORTERS[fmt]
    except KeyError:
        raise ExportError(f"unknown export format {fmt!r}; known formats: {', '.join(sorted(EXPORTERS))}") from None
    return exporter.load()(Path(rundir), Path(out))


register_exporter(Exporter("inspect", "inspect-ai eval log (.eval), for `inspect view` (extra [inspect])",
                           "carryon_eval.inspect_bridge.export:write"))
