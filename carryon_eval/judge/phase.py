"""The judge phase: run the scorers a run asks for over every model reply of a run folder.

    judged = await judge_run(rundir, bench, endpoint, scorers=("utility", "safety"), utility_mode="text")

The scorers (carryon_eval.judge.scorers) judge one case each; this module plans the cases, runs them with
bounded concurrency and stores the records. Identical cases are judged once: stock refusals repeat a
lot, and a query's shared turn-1 reply is the same text in all its conversations.

Records are keyed per (scorer, judge model). A rerun keeps the scored records of the same judge model
and prompt and asks only for the rest (the response cache in RUNDIR/cache makes re-asking anything
already paid for free); records of other judge models stay beside them untouched, so two judges of
one run sit side by side. Records are appended as calls finish, and each file is rewritten atomically
at the end: judge by judge (in order of first appearance), each judge's records in transcript order.
RUNDIR/judge.json records every judge's latest pass (records.JudgeSummary).
"""
from __future__ import annotations

import asyncio
import logging
from collections import Counter
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from carryon_eval import defaults
from carryon_eval.dataset.load import Benchmark
from carryon_eval.model.budget import CallBudgetSpent
from carryon_eval.model.endpoint import ChatEndpoint
from carryon_eval.judge.store import Appender, JudgeError, load_all, record_pass
from carryon_eval.progress import Progress
from carryon_eval.run.records import JudgePass, ScorerTally
from carryon_eval.run.folder import RunFolder, write_jsonl_atomic
from carryon_eval.schema import Transcript
from carryon_eval.judge.scorers import (DEFAULT_SCORERS, JUDGE_FORMATS, MAX_TOKENS, RETRIES,  # noqa: F401 - re-exported
                      UTILITY_MODES, Case, ReplyScorer, ScorerError, ScorerOptions, reply_scorers)

log = logging.getLogger("carryon.judge")


# ---------------------------------------------------------------- planning (pure)
@dataclass
class Task:
    scorer: ReplyScorer
    case: Case
    targets: list[tuple] = field(default_factory=list)   # the record keys this one judgment answers


@dataclass
class Plan:
    """Per scorer: every record key of the run in transcript order, and the deduplicated tasks for
    the keys not done yet (items of one reply together, so the shared prompt prefix goes back to back)."""
    order: dict[str, list[tuple]]
    tasks: dict[str, list[Task]]


def plan_tasks(transcripts: Iterable[Transcript], bench: Benchmark, scorers: Sequence[ReplyScorer],
               done: dict[str, set[tuple]]) -> Plan:
    order: dict[str, list[tuple]] = {s.name: [] for s in scorers}
    tasks: dict[str, dict[Case, Task]] = {s.name: {} for s in scorers}
    for tr in transcripts:
        if tr.query_id not in bench.queries:
            raise JudgeError(f"transcript {tr.conversation_id}: query {tr.query_id!r} is not in dataset "
                             f"{bench.source}; judge with the dataset the run was made with")
        query, checklist = bench.queries[tr.query_id], bench.checklists.get(tr.query_id, [])
        for reply in tr.replies:
            for scorer in scorers:
                for target, case in scorer.cases(tr, reply, query, checklist):
                    order[scorer.name].append(target)
                    if target not in done[scorer.name]:
                        tasks[scorer.name].setdefault(case, Task(scorer, case)).targets.append(target)
    return Plan(order, {name: list(t.values()) for name, t in tasks.items()})


# ---------------------------------------------------------------- one scorer's records
class ScorerRecords:
    """One scorer's judgment file during a pass: the other judges' records (kept as they are), this
    judge's kept and new records, and the appender for new ones."""

    def __init__(self, rundir: Path, scorer: ReplyScorer, judge_model: str) -> None:
        self.scorer, self.judge_model = scorer, judge_model
        self.path = Path(rundir) / scorer.file
        self.groups: dict[str, dict[tuple, Any]] = {}       # judge model -> key -> record (last wins)
        for r in load_all(self.path, scorer.read):
            self.groups.setdefault(str(r.judge_model), {})[scorer.key(r)] = r
        mine = self.groups.get(judge_model, {})
        self.kept = {k: r for k, r in mine.items()
                     if r.prompt_version == scorer.prompt_version and self.value(r) is not None}
        self.new: dict[tuple, Any] = {}
        self.appender: Optional[Appender] = None

    def value(self, record: Any) -> Any:
        return getattr(record, self.scorer.value_field)

    def open(self) -> None:
        """Rewrite the file without this judge's stale records, then append as calls finish."""
        write_jsonl_atomic(self.path, (r.to_dict() for r in [*self._others(), *self.kept.values()]))
        self.appender = Appender(self.path)

    def add(self, records: list[Any]) -> None:
        self.new.update((self.scorer.key(r), r) for r in records)
        if self.appender is not None:
            self.appender.write(r.to_dict() for r in records)

    def close(self) -> None:
        if self.appender is not None:
            self.appender.close()
            self.appender = None

    def finish(self, order: list[tuple]) -> list[Any]:
        """The final file; returns this judge's records in transcript order."""
        mine_all = {**self.kept, **self.new}
        mine = [mine_all[k] for k in order if k in mine_all]
        groups = {**self.groups, self.judge_model: {}}     # a judge keeps its place in the file
        rows = [r for name, recs in groups.items() for r in (mine if name == self.judge_model else recs.values())]
        write_jsonl_atomic(self.path, (r.to_dict() for r in rows))
        return mine

    def _others(self) -> list[Any]:
        return [r for name, recs in self.groups.items() if name != self.judge_model for r in recs.values()]


