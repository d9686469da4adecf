"""CarryOnBench's figures of one run, from its results (run.results.Results): the paper's Figures 1B, 3, 16, 20, 22
and 23. Drawn with the helpers of carryon_eval.report.plots (matplotlib optional; a plot whose data is all null
is skipped with the reason); the figures of several runs are in compare_figures.py beside this module.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from carryon_eval.suites.carryonbench.settings import utility_name
from carryon_eval.report.plots import (LABEL_BOX, PCT_LIMITS, draw_all, error_bar, figure, integer_ticks, label_points,
                                       legend, legend_handles, png, require)
from carryon_eval.run.results import Results
from carryon_eval.suites.carryonbench.metrics.breakdown_rows import BinCell, DomainRow
from carryon_eval.suites.carryonbench.metrics.condition import known
from carryon_eval.suites.carryonbench.section import read

CONDITION_LABELS = {"turn1": "Turn 1", "oracle": "Oracle", "bc": "BC", "nc": "NC"}
CONDITION_COLORS = {"turn1": "#7f7f7f", "oracle": "#2ca02c", "bc": "#1f77b4", "nc": "#d62728"}
GROUP_COLORS = {"benign_clarification": "#1f77b4", "challenge": "#d62728", "non_contentful": "#7f7f7f"}
VIOLATION_LINE = 4
BIN_LABELS = {"hard_refusal": "hard refusal\n(T1 util = 0)", "partial": "partial\n(T1 \u2264 50% oracle)",
              "high": "high\n(T1 > 50% oracle)"}
#: a rubric run's bins (breakdowns.RUBRIC_BIN_LABELS): its lowest holds rubric level 1, unhelpful, not refused
RUBRIC_TICKS = {**BIN_LABELS, "hard_refusal": "rubric level 1\n(unhelpful)"}
PLOT_CAPTIONS = {
    "utility_vs_harm": "Conversation utility vs harm per condition (paper Figure 1B)",
    "curves_by_turn": "Utility and harm by model turn, BC vs NC (paper Figure 16)",
    "move_effects": "User move effects, deviation from the model's mean (paper Figure 23)",
    "redundancy_by_turn": "Checklist redundancy by turn (paper Figure 20)",
    "turn1_bins": "Utility moldability and harm by turn-1 bin, BC vs NC (paper Figure 3)",
    "by_domain": "Change from turn 1 per domain, BC vs NC; oracle marked (paper Figure 22)",
    "models_utility_vs_harm": "Every model's utility vs harm, turn 1 to BC (paper Figure 1B)",
    "models_move_effects": "Move effects per model, deviation from each model's mean (paper Figure 24)",
}


# ---------------------------------------------------------------- one run
def utility_vs_harm(results: Results) -> bytes:
    """Figure 1B for one model: conversation utility vs harm per condition, with 95% CIs."""
    points = {cond: (block.number("utility"), block.number("harm")) for cond, block in read(results).conditions.items()}
    points = {cond: (u, h) for cond, (u, h) in points.items() if u.value is not None and h.value is not None}
    require(bool(points), "no condition has both a conversation utility and a harm score")
    fig, (ax,) = figure()
    for cond, (u, h) in points.items():
        ax.errorbar([h.value], [u.value], xerr=error_bar(h.value, h.ci95), yerr=error_bar(u.value, u.ci95), fmt="o",
                    color=CONDITION_COLORS.get(cond), capsize=3, label=CONDITION_LABELS.get(cond, cond))
    ax.axvline(VIOLATION_LINE, linestyle="--", color="black", linewidth=1, label="harm = 4")
    ax.set_xlim(0.8, 5.2)
    ax.set_ylim(*PCT_LIMITS)
    ax.set_xlabel("harm (1-5; conversation max)")
    ax.set_ylabel("Ben-Util (% of checklist)" if results.utility_measure == "benutil"
                  else f"{utility_name(results)} (%)")
    ax.set_title(f"{results.model}: utility vs harm")
    legend(ax, loc="best", fontsize=8)
    return png(fig)


def curves_by_turn(results: Results) -> bytes:
    """Figure 16: turn-level utility, cumulative utility and harm by model turn, BC vs NC."""
    name = utility_name(results)
    panels = (("utility", f"turn-level {name} (%)"), ("cumulative_utility", f"cumulative {name} (%)"),
              ("harm", "turn-level harm (1-5)"))
    by_turn = read(results).by_turn
    require(any(r.number(key).value is not None for rows in by_turn.values() for r in rows for key, _ in panels),
            "no BC or NC turn has a scored utility or harm")
    fig, axes = figure(ncols=3, width=4.2)
    for ax, (key, label) in zip(axes, panels):
        for cond in ("bc", "nc"):
            rows = [(r.turn, r.number(key).value) for r in by_turn.get(cond, [])]
            rows = [(t, v) for t, v in rows if v is not None]
            if rows:
                ax.plot([t for t, _ in rows], [v for _, v in rows], marker="o",
                        color=CONDITION_COLORS[cond], label=CONDITION_LABELS[cond])
        ax.set_xlabel("model turn")
        integer_ticks(ax)
        ax.set_ylabel(label)
        if key == "harm":
            ax.set_ylim(0.8, 5.2)
            ax.axhline(VIOLATION_LINE, linestyle="--", color="black", linewidth=1)
        else:
            ax.set_ylim(*PCT_LIMITS)
        legend(ax, fontsize=8)
    return png(fig)


def move_effects(results: Results) -> bytes:
    """Figure 23: each move's turn utility and harm as deviation from the model's mean."""
    return png(move_effects_figure(results))


def move_effects_figure(results: Results) -> Any:
    moves = {m: row for m, row in read(results).move_effects.moves_of().items()
             if row.number("utility_dev").value is not None and row.number("harm_dev").value is not None}
    require(bool(moves), "no user move has both a utility and a harm deviation (no scored turn after a move)")
    fig, (ax,) = figure(width=5.5)
    for move, row in moves.items():
        ax.scatter([row.utility_dev], [row.harm_dev], color=GROUP_COLORS.get(row.group), s=40)
    for group, color in GROUP_COLORS.items():
        ax.scatter([], [], color=color, label=group.replace("_", " "))
    ax.axhline(0, color="black", linewidth=0.8)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel(f"{utility_name(results)} deviation from model mean (points)")
    ax.set_ylabel("harm deviation from model mean")
    ax.set_title("user move effects")
    legend(ax, fontsize=8)
    label_points(ax, [(row.utility_dev, row.harm_dev, move.replace("_", " ")) for move, row in moves.items()])
    return fig


def redundancy_by_turn(results: Results) -> bytes:
    """Figure 20: % of the items fulfilled at a turn that an earlier turn had already fulfilled."""
    conditions = read(results).conditions
    lines = {c: known(conditions[c].redundancy_by_turn) or [] for c in ("bc", "nc") if c in conditions}
    require(any(lines.values()), "no BC or NC reply after turn 1 fulfilled a checklist item")
    fig, (ax,) = figure()
    for cond, rows in lines.items():
        if rows:
            ax.plot([r.turn for r in rows], [r.redundancy for r in rows], marker="o",
                    color=CONDITION_COLORS[cond], label=CONDITION_LABELS[cond])
    ax.set_ylim(*PCT_LIMITS)
    ax.set_xlabel("model turn")
    integer_ticks(ax)
    ax.set_ylabel("redundancy (%)")
    ax.set_title("checklist redundancy by turn")
    legend(ax, fontsize=8)
    return png(fig)


def _bars(ax: Any, xs: Sequence[float], cells: Sequence[BinCell], key: str, width: float, color: str,
          label: str) -> None:
    """Vertical bars of a cell's number ``key`` with "n=" above each; a null cell gets no bar, only "n/a" at the
    base."""
    for x, cell in zip(xs, cells):
        value, n = cell.number(key).value, known(cell.n, 0)
        if value is None:
            ax.text(x, 0, f"n/a\nn={n}", ha="center", va="bottom", fontsize=7, color="#777777")
            continue
        ax.bar(x, value, width, color=color, label=label)
        label = "_nolegend_"
        ax.annotate(f"n={n}", (x, value), xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                    fontsize=7, bbox=LABEL_BOX)


def _turn1_marks(ax: Any, xs: Sequence[float], cells: Sequence[BinCell], key: str, width: float,
                 label: str) -> None:
    """The same conversations' turn-1 value as a black tick across each bar."""
    pts = [(x, c.number(key).value) for x, c in zip(xs, cells) if c.number(key).value is not None]
    if pts:
        ax.hlines([v for _, v in pts], [x - width / 2 for x, _ in pts], [x + width / 2 for x, _ in pts],
                  color="black", linewidth=2, zorder=3, label=label)


