"""What a wing adds to the cost table of a run (``--dry-run``): a judge of its own asked in other ways than the
run's settings ask it, side by side for the same plan, as JSON keys of ``--dry-run --json`` and lines of the
printed table. A wing registers a ``CostNote`` maker (``register_cost_note``); the cost table (carryon_eval.app.cost)
gives it a ``CostView`` of the run's judge plan and asks every one registered."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol

from carryon_eval.run.records import JudgeSettings


class CostRow(Protocol):
    """The calls still to make and their estimated tokens (the cost table's row)."""
    calls: int
    prompt_tokens: int
    completion_tokens: int

    def to_json(self) -> dict[str, int]: ...


class CostView(Protocol):
    """The run's judge plan as the cost table counts it: its settings, the suites' scoring plan, the calls it
    counted for a scorer of the run, and the calls of a scorer under other settings and another plan."""
    settings: JudgeSettings
    scoring: Any                    # the suites' carryon_eval.suite.ScoringPlan, as planned for the run

    def counted(self, scorer: str) -> Optional[CostRow]: ...

    def estimate(self, scorer: str, plan: Any, settings: JudgeSettings) -> CostRow: ...


@dataclass(frozen=True)
class CostNote:
    json: dict[str, Any] = field(default_factory=dict)    # keys of --dry-run --json's object (after up_to)
    lines: tuple[str, ...] = ()                           # lines of the printed table (after the up_to lines)


COST_NOTES: list[Callable[[CostView], CostNote]] = []


def register_cost_note(note: Callable[[CostView], CostNote]) -> Callable[[CostView], CostNote]:
    COST_NOTES.append(note)
    return note


def cost_notes(view: CostView) -> list[CostNote]:
    return [note(view) for note in COST_NOTES]
