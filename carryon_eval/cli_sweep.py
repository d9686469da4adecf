"""`carryon-eval sweep PLAN.toml [--out DIR] [--dry-run]` on the command line: the plan read (carryon_eval.sweep),
its runs side by side in one event loop, the last lines saying which failed, then the leaderboard over them."""
from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path
from typing import Any, Coroutine, Optional

import click

from carryon_eval.cli_analysis import write_comparison
from carryon_eval.cli_common import UsageError, os_error_line
from carryon_eval.run.folder import RunError
from carryon_eval.run.lock import hold
from carryon_eval.sweep import (Outcome, PlanError, check_dataset, dry_run, finished_runs, keys_help, read_plan,
                                run_plan, stopped_line, summary)

INTERRUPTED = "carryon-eval: interrupted; rerun the same command to resume"
STOPPED = 4             # a sweep stopped by SIGTERM or SIGINT: every run resumes (`carryon-eval`'s INCOMPLETE)


class SweepError(UsageError):
    """One line on stderr, `carryon-eval: error: ...`, then exit 2."""
    prog = "carryon-eval"


class Lines:
    """app.Output on the terminal: info to stdout, notes to stderr."""

    def info(self, text: str) -> None:
        click.echo(text)

    def note(self, text: str) -> None:
        click.echo(text, err=True)


class SweepCommand(click.Command):
    """`sweep --help` ends with the plan's keys, the suites' own options among them: made when the help is
    shown, so that importing the CLI finds no suite."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self.epilog = keys_help()
        super().format_epilog(ctx, formatter)


@click.command("sweep", cls=SweepCommand)
@click.argument("plan_file", metavar="PLAN.toml", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder of the sweep: one run folder per target (DIR/<name>), then DIR/leaderboard.html and "
                   "DIR/leaderboard.jsonl [default: carryon-runs/sweep-<plan name>]; rerunning into it resumes.")
@click.option("--dry-run", is_flag=True,
              help="Print the cost table of every target and of the whole plan, with what each target's design can "
                   "resolve (its power table), then stop: nothing is called, nothing is written.")
@click.option("--json", "as_json", is_flag=True,
              help="With --dry-run: print one JSON object (targets: each target's table; plan: the totals; power: "
                   "each target's power table).")
def sweep_command(plan_file: Path, out: Optional[Path], dry_run: bool, as_json: bool) -> None:
    """Evaluate every target of PLAN.toml under the plan's one user simulator and judge, side by side, then
    write one leaderboard over them.

    The plan's top-level keys are the evaluate options, spelled as the long options without dashes, shared
    by every run; each [[target]] table has a name, an endpoint, a model and the target's own options. A judge
    or simulator endpoint the targets share has at most `concurrency` requests in flight in all. A target
    that fails does not stop the others; the exit code is the worst of theirs (3: nothing scored, 4: stopped
    before the end), and the last lines say which failed."""
    try:
        plan = read_plan(plan_file, out)
        check_dataset(plan)
    except PlanError as exc:
        raise SweepError(str(exc)) from None
    lines = Lines()
    if dry_run:
        try:
            asyncio.run(_dry(plan, lines, as_json))
        except KeyboardInterrupt:
            click.echo(INTERRUPTED, err=True)
            sys.exit(130)
        return
    try:
        with hold(plan.out, "carryon-eval sweep"):       # one sweep at a time into DIR (each run locks its own)
            _run(plan, lines)
    except RunError as exc:
        raise SweepError(str(exc)) from None


def _run(plan, lines) -> None:
    ended: dict[str, Outcome] = {}
    stopped_by = asyncio.run(_until_signal(run_plan(plan, lines, ended)))
    if stopped_by is not None:
        click.echo(stopped_line(plan, ended, stopped_by), err=True)
        sys.exit(STOPPED)
    outcomes = [ended[t.name] for t in plan.targets]
    runs, board = finished_runs(plan), 0
    try:
        if runs:
            write_comparison(runs, plan.out, plan.paper_rows)
        else:
            click.echo("sweep: no run has a report yet: no leaderboard", err=True)
    except UsageError as exc:              # e.g. a part of the comparison that cannot be made: the runs are done
        click.echo(f"carryon-eval: error: {exc.message}", err=True)
        board = 2
    except OSError as exc:                 # a full disk under the leaderboard
        click.echo(f"carryon-eval: error: {os_error_line(exc)}", err=True)
        board = 2
    last, code = summary(outcomes)
    code = max(code, board)
    for line in last:
        click.echo(line, err=bool(code))
    if code:
        sys.exit(code)


async def _until_signal(work: Coroutine[Any, Any, Any]) -> Optional[str]:
    """Run ``work``; SIGTERM or SIGINT cancels it (each run stops as `carryon-eval` stops on them: what it has is
    on disk, a rerun resumes it) and names the signal; None when it ran to its end."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(work)
    got: list[str] = []

    def stop(name: str) -> None:
        if not got:
            got.append(name)
            task.cancel()

    handled = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop, sig.name)
            handled.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):   # not the main thread, or no signals here
            pass
    try:
        await task
    except asyncio.CancelledError:
        if not got:
            raise
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
    return got[0] if got else None


async def _dry(plan, lines, as_json: bool = False) -> None:
    try:
        await dry_run(plan, lines, as_json)
    except Exception as exc:           # a dataset that cannot be read, a bad --price: the sweep's one line
        if type(exc).__module__.startswith("carryon_eval."):
            raise SweepError(str(exc)) from None
        raise
