"""The judge phase: run the scorers the suites ask for over every model reply of a run folder.

    judged = await judge_run(run, bench, endpoint, settings=JudgeSettings(judge_format="text"))

Which scorers judge which transcripts is the suites' word (carryon_eval.suite.ScoringPlan: each condition's
``ScorerUse`` records); ``scorers=`` names scorers that judge every reply instead. The scorers
(carryon_eval.judge.scorers) judge one case each; this module plans the cases, runs them with bounded
concurrency and stores the records, the same way for every scorer: RUNDIR/<scorer>_judgments.jsonl, one JSON
object per target (conversation_id, turn[, item_id]) and judge model, with the scorer's value field, the judge
model, the prompt ref, the raw answer, the attempts and how it was obtained. Identical cases are judged once:
stock refusals repeat a lot, and a query's shared turn-1 reply is the same text in all its conversations.

Records are keyed per (scorer, judge model). A rerun keeps the scored records of the same judge model
and prompt and asks only for the rest (the response cache in RUNDIR/cache makes re-asking anything
already paid for free); records of other judge models stay beside them untouched, so two judges of
one run sit side by side. Records are appended as calls finish, and each file is rewritten atomically
at the end: judge by judge (in order of first appearance), each judge's records in transcript order.
RUNDIR/judge.json records every judge's latest pass (records.JudgeSummary).
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Iterator, Mapping, Optional, Sequence

from carryon_eval import defaults
from carryon_eval.dataset.load import Benchmark
from carryon_eval.judge.scorers import (JUDGE_FORMATS, MAX_TOKENS, RETRIES,  # noqa: F401 - re-exported
                                        Case, Judgment, ReplyScorer, ReplyShape, ScorerError, pass_fields,
                                        pick_replies, planned_uses, reply_scorers, reply_shape)
from carryon_eval.judge.store import Appender, JudgeError, judgment_file, load_all, record_pass
from carryon_eval.model.budget import CallBudgetSpent
from carryon_eval.model.endpoint import ModelRejected, ParameterRefused
from carryon_eval.model.endpoint import ChatEndpoint
from carryon_eval.model.pool import EndpointGone
from carryon_eval.progress import Progress
from carryon_eval.run.folder import RunFolder, write_jsonl_atomic
from carryon_eval.run.heap import many_calls
from carryon_eval.run.records import JudgePass, JudgeSettings, ScorerTally
from carryon_eval.schema import Transcript
from carryon_eval.suite import ScoringPlan, judge_role_of

log = logging.getLogger("carryon.judge")


# ---------------------------------------------------------------- planning (pure)
@dataclass
class Task:
    scorer: ReplyScorer
    case: Case
    targets: list[tuple] = field(default_factory=list)   # the record keys this one judgment answers
    judgment: Optional[Judgment] = None   # once judged: later identical cases (of transcripts still coming) reuse it
    failed: bool = False                  # the call failed: an identical case that comes later is asked again


@dataclass
class Plan:
    """Per scorer: every record key of the run in transcript order, and the deduplicated tasks for
    the keys not done yet (items of one reply together, so the shared prompt prefix goes back to back)."""
    order: dict[str, list[tuple]]
    tasks: dict[str, list[Task]]

    def targets(self, name: str) -> int:
        """Records the tasks of one scorer answer (the count before the dedupe of identical cases)."""
        return sum(len(t.targets) for t in self.tasks[name])


def scoring_of(transcripts: Sequence[Transcript], scorers: Optional[Sequence[str]],
               settings: Optional[JudgeSettings] = None) -> ScoringPlan:
    """The suites' scoring plan for the conditions present; with ``scorers``, those judge every reply."""
    return scoring_for(list(dict.fromkeys(t.condition for t in transcripts)), scorers, settings)


