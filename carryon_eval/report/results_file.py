"""results.json's frame: the envelope every run has (model, judges, dataset, run, notes, generated) around the
sections of the suites it reports, each asked through its SuiteReport's hooks in the suites' rank order.

    results, page = build_results(run, bench, suites=suites)

The frame knows what every run has: the target model, the dataset, the run folder's planned, played, failed and
empty conversations, the judges present, the endpoints' parameters and the run's status. Which suite's section
sits at results.json's top level is its one serializer's business (carryon_eval.run.results.Results).
"""
from __future__ import annotations

import datetime as _dt
import functools
import json
from typing import Any, Optional, Sequence

from carryon_eval import __version__
from carryon_eval.dataset.load import Benchmark
from carryon_eval.judge.store import has_judge_roles, judge_pass, judges_present, run_judges, select_judge
from carryon_eval.run.folder import RunFolder, has_empty_reply
from carryon_eval.run.records import RunMeta
from carryon_eval.run.results import Generated, JudgesInfo, Results, ResultsDataset, ResultsRun
from carryon_eval.schema import Transcript
from carryon_eval.suite import PlanSettings, ReportInputs, ReportPage, Suite, plan_jobs

__all__ = ["build_results", "count_empty_replies", "parameter_notes", "planned_jobs", "reported", "suite_inputs"]

UNPLAYED_NOTE = ("INCOMPLETE: {n} planned conversation(s) have no final transcript yet (the rollout stopped, or a "
                 "reply stayed empty); rerun the same command to finish them. A conversation not played is read like "
                 "one whose judgments are all unscored: the numbers stand on the conversations played and their "
                 "bounds span every value the others could take (marked in table.md).")


def suite_inputs(run: RunFolder, bench: Benchmark, judge: Optional[str] = None, *, n_resamples: int = 1000,
                 seed: int = 0) -> ReportInputs:
    """The report inputs of a run folder for a suite's own readers (e.g. its export); ``judge``: one judge for
    every scorer (None: the run's; for a run whose scorers have judges of their own, each scorer's)."""
    chosen = None if judge is None and has_judge_roles(run) else select_judge(run, judge)
    return ReportInputs(run, bench, run.transcripts(), chosen, n_resamples, seed,
                        scorer_judge=functools.partial(_scorer_judge, run))


def _scorer_judge(run: RunFolder, scorer: str) -> Optional[str]:
    return select_judge(run, scorer=scorer)


def reported(results: Results, suites: Sequence[Suite]) -> list[Suite]:
    """The suites whose section the run has, in their rank order."""
    return [s for s in sorted(suites, key=lambda s: s.rank)
            if s.report is not None and results.section(s.report.section) is not None]


def planned_jobs(bench: Benchmark, meta: RunMeta) -> Optional[list[Any]]:
    """The run's planned jobs; None when its conditions cannot be planned by this version (nothing to compare with)."""
    try:
        jobs, _ = plan_jobs(bench, meta.conditions, PlanSettings(shared_turn1=meta.shared_turn1))
    except (ValueError, KeyError):
        return None
    return list(jobs)


def unplayed(bench: Benchmark, meta: RunMeta, transcripts: Sequence[Transcript], run: RunFolder) -> int:
    """Planned conversations of the run without a final transcript (failed ones are reported on their own)."""
    jobs = planned_jobs(bench, meta) or []
    final = {t.conversation_id for t in transcripts if not has_empty_reply(t)} | set(run.failures())
    return sum(1 for j in jobs if j.conversation_id not in final)


def count_empty_replies(transcripts: Sequence[Any]) -> int:
    """Target replies that stayed empty after retries; a shared first reply (``shared_turn1``: one per query, the
    first of all its conversations that share it) counts once."""
    empty = set()
    for t in transcripts:
        for i, reason in enumerate(t.meta.get("finish_reasons") or []):
            if reason == "empty":
                empty.add((f"shared:{t.query_id}", 1) if i == 0 and t.shared_turn1 else (t.conversation_id, i + 1))
    return len(empty)


def parameter_notes(meta: RunMeta) -> list[str]:
    """What the endpoints were actually sent where it differs from what the run asked (run.json's roles.ROLE.sent)
    or from the paper's defaults (a temperature left to the provider, request options): it changes what the
    numbers mean."""
    asked = {"target": meta.generation.target.temperature, "user": meta.generation.user.temperature, "judge": 0}
    notes = []
    for role in ("target", "user", "judge"):
        record = meta.role(role)
        wanted = record.temperature if role == "judge" and record.temperature is not None else asked[role]
        why = record.provider_default_temperature(wanted)
        if why is not None:
            notes.append(f"The {role} ({record.model}) ran with temperature: provider default; "
                         + (f"{why}." if why != "as asked" else "as asked (none was sent)."))
        elif role == "judge" and record.temperature is not None:
            notes.append(f"The judge ({record.model}) ran at temperature {record.temperature:g}, not 0.")
        for name, how in record.sent.items():
            if name != "temperature":
                notes.append(f"The {role} endpoint ({record.model}) refused {name}: {how}.")
        options = [f"reasoning_effort={record.reasoning_effort}" if record.reasoning_effort else "",
                   "a system prompt (run.json)" if record.system_prompt else "",
                   f"extra body {json.dumps(record.extra_body, sort_keys=True)}" if record.extra_body else ""]
        if any(options):
            notes.append(f"The {role} was sent " + ", ".join(o for o in options if o) + ".")
    return notes


