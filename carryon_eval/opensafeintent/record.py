"""OpenSafeIntent's suite record: its condition (out of the default set), its report section and compare columns.

Its inputs are a release folder (``--opensafeintent DIR``), not the dataset's rows, so its jobs are planned and
played by its own phases (carryon_eval.opensafeintent.phase: generation, the release's judges, the intent probe)
and the record plans nothing for the shared rollout. Its section is summarized from the run folder's records
(the release named in run.json's ``suites.opensafeintent``), rendered in table.md and report.html, and compared.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from carryon_eval.opensafeintent.report import compare_columns, compare_markdown, render_html, render_markdown
from carryon_eval.opensafeintent.suite import CONDITION, JUDGMENTS_FILE, PROBE_FILE, pick_model, section
from carryon_eval.suite import Suite, SuiteReport, register_suite


def summarize(inputs: Any) -> Optional[dict[str, Any]]:
    """The section from the run folder's OpenSafeIntent records; None when the run has none."""
    from carryon_eval.opensafeintent.release import load_release
    from carryon_eval.run.folder import RunFolder

    run = RunFolder(inputs.rundir)
    meta = run.read_meta()
    record = meta.suites.get(CONDITION)
    if not record or not (run.path / JUDGMENTS_FILE).is_file() or record.get("layout") == "carryonbench-triplets":
        return None             # the triplet-sets variant is summarized by its own phase (it needs the dataset)
    release = load_release(record["folder"], meta.limit)
    judge = pick_model(run, JUDGMENTS_FILE, inputs.judge, meta.role("judge").model or None, "judge")
    target = pick_model(run, PROBE_FILE, None, meta.role("target").model or None, "target")
    return section(release, run, judge, n_resamples=inputs.n_resamples, target_model=target)


def compare(labels: Sequence[str], results: Sequence[Any]) -> Optional[dict[str, Any]]:
    return compare_columns(list(labels), [r.sections.get(CONDITION) for r in results])


OPENSAFEINTENT = register_suite(Suite(
    name=CONDITION, conditions=(CONDITION,), default=False, plan=lambda bench, conditions, settings: ([], []),
    report=SuiteReport(section=CONDITION, summarize=summarize, markdown=render_markdown, html=render_html,
                       compare=compare, compare_markdown=compare_markdown),
    description="OpenSafeIntent's release under its own judges and reference metrics (--opensafeintent DIR)"))
