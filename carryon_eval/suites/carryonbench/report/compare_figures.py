"""The figures of `carryon-eval compare`: every model's utility vs harm (paper Figure 1B), the move effects
across models (Figure 23) and per model (Figure 24), from the runs' results (run.results.Results). Drawn with the
helpers of carryon_eval.report.plots: matplotlib optional, a plot whose data is all null is skipped with a reason.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

from carryon_eval.suites.carryonbench.settings import utility_name
from carryon_eval.moves import MOVE_GROUP, MOVES
from carryon_eval.report.plots import PCT_LIMITS, draw_all, figure, label_points, legend, png, require
from carryon_eval.suites.carryonbench.report.figures import CONDITION_COLORS, CONDITION_LABELS, GROUP_COLORS, VIOLATION_LINE
from carryon_eval.run.results import Results
from carryon_eval.suites.carryonbench.metrics.breakdown_rows import MoveEffect
from carryon_eval.suites.carryonbench.section import read


def models_utility_vs_harm(results: Sequence[Results], conditions: Sequence[str] = ("turn1", "bc")) -> bytes:
    """Figure 1B: every model's conversation utility vs harm, turn 1 and BC, arrows between them."""
    return png(utility_vs_harm_figure(results, conditions))


def utility_vs_harm_figure(results: Sequence[Results], conditions: Sequence[str] = ("turn1", "bc")) -> Any:
    """The figure of models_utility_vs_harm (to measure its labels)."""
    points = [{c: _harm_utility(res, c) for c in conditions} for res in results]
    require(any(None not in hu for pts in points for hu in pts.values()),
            f"no model has both a utility and a harm for {' or '.join(conditions)}")
    fig, (ax,) = figure(width=6.5, height=5.0)
    labels = []
    for res, pts in zip(results, points):
        for c, (h, u) in pts.items():
            if h is not None and u is not None:
                ax.scatter([h], [u], color=CONDITION_COLORS.get(c), s=30)
        (h0, u0), (h1, u1) = pts[conditions[0]], pts[conditions[-1]]
        if None not in (h0, u0, h1, u1):
            ax.annotate("", xy=(h1, u1), xytext=(h0, u0), arrowprops={"arrowstyle": "->", "color": "#999999"})
        h, u = pts[conditions[-1]]
        if h is not None and u is not None:
            labels.append((h, u, res.model or "?"))
    for c in conditions:
        ax.scatter([], [], color=CONDITION_COLORS.get(c), label=CONDITION_LABELS.get(c, c))
    ax.axvline(VIOLATION_LINE, linestyle="--", color="black", linewidth=1)
    ax.set_xlim(0.8, 5.2)
    ax.set_ylim(*PCT_LIMITS)
    ax.set_xlabel("harm (1-5; conversation max)")
    ax.set_ylabel(f"{utility_name(results[0]) if results else 'Ben-Util'} (%)")
    legend(ax, fontsize=8)
    label_points(ax, labels, fontsize=7)            # placed by their rendered extents: never over each other
    return fig


def _harm_utility(res: Results, cond: str) -> tuple[Optional[float], Optional[float]]:
    block = read(res).conditions.get(cond)
    return (block.value("harm"), block.value("utility")) if block is not None else (None, None)


def move_matrix(results: Sequence[Results], key: str) -> list[list[float]]:
    """Rows = models, columns = MOVES: each move's effect ``key`` (a field of its MoveEffect), NaN where null."""
    def cell(moves: dict[str, MoveEffect], move: str) -> float:
        value = moves[move].number(key).value if move in moves else None
        return math.nan if value is None else float(value)

    return [[cell(read(res).move_effects.moves_of(), m) for m in MOVES] for res in results]


def _heatmap(ax: Any, matrix: list[list[float]], models: Sequence[str], fmt: str, title: str, cmap: str) -> Any:
    """Models x moves, a diverging colour scale symmetric around 0; NaN cells grey with "n/a"."""
    import numpy as np

    values = np.array(matrix, dtype=float)
    finite = np.abs(values[~np.isnan(values)])
    limit = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    image = ax.imshow(np.ma.masked_invalid(values), cmap=_cmap(cmap), vmin=-limit, vmax=limit, aspect="auto")
    for (i, j), value in np.ndenumerate(values):
        nan = math.isnan(value)
        ax.text(j, i, "n/a" if nan else format(value, fmt), ha="center", va="center", fontsize=7,
                color="#666666" if nan else ("white" if abs(value) > 0.6 * limit else "black"))
    _move_columns(ax)
    ax.set_yticks(range(len(models)), list(models), fontsize=8)
    ax.set_title(title, fontsize=10)
    return image