def scoring_for(conditions: Sequence[str], scorers: Optional[Sequence[str]],
                settings: Optional[JudgeSettings] = None) -> ScoringPlan:
    """The suites' scoring plan for these conditions; with ``scorers``, those judge every reply. With
    ``settings``, each use is the one its scorer plans for this run (``planned_uses``)."""
    if scorers is not None:
        from carryon_eval.suite import ScorerUse
        uses = tuple(ScorerUse(s) for s in scorers)
        return ScoringPlan({c: uses for c in conditions})
    plan = ScoringPlan.of(list(conditions))
    return planned_uses(plan, settings) if settings is not None else plan


def reply_cases(transcripts: Sequence[Transcript], bench: Benchmark, scorers: Sequence[ReplyScorer],
                scoring: Optional[ScoringPlan] = None) -> Iterator[tuple[ReplyScorer, Transcript, tuple, Case]]:
    """(scorer, transcript, target, case) of every reply, in transcript order, for the scorers that judge its
    transcript (all of ``scorers`` without a ``scoring`` plan): what ``plan_tasks`` plans and the cost table
    counts (carryon_eval.app.cost), one walk for both."""
    for tr in transcripts:
        mine = set(scoring.scorers_for(tr)) if scoring is not None else None
        for reply in tr.replies:
            if not reply.content:
                continue          # an empty reply is no answer yet: unscored, asked again by the next rollout
            for scorer in scorers:
                if mine is not None and scorer.name not in mine:
                    continue
                try:
                    cases = scorer.cases(tr, reply, bench)
                except KeyError as exc:
                    raise JudgeError(f"transcript {tr.conversation_id}: {exc.args[0]!r} (query {tr.query_id!r}) is "
                                     f"not in dataset {bench.source}; judge with the dataset the run was made "
                                     "with") from None
                for target, case in cases:
                    yield scorer, tr, target, case


def plan_tasks(transcripts: Sequence[Transcript], bench: Benchmark, scorers: Sequence[ReplyScorer],
               done: dict[str, set[tuple]], scoring: Optional[ScoringPlan] = None) -> Plan:
    """The cases of every reply for the scorers that judge its transcript (all of ``scorers`` without a
    ``scoring`` plan), deduplicated per scorer, minus the targets in ``done``."""
    order: dict[str, list[tuple]] = {s.name: [] for s in scorers}
    tasks: dict[str, dict[Case, Task]] = {s.name: {} for s in scorers}
    for scorer, _, target, case in reply_cases(transcripts, bench, scorers, scoring):
        order[scorer.name].append(target)
        if target not in done[scorer.name]:
            tasks[scorer.name].setdefault(case, Task(scorer, case)).targets.append(target)
    return Plan(order, {name: list(t.values()) for name, t in tasks.items()})


def record_row(shape: ReplyShape, target: tuple, judgment: Judgment, judge_model: str) -> dict[str, Any]:
    """One stored record: the target's fields, the value, who judged with which prompt, then how."""
    row: dict[str, Any] = dict(zip(shape.target_fields, target))
    row[shape.value_field] = judgment.value if shape.value_of is None else shape.value_of(target, judgment.value)
    row["judge_model"] = judge_model
    row["prompt_version"] = shape.prompt_version
    for name in shape.record_fields:
        row[name] = getattr(judgment, name)
    row.update(raw=judgment.raw, attempts=judgment.attempts, via=judgment.via)
    row.update(shape.constants)
    return row


def parts(scorer: Any, targets: Sequence[tuple], judgment: Judgment) -> list[tuple[tuple, Judgment]]:
    """Each target's judgment: the one judgment for all, or a scorer's own ``split`` of one answer into its
    targets' judgments (one answer giving a verdict per item)."""
    split = getattr(scorer, "split", None)
    return split(targets, judgment) if split is not None else [(t, judgment) for t in targets]