def turn1_bins(results: Results) -> bytes:
    """Figure 3: conversation utility (left) and harm (right) per turn-1 bin, BC vs NC, n per bar."""
    bins = read(results).turn1_bins

    def cell(b: str, cond: str) -> BinCell:
        return bins.bins.get(b, {}).get(cond) or BinCell()
    cells = [cell(b, c) for b in BIN_LABELS for c in ("bc", "nc")]
    unbinned_n = known(bins.unbinned.n, 0) if bins.unbinned else 0
    why = known(bins.unbinned.reason, None) if bins.unbinned else None
    require(any(c.number(k).value is not None for c in cells for k in ("utility", "harm")),
            f"no BC/NC conversation has a turn-1 bin with a scored outcome ({unbinned_n} conversation(s) "
            f"could not be binned: {why or 'no turn-1 or oracle utility'})")
    fig, axes = figure(ncols=2, width=4.8, height=4.2)
    width = 0.38
    panels = (("utility", "turn1_utility", f"conversation {utility_name(results)} (%)", 100),
              ("harm", "turn1_harm", "conversation harm (1-5; max)", 5))
    for ax, (key, t1_key, ylabel, top) in zip(axes, panels):
        for k, cond in enumerate(("bc", "nc")):
            xs = [i + (k - 0.5) * width for i in range(len(BIN_LABELS))]
            row = [cell(b, cond) for b in BIN_LABELS]
            _bars(ax, xs, row, key, width * 0.95, CONDITION_COLORS[cond], CONDITION_LABELS[cond])
            _turn1_marks(ax, xs, row, t1_key, width * 0.95, "turn 1 (same conv.)" if k == 0 else "_nolegend_")
        if key == "harm":
            ax.axhline(VIOLATION_LINE, linestyle="--", color="black", linewidth=1)
        names = {**BIN_LABELS, **{b: RUBRIC_TICKS[b] for b in bins.labels or {}}}
        ax.set_xticks(range(len(BIN_LABELS)), [names[b] for b in BIN_LABELS], fontsize=8)
        ax.set_xlim(-0.6, len(BIN_LABELS) - 0.4)
        ax.set_ylim(0, top * 1.12)
        ax.set_ylabel(ylabel)
        ax.set_xlabel("turn-1 bin")
        legend(ax, loc="upper left", fontsize=7)
    axes[0].set_title("utility moldability")
    axes[1].set_title("harm convergence")
    return png(fig)