def run_facts(results: Results) -> list[str]:
    """The notes on the run itself between the suites' notes: judgments missing, other judges, the rollout's
    empty replies and failed conversations."""
    notes = []
    if results.judges.complete is False:
        notes.append("INCOMPLETE: the judge phase did not finish every judgment (failed calls, or a judge that "
                     "stopped answering); rerun the same command to complete it.")
    others = [j for j in results.judges.present if j != results.judges.selected]
    if others and results.judges.selected is not None:
        notes.append(f"These numbers use judge {results.judges.selected}; the run was also judged by "
                     f"{', '.join(others)} (`carryon-eval report RUNDIR --judge NAME` reports another judge, "
                     "`carryon-eval agreement RUNDIR` compares two).")
    if results.run.empty_replies:
        notes.append(f"{results.run.empty_replies} target repl(ies) stayed empty after "
                     "retries; they are kept as empty replies and judged as such.")
    if results.run.failed_conversations:
        notes.append(f"{results.run.failed_conversations} conversation(s) failed during the rollout (see "
                     "failures.jsonl): like every planned conversation not played, their judgments are unknown, "
                     "so the bounds span what they could be.")
    return notes


def envelope(run: RunFolder, bench: Benchmark, meta: RunMeta, transcripts: Sequence[Transcript],
             judge: Optional[str]) -> Results:
    """results.json's frame before any section: who, on what, from which folder, by whom."""
    used = [judge] if judge is not None else list(dict.fromkeys(run_judges(run).values()))   # each scorer's
    passes = [judge_pass(run, j) for j in used]          # their latest passes (judge.json), if recorded
    complete = all(p.complete for p in passes) if passes and None not in passes else None
    return Results(
        model=meta.role("target").model or (transcripts[0].target_model if transcripts else "unknown"),
        judges=JudgesInfo(complete=complete, selected=judge, present=judges_present(run)),
        dataset=ResultsDataset(source=run.shared_path(bench.source), revision=bench.revision,
                               manifest_version=(bench.manifest or {}).get("version")),
        run=ResultsRun(folder=run.shared_path(str(run.path)), notice=meta.notice,
                       failed_conversations=len(run.failures()), empty_replies=count_empty_replies(transcripts),
                       subset=meta.subset),
        generated=Generated(by=f"carryon-eval {__version__}",
                            at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")))


def build_results(run: RunFolder, bench: Benchmark, *, n_resamples: int = 1000, seed: int = 0,
                  judge: Optional[str] = None, suites: Sequence[Suite] = ()) -> tuple[Results, ReportPage]:
    """The results of a run folder: the frame, each suite's section (``summarize``: of the suites whose conditions
    the run planned or played, so that a run imports only the wings it evaluates), then the notes (the suites'
    around the run's facts) and the status (the run's, then the suites' words)."""
    meta = run.read_meta()
    inputs = suite_inputs(run, bench, judge, n_resamples=n_resamples, seed=seed)
    results = envelope(run, bench, meta, inputs.transcripts, inputs.judge)
    ran = set(meta.conditions) | {t.condition for t in inputs.transcripts}
    for s in sorted(suites, key=lambda s: s.rank):
        if not ran & set(s.conditions):       # a suite the run neither planned nor played has no section
            continue
        section = s.report.summarize(inputs) if s.report is not None and s.report.summarize is not None else None
        if section is not None:
            results.put_section(s.report.section, section)
    page = ReportPage(inputs, results)
    present = reported(results, suites)
    parts = [s.report.notes(page) for s in present if s.report.notes is not None]
    missing = unplayed(bench, meta, inputs.transcripts, run)
    results.notes = ([UNPLAYED_NOTE.format(n=missing)] if missing else []) + ([meta.notice] if meta.notice else []) \
        + parameter_notes(meta) + [n for p in parts for n in p.before] + run_facts(results) \
        + [n for p in parts for n in p.after]
    results.run.status = (["smoke"] if any(r.local for r in meta.roles.values()) or meta.notice else []) + (
        meta.self_status(inputs.judge)) + (["incomplete"] if missing or results.judges.complete is False else []) + [
        word for s in present if s.report.status is not None for word in s.report.status(page)]
    return results, page