# ---------------------------------------------------------------- one scorer's records
class ScorerRecords:
    """One scorer's judgment file during a pass: the other judges' records (kept as they are), this
    judge's kept and new records, and the appender for new ones. Records are the stored JSON objects."""

    def __init__(self, run: RunFolder, scorer: ReplyScorer, judge_model: str) -> None:
        self.scorer, self.judge_model = scorer, judge_model
        self.shape = reply_shape(scorer)
        self.path = run.path / judgment_file(scorer.name)
        self.groups: dict[str, dict[tuple, dict[str, Any]]] = {}    # judge model -> key -> record (last wins)
        for r in load_all(self.path, dict, on_bad=self._redo):
            self.groups.setdefault(str(r.get("judge_model")), {})[self.key(r)] = r
        mine = self.groups.get(judge_model, {})
        self.kept = {k: r for k, r in mine.items()
                     if r.get("prompt_version") == self.shape.prompt_version and self.value(r) is not None}
        self.new: dict[tuple, dict[str, Any]] = {}
        self.appender: Optional[Appender] = None

    @staticmethod
    def _redo(error: Exception) -> None:
        """A damaged line of a judgment file: left out of the rewritten file, and its case judged again."""
        log.warning("%s; left out, its case is judged again", str(error).split("; this line")[0])

    def key(self, record: dict[str, Any]) -> tuple:
        return tuple(record.get(f) for f in self.shape.target_fields)

    def value(self, record: dict[str, Any]) -> Any:
        return record.get(self.shape.value_field)

    def open(self) -> None:
        """Rewrite the file without this judge's stale records, then append as calls finish."""
        write_jsonl_atomic(self.path, [*self._others(), *self.kept.values()])
        self.appender = Appender(self.path)

    def add(self, targets: Sequence[tuple], judgment: Judgment) -> None:
        records = [record_row(self.shape, t, j, self.judge_model) for t, j in parts(self.scorer, targets, judgment)]
        self.new.update((self.key(r), r) for r in records)
        if self.appender is not None:
            self.appender.write(records)

    def close(self) -> None:
        if self.appender is not None:
            self.appender.close()
            self.appender = None

    def finish(self, order: list[tuple]) -> list[dict[str, Any]]:
        """The final file; returns this judge's records in transcript order."""
        mine_all = {**self.kept, **self.new}
        mine = [mine_all[k] for k in order if k in mine_all]
        stored = mine
        if getattr(self.scorer, "only", None) is not None:   # a scorer judging some replies: earlier records stay too
            planned = set(order)
            stored = mine + [r for k, r in mine_all.items() if k not in planned]
        groups = {**self.groups, self.judge_model: {}}     # a judge keeps its place in the file
        rows = [r for name, recs in groups.items() for r in (stored if name == self.judge_model else recs.values())]
        write_jsonl_atomic(self.path, rows)
        return mine

    def _others(self) -> list[dict[str, Any]]:
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

    def tally(self, *, kept: int, total: int, mine: list[dict[str, Any]], value_field: str) -> ScorerTally:
        return ScorerTally(records_total=total, records_written=len(mine), missing=total - len(mine),
                           kept_from_earlier=kept, calls_planned=self.planned, records_planned=self.records_needed,
                           judged=self.judged, unscored_new=self.unscored,
                           unscored=sum(r.get(value_field) is None for r in mine), retried=self.retried,
                           failed=self.failed, logprob_fallbacks=self.logprob_fallbacks,
                           via=dict(Counter(str(r.get("via")) for r in mine)), errors=self.errors[:5])


# ---------------------------------------------------------------- the phase
def _temperature(endpoint: ChatEndpoint) -> Any:
    """The judge's temperature: 0, unless the judge role's option sets another (or "default")."""
    chosen = getattr(endpoint.config, "temperature", None)
    return 0.0 if chosen is None else chosen