@dataclass(frozen=True)
class DomainChange:
    """One domain's BC, NC and oracle change from turn 1 in utility and harm (None where unknown)."""
    domain: str
    n_queries: int
    changes: dict[str, Optional[float]]          # "{condition}_{utility|harm}" -> the change

    def of(self, cond: str, key: str) -> Optional[float]:
        return self.changes.get(f"{cond}_{key}")


def domain_changes(results: Results) -> list[DomainChange]:
    """Per domain: BC/NC utility and harm change from turn 1, and the oracle's (None where unknown)."""
    def change(row: DomainRow, cond: str, key: str) -> Optional[float]:
        a, b = row.cell(cond).number(key).value, row.cell("turn1").number(key).value
        return None if a is None or b is None else a - b

    return [DomainChange(domain, row.n_queries, {f"{cond}_{key}": change(row, cond, key)
                                                 for cond in ("bc", "nc", "oracle") for key in ("utility", "harm")})
            for domain, row in read(results).by_domain.items()]


def _hbars(ax: Any, rows: Sequence[DomainChange], key: str, digits: int) -> None:
    """Horizontal BC/NC bars per domain (top to bottom), each with its value; the oracle as a vertical line
    across each domain."""
    height = 0.38
    for cond, offset in (("bc", height / 2), ("nc", -height / 2)):
        label = CONDITION_LABELS[cond]
        for y, row in enumerate(reversed(rows)):
            value = row.of(cond, key)
            if value is None:
                ax.text(0, y + offset, " n/a", va="center", fontsize=7, color="#777777")
                continue
            ax.barh(y + offset, value, height * 0.95, color=CONDITION_COLORS[cond], label=label)
            ax.annotate(f"{value:+.{digits}f}", (value, y + offset), xytext=(3 if value >= 0 else -3, 0),
                        textcoords="offset points", ha="left" if value >= 0 else "right", va="center", fontsize=7,
                        zorder=4, bbox=LABEL_BOX)
            label = "_nolegend_"
    label = "oracle (its change from turn 1)"
    for y, row in enumerate(reversed(rows)):
        if row.of("oracle", key) is not None:
            ax.vlines(row.of("oracle", key), y - 0.45, y + 0.45, color="black", linewidth=2, label=label)
            label = "_nolegend_"
    ax.axvline(0, color="#555555", linewidth=0.8)


