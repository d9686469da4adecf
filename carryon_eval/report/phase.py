"""The report phase's frame: results.json, table.md, plots/*.png, conversation_scores.jsonl and report.html.

    results = write_report(RunFolder(rundir), bench)

The suite whose numbers are results.json's top level (its SuiteReport has no ``section``: CarryOnBench's
conditions) writes the run's report through its ``write`` hook (carryon_eval.suites.carryonbench.report); every
other suite's numbers reach it as a results.json section with its own table.md and report.html parts
(``section_markdown``, ``section_html``). This module names no suite: it iterates the registered ones.
"""
from __future__ import annotations

from typing import Optional, Sequence

from carryon_eval.dataset.load import Benchmark
from carryon_eval.judge.store import select_judge
from carryon_eval.run.folder import RESULTS_FILE, SCORES_FILE, RunFolder
from carryon_eval.run.records import Results
from carryon_eval.suite import ReportInputs, ReportRun, Suite, suites as registered_suites

__all__ = ["RESULTS_FILE", "SCORES_FILE", "core_conditions", "section_html", "section_markdown", "suite_inputs",
           "with_sections", "write_report"]


class ReportError(Exception):
    """No registered suite writes the run's report (one line)."""


def suite_inputs(run: RunFolder, bench: Benchmark, judge: Optional[str] = None, *, n_resamples: int = 1000,
                 seed: int = 0) -> ReportInputs:
    """The report inputs of a run folder for a suite's own readers (e.g. its export), which read their scorers'
    records through ``ReportInputs.records``; the two typed record lists of the top-level suite are its own
    writer's to fill (they stay empty here)."""
    judge = select_judge(run, judge)
    return ReportInputs(run, bench, run.transcripts(), judge, [], [], n_resamples, seed)


def core_conditions(suites: Sequence[Suite]) -> set[str]:
    """The conditions whose numbers are results.json's top level (a suite report without a section)."""
    return {c for s in suites if s.report is not None and s.report.section is None for c in s.conditions}


def with_sections(suites: Sequence[Suite]) -> list[Suite]:
    return [s for s in suites if s.report is not None and s.report.section is not None]


def section_markdown(results: Results, suites: Sequence[Suite]) -> str:
    return "".join(s.report.markdown(results.sections[s.report.section]) for s in with_sections(suites)
                   if s.report.markdown is not None and results.sections.get(s.report.section))


def section_html(results: Results, suites: Sequence[Suite]) -> str:
    return "".join(s.report.html(results.sections[s.report.section]) for s in with_sections(suites)
                   if s.report.html is not None and results.sections.get(s.report.section))


def write_report(run: RunFolder, bench: Benchmark, *, n_resamples: int = 1000, seed: int = 0,
                 judge: Optional[str] = None, suites: Optional[Sequence[Suite]] = None) -> Results:
    """Write results.json, table.md, conversation_scores.jsonl, plots/*.png and report.html; return results.
    `judge`: the judge model whose judgments to report (default: judgments.select_judge's choice);
    `suites`: the suites to report (default: every registered one)."""
    every = registered_suites()
    suites = every if suites is None else list(suites)
    writer = next((s.report.write for s in every if s.report is not None and s.report.write is not None), None)
    if writer is None:
        raise ReportError("no registered suite writes the run's report (a SuiteReport with `write`)")
    return writer(ReportRun(run, bench, n_resamples, seed, judge, tuple(suites)))
