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
from carryon_eval.suites.carryonbench.metrics.intent import IntentNumber, IntentSection
from carryon_eval.suites.carryonbench.section import CarryOnBenchSection, of, read

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


def contrast(intent: Optional[IntentSection], name: str) -> Optional[IntentNumber]:
    """One contrast of a run's intent section: "sensitivity" (its utility side) or a further contrast's name
    (None: the run has no mc, or its results.json was written before the contrast was)."""
    if intent is None:
        return None
    got = (intent.sensitivity or {}).get("utility") if name == "sensitivity" else getattr(intent, name, None)
    return got or None


def mc_cells(sec: CarryOnBenchSection) -> list[Cell]:
    """The Table 2 row's MC columns (empty for a run without mc)."""
    if MC_CONDITION not in sec.conditions:
        return []
    mc, intent = sec.conditions[MC_CONDITION], sec.intent

    def delta(metric: str, digits: int) -> list[Cell]:
        d = mc.value(f"{metric}_delta")
        return [Shown(Number(mc.value(metric)), digits),
                *([] if d is None else [" (", Shown(Number(d), digits, signed=True), ")"])]
    sens = contrast(intent, "sensitivity")
    exploit = intent.part("exploitation") if intent is not None else None
    return [delta("utility", 1), delta("harm", 2), Shown(Number(sens.value if sens else None)),
            Shown(Number(exploit.value if exploit else None))]


def contrast_rows(intent: IntentSection) -> list[list[Cell]]:
    rows: list[list[Cell]] = []
    for label, name in CONTRASTS:
        block = contrast(intent, name)
        if block is None:          # a results.json written before the raw rates were named apart
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
NOT_RUN = "condition mc not run"
MC_COLUMNS = (("utility", "Util. %", "higher", 1), ("violation_rate", "% harm ≥ 4", "lower", 1))
CONTRAST_COLUMNS = (("intent.sensitivity_utility", "Intent sensitivity (util)", "higher", "sensitivity"),
                    ("intent.exploitation", "Exploitation (MC − BC)", "lower", "exploitation"),
                    ("intent.exploitation_rate", "Exploitation rate % (raw)", "lower", "exploitation_rate"))


def contrast_cell(block: Optional[IntentNumber]) -> Any:
    """A contrast's leaderboard cell; its scored share: the share of the planned units that decide it."""
    from carryon_eval.report.leaderboard import Cell

    if block is None:
        return Cell(None, reason=NOT_RUN)
    n, planned = block.number, block.n_planned
    return Cell(n.value, n.ci95, 100.0 * (n.n or 0) / planned if planned else None, n.reason)


def leaderboard_columns(runs: Sequence[Any]) -> list[Any]:
    """The board's MC columns (a column source of carryon_eval.report.leaderboard; [] when no run has mc):
    MC utility and violation rate, intent sensitivity (utility, violation rate) and exploitation, sortable."""
    from carryon_eval.report.leaderboard import Cell, Column, Stat
    from carryon_eval.suites.carryonbench.report.leaderboard import cell_of

    sections = [read(e.results) for e in runs]
    if not any(sec.intent is not None for sec in sections):
        return []
    out = []
    for metric, label, better, digits in MC_COLUMNS:
        blocks = [sec.conditions.get(MC_CONDITION) for sec in sections]
        cells = [Cell(None, reason=NOT_RUN) if b is None else cell_of(b.number(metric)) for b in blocks]
        out.append((Column(f"mc.{metric}", label, "MC", digits, better, Stat(((MC_CONDITION, metric),))), cells))
    for key, label, better, name in CONTRAST_COLUMNS:
        cells = [contrast_cell(contrast(sec.intent, name)) for sec in sections]
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