async def judge_run(run: RunFolder, bench: Benchmark, endpoint: ChatEndpoint, *,
                    settings: JudgeSettings = JudgeSettings(), scorers: Optional[Sequence[str]] = None,
                    concurrency: int = defaults.JUDGE_CONCURRENCY,
                    show_progress: Optional[bool] = None,
                    incoming: Optional[AsyncIterator[Transcript]] = None,
                    conditions: Sequence[str] = (), jobs: Optional[Sequence[Any]] = None,
                    judges: Optional[Mapping[str, ChatEndpoint]] = None) -> JudgePass:
    """Judge every reply of the run folder as judge model ``endpoint``, with the scorers its suites name
    (or ``scorers``, each judging every reply). Returns this pass (also recorded in judge.json beside the
    other judges'). The caller owns the endpoint (and closes it) and the event loop. ``settings.judge_format``:
    "json_schema" asks for constrained answers where the endpoint takes them (each record's ``via`` says how
    it was obtained), "text" never.

    ``incoming``: transcripts a rollout running beside the pass still finishes (carryon_eval.app.pipeline), each
    after it was appended to transcripts.jsonl; they are planned as they come, their calls taken from the same
    queue, and the pass ends when the iterator does. ``conditions``: the conditions that rollout plays (their
    scorers are made up front). At its end each file is rewritten as a pass after the rollout would write it:
    the scorers of the conditions transcripts.jsonl then holds, records in its order.

    ``jobs``: the run's plan, for a scorer that judges only some of its replies (its ``pick`` hook).

    ``judges``: the judges of their own of some scorers, by judge role (``ben_util_judge``:
    carryon_eval.suite.JudgeRole); a scorer's records are its judge's, and judge.json records one pass per judge
    model (each with its scorers). The pass returned covers them all (its ``judge_model`` names each)."""
    transcripts = run.transcripts()
    if not transcripts and incoming is None:
        raise JudgeError(f"{run.path} has no transcripts (transcripts.jsonl); run the rollout first")
    present = [*(t.condition for t in transcripts), *(conditions if incoming is not None else ())]
    scoring = scoring_for(list(dict.fromkeys(present)), scorers, settings)
    made = _made(scoring, settings, jobs)
    asks = {s.name: judge_of(s.name, endpoint, judges) for s in made}
    files = {s.name: ScorerRecords(run, s, asks[s.name].config.model) for s in made}
    judging = _Planner(bench, made, files, scoring)
    judging.add(transcripts)
    started = time.monotonic()
    gone = await _judge_cases(judging, asks, files, max(1, concurrency), show_progress, incoming)
    order = judging.order
    if incoming is not None:          # the files a pass after the rollout writes: what transcripts.jsonl holds
        made, order = _final_order(run, bench, made, judging, scorers, settings, gone)
    tallies = {}
    for s in made:
        mine = files[s.name].finish(order[s.name])
        tallies[s.name] = judging.counts[s.name].tally(kept=len(files[s.name].kept), total=len(order[s.name]),
                                                       mine=mine, value_field=files[s.name].shape.value_field)
    seconds = round(time.monotonic() - started, 3)
    by_model = {asks[s.name].config.model: asks[s.name] for s in made}      # records are keyed by judge model
    passes = [_pass_record(ep, settings, [s for s in made if asks[s.name].config.model == model], files, tallies,
                           seconds) for model, ep in by_model.items()] or [
        _pass_record(endpoint, settings, [], files, {}, seconds)]
    for one in passes:
        record_pass(run, one)
    judged = _together(passes)
    if gone is not None:
        raise gone
    if not judged.complete:
        log.error("judge: %s judgments missing after failed calls; rerun the judge to retry them",
                  ", ".join(f"{t.missing} {name}" for name, t in tallies.items()))
    return judged


def judge_of(scorer: str, endpoint: ChatEndpoint, judges: Optional[Mapping[str, ChatEndpoint]]) -> ChatEndpoint:
    """The endpoint that judges ``scorer``: its judge role's own among ``judges``, else ``endpoint``."""
    role = judge_role_of(scorer)
    return (judges or {}).get(role.role, endpoint) if role is not None else endpoint


def _together(passes: Sequence[JudgePass]) -> JudgePass:
    """One pass of several judge models (a scorer each), as the caller reads it: every tally, complete when all
    are; its ``judge_model`` names them all."""
    if len(passes) == 1:
        return passes[0]
    first = passes[0]
    return dataclasses.replace(first, judge_model=" + ".join(p.judge_model for p in passes),
                               tallies={k: t for p in passes for k, t in p.tallies.items()},
                               prompts={k: v for p in passes for k, v in p.prompts.items()},
                               context={k: v for p in passes for k, v in p.context.items()},
                               complete=all(p.complete for p in passes))


