"""The report phase: results.json, table.md, plots/*.png, conversation_scores.jsonl and report.html of a run.

    results = write_report(RunFolder(rundir), bench)

report/ owns the frame of every output and iterates the suites in their rank order; each suite whose section the
run has gives its part through its SuiteReport's hooks: its section (``summarize``, results_file.py), its notes
and status words, its part of table.md and report.html (``blocks``, read once for both; ``appendix``), its figures
(``plots.run``) and its rows of conversation_scores.jsonl (``scores``). This module names no suite.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional, Sequence

from carryon_eval.dataset.load import Benchmark
from carryon_eval.report.blocks import css, to_html, to_markdown
from carryon_eval.report.html import render_page
from carryon_eval.report.plots import PlotsUnavailable, draw_all, write_pngs
from carryon_eval.report.results_file import build_results, reported, suite_inputs
from carryon_eval.run.folder import (RESULTS_FILE, SCORES_FILE, RunFolder, write_json_atomic, write_jsonl_atomic,
                                     write_text_atomic)
from carryon_eval.run.results import PlotsInfo, Results
from carryon_eval.suite import Suite, suites as registered_suites

__all__ = ["RESULTS_FILE", "SCORES_FILE", "suite_inputs", "table_markdown", "write_report"]

log = logging.getLogger("carryon.report")


@dataclass(frozen=True)
class Part:
    """A reported suite's part of table.md and of report.html, and its styling."""
    markdown: str
    html: str
    css: str = ""


def suite_parts(results: Results, suites: Sequence[Suite]) -> list[Part]:
    """Each reported suite's part, in their rank order: its blocks, read from its section once."""
    parts = []
    for s in reported(results, suites):
        if s.report.blocks is not None:
            blocks = s.report.blocks(results.section(s.report.section))
            parts.append(Part(to_markdown(blocks), to_html(blocks), css(blocks)))
    return parts


def table_markdown(results: Results, suites: Sequence[Suite], parts: Optional[Sequence[Part]] = None) -> str:
    """table.md: the title and the status lines, then each reported suite's part."""
    head = "\n".join([f"# CarryOnBench: {results.model}\n", *(f"**{line}**\n" for line in results.status_lines())])
    parts = suite_parts(results, suites) if parts is None else parts
    return head + "\n" + "\n".join(p.markdown for p in parts if p.markdown)


def draw_plots(run: RunFolder, results: Results, suites: Sequence[Suite]) -> dict[str, bytes]:
    """The reported suites' figures of the run, written to plots/ (results.plots says which, and why not)."""
    figures = {name: draw for s in suites if s.report.plots is not None for name, draw in s.report.plots.run.items()}
    try:
        images, skipped = draw_all(figures, results)
        paths = write_pngs(images, run.plots_dir, stale=skipped)
        results.plots = PlotsInfo(files=[str(p.relative_to(run.path)) for p in paths], skipped=skipped)
    except PlotsUnavailable as exc:
        images = {}
        results.plots = PlotsInfo(note=str(exc))
        results.notes.append(str(exc))
        log.warning("%s", exc)
    return images


def write_report(run: RunFolder, bench: Benchmark, *, n_resamples: int = 1000, seed: int = 0,
                 judge: Optional[str] = None, suites: Optional[Sequence[Suite]] = None,
                 notes: Sequence[str] = ()) -> Results:
    """Write results.json, table.md, conversation_scores.jsonl, plots/*.png and report.html; return results.
    `judge`: the judge model whose judgments to report (default: judgments.select_judge's choice);
    `suites`: the suites to report (default: every registered one); `notes`: the command's own word on the run
    (e.g. why it stopped), first among the notes."""
    suites = registered_suites() if suites is None else list(suites)
    results, page = build_results(run, bench, n_resamples=n_resamples, seed=seed, judge=judge, suites=suites)
    results.notes[:0] = list(notes)
    present = reported(results, suites)
    images = draw_plots(run, results, present)
    write_json_atomic(run.results_file, results.to_json())
    parts = suite_parts(results, present)
    write_text_atomic(run.table_file, table_markdown(results, present, parts))
    write_jsonl_atomic(run.scores_file, [row for s in present if s.report.scores is not None
                                         for row in s.report.scores(page)])
    appendices = [s.report.appendix(page) for s in present if s.report.appendix is not None]
    captions = {k: v for s in present if s.report.plots is not None for k, v in s.report.plots.captions.items()}
    write_text_atomic(run.html_file, render_page(
        results, [p.html for p in parts if p.html], images, captions,
        [to_html(blocks) for blocks in appendices], css="".join([*(p.css for p in parts), *map(css, appendices)])))
    return results
