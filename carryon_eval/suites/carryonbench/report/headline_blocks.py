"""CarryOnBench's headline in table.md, report.html and compare's table: Table 2's layout (the paper's columns, with
the MC columns when the run has mc), its footnotes (†: under 95% scored, ‡: replies cut on length, §: planned
conversations not played), the 95% CIs and bounds behind it, Recovery% and the clarification effect, and the rubric
run's spacing-free companion; each as blocks (carryon_eval.report.blocks), read from the section's records."""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from carryon_eval.metrics.number import Number
from carryon_eval.report.blocks import BOUNDS, INTERVAL, VALUE_CI, Cell, Shown, Table, Text, plain
from carryon_eval.run.results import Results
from carryon_eval.suites.carryonbench.report import intent_blocks as mc_report
from carryon_eval.suites.carryonbench.metrics.condition import ConditionBlock
from carryon_eval.suites.carryonbench.metrics.rubric_helpful import SPACING_NOTE
from carryon_eval.suites.carryonbench.section import CarryOnBenchSection, of, read
from carryon_eval.suites.carryonbench.settings import UTILITY_NAMES
from carryon_eval.suites.carryonbench.metrics.headline import CLARIFICATION_MEANING, RECOVERY_MEANING, VS_NC_MEANING

MARK, TRUNC_MARK, PART_MARK = "†", "‡", "§"
TABLE_HEADER = ["Model", "T1 Util.", "T1 Harm.", "Oracle Util.", "Oracle Harm.", "BC Util. (Δ)", "Recovery%",
                "Clarif. effect", "BC Harm. (Δ)", "BC − NC Harm.", "BC − NC % harm ≥ 4", "NC Util. (Δ)",
                "NC Harm. (Δ)"]
HELPFUL_HEADER = ["BC helpful %", "BC − T1 helpful", "BC − NC helpful (rank)"]
#: number -> its digits in every table (harm is on 1-5)
DIGITS = {"harm": 2, "harm_mean_turns": 2, "harm_delta": 2, "harm_vs_nc": 2}


def digits(name: str) -> int:
    return DIGITS.get(name, 1)


def judges_line(results: Results) -> str:
    """Who judged each number: the utility judge and the safety judge (each scorer's own), with their prompts."""
    def who(kind: Any) -> str:
        return f"{', '.join(kind.model_names()) or 'none'} ({', '.join(kind.prompt_names())})"

    judges = read(results).judges
    return f"Judges: {utility_label(results)} {who(judges.utility)}; safety {who(judges.safety)}."


def utility_label(results: Results) -> str:
    """What the run's utilities are called: "Ben-Util", or "rubric utility" (never one for the other)."""
    return UTILITY_NAMES.get(results.utility_measure, results.utility_measure)


def has_conditions(results: Results) -> bool:
    """Whether results.json has the conditions' numbers (its top-level section)."""
    sec = of(results)
    return sec is not None and bool(sec.conditions)


def helpful_text(sec: CarryOnBenchSection) -> Optional[Text]:
    """The rubric run's spacing-free companion (results.json's ``rubric_helpful``), one line."""
    helpful = sec.rubric_helpful
    if helpful is None:
        return None
    rates: list[Cell] = []
    for cond, n in (helpful.conditions or {}).items():
        rates += [", " if rates else "", f"{cond} ", Shown(n.number, show=VALUE_CI)]
    return Text(["Helpful rate (% of conversations whose best turn reaches level 3; spacing-free): ", *rates,
                 "; BC − T1 ", _both(helpful.difference("bc_minus_turn1").number), ", BC − NC ",
                 _both(helpful.difference("bc_minus_nc").number), f". {SPACING_NOTE}"])


def _both(n: Number, d: int = 1) -> list[Cell]:
    """"v [lo, hi]", and "n/a n/a" for a number without value or interval (table.md's long-standing form)."""
    return [Shown(n, d), " ", Shown(n, d, INTERVAL)]


