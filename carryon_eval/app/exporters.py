"""`carryon-eval export RUNDIR --format NAME --out PATH`: the formats a run folder can be written as.

One small registry: a format is a name, a one-line description, what ``--out`` names (a file or a folder) and
the dotted path of an async function ``export(rundir, out, output, judge)`` that writes it (atomically) and tells
``output`` (app.config.Output) what it wrote; ``judge`` is the ``--judge`` option (None: the run's). The function
is imported only when its format is asked for, so a format that needs an optional extra (inspect-ai for
``inspect``) costs nothing to the others; one whose extra is missing raises ExportError (one line).

    register_exporter(Exporter("inspect", "inspect-ai eval log", "file", "carryon_eval.inspect_bridge.export:export"))
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Optional

from carryon_eval.run.folder import RunFolder


class ExportError(Exception):
    """A run folder cannot be exported in the asked format (missing extra, unusable folder); one line."""


@dataclass(frozen=True)
class Exporter:
    name: str             # the --format value
    description: str      # for --help
    out: str              # "file" | "folder": what --out names
    target: str           # "package.module:function", an async (rundir, out, output, judge) -> None
    suffix: str = ""      # a file format's extension: --out naming a folder gets RUNDIR's name + suffix inside it

    def load(self) -> Callable[[Path, Path, Any, Optional[str]], Awaitable[None]]:
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)


EXPORTERS: dict[str, Exporter] = {}


def register_exporter(exporter: Exporter) -> Exporter:
    EXPORTERS[exporter.name] = exporter
    return exporter


def formats() -> dict[str, Exporter]:
    """Every format: the registered ones, and each suite's reference layout (its SuiteReport.export)."""
    from carryon_eval.suite import exporters

    suite_formats = {name: Exporter(name, f"the {name} suite's reference files, which its scripts read unchanged; "
                                          "--out is a folder", "folder", "carryon_eval.app.commands:export_folder")
                     for name in exporters()}
    return {**suite_formats, **EXPORTERS}


def destination(exporter: Exporter, run: RunFolder, out: str | Path) -> Path:
    """Where a format writes: for a one-file format, --out naming a folder (an existing one, or any path ending
    in a slash) means a file inside it, named after the run folder; a folder format never writes over a file."""
    text = str(out)
    path = Path(out)
    if exporter.out == "file" and (path.is_dir() or text.endswith(("/", os.sep))):
        return path / f"{run.path.resolve().name}{exporter.suffix}"
    if exporter.out == "file" and exporter.suffix and path.suffix != exporter.suffix:    # e.g. inspect-ai reads
        raise ExportError(f"--out {out}: format {exporter.name} writes a {exporter.suffix} file, which its readers "
                          f"know by that name; give --out {out}{exporter.suffix} (or a folder, {out}/, to "
                          f"write {run.path.resolve().name}{exporter.suffix} into)")
    if exporter.out == "folder" and path.exists() and not path.is_dir():
        raise ExportError(f"--out {out} is a file; format {exporter.name} writes a folder of files")
    return path


async def export_run(fmt: str, run: RunFolder, out: str | Path, output: Any, judge: Optional[str] = None) -> None:
    """Write run folder ``run`` as format ``fmt`` into ``out`` (see ``destination``)."""
    known = formats()
    try:
        exporter = known[fmt]
    except KeyError:
        raise ExportError(f"unknown export format {fmt!r}; known formats: {', '.join(sorted(known))}") from None
    out = destination(exporter, run, out)
    if exporter.out == "file":
        out.parent.mkdir(parents=True, exist_ok=True)
    if exporter.target == "carryon_eval.app.commands:export_folder":     # a suite's own layout
        await exporter.load()(run, Path(out), output, judge, fmt)
    else:
        await exporter.load()(run, Path(out), output, judge)


register_exporter(Exporter("inspect", "an inspect-ai eval log (.eval) for `inspect view` (extra [inspect]); --out is "
                           "a file, or a folder to write RUNDIR.eval into", "file", "carryon_eval.inspect_bridge.export:export",
                           suffix=".eval"))
