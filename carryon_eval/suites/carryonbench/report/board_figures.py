"""CarryOnBench's figures of the leaderboard (its SuitePlots' ``board``), from the board's runs and their
comparability groups: the recovery cost, every model's redundancy (paper Figure 2) and, where a run has condition
mc, recovery against exploitation. Drawn with the helpers of carryon_eval.report.plots.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from carryon_eval.metrics.number import Number
from carryon_eval.suites.carryonbench.section import read
from carryon_eval.suites.carryonbench.settings import utility_name
from carryon_eval.report.plots import figure, label_points, legend, png, require, spread_labels
from carryon_eval.suite import BoardView
from carryon_eval.suites.carryonbench.report.figures import CONDITION_COLORS, CONDITION_LABELS

BOARD_CAPTIONS = {
    "recovery_cost": "Recovery cost: BC utility gained over turn 1 vs BC increase of the violation rate "
                     "(% of conversations with harm ≥ 4), 95% intervals (the paper's unsafe recovery)",
    "models_redundancy": "Checklist redundancy per model, BC and NC, 95% intervals (the paper's repetitive "
                         "recovery, Figure 2)",
    "recovery_exploitation": "Recovery or gullibility: each model's Recovery% (BC, benign user) against its "
                             "exploitation (MC minus its BC twin, points of conversations reaching harm ≥ 4 after a "
                             "turn-1 reply below 4: about 0 when the model ignores intent), "
                             "95% intervals; top left: recovers for the benign user without giving in to the "
                             "malicious one",
}


def interval_error(value: Optional[float], ci: Optional[Sequence[float]]) -> list[float]:
    if value is None or not ci:
        return [0.0, 0.0]
    return [max(0.0, value - ci[0]), max(0.0, ci[1] - value)]


def recovery_cost(board: BoardView) -> bytes:
    """Every model's BC utility gain over turn 1 (y) against its BC violation-rate increase (x)."""
    return png(recovery_cost_figure(board))


def _number(e: Any, condition: str, name: str) -> Number:
    """A board run's number of one condition (n/a where the run lacks the condition)."""
    block = read(e.results).conditions.get(condition)
    return block.number(name) if block is not None else Number()


def recovery_cost_figure(board: BoardView) -> Any:
    pts = [(e.label, g, _number(e, "bc", "violation_rate_delta"), _number(e, "bc", "utility_delta"))
           for e, g in zip(board.runs, board.groups)]
    pts = [p for p in pts if p[2].value is not None and p[3].value is not None]
    require(bool(pts), "no model has both a BC utility gain and a BC violation-rate change")
    fig, (ax,) = figure(width=6.5, height=5.0)
    markers = "osD^vP*X"
    for label, g, violation, gain in pts:
        x, y = violation.value, gain.value
        xe, ye = interval_error(x, violation.ci95), interval_error(y, gain.ci95)
        ax.errorbar([x], [y], xerr=[[xe[0]], [xe[1]]], yerr=[[ye[0]], [ye[1]]],
                    fmt=markers[(ord(g) - ord("A")) % len(markers)], color=CONDITION_COLORS["bc"], capsize=2)
    ax.axhline(0, color="#999999", linewidth=0.8)
    ax.axvline(0, color="#999999", linewidth=0.8)
    ax.set_xlabel("BC violation-rate increase over turn 1 (points of % harm ≥ 4)")
    ax.set_ylabel(f"BC {utility_name(board.runs[0].results)} gained over turn 1 (points)")
    label_points(ax, [(violation.value, gain.value, f"{label} ({g})" if len(board.group_info) > 1 else label)
                      for label, g, violation, gain in pts], fontsize=7)
    return fig


def models_redundancy(board: BoardView) -> bytes:
    """Figure 2: per model, BC and NC checklist redundancy with intervals."""
    return png(redundancy_figure(board))


def redundancy_figure(board: BoardView) -> Any:
    """The figure of models_redundancy (to measure its labels)."""
    rows = [(e.label, {c: _number(e, c, "redundancy") for c in ("bc", "nc")}) for e in board.runs]
    require(any(n.value is not None for _, ns in rows for n in ns.values()), "no model fulfilled any item after turn 1")
    fig, (ax,) = figure(width=max(5.0, 0.7 * len(rows) + 2), height=4.0)
    width, labelled = 0.38, set()
    for k, cond in enumerate(("bc", "nc")):
        for i, (_, blocks) in enumerate(rows):
            redundancy = blocks[cond]
            v = redundancy.value
            x = i + (k - 0.5) * width
            if v is None:
                ax.text(x, 1, "n/a", ha="center", fontsize=7, color="#666666")
                continue
            err = interval_error(v, redundancy.ci95)
            ax.bar([x], [v], width, yerr=[[err[0]], [err[1]]], color=CONDITION_COLORS[cond], capsize=2,
                   label=None if cond in labelled else CONDITION_LABELS[cond])
            labelled.add(cond)
    ax.set_xticks(range(len(rows)), [label for label, _ in rows], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("redundancy (% of fulfilled items already fulfilled)")
    ax.set_ylim(0, 105)
    legend(ax)
    return fig


def recovery_exploitation(board: BoardView) -> bytes:
    """Every model with condition mc: Recovery% (x) against exploitation (y), 95% intervals, labels apart."""
    pts = []
    for e, g in zip(board.runs, board.groups):
        section = read(e.results)
        rec = section.recovery.number
        exploit = section.intent.part("exploitation").number if section.intent is not None else Number()
        if rec.value is not None and exploit.value is not None:
            pts.append((f"{e.label} ({g})" if len(board.group_info) > 1 else e.label, rec, exploit))
    require(bool(pts), "no model has both a Recovery% and an exploitation (condition mc)")
    fig, (ax,) = figure(width=6.5, height=5.0)
    for _, rec, exploit in pts:
        x, y = rec.value, exploit.value
        xe, ye = interval_error(x, rec.ci95), interval_error(y, exploit.ci95)
        ax.errorbar([x], [y], xerr=[[xe[0]], [xe[1]]], yerr=[[ye[0]], [ye[1]]], fmt="o",
                    color=CONDITION_COLORS["bc"], capsize=2)
    ax.set_xlabel("Recovery % (benign user: (BC util − T1 util) / oracle util × 100)")
    ax.set_ylabel("Exploitation, MC − BC (points of harm ≥ 4 after turn 1 < 4)")
    ax.set_ylim(min(-5.0, ax.get_ylim()[0]), max(5.0, ax.get_ylim()[1]))
    fig.canvas.draw()
    to_display = ax.transData.transform
    shown = [to_display((rec.value, exploit.value)) for _, rec, exploit in pts]
    points = 72.0 / fig.dpi                                           # display pixels -> typographic points
    heights = spread_labels([p[1] * points for p in shown], min_gap=9.0)  # a 7 pt line and a little air
    for (label, rec, exploit), point, height in zip(pts, shown, heights):
        ax.annotate(label, (rec.value, exploit.value), xytext=(6, height - point[1] * points),
                    textcoords="offset points", fontsize=7, va="center",
                    arrowprops={"arrowstyle": "-", "color": "#999999", "linewidth": 0.5})
    return png(fig)


BOARD_PLOTS: dict[str, Callable[[BoardView], bytes]] = {
    "recovery_cost": recovery_cost, "models_redundancy": models_redundancy,
    "recovery_exploitation": recovery_exploitation}
BOARD_WHEN: dict[str, Callable[[BoardView], bool]] = {      # drawn only when a run has condition mc
    "recovery_exploitation": lambda board: any(read(e.results).intent is not None for e in board.runs)}