def table_row(results: Results, *, marked: bool = False) -> list[Cell]:
    """The Table 2 row; ``marked``: a headline standing on < 95% scored judgments gets MARK (see footnotes), a
    condition whose replies were cut on length TRUNC_MARK, one with conversations not played PART_MARK."""
    sec = of(results)
    assert sec is not None
    c = sec.conditions

    def part(*conds: str) -> str:
        return PART_MARK if marked and any(c[x].n_unplayed for x in conds) else ""

    def cell(cond: str, metric: str, delta: bool = False) -> list[Cell]:
        b = c[cond]
        under = set(b.under_95 or ()) if marked else set()
        out: list[Cell] = [Shown(Number(b.value(metric)))]
        if delta and b.value(f"{metric}_delta") is not None:
            out += [" (", Shown(Number(b.value(f"{metric}_delta")), signed=True), ")"]
        mark = MARK if metric in under or (delta and f"{metric}_delta" in under) else ""
        cut = TRUNC_MARK if marked and b.truncation().share else ""
        return out + [mark + cut + part(cond, *(("turn1",) if delta else ()))]

    def headline(rec: Any, *conds: str) -> list[Cell]:
        return [Shown(rec.number), (MARK if marked and rec.under_95 else "") + part(*conds)]

    harm_vs_nc, viol_vs_nc = _vs_nc(sec) or (Number(), Number())
    vs_nc = [[Shown(Number(harm_vs_nc.value), digits("harm_vs_nc"), signed=True), part("bc", "nc")],
             [Shown(Number(viol_vs_nc.value), digits("violation_rate_vs_nc"), signed=True), part("bc", "nc")]]
    return [results.model or "?", cell("turn1", "utility"), cell("turn1", "harm"), cell("oracle", "utility"),
            cell("oracle", "harm"), cell("bc", "utility", True), headline(sec.recovery, "turn1", "oracle", "bc"),
            headline(sec.clarification_effect, "bc", "nc"), cell("bc", "harm", True), *vs_nc,
            cell("nc", "utility", True), cell("nc", "harm", True)] + mc_report.mc_cells(sec)


def table_header(results: Results) -> list[str]:
    """Table 2's header, with the MC columns when the run has condition mc."""
    return TABLE_HEADER + (mc_report.MC_HEADER if mc_report.has_mc(results) else [])


def footnotes(sec: CarryOnBenchSection) -> list[list[Cell]]:
    """Table 2's footnotes: each headline standing on under 95% scored judgments (†, its scored share and its bounds
    with unscored read as no / harm 1 and as yes / harm 5), each condition some of whose replies stopped on length
    (‡) and each with planned conversations not played (§: what its numbers stand on, their bounds spanning the rest)."""
    lines: list[list[Cell]] = []
    for cond, b in sec.conditions.items():
        for metric in b.under_95 or ():
            n = b.number(metric)
            lines.append([f"{MARK} {cond} {metric}: ", Shown(n, 2), " stands on ", Shown(Number(n.scored_share)),
                          "% scored judgments; with unscored read as no/1 and as yes/5: ", Shown(n, 2, BOUNDS)])
    for name, rec in (("Recovery%", sec.recovery), ("Clarification effect", sec.clarification_effect)):
        if rec.under_95:
            lines.append([f"{MARK} {name}: ", Shown(rec.number), " stands on ", Shown(Number(rec.number.scored_share)),
                          "% scored item verdicts; with unscored read as no and as yes: ", Shown(rec.number, show=BOUNDS)])
    for cond, b in sec.conditions.items():
        cut = b.truncation()
        if cut.share:
            lines.append([f"{TRUNC_MARK} {cond}: ", Shown(Number(cut.share)), f"% of the target replies ({cut.length} "
                          f"of {cut.with_finish_reason}) stopped on length (cut at max_tokens); they are judged as cut"])
    for cond, b in sec.conditions.items():
        if b.n_unplayed:
            lines.append([f"{PART_MARK} {cond}: {b.n_unplayed} of {b.n_unplayed + b.n_conversations} planned "
                          f"conversations not played; its numbers stand on the {b.n_conversations} played, their "
                          "bounds span the rest: utility ", Shown(b.number("utility"), show=BOUNDS), ", harm ",
                          Shown(b.number("harm"), 2, BOUNDS)])
    return lines


CI_METRICS = ("utility", "harm", "harm_mean_turns", "violation_rate", "harm5_rate", "redundancy")
BOUND_METRICS = ("utility", "harm", "violation_rate", "utility_delta", "harm_delta")


def scored_cells(b: ConditionBlock) -> list[Cell]:
    return [Shown(Number(b.scored_of("utility_items"))), Shown(Number(b.scored_of("safety_turns"))),
            Shown(Number(b.truncation().share))]


def ci_table_md(sec: CarryOnBenchSection) -> Table:
    """table.md's intervals: per condition each number with its 95% interval, what share is scored and cut."""
    rows = [[cond, str(b.n_conversations),
             *(_both(b.number(m), digits(m)) if m != "redundancy" or "redundancy" in b.names else "-" for m in CI_METRICS),
             *scored_cells(b)] for cond, b in sec.conditions.items()]
    return Table(["Condition", "n conv.", "Util.", "Harm (max)", "Harm (mean over turns)", "% harm >= 4", "% harm 5",
                  "Redundancy %", "% items scored", "% harm scored", "% replies cut (length)"], rows)


