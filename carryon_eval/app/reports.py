"""Where a run's report is written: in the command's own process (a run alone: when its report starts, nothing of
that process is still calling), or in a worker process (a sweep: the other runs' calls go on while one run's
report is written, so a report never stops the event loop they share).

    reports = ReportWorker()                  # a sweep's: one worker process, started (and warmed) at once
    results = await reports.write(bench, run, out, judge, bootstrap)
    reports.close()

The worker is a fresh interpreter (multiprocessing's "spawn": nothing of the parent's threads or event loop comes
along); it is given the run folder's path, the dataset already loaded and the report's choices, writes every file
of the report (carryon_eval.app.phases.report_phase) and hands back results.json's record and the lines the report
says, which the parent prints through its own Output. It ignores SIGINT (Ctrl-C in a terminal reaches the whole
process group): the parent decides, and on a stop it ends the worker (every report file is written to a temporary
name and renamed, so a report cut short leaves the previous one whole).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import signal
from typing import Any, Optional, Protocol, Sequence

from carryon_eval.app.config import BootstrapChoice, Output
from carryon_eval.dataset.load import Benchmark
from carryon_eval.run.folder import RunFolder
from carryon_eval.run.results import Results


class Reports(Protocol):
    """Writes a run's report (results.json, table.md, plots, report.html) and returns its results."""

    async def write(self, bench: Benchmark, run: RunFolder, out: Output, judge: Optional[str],
                    bootstrap: BootstrapChoice, notes: Sequence[str] = ()) -> Results: ...


class InProcess:
    """The report in this process, on this event loop: a run alone, whose calls are all over by then."""

    async def write(self, bench: Benchmark, run: RunFolder, out: Output, judge: Optional[str],
                    bootstrap: BootstrapChoice, notes: Sequence[str] = ()) -> Results:
        from carryon_eval.app.phases import report_phase

        return report_phase(bench, run, out, judge, bootstrap, notes)


class _Lines:
    """The worker's Output: the lines kept in order, to be said by the parent."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def info(self, text: str) -> None:
        self.lines.append(("info", text))

    def note(self, text: str) -> None:
        self.lines.append(("note", text))


def _worker_start() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # the parent stops it (close), Ctrl-C stops the parent
    import carryon_eval.app.phases  # noqa: F401  - the report's modules, imported while the runs still call
    import carryon_eval.suite

    carryon_eval.suite.suites()
    try:
        from carryon_eval.report.plots import figure

        figure()                     # matplotlib too (the report's figures), where it is installed
    except Exception:  # noqa: BLE001 - no matplotlib: the report says so itself (PlotsUnavailable)
        pass


def _write(rundir: str, bench: Benchmark, judge: Optional[str], bootstrap: BootstrapChoice,
           notes: Sequence[str]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    from carryon_eval.app.phases import report_phase

    lines = _Lines()
    results = report_phase(bench, RunFolder(rundir), lines, judge, bootstrap, notes)
    return results.to_json(), lines.lines


def _ready() -> bool:
    return True


class ReportWorker:
    """Reports written in one worker process, one at a time, in the order asked (a sweep's runs end one after
    another: see model.client's limiter priorities)."""

    def __init__(self) -> None:
        self._pool: Optional[concurrent.futures.ProcessPoolExecutor] = None

    def start(self) -> "ReportWorker":
        """Start the worker now and import the report's modules there, so that the first report waits for neither."""
        if self._pool is None:
            self._pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_start)
            self._pool.submit(_ready)
        return self

    async def write(self, bench: Benchmark, run: RunFolder, out: Output, judge: Optional[str],
                    bootstrap: BootstrapChoice, notes: Sequence[str] = ()) -> Results:
        pool = self.start()._pool
        data, lines = await asyncio.get_running_loop().run_in_executor(pool, _write, str(run.path), bench, judge,
                                                                        bootstrap, tuple(notes))
        for kind, text in lines:
            (out.info if kind == "info" else out.note)(text)
        return Results.from_json(data)

    def close(self, stop: bool = False) -> None:
        """Wait for the reports asked for, then end the worker; ``stop``: end it now (a sweep stopped by a signal:
        a report cut short leaves the previous files whole)."""
        if self._pool is None:
            return
        pool, self._pool = self._pool, None
        if stop:
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
        pool.shutdown(wait=True, cancel_futures=stop)
