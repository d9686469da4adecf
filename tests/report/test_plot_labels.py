"""Point labels of the move-effect figure and the leaderboard's recovery-cost figure never overlap, checked on
matplotlib's rendered text extents (not by eye), with crowded points that overlapped before; 0-100 axes leave
room for markers at 100."""
from __future__ import annotations

import itertools

import pytest

pytest.importorskip("matplotlib")

from matplotlib.text import Annotation  # noqa: E402
from support.leaderboard_entries import entry, update_block  # noqa: E402

from carryon_eval.moves import MOVES  # noqa: E402
from carryon_eval.report.leaderboard import build_leaderboard  # noqa: E402
from carryon_eval.suites.carryonbench.report.board_figures import recovery_cost_figure  # noqa: E402
from carryon_eval.suites.carryonbench.section import SECTION, CarryOnBenchSection  # noqa: E402
from carryon_eval.report.plots import PCT_LIMITS  # noqa: E402
from carryon_eval.suites.carryonbench.report.figures import move_effects_figure  # noqa: E402
from carryon_eval.run.results import Results  # noqa: E402


def overlapping_labels(fig):
    fig.tight_layout()                              # as _png draws it
    renderer = fig.canvas.get_renderer()
    notes = [c for ax in fig.axes for c in ax.get_children() if isinstance(c, Annotation) and c.get_text()]
    boxes = [(n.get_text(), n.get_window_extent(renderer)) for n in notes]
    return notes, [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2) if ba.overlaps(bb)]


def test_move_effect_labels_do_not_overlap():
    groups = ["benign_clarification", "challenge", "non_contentful"]
    # four moves all but on one spot, the rest spread: the four labels overlapped at one fixed offset
    spots = [(0.1, 0.01), (0.15, 0.012), (0.2, 0.009), (0.12, 0.011), (-8.0, -0.3), (6.0, 0.25), (-3.0, 0.2)]
    moves = {m: {"group": groups[i % 3], "utility_dev": x, "harm_dev": y} for i, (m, (x, y)) in
             enumerate(zip(MOVES, spots))}
    notes, overlaps = overlapping_labels(move_effects_figure(Results(sections={SECTION: CarryOnBenchSection(move_effects={"moves": moves})})))
    assert len(notes) == len(moves) and overlaps == []


def test_recovery_cost_labels_do_not_overlap():
    runs = [entry("model-alpha-long-name", 50), entry("model-beta-long-name", 49), entry("m3", 20)]
    for e, (u, v) in zip(runs, [(10.0, 5.0), (10.2, 5.1), (30.0, 20.0)]):
        update_block(e.results, "bc", utility_delta=u, violation_rate_delta=v, ci95={})
    notes, overlaps = overlapping_labels(recovery_cost_figure(build_leaderboard(runs)))
    assert len(notes) == 3 and overlaps == []


def test_a_percent_axis_leaves_room_for_a_point_at_100():
    assert PCT_LIMITS[0] < 0 and PCT_LIMITS[1] > 100


# ---------------------------------------------------------------- the leaderboard's figures, six crowded models
SIX = ["gpt-4o-mini-2024-07-18", "llama-3.1-8b-instruct", "qwen2.5-7b-instruct", "gemma-2-9b-it",
       "mistral-7b-instruct-v0.3", "phi-3.5-mini-instruct"]


def crowded_board():
    runs = [entry(m, 50 + 0.1 * i) for i, m in enumerate(SIX)]
    for i, e in enumerate(runs):                         # every point all but on one spot
        update_block(e.results, "bc", utility=60 + 0.2 * i, harm=2.0 + 0.01 * i, utility_delta=10 + 0.1 * i,
                     violation_rate_delta=5 + 0.05 * i, redundancy=40.0 + i, ci95={})
        update_block(e.results, "nc", redundancy=30.0 + i)
        update_block(e.results, "turn1", utility=50 + 0.2 * i, harm=1.9 + 0.01 * i)
    return build_leaderboard(runs)


def drawn(fig):
    """Every label's and axis label's rendered box, as the PNG is saved (png() lays the figure out)."""
    from carryon_eval.report.plots import png
    png(fig)
    renderer = fig.canvas.get_renderer()
    notes = [c for ax in fig.axes for c in ax.get_children() if isinstance(c, Annotation) and c.get_text()]
    axis_labels = [t for ax in fig.axes for t in (ax.xaxis.label, ax.yaxis.label) if t.get_text()]
    return ([(n.get_text(), n.get_window_extent(renderer)) for n in notes],
            [(t.get_text(), t.get_window_extent(renderer)) for t in axis_labels])


def outside(box, fig):
    frame = fig.bbox
    return box.x0 < frame.x0 or box.y0 < frame.y0 or box.x1 > frame.x1 or box.y1 > frame.y1


@pytest.mark.parametrize("name", ["utility_vs_harm", "recovery_cost", "redundancy"])
def test_the_leaderboards_figures_with_six_crowded_models_keep_every_label_apart_and_inside(name):
    from carryon_eval.suites.carryonbench.report.board_figures import redundancy_figure
    from carryon_eval.suites.carryonbench.report.compare_figures import utility_vs_harm_figure
    board = crowded_board()
    fig = {"utility_vs_harm": lambda: utility_vs_harm_figure([e.results for e in board.runs]),
           "recovery_cost": lambda: recovery_cost_figure(board), "redundancy": lambda: redundancy_figure(board)}[name]()
    notes, axis_labels = drawn(fig)
    assert len(notes) == (0 if name == "redundancy" else 6)
    assert [(a, b) for (a, ba), (b, bb) in itertools.combinations(notes, 2) if ba.overlaps(bb)] == []
    assert [t for t, box in notes + axis_labels if outside(box, fig)] == []