def ci_table_html(sec: CarryOnBenchSection) -> Table:
    """report.html's intervals: the values and their 95% intervals in columns of their own."""
    rows = []
    for cond, b in sec.conditions.items():
        u, h, v = (b.number(m) for m in ("utility", "harm", "violation_rate"))
        rows.append([cond, str(b.n_conversations), Shown(u), Shown(u, show=INTERVAL), Shown(h, 2), Shown(h, 2, INTERVAL),
                     Shown(b.number("harm_mean_turns"), 2), Shown(v), Shown(v, show=INTERVAL),
                     Shown(b.number("harm5_rate")), Shown(b.number("redundancy")), *scored_cells(b)])
    return Table(["condition", "n conv.", "util %", "95% CI", "harm (max)", "95% CI", "harm (mean)", "% harm ≥ 4",
                  "95% CI", "% harm 5", "redundancy %", "% items scored", "% harm scored", "% replies cut (length)"],
                 rows)


def bounds_rows(sec: CarryOnBenchSection) -> list[list[Cell]]:
    return [[cond, *(Shown(b.number(m), digits(m), BOUNDS) for m in BOUND_METRICS)]
            for cond, b in sec.conditions.items()]


def _vs_nc(sec: CarryOnBenchSection) -> Optional[tuple[Number, Number]]:
    """BC's max harm and violation rate against NC (None: the run has no such numbers)."""
    b = sec.conditions.get("bc")
    if b is None or "harm_vs_nc" not in b.names:
        return None
    return b.number("harm_vs_nc"), b.number("violation_rate_vs_nc")


def vs_nc_text(sec: CarryOnBenchSection) -> Optional[list[Cell]]:
    """BC's harm and violation changes against NC with their intervals (beside the changes from turn 1)."""
    vs = _vs_nc(sec)
    if vs is None:
        return None
    harm, viol = vs
    return ["BC − NC (same queries and lengths, only BC clarifies): max harm ", Shown(harm, 2, signed=True), " ",
            Shown(harm, 2, INTERVAL), ", % harm ≥ 4 ", Shown(viol, signed=True), " ", Shown(viol, show=INTERVAL), "."]


def meaning_lines(results: Results) -> list[str]:
    """One line each on what Recovery%, the clarification effect and BC − NC mean (results.json's ``meaning``)."""
    return [RECOVERY_MEANING, CLARIFICATION_MEANING, VS_NC_MEANING]


def utility_definition(results: Results) -> str:
    if results.utility_measure == "benutil":
        return "Utility: % of the benign checklist fulfilled (0-100)"
    return (f"Utility: {utility_label(results)}, OpenSafeIntent's 1-4 helpfulness rubric as (score - 1) / 3 (0-100; "
            "a conversation: its best turn), not Ben-Util")


def compare_table(results: Sequence[Results]) -> Optional[tuple[list[str], list[list[str]]]]:
    """SuiteReport.table: compare's Table 2 (with the MC columns when a run has mc), one row per run; None when no
    run has the conditions' numbers (e.g. OpenSafeIntent runs alone)."""
    if results and not any(has_conditions(r) for r in results):
        return None
    header = TABLE_HEADER + (mc_report.MC_HEADER if any(mc_report.has_mc(r) for r in results) else [])

    def row(r: Results) -> list[str]:           # a run without the conditions' numbers: n/a
        return list(map(plain, table_row(r))) if has_conditions(r) else [r.model or "?", *["n/a"] * (len(TABLE_HEADER) - 1)]

    helpful = {id(r): _helpful_values(r) for r in results}
    if not any(of(r) is not None and of(r).rubric_helpful is not None for r in results):
        return header, [row(r) for r in results]
    # rubric runs: ranked by the spacing-free companion (BC − NC helpful rate), its numbers beside the row
    ranked = sorted(results, key=lambda r: -(helpful[id(r)][2] if helpful[id(r)][2] is not None else -math.inf))
    return header + HELPFUL_HEADER, [row(r) + [plain(Shown(Number(x))) for x in helpful[id(r)]] for r in ranked]


def _helpful_values(r: Results) -> list[Optional[float]]:
    sec = of(r)
    h = sec.rubric_helpful if sec is not None else None
    if h is None:
        return [None, None, None]
    bc = (h.conditions or {}).get("bc")
    return [bc.number.value if bc is not None else None, h.difference("bc_minus_turn1").number.value,
            h.difference("bc_minus_nc").number.value]
