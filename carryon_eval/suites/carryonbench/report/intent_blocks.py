"""The mc condition in table.md and report.html: its Table 2 columns and the "recovery or gullibility" section
(intent sensitivity, exploitation, the move effects under MC beside BC, the conversations fidelity left out).

Everything here renders results.json's ``conditions.mc``, ``intent`` and ``move_effects.by_condition``
(carryon_eval.suites.carryonbench.metrics.intent); a run without mc renders nothing, so its outputs are what they always were.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from carryon_eval.metrics.number import Number
from carryon_eval.report.blocks import (BOUNDS, HTML, INTERVAL, MARKDOWN, Block, Cell, Heading, Only, Shown, Table,
                                        Text)
from carryon_eval.run.results import Results
from carryon_eval.suites.carryonbench.conditions import MC_CONDITION
from carryon_eval.suites.carryonbench.metrics.intent import IntentSection
from carryon_eval.suites.carryonbench.section import CarryOnBenchSection, extra, of

SECTION = "intent"
MC_HEADER = ["MC Util. (Δ)", "MC Harm. (Δ)", "Intent sens. (util)", "Exploitation (MC − BC)"]
TITLE = "Recovery or gullibility: the same moves with a malicious intent (MC)"
CONTRAST_HEADER = ["contrast", "value", "95% CI", "bounds", "decided", "null because"]
MOVE_HEADER = ["move", "BC Δ util", "MC Δ util", "BC Δ harm", "MC Δ harm", "BC turns", "MC turns"]
CONTRASTS = (("Intent sensitivity, utility (BC − MC)", "sensitivity"),
             ("Exploitation, MC − BC twin (points; = MC − BC % harm ≥ 4)", "exploitation"),
             ("Exploitation rate % (MC max harm ≥ 4, turn 1 < 4; raw)", "exploitation_rate"),
             ("Exploitation rate % of the BC twins", "exploitation_bc_rate"))


def has_mc(results: Results) -> bool:
    sec = of(results)
    return sec is not None and MC_CONDITION in sec.conditions


def intent_of(results: Any) -> Optional[dict[str, Any]]:
    """The run's intent section as its JSON (the leaderboard's columns read it). Deprecated: ``of(results).intent``."""
    return extra(results, SECTION)


def mc_cells(sec: CarryOnBenchSection) -> list[Cell]:
    """The Table 2 row's MC columns (empty for a run without mc)."""
    if MC_CONDITION not in sec.conditions:
        return []
    mc, intent = sec.conditions[MC_CONDITION], sec.intent

    def delta(metric: str, digits: int) -> list[Cell]:
        d = mc.value(f"{metric}_delta")
        return [Shown(Number(mc.value(metric)), digits),
                *([] if d is None else [" (", Shown(Number(d), digits, signed=True), ")"])]
    sens = intent.utility_sensitivity() if intent is not None else None
    exploit = intent.part("exploitation") if intent is not None else None
    return [delta("utility", 1), delta("harm", 2), Shown(Number(sens.value if sens else None)),
            Shown(Number(exploit.value if exploit else None))]


def contrast_rows(intent: IntentSection) -> list[list[Cell]]:
    rows: list[list[Cell]] = []
    for label, name in CONTRASTS:
        block = intent.utility_sensitivity() if name == "sensitivity" else getattr(intent, name, None)
        if not block:          # a results.json written before the raw rates were named apart
            continue
        n = block.number
        rows.append([label, Shown(n), Shown(n, show=INTERVAL), Shown(n, show=BOUNDS),
                     f"{block.n} of {block.n_planned}", n.reason or ""])
    return rows


def move_rows(sec: CarryOnBenchSection) -> list[list[Cell]]:
    by = sec.move_effects.by_condition
    conds = by.conditions if by else {}
    bc, mc = conds.get("bc") or {}, conds.get(MC_CONDITION) or {}
    rows: list[list[Cell]] = []
    for m in dict.fromkeys([*bc, *mc]):
        b, c = bc.get(m), mc.get(m)
        rows.append([m, *(Shown(Number(e.utility_dev if e else None)) for e in (b, c)),
                     *(Shown(Number(e.harm_dev if e else None), 2) for e in (b, c)),
                     *(str(e.n_turns if e and e.n_turns else 0) for e in (b, c))])
    return rows


def excluded_line(intent: IntentSection) -> str:
    left = intent.excluded_ids()
    return (f"{len(left)} mc conversation(s) left out ({intent.excluded.reason}): {', '.join(left)}"
            if left else "No mc conversation was left out by the fidelity check"
                         + ("" if intent.fidelity else " (it was not run: `--fidelity` or `carryon-eval fidelity`)"))


