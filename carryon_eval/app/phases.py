"""The phases a command runs, each awaited in the command's one event loop: rollout, judge, the checks asked for
and report,
and the checks on what they wrote (require_scored: exit 3, require_complete: exit 4)."""
from __future__ import annotations

from typing import AsyncIterator, Callable, Mapping, Optional, Sequence

from carryon_eval.app.config import BootstrapChoice, Output
from carryon_eval.dataset.load import Benchmark
from carryon_eval.model.endpoint import ChatEndpoint
from carryon_eval.judge.phase import judge_of, judge_run
from carryon_eval.judge.scorers import judgment_noun
from carryon_eval.schema import Transcript
from carryon_eval.run.records import JudgePass, JudgeSettings, RunMeta
from carryon_eval.run.results import Results
from carryon_eval.report.phase import write_report
from carryon_eval.rollout.play import rollout
from carryon_eval.run.folder import RunFolder, read_usage
from carryon_eval.suite import Job, PlanSettings, ProbeContext, plan_jobs, suites
from carryon_eval.rollout.simulator import UserSimulator


# ---------------------------------------------------------------- phases
def run_jobs(bench: Benchmark, meta: RunMeta) -> list[Job]:
    """The jobs of a run: its suites' plans for its conditions (run.json's)."""
    return plan_jobs(bench, meta.conditions, PlanSettings(shared_turn1=meta.shared_turn1))[0]


async def rollout_phase(bench: Benchmark, run: RunFolder, meta: RunMeta, target: ChatEndpoint,
                        user: ChatEndpoint, concurrency: int, out: Output,
                        on_finished: Optional[Callable[[Transcript], None]] = None) -> None:
    simulator = UserSimulator(user, temperature=meta.generation.user.temperature,
                              max_tokens=meta.generation.user.max_tokens)
    summary = await rollout(run_jobs(bench, meta), bench, run, target, simulator, gen=meta.generation.target,
                            concurrency=concurrency, on_finished=on_finished)
    out.info(f"rollout: {summary.finished}/{summary.total} conversations in {run.transcripts_file} "
             f"({summary.new} new)")
    if meta.skipped:
        out.info(f"rollout: {len(meta.skipped)} conversation(s) skipped (listed in run.json 'skipped'): "
                 f"{meta.skipped[0].reason}")
    failures = run.failures()
    if failures:
        out.info(f"rollout: {len(failures)} conversation(s) failed (see {run.failures_file}; "
                 "a rerun tries them again)")


async def check_phase(names: Sequence[str], bench: Benchmark, run: RunFolder, judge: ChatEndpoint,
                      concurrency: int, out: Output, judges: Optional[Mapping[str, ChatEndpoint]] = None) -> None:
    """The suites' checks of these names (Suite.checks), with the judge (its judge role's own among ``judges``,
    when it has one)."""
    for suite in suites():
        for check in suite.checks:
            if check.name in names:
                asked = judge_of(check.name, judge, judges)
                out.info(await check.run(ProbeContext(run, asked, None, concurrency, bench)))


async def judge_phase(bench: Benchmark, run: RunFolder, judge: ChatEndpoint, settings: JudgeSettings,
                      concurrency: int, out: Output, incoming: Optional[AsyncIterator[Transcript]] = None,
                      conditions: Sequence[str] = (), judges: Optional[Mapping[str, ChatEndpoint]] = None) -> JudgePass:
    """The judge phase, awaited in this command's loop: the scorers the run's suites name. ``incoming``: the
    transcripts a rollout running beside it still finishes, of ``conditions`` (carryon_eval.app.pipeline).
    The run's plan goes with it, for a scorer that judges only some of its replies. ``judges``: the judge roles'
    own judges (judge.phase.judge_run)."""
    for note in settings.notes():
        out.note(f"judge: {note}")
    judged = await judge_run(run, bench, judge, settings=settings, concurrency=concurrency, incoming=incoming,
                             conditions=conditions, jobs=run_jobs(bench, run.read_meta()), judges=judges,
                             show_progress=False if incoming is not None else None)   # the rollout's line is up
    counts = ", ".join(f"{t.records_written}/{t.records_total} {judgment_noun(name)} "
                       f"({t.unscored} unscored)" for name, t in judged.tallies.items())
    out.info(f"judge ({judged.judge_model}): {counts}; obtained as "
             f"{_ways(*(t.via for t in judged.tallies.values()))}")
    if not judged.complete:
        out.note(f"judge: some judgments are missing after failed calls; `carryon-eval judge {run.path}` "
                 "asks for them again")
    return judged


