"""One progress line for any phase: items done/total, rate, ETA and tokens spent per role.

    with Progress(total=len(jobs), desc="rollout", usage=ledger, initial=already_done) as bar:
        ...
        bar.advance()

Tokens come from an endpoint.UsageLedger, grouped by role: the stage "target", the stage
"user_simulator" (shown as "user"), every "judge*"/"fidelity*" stage (shown as "judge") and any
other stage under its own name (e.g. the builder's stages). The bar is drawn on a terminal only (stderr).

When stdout is not a terminal (piped to a file, a CI log, ``| cat``) the same numbers are printed as one line
every ``interval()`` seconds (30 by default; ``--progress-interval`` sets it) to stdout while the phase runs:

    rollout: 12/40 conv (30%), 0.8 conv/s, ETA 35s, tokens target=1.2k user=300
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Optional

import click

from tqdm import tqdm

from carryon_eval.model.endpoint import Tokens, UsageLedger


#: Stages whose role their name does not say (a wing's scorers and probes), registered by the wing.
STAGE_ROLES: dict[str, str] = {}


def register_stage(stage: str, role: str) -> None:
    """Count a stage's calls under ``role`` ("target", "user" or "judge") in the token lines and usage tables."""
    STAGE_ROLES[stage] = role


def role_of(stage: str) -> str:
    """The role a call of ``stage`` was made for (its model's role), whichever wing made it."""
    from carryon_eval.suite import load_wings, suites     # the wings register their stages when loaded

    suites()
    if stage not in STAGE_ROLES and stage not in ("target", "user_simulator") \
            and not stage.startswith(("judge", "fidelity")):
        load_wings()                          # a wing's own stage: registered when its hooks are imported
    if stage in STAGE_ROLES:
        return STAGE_ROLES[stage]
    if stage == "user_simulator":
        return "user"
    if stage.startswith(("judge", "fidelity")):
        return "judge"
    return stage


def tokens_by_role(usage: UsageLedger) -> dict[str, int]:
    """{role: prompt + completion tokens} from a UsageLedger snapshot ({"stage/model": row})."""
    totals: dict[str, int] = {}
    for name, row in usage.snapshot().items():
        role, tokens = role_of(name.split("/", 1)[0]), Tokens.from_json(row)
        totals[role] = totals.get(role, 0) + tokens.prompt_tokens + tokens.completion_tokens
    order = {"target": 0, "user": 1, "judge": 2}          # the same order on every line, whoever answered first
    return dict(sorted(totals.items(), key=lambda kv: (order.get(kv[0], 3), kv[0])))


def human(n: float) -> str:
    for unit in ("", "k", "M", "G"):
        if abs(n) < 1000:
            return f"{n:.0f}{unit}" if unit == "" else f"{n:.1f}{unit}"
        n /= 1000
    return f"{n:.1f}T"


DEFAULT_INTERVAL = 30.0
_interval = DEFAULT_INTERVAL


def interval() -> float:
    """Seconds between two progress lines when stdout is not a terminal."""
    return _interval


def set_interval(seconds: float) -> None:
    global _interval
    _interval = float(seconds)


def _on_interval(ctx: click.Context, param: click.Parameter, value: Optional[float]) -> Optional[float]:
    if value is not None:
        set_interval(value)
    return value


#: ``--progress-interval SECONDS`` (both CLIs, before or after a subcommand).
progress_interval_option = click.option(
    "--progress-interval", type=click.FloatRange(min=0.05), expose_value=False, is_eager=True,
    callback=_on_interval, metavar="SECONDS",
    help=f"When stdout is not a terminal, print one progress line every SECONDS [default: {DEFAULT_INTERVAL:g}].")


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    def __init__(self, total: int, desc: str, *, usage: Optional[UsageLedger] = None, initial: int = 0,
                 unit: str = "conv", disable: Optional[bool] = None) -> None:
        self.usage = usage
        self.total, self.desc, self.unit, self.initial = total, desc, unit, initial
        self.bar = tqdm(total=total, initial=initial, desc=desc, unit=unit, file=sys.stderr,
                        dynamic_ncols=True, mininterval=0.5, disable=disable)
        self._n = initial
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._lines: Optional[threading.Thread] = None
        if disable is not True and not _stdout_is_terminal():
            self._lines = threading.Thread(target=self._print_lines, name=f"progress-{desc}", daemon=True)
            self._lines.start()
        self._show_tokens()

    def line(self) -> str:
        """The progress line: counts, rate, ETA, tokens so far (the bar's numbers)."""
        done, total = self._n, self.total
        elapsed = max(time.monotonic() - self._started, 1e-9)
        rate = (done - self.initial) / elapsed
        pct = f" ({done / total:.0%})" if total else ""
        eta = _duration((total - done) / rate) if rate > 0 and total >= done else "?"
        text = f"{self.desc}: {done}/{total} {self.unit}{pct}, {rate:.2f} {self.unit}/s, ETA {eta}"
        tokens = tokens_by_role(self.usage) if self.usage is not None else {}
        if tokens:
            text += ", tokens " + " ".join(f"{r}={human(t)}" for r, t in tokens.items())
        return text

    def _print_lines(self) -> None:
        while not self._stop.wait(interval()):
            try:
                print(self.line(), file=sys.stdout, flush=True)
            except (ValueError, OSError):   # stdout closed under us
                return

    def _show_tokens(self) -> None:
        if self.usage is None:
            return
        tokens = tokens_by_role(self.usage)
        if tokens:
            self.bar.set_postfix_str(" ".join(f"{r}={human(t)}" for r, t in tokens.items()) + " tok",
                                     refresh=False)

    def take_over(self) -> None:
        """Show this phase from now on (a bar on a terminal, lines when piped), when it was started hidden
        behind another phase's line that has now ended (the judge tail after the rollout)."""
        if self.bar.disable:
            self.bar.close()
            self.bar = tqdm(total=self.total, initial=self._n, desc=self.desc, unit=self.unit, file=sys.stderr,
                            dynamic_ncols=True, mininterval=0.5, disable=None)
        if self._lines is None and not self._stop.is_set() and not _stdout_is_terminal():
            self._lines = threading.Thread(target=self._print_lines, name=f"progress-{self.desc}", daemon=True)
            self._lines.start()

    def advance(self, n: int = 1) -> None:
        self._n += n
        self._show_tokens()
        self.bar.update(n)

    def grow(self, n: int) -> None:
        """``n`` more items to do (a phase whose work arrives while it runs)."""
        if n:
            self.total += n
            if self.bar.total is not None:
                self.bar.total += n
                if not self.bar.disable:
                    self.bar.refresh()

    @property
    def done(self) -> int:
        return int(self._n)

    def close(self) -> None:
        self._stop.set()
        if self._lines is not None and self._lines is not threading.current_thread():
            self._lines.join(timeout=1.0)
        self._show_tokens()
        self.bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
