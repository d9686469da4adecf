"""leaderboard.html and leaderboard.jsonl from a Board (carryon_eval.report.leaderboard), with the suites' figures.

The page is rendered by jinja2 from the package's templates/leaderboard.html.j2 with autoescaping on: every
model name, judge name and reason is escaped by the engine, and the data the script reads goes through the
`tojson` filter. The script (templates/leaderboard.js) is inlined and allowed by its SHA-256 in the page's
Content-Security-Policy, which lets the page load nothing but data: images.
"""
from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import itertools
import json
from importlib import resources
from pathlib import Path
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence


from carryon_eval import __version__
from carryon_eval.report.leaderboard import (HTML_FILE, JSONL_FILE, SCRIPT, TEMPLATE, Board, Cell, jsonl_rows, labels,
                                             suite_leaderboards)
from carryon_eval.report.blocks import number_text as shown_text
from carryon_eval.report.blocks import shown
from carryon_eval.report.plots import PlotSkipped, data_uri, figure
from carryon_eval.run.records import RunMeta
from carryon_eval.run.folder import write_text_atomic
from carryon_eval.run.results import PlotsInfo
from carryon_eval.suite import suites
from carryon_eval.suite.inputs import FailureRow

if TYPE_CHECKING:       # types only
    from carryon_eval.report.comparison import Comparison


def board_plots(board: Board) -> tuple[dict[str, bytes], dict[str, str]]:
    """The suites' figures of the board (their SuitePlots' ``board``; one whose ``board_when`` says the runs
    lack its data is left out): ({name: PNG}, {name: why not drawn}); raises plots.PlotsUnavailable without
    matplotlib."""
    figure()
    images, skipped = {}, {}
    for plots in (s.report.plots for s in suites() if s.report is not None and s.report.plots is not None):
        for name, draw in plots.board.items():
            if name in plots.board_when and not plots.board_when[name](board):
                continue
            try:
                images[name] = draw(board)
            except PlotSkipped as exc:
                skipped[name] = str(exc)
    return images, skipped


# ---------------------------------------------------------------- the page's view of the board
def number_text(x: Optional[float], digits: int) -> str:
    """A bare value in the one number format (carryon_eval.report.blocks)."""
    return shown_text(shown(x, digits))


@dataclass(frozen=True)
class CellView:
    """A leaderboard cell as the page shows it: its value's text, the value the script sorts by, its interval, its
    scored share, whether that is under 95% and why it is missing."""
    text: str
    value: str
    ci: str
    share: str
    under_95: bool
    reason: str


def cell_view(cell: Cell, digits: int) -> CellView:
    n = cell.number
    ci = f"[{number_text(n.ci95[0], digits)}, {number_text(n.ci95[1], digits)}]" if n.ci95 else ""
    share = "" if n.scored_share is None else f"{n.scored_share:.0f}% scored"
    return CellView(number_text(n.value, digits), "" if n.value is None else repr(float(n.value)), ci, share,
                    n.under_95, n.reason or "")


def _bands(columns: Sequence[Any]) -> list[dict[str, Any]]:
    """The header bands: each run of adjacent columns of one group, and how many columns it spans."""
    return [{"label": group, "span": len(list(cols))} for group, cols in itertools.groupby(columns, lambda c: c.group)]


def _failure_modes(board: Board, group: str) -> list[FailureRow]:
    """The rows of one group's failure-mode table, from the suites' leaderboards (``failure_modes``)."""
    return [row for b in suite_leaderboards() if b.failure_modes is not None for row in b.failure_modes(board, group)]


def _failure_notes(board: Board, group: str) -> list[str]:
    """The lines under one group's failure-mode table (``failure_notes``: e.g. no model stands out)."""
    return [line for b in suite_leaderboards() if b.failure_notes is not None for line in b.failure_notes(board, group)]


def _ranks(board: Board) -> dict[str, dict[str, list[int]]]:
    """Column key -> run index (as text, JSON's keys) -> [lo, hi] rank interval."""
    return {key: {str(i): list(r) for i, r in ranks.items()} for key, ranks in board.ranks.items()}


def _domain_views(board: Board) -> list[dict[str, Any]]:
    """The "By domain" tables, from the suites' leaderboards (``domain_views``)."""
    return [view for b in suite_leaderboards() if b.domain_views is not None for view in b.domain_views(board)]


def _default_sort(board: Board) -> str:
    """The column the page sorts on first: the first the suites name that the board has (a suite may name several,
    in order of preference), else its first column."""
    keys = [c.key for c in board.columns]
    named = [k for b in suite_leaderboards() for k in ((b.sort,) if isinstance(b.sort, str) else (b.sort or ()))]
    return next((k for k in named if k in keys), keys[0] if keys else "")


def _p_text(p: Optional[float]) -> str:
    return "<.001" if p is not None and p < 0.001 else number_text(p, 3)