def by_domain(results: Results) -> bytes:
    """Figure 22: per domain, utility (left) and harm (right) change from turn 1 for BC and NC; the
    vertical line marks the single-turn oracle's change from turn 1."""
    rows = domain_changes(results)
    require(any(r.of(c, k) is not None for r in rows for c in ("bc", "nc") for k in ("utility", "harm")),
            "no domain has a BC or NC change from turn 1 (needs scored turn-1 and multi-turn conversations "
            "of the same domain)")
    fig, axes = figure(ncols=2, width=4.6, height=1.2 + 0.75 * len(rows))
    panels = (("utility", 1, f"{utility_name(results)} change from turn 1 (points)"),
              ("harm", 2, "harm change from turn 1 (1-5 scale)"))
    for ax, (key, digits, xlabel) in zip(axes, panels):
        _hbars(ax, rows, key, digits)
        ax.margins(x=0.12)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([textwrap.fill(r.domain, 22) for r in reversed(rows)] if key == "utility" else [],
                           fontsize=8)
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_xlabel(xlabel)
    axes[0].set_title("utility recovery")
    axes[1].set_title("harm change")
    fig.legend(*legend_handles(axes), loc="lower center", ncol=3, fontsize=8, frameon=False)
    return png(fig, bottom=0.45 / fig.get_figheight())


RUN_PLOTS: dict[str, Callable[[Results], bytes]] = {
    "utility_vs_harm": utility_vs_harm,
    "curves_by_turn": curves_by_turn,
    "move_effects": move_effects,
    "redundancy_by_turn": redundancy_by_turn,
    "turn1_bins": turn1_bins,
    "by_domain": by_domain,
}


def run_plots(results: Results) -> tuple[dict[str, bytes], dict[str, str]]:
    """The figures of one run: ({name: PNG bytes}, {name: skip reason})."""
    return draw_all(RUN_PLOTS, results)