def _made(scoring: ScoringPlan, settings: JudgeSettings, jobs: Optional[Sequence[Any]]) -> list[ReplyScorer]:
    """The scorers of the scoring plan, made from the run's judge settings (each picking its replies of ``jobs``)."""
    try:
        made = reply_scorers(scoring.scorers, settings)
    except ScorerError as exc:
        raise JudgeError(str(exc)) from None
    pick_replies(made, jobs)
    return made


async def _judge_cases(judging: "_Planner", asks: Mapping[str, ChatEndpoint], files: dict[str, "ScorerRecords"],
                       n_workers: int, show_progress: Optional[bool],
                       incoming: Optional[AsyncIterator[Transcript]]) -> Optional[EndpointGone]:
    """Run the planned cases (and those of the transcripts still coming) on ``n_workers`` workers; returns the
    EndpointGone that ended the pass early, if one did (what there is is written all the same)."""
    if incoming is None:
        judging.open_all()
    bar = Progress(judging.planned(), "judge", usage=next(iter(asks.values())).usage if asks else None, unit="call",
                   disable=None if show_progress is None else not show_progress)
    if incoming is None:
        judging.close(n_workers)
    gone: Optional[EndpointGone] = None
    workers = [asyncio.ensure_future(_worker(judging.queue, asks, files, judging.counts, bar))
               for _ in range(n_workers)]
    if incoming is not None:
        workers.append(asyncio.ensure_future(_take(incoming, judging, n_workers, bar)))
    try:
        with many_calls():
            await asyncio.gather(*workers)
    except EndpointGone as exc:       # the judge stopped answering: write what there is, then end the phase
        gone = exc
    finally:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        bar.close()
        for f in files.values():
            f.close()
    return gone


def _final_order(run: RunFolder, bench: Benchmark, made: Sequence[ReplyScorer], judging: "_Planner",
                 scorers: Optional[Sequence[str]], settings: JudgeSettings,
                 gone: Optional[EndpointGone]) -> tuple[list[ReplyScorer], dict[str, list[tuple]]]:
    """After a rollout beside the pass: the scorers of the conditions transcripts.jsonl now holds, and every
    record key in its order (the files a pass after the rollout would write)."""
    transcripts = run.transcripts()
    if not transcripts and gone is None:
        raise JudgeError(f"{run.path} has no transcripts (transcripts.jsonl); run the rollout first")
    final = scoring_of(transcripts, scorers, settings)
    kept = [next(s for s in made if s.name == name) for name in final.scorers if name in judging.files]
    judging.open_all(kept)
    return kept, plan_tasks(transcripts, bench, kept, {s.name: set() for s in kept}, final).order


def _pass_record(endpoint: ChatEndpoint, settings: JudgeSettings, made: Sequence[ReplyScorer],
                 files: dict[str, "ScorerRecords"], tallies: dict[str, ScorerTally], seconds: float) -> JudgePass:
    """judge.json's record of this pass: who judged, how, with which prompts, and each scorer's tally (of the
    scorers ``made``, those this judge asked)."""
    tallies = {s.name: tallies[s.name] for s in made if s.name in tallies}
    return JudgePass(
        judge_model=endpoint.config.model, judge=endpoint.config.public(),
        generation={"temperature": _temperature(endpoint), "max_tokens": settings.max_tokens, "retries": RETRIES},
        prompts={name: ref for s in made for name, ref in s.prompt_refs().items()},
        context={s.name: files[s.name].shape.context for s in made}, seconds=seconds,
        tallies=tallies, complete=all(t.missing == 0 for t in tallies.values()), judge_format=settings.judge_format,
        scoring={**settings.pass_fields(), **pass_fields(made)})