def _ways(*tallies: dict[str, int]) -> str:
    """"12 json_schema, 3 text": how the judgments of this pass's judge were obtained."""
    total: dict[str, int] = {}
    for tally in tallies:
        for way, n in tally.items():
            total[way] = total.get(way, 0) + n
    return ", ".join(f"{n} {way}" for way, n in sorted(total.items())) or "nothing"


def report_phase(bench: Benchmark, run: RunFolder, out: Output, judge: Optional[str] = None,
                 bootstrap: BootstrapChoice = BootstrapChoice(), notes: Sequence[str] = ()) -> Results:
    """`judge`: whose judgments to report when several judge models judged the run (default: the run's);
    `notes`: the command's word on the run (why it stopped), first among results.json's notes."""
    n_resamples, seed = bootstrap.resolve(run.read_meta())
    read_usage(run)       # every file of the run is read by its report: a damaged usage.json is said, never kept
    results = write_report(run, bench, judge=judge, n_resamples=n_resamples, seed=seed, notes=notes)
    out.info(f"results: {run.results_file}")
    out.info(f"report:  {run.html_file}")
    for line in [*(n for n in results.notes if n.startswith("INCOMPLETE")), *(
            line for s, line in zip(results.status(), results.status_lines()) if s != "incomplete")]:
        out.note(line)             # what results.json, table.md and the report say first, said here too
    return results


def require_scored(results: Results, run: RunFolder) -> None:
    """Raises NothingScored (exit 3; everything is written by then) when a condition that ran has no
    scored number at all."""
    empty: list[str] = []
    for s in suites():
        hook = s.report.nothing_scored if s.report is not None else None
        if hook is None:
            continue
        section = results.section(s.report.section)
        if section is None:
            continue
        empty += hook(section)                  # the conditions without a scored number
    if empty:
        raise NothingScored(f"judge answered nothing usable: no scored number for condition(s) {', '.join(empty)} "
                            f"(see {run.results_file})", results)


class NothingScored(Exception):
    """Everything was written, but some condition that ran has no scored number at all (exit 3);
    ``results``: what was written to results.json."""

    def __init__(self, message: str, results: Optional[Results] = None) -> None:
        super().__init__(message)
        self.results = results


class RunIncomplete(Exception):
    """Everything there is was written (results.json and the report say incomplete), but judgments are
    missing: failed calls, or an endpoint that stopped answering (exit 4; the same command resumes)."""


def require_complete(results: Results, run: RunFolder) -> None:
    """Raises RunIncomplete when some reply of the run has no judgment (a judge call failed)."""
    missing = 0
    for s in suites():
        hook = s.report.not_judged if s.report is not None else None
        section = results.section(s.report.section) if hook is not None else None
        missing += hook(section) if section is not None else 0
    if missing or results.judges.complete is False:
        raise RunIncomplete(f"the run is incomplete: {missing} judgment(s) missing (judge calls that failed or were not made yet) "
                            f"(results.json and the report say so); rerun the same command to resume")
    if "incomplete" in results.status():      # planned conversations without a final transcript
        raise RunIncomplete("the run is incomplete: planned conversations have no final transcript yet (results.json "
                            "and the report say so); rerun the same command to resume")