@dataclass
class _Counts:
    planned: int = 0
    records_needed: int = 0
    judged: int = 0
    unscored: int = 0
    retried: int = 0
    failed: int = 0
    logprob_fallbacks: int = 0
    errors: list[str] = field(default_factory=list)

    def tally(self, *, kept: int, total: int, mine: list[Any], value_field: str) -> ScorerTally:
        return ScorerTally(records_total=total, records_written=len(mine), missing=total - len(mine),
                           kept_from_earlier=kept, calls_planned=self.planned, records_planned=self.records_needed,
                           judged=self.judged, unscored_new=self.unscored,
                           unscored=sum(getattr(r, value_field) is None for r in mine), retried=self.retried,
                           failed=self.failed, logprob_fallbacks=self.logprob_fallbacks,
                           via=dict(Counter(str(getattr(r, "via", None)) for r in mine)), errors=self.errors[:5])


# ---------------------------------------------------------------- the phase
async def judge_run(rundir: Path, bench: Benchmark, endpoint: ChatEndpoint, *,
                    scorers: Sequence[str] = DEFAULT_SCORERS, utility_mode: str = "text",
                    concurrency: int = defaults.JUDGE_CONCURRENCY, show_progress: Optional[bool] = None,
                    max_tokens: int = MAX_TOKENS, judge_format: str = "json_schema") -> JudgePass:
    """Judge every reply of the run in RUNDIR with the named scorers, as judge model ``endpoint``.
    Returns this pass (also recorded in judge.json beside the other judges'). The caller owns the
    endpoint (and closes it) and the event loop. ``judge_format``: "json_schema" asks for constrained
    answers where the endpoint takes them (each record's ``via`` says how it was obtained), "text" never."""
    rundir = Path(rundir)
    try:
        made = reply_scorers(scorers, ScorerOptions(utility_mode=utility_mode, max_tokens=max_tokens,
                                                    judge_format=judge_format))
    except ScorerError as exc:
        raise JudgeError(str(exc)) from None
    transcripts = RunFolder(rundir).transcripts()
    if not transcripts:
        raise JudgeError(f"{rundir} has no transcripts (transcripts.jsonl); run the rollout first")
    model = endpoint.config.model
    files = {s.name: ScorerRecords(rundir, s, model) for s in made}
    plan = plan_tasks(transcripts, bench, made, {name: set(f.kept) for name, f in files.items()})
    counts = {s.name: _Counts(planned=len(plan.tasks[s.name]),
                              records_needed=sum(len(t.targets) for t in plan.tasks[s.name])) for s in made}
    started = time.monotonic()
    for f in files.values():
        f.open()
    queue = iter([task for s in made for task in plan.tasks[s.name]])
    bar = Progress(sum(c.planned for c in counts.values()), "judge", usage=endpoint.usage, unit="call",
                   disable=None if show_progress is None else not show_progress)
    try:
        await asyncio.gather(*(_worker(queue, endpoint, files, counts, model, bar)
                               for _ in range(max(1, concurrency))))
    finally:
        bar.close()
        for f in files.values():
            f.close()

    tallies = {}
    for s in made:
        mine = files[s.name].finish(plan.order[s.name])
        tallies[s.name] = counts[s.name].tally(kept=len(files[s.name].kept), total=len(plan.order[s.name]),
                                               mine=mine, value_field=s.value_field)
    judged = JudgePass(
        judge_model=model, judge=endpoint.config.public(), utility_mode=utility_mode,
        generation={"temperature": 0.0, "max_tokens": max_tokens, "retries": RETRIES},
        prompts={name: ref for s in made for name, ref in s.prompt_refs().items()},
        context={s.name: s.context for s in made}, seconds=round(time.monotonic() - started, 3),
        tallies=tallies, complete=all(t.missing == 0 for t in tallies.values()), judge_format=judge_format)
    record_pass(rundir, judged)
    if not judged.complete:
        log.error("judge: %s judgments missing after failed calls; rerun the judge to retry them",
                  ", ".join(f"{t.missing} {name}" for name, t in tallies.items()))
    return judged


async def _worker(queue: Iterable[Task], endpoint: ChatEndpoint, files: dict[str, ScorerRecords],
                  counts: dict[str, _Counts], model: str, bar: Progress) -> None:
    for task in queue:
        name = task.scorer.name
        c = counts[name]
        try:
            judgment = await task.scorer.score(endpoint, task.case)
        except CallBudgetSpent:
            raise                   # --max-calls: stop the phase, not one failure per remaining task
        except Exception as exc:  # noqa: BLE001 - EndpointError and friends: count, keep going
            c.failed += 1
            c.errors.append(f"{type(exc).__name__}: {exc}")
            log.warning("judge call failed (%s): %s", name, exc)
        else:
            files[name].add([task.scorer.record(target, judgment, model) for target in task.targets])
            c.judged += 1
            c.unscored += judgment.value is None
            c.retried += judgment.attempts > 1
            c.logprob_fallbacks += judgment.fallback
        bar.advance()