class _Planner:
    """The pass's cases as transcripts come in: the record keys in transcript order per scorer, and one task per
    distinct case not judged yet (a case already judged in this pass gets its records at once, with no call).
    A scorer's file is opened when its first record key is planned (all of them, without a rollout beside)."""

    def __init__(self, bench: Benchmark, scorers: Sequence[ReplyScorer], files: dict[str, ScorerRecords],
                 scoring: ScoringPlan) -> None:
        self.bench, self.scorers, self.files, self.scoring = bench, scorers, files, scoring
        self.done = {name: set(f.kept) for name, f in files.items()}
        self.order: dict[str, list[tuple]] = {s.name: [] for s in scorers}
        self.counts = {s.name: _Counts() for s in scorers}
        self.tasks: dict[tuple[str, Case], Task] = {}
        self.queue: "asyncio.Queue[Optional[Task]]" = asyncio.Queue()
        self.opened: set[str] = set()

    def open_all(self, scorers: Optional[Sequence[ReplyScorer]] = None) -> None:
        for s in self.scorers if scorers is None else scorers:
            self._open(s.name)

    def _open(self, name: str) -> None:
        if name not in self.opened:
            self.opened.add(name)
            self.files[name].open()

    def add(self, transcripts: Sequence[Transcript]) -> int:
        """Plan these transcripts (the next ones of transcripts.jsonl); returns the new calls."""
        plan = plan_tasks(transcripts, self.bench, self.scorers, self.done, self.scoring)
        new = 0
        for scorer in self.scorers:
            name = scorer.name
            if plan.order[name]:
                self._open(name)
            self.order[name] += plan.order[name]
            c = self.counts[name]
            for task in plan.tasks[name]:
                c.records_needed += len(task.targets)
                known = self.tasks.get((name, task.case))
                if known is not None and not known.failed:
                    if known.judgment is not None:
                        self.files[name].add(task.targets, known.judgment)
                    else:
                        known.targets += task.targets
                    continue
                self.tasks[(name, task.case)] = task
                c.planned += 1
                new += 1
                self.queue.put_nowait(task)
        return new

    def planned(self) -> int:
        return sum(c.planned for c in self.counts.values())

    def close(self, workers: int) -> None:
        """No more transcripts: each worker stops once the queue is empty."""
        for _ in range(workers):
            self.queue.put_nowait(None)


async def _take(incoming: AsyncIterator[Transcript], judging: _Planner, workers: int, bar: Progress) -> None:
    """Plan every transcript the rollout finishes, as it comes; then let the workers stop."""
    try:
        async for transcript in incoming:
            bar.grow(judging.add([transcript]))
        bar.take_over()                 # the rollout's line has ended: the judge tail says how it goes
    finally:
        judging.close(workers)


async def _worker(queue: "asyncio.Queue[Optional[Task]]", asks: Mapping[str, ChatEndpoint],
                  files: dict[str, ScorerRecords], counts: dict[str, _Counts], bar: Progress) -> None:
    while True:
        task = await queue.get()
        if task is None:
            return
        name = task.scorer.name
        c = counts[name]
        try:
            judgment = await task.scorer.score(asks[name], task.case)
        except (CallBudgetSpent, EndpointGone, ParameterRefused, ModelRejected):
            raise                   # --max-calls, a judge gone, a refused parameter, key or model: stop the phase
        except Exception as exc:  # noqa: BLE001 - EndpointError and friends: count, keep going
            task.failed = True
            c.failed += 1
            c.errors.append(f"{type(exc).__name__}: {exc}")
            log.warning("judge call failed (%s): %s", name, exc)
        else:
            task.judgment = judgment
            files[name].add(task.targets, judgment)
            c.judged += 1
            if hasattr(task.scorer, "split"):      # one answer for many items: count each item's verdict
                answered = list({t[-1]: j for t, j in parts(task.scorer, task.targets, judgment)}.values())
            else:
                answered = [judgment]
            c.unscored += sum(j.value is None for j in answered)
            c.retried += any(j.attempts > 1 for j in answered)
            c.logprob_fallbacks += judgment.fallback
        bar.advance()
