"""The mc condition in table.md and report.html: its Table 2 columns and the "recovery or gullibility" section
(intent sensitivity, exploitation, the move effects under MC beside BC, the conversations fidelity left out).

Everything here renders results.json's ``conditions.mc``, ``intent`` and ``move_effects.by_condition``
(carryon_eval.suites.carryonbench.intent); a run without mc renders nothing, so its outputs are what they always were.
"""
from __future__ import annotations

import html
from typing import Any, Optional, Sequence

from carryon_eval.suites.carryonbench.section import extra
from carryon_eval.report.tables import html_table, markdown_table
from carryon_eval.suites.carryonbench.conditions import MC_CONDITION

SECTION = "intent"
MC_HEADER = ["MC Util. (Δ)", "MC Harm. (Δ)", "Intent sens. (util)", "Exploitation (MC − BC)"]
TITLE = "Recovery or gullibility: the same moves with a malicious intent (MC)"


def _f(x: Optional[float], digits: int = 1) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _ci(ci: Optional[Sequence[float]], digits: int = 1) -> str:
    return "n/a" if not ci else f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def has_mc(results: Any) -> bool:
    return MC_CONDITION in (results.conditions or {})


def intent_of(results: Any) -> Optional[dict[str, Any]]:
    return extra(results, SECTION)


def mc_cells(results: Any) -> list[str]:
    """The Table 2 row's MC columns (empty for a run without mc)."""
    if not has_mc(results):
        return []
    mc, intent = results.conditions[MC_CONDITION], intent_of(results) or {}

    def delta(metric: str, digits: int) -> str:
        d = mc.get(f"{metric}_delta")
        return _f(mc.get(metric), digits) + ("" if d is None else f" ({d:+.{digits}f})")
    sens = ((intent.get("sensitivity") or {}).get("utility") or {}).get("value")
    exploit = (intent.get("exploitation") or {}).get("value")
    return [delta("utility", 1), delta("harm", 2), _f(sens), _f(exploit)]


def contrast_rows(intent: dict[str, Any]) -> list[list[str]]:
    rows = []
    for label, block, digits in (("Intent sensitivity, utility (BC − MC)", intent["sensitivity"]["utility"], 1),
                                 ("Exploitation, MC − BC twin (points; = MC − BC % harm ≥ 4)", intent["exploitation"], 1),
                                 ("Exploitation rate % (MC max harm ≥ 4, turn 1 < 4; raw)",
                                  intent.get("exploitation_rate"), 1),
                                 ("Exploitation rate % of the BC twins", intent.get("exploitation_bc_rate"), 1)):
        if block is None:          # a results.json written before the raw rates were named apart
            continue
        rows.append([label, _f(block["value"], digits), _ci(block["ci95"], digits), _ci(block["bounds"], digits),
                     f"{block['n']} of {block['n_planned']}", block["reason"] or ""])
    return rows


CONTRAST_HEADER = ["contrast", "value", "95% CI", "bounds", "decided", "null because"]


def move_rows(results: Any) -> list[list[str]]:
    by = (results.move_effects or {}).get("by_condition") or {}
    bc, mc = by.get("bc") or {}, by.get(MC_CONDITION) or {}
    return [[m, _f((bc.get(m) or {}).get("utility_dev")), _f((mc.get(m) or {}).get("utility_dev")),
             _f((bc.get(m) or {}).get("harm_dev"), 2), _f((mc.get(m) or {}).get("harm_dev"), 2),
             str((bc.get(m) or {}).get("n_turns", 0)), str((mc.get(m) or {}).get("n_turns", 0))]
            for m in dict.fromkeys([*bc, *mc])]


MOVE_HEADER = ["move", "BC Δ util", "MC Δ util", "BC Δ harm", "MC Δ harm", "BC turns", "MC turns"]


def excluded_line(intent: dict[str, Any]) -> str:
    left = intent["excluded"]["conversations"]
    return (f"{len(left)} mc conversation(s) left out ({intent['excluded']['reason']}): {', '.join(left)}"
            if left else "No mc conversation was left out by the fidelity check"
                         + ("" if intent.get("fidelity") else " (it was not run: `--fidelity` or `carryon-eval fidelity`)"))


def intent_markdown(results: Any) -> str:
    intent = intent_of(results)
    if not intent:
        return ""
    out = [f"\n## {TITLE}\n",
           f"{intent['n_mc_conversations']} MC conversations, {intent['n_pairs']} paired with the BC conversation of "
           f"the same query and flow. {intent['reading'][0].upper() + intent['reading'][1:]}.\n",
           markdown_table(CONTRAST_HEADER, contrast_rows(intent)),
           f"\n{excluded_line(intent)}.\n"]
    rows = move_rows(results)
    if rows:
        out += ["\nMove effects under BC and MC (deviation from the model's mean over its bc and nc turns):\n",
                markdown_table(MOVE_HEADER, rows)]
    return "\n".join(out) + "\n"


def intent_html(results: Any) -> str:
    intent = intent_of(results)
    if not intent:
        return ""
    e = html.escape
    parts = [f"<h2>{e(TITLE)}</h2>",
             f'<p>{intent["n_mc_conversations"]} MC conversations, {intent["n_pairs"]} paired with the BC conversation '
             f'of the same query and flow. {e(intent["reading"][0].upper() + intent["reading"][1:])}.</p>',
             html_table(CONTRAST_HEADER, contrast_rows(intent)),
             f'<p class="meta">{e(excluded_line(intent))}.</p>']
    rows = move_rows(results)
    if rows:
        parts += ["<h3>Move effects under BC and MC</h3>", html_table(MOVE_HEADER, rows)]
    return "".join(parts)


def notes(results: Any) -> list[str]:
    intent = intent_of(results)
    if not intent:
        return []
    out = [f"Condition mc: {intent['n_mc_conversations']} conversations, {intent['n_pairs']} paired with BC; "
           f"{intent['reading']}."]
    if intent["excluded"]["conversations"]:
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
    from carryon_eval.suites.carryonbench.intent import (EXPLOITATION_FORMULA, EXPLOITATION_RATE_FORMULA, ONE_NUMBER,
                                                         SENSITIVITY_FORMULA)

    return {"intent.sensitivity_utility": SENSITIVITY_FORMULA["utility"],
            "intent.exploitation": f"{EXPLOITATION_FORMULA}; {ONE_NUMBER}",
            "intent.exploitation_rate": EXPLOITATION_RATE_FORMULA}[key]


def _register() -> None:
    from carryon_eval.report.leaderboard import register_columns
    from carryon_eval.suites.carryonbench.unscored import UNITS

    register_columns("mc", leaderboard_columns, UNITS)


_register()
