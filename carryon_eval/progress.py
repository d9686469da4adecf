"""One progress line for any phase: items done/total, rate, ETA and tokens spent per role.

    with Progress(total=len(jobs), desc="rollout", usage=ledger, initial=already_done) as bar:
        ...
        bar.advance()

Tokens come from an endpoint.UsageLedger, grouped by role: the stage "target", the stage
"user_simulator" (shown as "user"), every "judge*"/"fidelity*" stage (shown as "judge") and any
other stage under its own name (e.g. the builder's stages). The line is drawn on a terminal only.
"""
from __future__ import annotations

import sys
from typing import Optional

from tqdm import tqdm

from carryon_eval.model.endpoint import UsageLedger


def role_of(stage: str) -> str:
    if stage == "user_simulator":
        return "user"
    if stage.startswith(("judge", "fidelity")):
        return "judge"
    return stage


def tokens_by_role(usage: UsageLedger) -> dict[str, int]:
    """{role: prompt + completion tokens} from a UsageLedger snapshot ({"stage/model": row})."""
    totals: dict[str, int] = {}
    for name, row in usage.snapshot().items():
        role = role_of(name.split("/", 1)[0])
        totals[role] = totals.get(role, 0) + row["prompt_tokens"] + row["completion_tokens"]
    return totals


def human(n: float) -> str:
    for unit in ("", "k", "M", "G"):
        if abs(n) < 1000:
            return f"{n:.0f}{unit}" if unit == "" else f"{n:.1f}{unit}"
        n /= 1000
    return f"{n:.1f}T"


class Progress:
    def __init__(self, total: int, desc: str, *, usage: Optional[UsageLedger] = None, initial: int = 0,
                 unit: str = "conv", disable: Optional[bool] = None) -> None:
        self.usage = usage
        self.bar = tqdm(total=total, initial=initial, desc=desc, unit=unit, file=sys.stderr,
                        dynamic_ncols=True, mininterval=0.5, disable=disable)
        self._show_tokens()

    def _show_tokens(self) -> None:
        if self.usage is None:
            return
        tokens = tokens_by_role(self.usage)
        if tokens:
            self.bar.set_postfix_str(" ".join(f"{r}={human(t)}" for r, t in tokens.items()) + " tok",
                                     refresh=False)

    def advance(self, n: int = 1) -> None:
        self._show_tokens()
        self.bar.update(n)

    @property
    def done(self) -> int:
        return int(self.bar.n)

    def close(self) -> None:
        self._show_tokens()
        self.bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
