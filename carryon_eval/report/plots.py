"""Drawing helpers every suite's figures use, and how they reach disk: no figure of a suite is drawn here.

matplotlib is optional (the `report` extra) and imported lazily; without it every function raises
PlotsUnavailable, whose message the report prints instead of the figures. Figures are drawn on
matplotlib.figure.Figure with the Agg canvas directly, so no pyplot global state or GUI backend is used.

A plot whose data is all null is never drawn blank or zero-filled: its function raises PlotSkipped with
the reason, and draw_all() collects {name: reason} for the report to print. Within a drawn plot a null
cell is left out (bars say "n/a"), never drawn as 0. A suite's figures are its wing's (``SuiteReport.plots``:
carryon_eval.suites.carryonbench.report.figures and compare_plots draw CarryOnBench's).
"""
from __future__ import annotations

import base64
import io
import textwrap
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

LABEL_BOX = {"facecolor": "white", "edgecolor": "none", "pad": 0.5, "alpha": 0.8}   # value labels legible over lines


class PlotsUnavailable(Exception):
    """matplotlib is not installed."""


class PlotSkipped(Exception):
    """The plot's data is all null: it is not drawn; the message says why."""


def require(has_data: bool, reason: str) -> None:
    if not has_data:
        raise PlotSkipped(reason)


def figure(ncols: int = 1, width: float = 5.0, height: float = 4.0) -> tuple[Any, list[Any]]:
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


#: A 0-100 axis with room for the markers at 0 and 100 (at exactly (0, 100) half of each is cut off).
PCT_LIMITS = (-4.0, 104.0)
#: Where a point's label may go, in points from the point, nearest first (ha, va follow the side).
_LABEL_OFFSETS = [(4, 4), (4, -4), (-4, 4), (-4, -4), (4, 12), (4, -12), (-4, 12), (-4, -12), (10, 0), (-10, 0),
                  (4, 20), (4, -20), (-4, 20), (-4, -20), (4, 28), (4, -28), (-4, 28), (-4, -28),
                  *((sx * dx, sy * dy) for dy in (36, 44, 52, 60, 68) for dx in (4, 24) for sx in (1, -1)
                    for sy in (1, -1))]


def label_points(ax: Any, points: Sequence[tuple[float, float, str]], fontsize: float = 8) -> list[Any]:
    """Annotate each (x, y, text) next to its point where its text overlaps no label placed before it (measured
    on the rendered text extents), trying the offsets of _LABEL_OFFSETS in turn; the annotations."""
    fig = ax.figure
    fit_axis_labels(fig)
    fig.tight_layout()
    renderer = fig.canvas.get_renderer()
    placed: list[Any] = []
    boxes: list[Any] = []
    for x, y, text in points:
        note = None
        for dx, dy in _LABEL_OFFSETS:
            if note is not None:
                note.remove()
            note = ax.annotate(text, (x, y), fontsize=fontsize, xytext=(dx, dy), textcoords="offset points",
                               ha="left" if dx >= 0 else "right", va="bottom" if dy >= 0 else "top")
            box = note.get_window_extent(renderer).expanded(1.05, 1.1)
            if not any(box.overlaps(b) for b in boxes) and _inside(note.get_window_extent(renderer), fig.bbox):
                break
        note.set_in_layout(False)       # placed for this layout: the saving layout must not move the axes under it
        boxes.append(note.get_window_extent(renderer))
        placed.append(note)
    return placed


def _inside(box: Any, frame: Any) -> bool:
    return box.x0 >= frame.x0 and box.y0 >= frame.y0 and box.x1 <= frame.x1 and box.y1 <= frame.y1


def fit_axis_labels(fig: Any) -> None:
    """Wrap every axis label whose rendered text is longer than its axis is long (a y label taller than the figure
    is cut off), at word boundaries, onto as many lines as it takes."""
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        span = ax.get_window_extent(renderer)
        for label, room in ((ax.xaxis.label, span.width), (ax.yaxis.label, span.height)):
            text = " ".join(label.get_text().split())
            width = 60
            while text and width > 10:
                label.set_text(textwrap.fill(text, width))
                box = label.get_window_extent(renderer)
                if max(box.width, box.height) <= room:
                    break
                width -= 6


def spread_labels(ys: Sequence[float], min_gap: float) -> list[float]:
    """Label heights (display units) at least ``min_gap`` apart, each as near its point as that allows: the
    points sorted by height, each label pushed up past the one below it, then the stack centred back down."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    placed: dict[int, float] = {}
    last = None
    for i in order:
        y = ys[i] if last is None else max(ys[i], last + min_gap)
        placed[i] = last = y
    shift = sum(placed[i] - ys[i] for i in order) / len(order) if order else 0.0
    return [placed[i] - shift for i in range(len(ys))]


def png(fig: Any, bottom: float = 0.0) -> bytes:
    """PNG bytes; bottom: share of the figure height kept free for a figure-level legend."""
    buf = io.BytesIO()
    fit_axis_labels(fig)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    fig.savefig(buf, format="png")
    return buf.getvalue()


def data_uri(png: bytes) -> str:
    """A PNG as the data: URI a self-contained page shows it by."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def integer_ticks(ax: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def legend(ax: Any, loc: str = "best", fontsize: int = 8) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc=loc, fontsize=fontsize)
    else:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="#999999")


def error_bar(value: Optional[float], ci: Optional[Sequence[float]]) -> list[list[float]]:
    if value is None or not ci:
        return [[0.0], [0.0]]
    return [[max(0.0, value - ci[0])], [max(0.0, ci[1] - value)]]


def legend_handles(axes: Sequence[Any]) -> tuple[list[Any], list[str]]:
    """The legend entries of several axes, each label once."""
    entries: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    return list(entries.values()), list(entries)


def draw_all(plots: Mapping[str, Callable[[Any], bytes]], data: Any) -> tuple[dict[str, bytes], dict[str, str]]:
    """({name: PNG bytes}, {name: why it was not drawn}). Raises PlotsUnavailable without matplotlib."""
    figure()  # fail early, once
    images, skipped = {}, {}
    for name, draw in plots.items():
        try:
            images[name] = draw(data)
        except PlotSkipped as exc:
            skipped[name] = str(exc)
    return images, skipped


def write_pngs(images: dict[str, bytes], outdir: Path, stale: Iterable[str] = ()) -> list[Path]:
    """Write NAME.png per image; remove the PNGs named in stale (plots skipped this time)."""
    outdir.mkdir(parents=True, exist_ok=True)
    for name in stale:
        (outdir / f"{name}.png").unlink(missing_ok=True)
    paths = []
    for name, data in images.items():
        path = outdir / f"{name}.png"
        path.write_bytes(data)
        paths.append(path)
    return paths