def _spearman_rows(board: Board) -> list[dict[str, Any]]:
    names = labels()
    return [{"group": g, "condition": names.get(key, key), "rho": number_text(s.rho, 3), "p": _p_text(s.p), "n": s.n,
             "note": s.reason or s.note or ""} for g, keys in board.spearman.items() for key, s in keys.items()]


def _figures(images: Mapping[str, bytes]) -> list[dict[str, str]]:
    captions = {name: text for s in suites() if s.report is not None and s.report.plots is not None
                for name, text in s.report.plots.captions.items()}
    return [{"name": name, "caption": captions.get(name, name.replace("_", " ")),
             "src": data_uri(png)} for name, png in images.items()]


def script() -> str:
    return (resources.files("carryon_eval.report") / "templates" / SCRIPT).read_text(encoding="utf-8")


def render_page(board: Board, images: Mapping[str, bytes], skipped: Mapping[str, str],
                plots_note: Optional[str] = None, missing: Sequence[str] = ()) -> str:
    """The page; ``missing``: what the comparison could not compute here (compare.json "missing": what each part
    would add and how to add it)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("carryon_eval.report", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    js = script()
    digest = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode("ascii")
    data = {"models": [e.label for e in board.runs], "groups": board.groups, "sort": _default_sort(board),
            "columns": {c.key: {"label": c.label, "band": c.group, "digits": c.digits, "paired": c.stat is not None,
                                "note": c.note} for c in board.columns},
            "pairs": {k: [d.to_json() for d in v] for k, v in board.differences.items()},
            "ranks": _ranks(board), "method": board.settings.pairs_method}
    judge_names = {k: v for lb in suite_leaderboards() for k, v in lb.judge_labels.items()}
    judge_kinds = [(kind, judge_names.get(kind, kind)) for kind in
                   dict.fromkeys(k for info in board.group_info.values() for k in info.judges)]
    groups = []
    for g, info in board.group_info.items():
        rows = [{"index": i, "model": e.label, "cells": [cell_view(c, col.digits) for c, col in zip(board.cells[i], board.columns)]}
                for i, (e, gg) in enumerate(zip(board.runs, board.groups)) if gg == g]
        groups.append({"letter": g, "info": info, "rows": rows, "failure_modes": _failure_modes(board, g),
                       "failure_notes": _failure_notes(board, g)})
    return env.get_template(TEMPLATE).render(
        title=f"CarryOnBench leaderboard: {len(board.runs)} models", warnings=board.warnings, groups=groups,
        judge_kinds=judge_kinds,
        columns=board.columns, bands=_bands(board.columns), spearman=_spearman_rows(board),
        figures=_figures(images), skipped=dict(skipped), plots_note=plots_note, domains=_domain_views(board),
        missing=list(missing),
        models=[e.label for e in board.runs], settings=board.settings, data=data, script=js,
        family_notes=board.family_notes(), estimators=[lb.estimators for lb in suite_leaderboards() if lb.estimators],
        script_hash=f"sha256-{digest}", generated=f"carryon-eval {__version__}",
        at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))


def write_leaderboard(out: Path, board: Board, images: Mapping[str, bytes], skipped: Mapping[str, str],
                      plots_note: Optional[str] = None, missing: Sequence[str] = ()) -> dict[str, Any]:
    """Write OUT/leaderboard.html and OUT/leaderboard.jsonl (each to a temp file, then renamed)."""
    out = Path(out)
    write_text_atomic(out / JSONL_FILE, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in jsonl_rows(board, out)))
    write_text_atomic(out / HTML_FILE, render_page(board, images, skipped, plots_note, missing))
    return {"files": [HTML_FILE, JSONL_FILE], "groups": board.groups, "warnings": board.warnings}


class LeaderboardError(Exception):
    """A compared run's run.json cannot be read: one line (the command line's error, exit 2, as compare's own)."""


def read_meta(folder: Path) -> RunMeta:
    """run.json of a compared run; a folder without one reads as empty settings (its dataset then pins by
    results.json's source and revision)."""
    from carryon_eval.run.folder import RunError, RunFolder

    run = RunFolder(Path(folder))
    if not run.exists():
        return RunMeta()
    try:
        return run.read_meta()
    except (RunError, ValueError, TypeError, KeyError) as exc:
        raise LeaderboardError(f"{folder}: {exc}") from None


def reported_entries() -> list[Any]:
    """The rows the suites' papers report (SuiteReport.reported), status "reported"."""
    return [e for s in suites() if s.report is not None and s.report.reported is not None for e in s.report.reported()]