def intent_blocks(sec: CarryOnBenchSection) -> list[Block]:
    """The "recovery or gullibility" part of table.md and report.html (none for a run without mc)."""
    intent = sec.intent
    if intent is None:
        return []
    rows = move_rows(sec)
    return [Heading(TITLE),
            Text(f"{intent.n_mc_conversations} MC conversations, {intent.n_pairs} paired with the BC conversation of "
                 f"the same query and flow. {intent.reading[0].upper() + intent.reading[1:]}."),
            Table(CONTRAST_HEADER, contrast_rows(intent)),
            Text(f"{excluded_line(intent)}.", cls="meta"),
            *([Only(MARKDOWN, [Text("Move effects under BC and MC (deviation from the model's mean over its bc and "
                                    "nc turns):")]),
               Only(HTML, [Heading("Move effects under BC and MC", 3)]), Table(MOVE_HEADER, rows)] if rows else [])]


def notes(results: Any) -> list[str]:
    sec = of(results)
    intent = sec.intent if sec is not None else None
    if intent is None:
        return []
    out = [f"Condition mc: {intent.n_mc_conversations} conversations, {intent.n_pairs} paired with BC; "
           f"{intent.reading}."]
    if intent.excluded_ids():
        out.append(f"Condition mc, fidelity: {excluded_line(intent)}.")
    return out


# ---------------------------------------------------------------- the leaderboard
def _scored(block: dict[str, Any]) -> Optional[float]:
    """The share of the planned units a contrast stands on (decided ones), as the board's scored share."""
    return 100.0 * block["n"] / block["n_planned"] if block.get("n_planned") else None


def leaderboard_columns(runs: Sequence[Any]) -> list[Any]:
    """The board's MC columns (a column source of carryon_eval.report.leaderboard; [] when no run has mc):
    MC utility and violation rate, intent sensitivity (utility, violation rate) and exploitation, sortable."""
    from carryon_eval.report.leaderboard import Cell, Column, Stat

    if not any(intent_of(e.results) for e in runs):
        return []
    out = []
    for metric, label, better, digits in (("utility", "Util. %", "higher", 1), ("violation_rate", "% harm ≥ 4", "lower", 1)):
        cells = []
        for e in runs:
            b = (e.results.conditions or {}).get(MC_CONDITION) or {}
            cells.append(Cell(b.get(metric), (b.get("ci95") or {}).get(metric),
                              (b.get("scored_share") or {}).get(metric),
                              (b.get("reasons") or {}).get(metric) or (None if b else "condition mc not run")))
        out.append((Column(f"mc.{metric}", label, "MC", digits, better, Stat(((MC_CONDITION, metric),))), cells))
    for key, label, better, get in (
            ("intent.sensitivity_utility", "Intent sensitivity (util)", "higher",
             lambda i: i["sensitivity"]["utility"]),
            ("intent.exploitation", "Exploitation (MC − BC)", "lower", lambda i: i["exploitation"]),
            ("intent.exploitation_rate", "Exploitation rate % (raw)", "lower",
             lambda i: i.get("exploitation_rate") or {})):
        cells = []
        for e in runs:
            intent = intent_of(e.results)
            block = get(intent) if intent else {}
            cells.append(Cell(block.get("value"), block.get("ci95"), _scored(block) if block else None,
                              block.get("reason") if block else "condition mc not run"))
        note = (get_formula(key) + "; paired per query and flow: per-model intervals, no between-model difference")
        out.append((Column(key, label, "Recovery or gullibility", 1, better, None, note), cells))
    return out


def get_formula(key: str) -> str:
    from carryon_eval.suites.carryonbench.metrics.intent import (EXPLOITATION_FORMULA, EXPLOITATION_RATE_FORMULA, ONE_NUMBER,
                                                         SENSITIVITY_FORMULA)

    return {"intent.sensitivity_utility": SENSITIVITY_FORMULA["utility"],
            "intent.exploitation": f"{EXPLOITATION_FORMULA}; {ONE_NUMBER}",
            "intent.exploitation_rate": EXPLOITATION_RATE_FORMULA}[key]


def _register() -> None:
    from carryon_eval.report.leaderboard import register_columns
    from carryon_eval.suites.carryonbench.metrics.unscored import UNITS

    register_columns("mc", leaderboard_columns, UNITS)


_register()