def _move_columns(ax: Any) -> None:
    """Move names under the columns, coloured by group, with a white gap between groups."""
    ax.set_xticks(range(len(MOVES)), [m.replace("_", " ") for m in MOVES], fontsize=8, rotation=35, ha="right")
    for tick, move in zip(ax.get_xticklabels(), MOVES):
        tick.set_color(GROUP_COLORS[MOVE_GROUP[move]])
    for j in range(1, len(MOVES)):
        if MOVE_GROUP[MOVES[j]] != MOVE_GROUP[MOVES[j - 1]]:
            ax.axvline(j - 0.5, color="white", linewidth=3)


def _cmap(name: str) -> Any:
    from matplotlib import colormaps

    return colormaps[name].with_extremes(bad="#e8e8e8")


def models_move_effects(results: Sequence[Results]) -> bytes:
    """Figure 24: per model, each move's turn utility (left) and harm (right) as deviation from that
    model's own mean; grey "n/a" cells have no scored turn after the move."""
    util, harm = move_matrix(results, "utility_dev"), move_matrix(results, "harm_dev")
    require(any(not math.isnan(v) for row in util + harm for v in row),
            "no model has a scored turn after any user move")
    models = [r.model or "?" for r in results]
    fig, axes = figure(ncols=2, width=5.6, height=2.4 + 0.38 * len(models))
    name = utility_name(results[0]) if results else "Ben-Util"
    panels = ((util, "+.1f", name, "points", "BrBG"), (harm, "+.2f", "harm", "1-5 scale", "coolwarm"))
    for ax, (matrix, fmt, title, unit, cmap) in zip(axes, panels):
        image = _heatmap(ax, matrix, models, fmt, f"{title} deviation from model mean", cmap)
        fig.colorbar(image, ax=ax, shrink=0.8, label=unit)
    axes[1].set_yticklabels([])
    fig.legend(*_group_handles(), loc="lower center", ncol=3, fontsize=8, frameon=False,
               title="move group (label colour)", title_fontsize=8)
    return png(fig, bottom=0.55 / fig.get_figheight())


def _group_handles() -> tuple[list[Any], list[str]]:
    from matplotlib.patches import Patch

    return ([Patch(color=c) for c in GROUP_COLORS.values()], [g.replace("_", " ") for g in GROUP_COLORS])


def move_effects_across_models(results: Sequence[Results]) -> bytes:
    """Figure 23: each move's effect on turn-level utility (left) and harm (right), the mean over models of
    their deviations from their own means, with the standard error over models."""
    from carryon_eval.suites.carryonbench.report.compare import aggregate_move_effects

    agg = aggregate_move_effects(results).moves
    require(any(getattr(agg[m], k).mean is not None for m in MOVES for k in ("utility_dev", "harm_dev")),
            "no model has a scored turn after any user move")
    fig, axes = figure(ncols=2, width=7.0, height=3.2)
    name = utility_name(results[0]) if results else "Ben-Util"
    for ax, (key, title) in zip(axes, (("utility_dev", f"{name} deviation (points)"),
                                       ("harm_dev", "harm deviation (1-5 scale)"))):
        means = [getattr(agg[m], key).mean for m in MOVES]
        errs = [getattr(agg[m], key).se or 0.0 for m in MOVES]
        ax.bar(range(len(MOVES)), [0.0 if v is None else v for v in means], yerr=errs, capsize=2,
               color=[GROUP_COLORS[MOVE_GROUP[m]] for m in MOVES])
        ax.axhline(0, color="black", linewidth=0.8)
        _move_columns(ax)
        ax.set_title(f"{title}, mean of {len(results)} model(s)", fontsize=9)
    fig.legend(*_group_handles(), loc="lower center", ncol=3, fontsize=8, frameon=False)
    return png(fig, bottom=0.45 / fig.get_figheight())


COMPARE_PLOTS: dict[str, Callable[[Sequence[Results]], bytes]] = {
    "models_utility_vs_harm": models_utility_vs_harm,
    "move_effects_across_models": move_effects_across_models,
    "models_move_effects": models_move_effects,
}


def compare_plots(results: Sequence[Results]) -> tuple[dict[str, bytes], dict[str, str]]:
    """The figures of a comparison: ({name: PNG bytes}, {name: skip reason})."""
    return draw_all(COMPARE_PLOTS, results)