def _measured_apart(entries: Sequence[Any], reported: Sequence[Any]) -> Optional[str]:
    """Why the papers' reported rows cannot share the runs' columns (a suite's SuiteReport.incomparable: e.g. runs of
    rubric utility beside the paper's Ben-Util); None when they can, or none are asked for."""
    if not reported or not entries:
        return None
    every = [*entries, *reported]
    folders, results = [Path(str(e.folder)) for e in every], [e.results for e in every]
    reasons = [s.report.incomparable(folders, results) for s in suites()
               if s.report is not None and s.report.incomparable is not None]
    return "; ".join(why for why in reasons if why) or None


@dataclass
class BoardWritten:
    """What `compare --out`'s leaderboard adds to compare's record: its files and figures (``files``: compare.json's
    "leaderboard"), the pairwise family (``family``: Comparison.family) and one note per group on it (``notes``)."""
    files: dict[str, Any]
    family: dict[str, Any]
    notes: list[str]


def write_board(out: Path, cmp: "Comparison", paper_rows: bool = False) -> BoardWritten:
    """`compare --out`'s leaderboard: the board of the compared runs, its own figures beside compare's in
    OUT/plots/, the page (with compare's figures read back from OUT/plots/) and the JSONL record. ``paper_rows``:
    the rows the papers report join the page and the record, in a group of their own (not in the figures)."""
    from carryon_eval.report.leaderboard import RunEntry, build_leaderboard
    from carryon_eval.report.plots import PlotsUnavailable, write_pngs

    out = Path(out)
    entries = [RunEntry(label, folder, r, list(s), read_meta(Path(folder)))
               for label, folder, r, s in zip(cmp.models, cmp.runs, cmp.results, cmp.scores)]
    board = build_leaderboard(entries)
    reported = reported_entries() if paper_rows else []
    apart = _measured_apart(entries, reported)
    shown = build_leaderboard([*entries, *reported]) if reported and not apart else board
    if apart:                   # e.g. rubric runs: the paper's Ben-Util numbers never sit under their headers
        shown.warnings.append(f"The rows the paper reports are not shown beside these runs: {apart}.")
    plots = cmp.plots or PlotsInfo()
    images = {Path(f).stem: (out / f).read_bytes() for f in plots.files}
    skipped, note = dict(plots.skipped), plots.note
    own: list[str] = []
    if note is None:
        try:
            drawn, not_drawn = board_plots(board)
        except PlotsUnavailable as exc:
            drawn, not_drawn, note = {}, {}, str(exc)
        own = [f"plots/{p.name}" for p in write_pngs(drawn, out / "plots", stale=not_drawn)]
        images.update(drawn)
        skipped.update(not_drawn)
    family = family_record(board)
    notes = family.pop("family_notes")
    return BoardWritten({**write_leaderboard(out, shown, images, skipped, note, cmp.missing), "plots": own},
                        family, notes)


def _pairs(models: int) -> str:
    n = models * (models - 1) // 2
    return f"{n} pair" + ("s" if n != 1 else "")


def family_record(board: Board) -> dict[str, Any]:
    """What compare.json holds of the page's comparisons: ``pairs`` (per column, every pair of a group with its
    own 95% interval and its adjusted ``differs``), ``pairs_method`` (the method and, per column and group, the
    pairs, models and queries it adjusted over), ``failure_modes`` (per model its flags, and per group the flags
    no model earned) and ``family_notes`` (one line per group: how many pairs a column, which method)."""
    names = [e.label for e in board.runs]
    pairs = {key: [{**d.to_json(), "a": names[d.a], "b": names[d.b], "group": board.groups[d.a]}
                   for d in diffs] for key, diffs in board.differences.items()}
    families = [{"column": key, "group": g, "models": [names[i] for i in fam.runs], "pairs": fam.n_pairs,
                 "queries": fam.n_queries, "critical": fam.family.critical}
                for key, groups in board.families.items() for g, fam in groups.items()]
    modes: dict[str, Any] = {}
    for g in dict.fromkeys(board.groups):
        for row in _failure_modes(board, g):
            modes[row.model] = {"group": g, "flags": row.flags}
    unearned = [f"Group {g}: {line}" for g in dict.fromkeys(board.groups) for line in _failure_notes(board, g)]
    sizes = {g: len([x for x in board.groups if x == g]) for g in dict.fromkeys(board.groups)
             if any(g in groups for groups in board.families.values())}
    notes = [f"Pairwise differences, group {g}: {m} models, {_pairs(m)} per column; each pair keeps its own 95% "
             f"interval, and 'differs' is adjusted for the column's {_pairs(m)} by {board.settings.pairs_method} "
             "over the paired bootstrap replicates; ranks are 95% intervals (simultaneous over the group's models)."
             for g, m in sizes.items() if m > 1] + unearned
    return {"pairs": pairs,
            "pairs_method": {"method": board.settings.pairs_method,
                             "text": board.settings.pairs_method_text, "ranks": board.settings.ranks,
                             "level": 0.95, "families": families},
            "failure_modes": modes, "family_notes": notes}
