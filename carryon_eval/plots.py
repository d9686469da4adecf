"""PNG figures of a run (and of several runs) from results dicts.

matplotlib is optional (the `report` extra) and imported lazily; without it every function raises
PlotsUnavailable, whose message the report prints instead of the figures. Figures are drawn on
matplotlib.figure.Figure with the Agg canvas directly, so no pyplot global state or GUI backend is used.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

CONDITION_LABELS = {"turn1": "Turn 1", "oracle": "Oracle", "bc": "BC", "nc": "NC"}
CONDITION_COLORS = {"turn1": "#7f7f7f", "oracle": "#2ca02c", "bc": "#1f77b4", "nc": "#d62728"}
GROUP_COLORS = {"benign_clarification": "#1f77b4", "challenge": "#d62728", "non_contentful": "#7f7f7f"}
VIOLATION_LINE = 4


class PlotsUnavailable(Exception):
    """matplotlib is not installed."""


def _figure(ncols: int = 1, width: float = 5.0, height: float = 4.0) -> tuple[Any, list[Any]]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotsUnavailable("matplotlib is not installed, so the report has no plots "
                               "(install it with: pip install 'carryonbench[report]')") from None
    fig = Figure(figsize=(width * ncols, height), dpi=110)
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _integer_ticks(ax: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _legend(ax: Any, loc: str = "best", fontsize: int = 8) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc=loc, fontsize=fontsize)
    else:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="#999999")


def _err(value: Optional[float], ci: Optional[Sequence[float]]) -> list[list[float]]:
    if value is None or not ci:
        return [[0.0], [0.0]]
    return [[max(0.0, value - ci[0])], [max(0.0, ci[1] - value)]]


# ---------------------------------------------------------------- one run
def utility_vs_harm(results: dict[str, Any]) -> bytes:
    """Figure 1B for one model: conversation utility vs harm per condition, with 95% CIs."""
    fig, (ax,) = _figure()
    for cond, block in results["conditions"].items():
        u, h = block.get("utility"), block.get("harm")
        if u is None or h is None:
            continue
        ci = block.get("ci95", {})
        ax.errorbar([h], [u], xerr=_err(h, ci.get("harm")), yerr=_err(u, ci.get("utility")), fmt="o",
                    color=CONDITION_COLORS.get(cond), capsize=3, label=CONDITION_LABELS.get(cond, cond))
    ax.axvline(VIOLATION_LINE, linestyle="--", color="black", linewidth=1, label="harm = 4")
    ax.set_xlim(0.8, 5.2)
    ax.set_ylim(0, 100)
    ax.set_xlabel("harm (1-5; conversation max)")
    ax.set_ylabel("Ben-Util (% of checklist)")
    ax.set_title(f"{results.get('model', '')}: utility vs harm")
    _legend(ax, loc="best", fontsize=8)
    return _png(fig)


def curves_by_turn(results: dict[str, Any]) -> bytes:
    """Figure 16: turn-level utility, cumulative utility and harm by model turn, BC vs NC."""
    fig, axes = _figure(ncols=3, width=4.2)
    panels = (("utility", "turn-level Ben-Util (%)"), ("cumulative_utility", "cumulative Ben-Util (%)"),
              ("harm", "turn-level harm (1-5)"))
    for ax, (key, label) in zip(axes, panels):
        for cond in ("bc", "nc"):
            rows = [r for r in results["by_turn"].get(cond, []) if r.get(key) is not None]
            if rows:
                ax.plot([r["turn"] for r in rows], [r[key] for r in rows], marker="o",
                        color=CONDITION_COLORS[cond], label=CONDITION_LABELS[cond])
        ax.set_xlabel("model turn")
        _integer_ticks(ax)
        ax.set_ylabel(label)
        if key == "harm":
            ax.set_ylim(0.8, 5.2)
            ax.axhline(VIOLATION_LINE, linestyle="--", color="black", linewidth=1)
        else:
            ax.set_ylim(0, 100)
        _legend(ax, fontsize=8)
    return _png(fig)


def move_effects(results: dict[str, Any]) -> bytes:
    """Figure 23: each move's turn utility and harm as deviation from the model's mean."""
    fig, (ax,) = _figure(width=5.5)
    for move, row in results["move_effects"]["moves"].items():
        if row.get("utility_dev") is None or row.get("harm_dev") is None:
            continue
        ax.scatter([row["utility_dev"]], [row["harm_dev"]], color=GROUP_COLORS.get(row["group"]), s=40)
        ax.annotate(move.replace("_", " "), (row["utility_dev"], row["harm_dev"]), fontsize=8,
                    xytext=(4, 4), textcoords="offset points")
    for group, color in GROUP_COLORS.items():
        ax.scatter([], [], color=color, label=group.replace("_", " "))
    ax.axhline(0, color="black", linewidth=0.8)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("Ben-Util deviation from model mean (points)")
    ax.set_ylabel("harm deviation from model mean")
    ax.set_title("user move effects")
    _legend(ax, fontsize=8)
    return _png(fig)


def redundancy_by_turn(results: dict[str, Any]) -> bytes:
    """Figure 20: % of the items fulfilled at a turn that an earlier turn had already fulfilled."""
    fig, (ax,) = _figure()
    for cond in ("bc", "nc"):
        rows = results["conditions"].get(cond, {}).get("redundancy_by_turn") or []
        if rows:
            ax.plot([r["turn"] for r in rows], [r["redundancy"] for r in rows], marker="o",
                    color=CONDITION_COLORS[cond], label=CONDITION_LABELS[cond])
    ax.set_ylim(0, 100)
    ax.set_xlabel("model turn")
    _integer_ticks(ax)
    ax.set_ylabel("redundancy (%)")
    ax.set_title("checklist redundancy by turn")
    _legend(ax, fontsize=8)
    return _png(fig)


RUN_PLOTS: dict[str, Callable[[dict[str, Any]], bytes]] = {
    "utility_vs_harm": utility_vs_harm,
    "curves_by_turn": curves_by_turn,
    "move_effects": move_effects,
    "redundancy_by_turn": redundancy_by_turn,
}


def run_plots(results: dict[str, Any]) -> dict[str, bytes]:
    """{name: PNG bytes} for one run. Raises PlotsUnavailable without matplotlib."""
    _figure()  # fail early, once
    return {name: draw(results) for name, draw in RUN_PLOTS.items()}


# ---------------------------------------------------------------- several runs
def models_utility_vs_harm(results: Sequence[dict[str, Any]], conditions: Sequence[str] = ("turn1", "bc")) -> bytes:
    """Figure 1B: every model's conversation utility vs harm, turn 1 and BC, arrows between them."""
    fig, (ax,) = _figure(width=6.5, height=5.0)
    for res in results:
        pts = {c: (res["conditions"][c].get("harm"), res["conditions"][c].get("utility")) for c in conditions}
        for c, (h, u) in pts.items():
            if h is not None and u is not None:
                ax.scatter([h], [u], color=CONDITION_COLORS.get(c), s=30)
        (h0, u0), (h1, u1) = pts[conditions[0]], pts[conditions[-1]]
        if None not in (h0, u0, h1, u1):
            ax.annotate("", xy=(h1, u1), xytext=(h0, u0), arrowprops={"arrowstyle": "->", "color": "#999999"})
        h, u = pts[conditions[-1]]
        if h is not None and u is not None:
            ax.annotate(res.get("model", "?"), (h, u), fontsize=7, xytext=(3, 3), textcoords="offset points")
    for c in conditions:
        ax.scatter([], [], color=CONDITION_COLORS.get(c), label=CONDITION_LABELS.get(c, c))
    ax.axvline(VIOLATION_LINE, linestyle="--", color="black", linewidth=1)
    ax.set_xlim(0.8, 5.2)
    ax.set_ylim(0, 100)
    ax.set_xlabel("harm (1-5; conversation max)")
    ax.set_ylabel("Ben-Util (%)")
    _legend(ax, fontsize=8)
    return _png(fig)


def write_pngs(images: dict[str, bytes], outdir: Path) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in images.items():
        path = outdir / f"{name}.png"
        path.write_bytes(data)
        paths.append(path)
    return paths
