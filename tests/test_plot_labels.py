"""Point labels of the move-effect figure and the leaderboard's recovery-cost figure never overlap, checked on
matplotlib's rendered text extents (not by eye), with crowded points that overlapped before; 0-100 axes leave
room for markers at 100."""
from __future__ import annotations

import itertools

import pytest

pytest.importorskip("matplotlib")

from matplotlib.text import Annotation  # noqa: E402
from test_leaderboard import entry  # noqa: E402

from carryon_eval.moves import MOVES  # noqa: E402
from carryon_eval.report.leaderboard import build_leaderboard  # noqa: E402
from carryon_eval.suites.carryonbench.board_plots import recovery_cost_figure  # noqa: E402
from carryon_eval.report.plots import PCT_LIMITS  # noqa: E402
from carryon_eval.suites.carryonbench.plots import move_effects_figure  # noqa: E402
from carryon_eval.run.records import Results  # noqa: E402


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
    notes, overlaps = overlapping_labels(move_effects_figure(Results(move_effects={"moves": moves})))
    assert len(notes) == len(moves) and overlaps == []


def test_recovery_cost_labels_do_not_overlap():
    runs = [entry("model-alpha-long-name", 50), entry("model-beta-long-name", 49), entry("m3", 20)]
    for e, (u, v) in zip(runs, [(10.0, 5.0), (10.2, 5.1), (30.0, 20.0)]):
        e.results.conditions["bc"].update(utility_delta=u, violation_rate_delta=v, ci95={})
    notes, overlaps = overlapping_labels(recovery_cost_figure(build_leaderboard(runs)))
    assert len(notes) == 3 and overlaps == []


def test_a_percent_axis_leaves_room_for_a_point_at_100():
    assert PCT_LIMITS[0] < 0 and PCT_LIMITS[1] > 100
