"""The inspect-ai task's stage parts: a suite's inspect task (its ``InspectPart.task``, e.g. CarryOnBench's
``inspect eval carryon_eval/carryonbench``, carryon_eval.suites.carryonbench.inspect_eval.task) is built of these.

One sample per job of the registered suites' plans (carryon_eval.suite.plan_jobs: the same jobs, ids, opening
messages and skips as `carryon-eval`, so every suite is played by the task). The solver plays a job exactly as the
rollout does (the rollout's own player: the project's user simulator and prompts on the model role ``user``, the
same per-turn seeds, a shared first reply generated once per key and reused by its jobs); the evaluated model is
inspect's model. ``Judges`` runs the scorers the suites name for each transcript (carryon_eval.suite.ScoringPlan) on
the model role ``grader``, each distinct case judged once per task as the judge phase does; a suite's scorer keeps
every record in the score's metadata (``ScoreMetadata``), so that `carryon-eval import`
writes the run folder the report computes the numbers from. Both roles reach their models through one adapter
(carryon_eval.inspect_bridge.endpoint). ``plan_task`` reads a task's shared arguments (dataset, revision,
conditions, subset, limit, shared_turn1, seed, judge_format) into what the task is built of.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, get_model
from inspect_ai.scorer import Metric, SampleScore, metric
from inspect_ai.solver import Generate, TaskState, solver

from carryon_eval import __version__, defaults
from carryon_eval.codec import Record, absent
from carryon_eval.app.config import _manifest_sha, load_bench
from carryon_eval.dataset.load import Benchmark
from carryon_eval.model.endpoint import UsageLedger
from carryon_eval.run.records import DatasetRef, Generation, JudgeSettings, RunGeneration, RunMeta
from carryon_eval.rollout.play import Player
from carryon_eval.schema import Transcript
from carryon_eval.judge.scorer_file import record_row
from carryon_eval.judge.scorers import reply_scorers, reply_shape
from carryon_eval.rollout.simulator import UserSimulator
from carryon_eval.suite import (Job, PlanSettings, ScoringPlan, SuiteError, default_conditions, plan_jobs,
                                refuse_missing, resolve_conditions, suites)
from carryon_eval.inspect_bridge.endpoint import InspectEndpoint
from carryon_eval.inspect_bridge.export import QueryColumns, _message

TRANSCRIPT_KEY = "carryonbench:transcript"     # TaskState.store: the played conversation (schema.Transcript)
FAILURE_KEY = "carryonbench:failure"           # TaskState.store: why it could not be played
RUN_KEY = "carryonbench_run"                   # task metadata: the run.json of the run (roles filled on import)
USER_ROLE, GRADER_ROLE = "user", "grader"


@dataclass
class ScoreMetadata(Record):
    """A suite scorer's score metadata: scorer name -> judgment records (to_dict); the judge calls that failed
    (ABSENT: the sample was not played); the conversation's model turns (ABSENT: not played); scorer name -> the
    record field of its value."""
    records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    failed: list[str] = absent()
    turns: list[int] = absent()
    value_fields: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, score: Any) -> "ScoreMetadata":
        """An inspect Score's metadata read back (empty where it has none)."""
        return cls.from_json(score.metadata or {})

    def unscored(self) -> int:
        """How many of its judgment records have no value."""
        return sum(r.get(self.value_fields[name]) is None for name, rows in self.records.items() for r in rows)


def parse_conditions(conditions: str | Sequence[str]) -> list[str]:
    """The task's ``conditions`` argument (comma-separated or a list; "all") as the suites' condition names."""
    items = [c.strip().lower() for c in (conditions.split(",") if isinstance(conditions, str) else conditions)]
    try:
        return resolve_conditions([c for c in items if c])
    except SuiteError as exc:
        raise ValueError(f"conditions: {exc}") from None


@dataclass
class SampleMeta(Record):
    """A sample's metadata: the job's query, condition, flow and moves, and the query's domain (an exported log's
    samples carry more: export.sample_metadata)."""
    query_id: str = ""
    condition: Optional[str] = None
    flow_id: Optional[str] = None
    moves: list[str] = field(default_factory=list)
    domain: Any = None


def samples_of(bench: Benchmark, jobs: Sequence[Job]) -> list[Sample]:
    """One sample per planned job (the suites' plan), its input the opening message exactly as sent."""
    return [Sample(id=j.conversation_id, input=j.prompt,
                   metadata=SampleMeta(j.query_id, j.condition, j.flow_id, list(j.moves),
                                       QueryColumns.from_json(bench.queries.get(j.query_id, {})).domain).to_json())
            for j in jobs]


def run_meta(bench: Benchmark, dataset: Optional[str], revision: Optional[str], conditions: Sequence[str],
             limit: Optional[int], subset: Optional[str], shared_turn1: bool, gen: RunGeneration,
             judge: JudgeSettings, skipped: Sequence[Any]) -> RunMeta:
    """The run.json the task plays by (its roles are the log's models, filled in by `carryon-eval import`)."""
    return RunMeta(carryonbench_version=__version__, created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                   dataset=DatasetRef(source=bench.source, revision=revision, kind=bench.kind, commit=bench.commit,
                                      manifest_sha256=_manifest_sha(bench), content_sha256=bench.fingerprint()),
                   generation=gen, judge=judge, conditions=list(conditions), limit=limit, shared_turn1=shared_turn1,
                   prompts={name: ref for s in suites() for name, ref in s.prompts().items()},
                   skipped=list(skipped), subset=subset if subset not in (None, "full") else None)


# ---------------------------------------------------------------- the solver
class _Memory:
    """What the rollout's player writes to, in memory instead of a run folder."""

    def __init__(self) -> None:
        self.done: dict[str, Transcript] = {}
        self.failed: dict[str, str] = {}

    def transcripts(self) -> list[Transcript]:
        return []

    def append(self, transcript: Transcript) -> None:
        self.done[transcript.conversation_id] = transcript

    def record_failure(self, conversation_id: str, reason: str) -> None:
        self.failed[conversation_id] = reason


class _Quiet:
    def advance(self) -> None:
        pass


class Conversations:
    """One task's rollout: the rollout's player on inspect's models, shared by every sample of the task (so
    that a query's turn-1 reply is generated once and shared by its conversations)."""

    def __init__(self, bench: Benchmark, jobs: Sequence[Job], gen: RunGeneration) -> None:
        self.bench, self.gen = bench, gen
        self.jobs = {j.conversation_id: j for j in jobs}
        self.memory = _Memory()
        self.player: Optional[Player] = None

    def _ready(self) -> Player:
        if self.player is None:       # inside the eval: its models and its event loop
            target, user = InspectEndpoint(get_model()), InspectEndpoint(get_model(role=USER_ROLE))
            simulator = UserSimulator(user, temperature=self.gen.user.temperature, max_tokens=self.gen.user.max_tokens)
            self.player = Player(self.bench, self.memory, target, simulator,  # type: ignore[arg-type]
                                  gen=self.gen.target, concurrency=1_000_000)
            self.player.bar = _Quiet()
        return self.player

    async def play(self, job: Job) -> None:
        """Play one job; a shared first reply is generated once, by whichever of its jobs comes first (its
        owner job, conversation_id == shares, is written with it, as the rollout does)."""
        player = self._ready()
        if job.shares is not None:
            if job.shares not in player.pending:
                player.pending[job.shares] = asyncio.ensure_future(
                    player.first_reply(job, self.jobs.get(job.shares)))
            await asyncio.shield(player.pending[job.shares])
            if job.conversation_id == job.shares:
                return
        await player.converse(job)


@solver
def play_conversation(conversations: Conversations) -> Any:
    """Play the sample's conversation (see the module docstring); the transcript goes into the sample's store."""
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        job = conversations.jobs[str(state.sample_id)]
        await conversations.play(job)
        done = conversations.memory.done.get(job.conversation_id)
        if done is None:
            reason = conversations.memory.failed.get(job.conversation_id, "the conversation was not finished")
            state.store.set(FAILURE_KEY, reason)
            state.completed = True
            return state
        state.messages = [_message(m) for m in done.messages]
        last = done.replies[-1].content if done.replies else ""
        state.output = ModelOutput.from_content(done.target_model, last)
        state.store.set(TRANSCRIPT_KEY, done.to_dict())
        return state
    return solve


# ---------------------------------------------------------------- the judges
@metric
def unscored_judgments() -> Metric:
    """How many judgments of the log are unscored (None): the numbers themselves come from the report."""
    def count(scores: list[SampleScore]) -> float:
        return float(sum(ScoreMetadata.of(s.score).unscored() for s in scores))
    return count


def value_fields(judges: "Judges") -> dict[str, str]:
    """ScoreMetadata's ``value_fields``: scorer name -> the record field of its value."""
    return {s.name: reply_shape(s).value_field for s in judges.scorers}


class Judges:
    """The project's scorers on the grader role, one judgment per distinct case per task."""

    def __init__(self, bench: Benchmark, settings: JudgeSettings, conditions: Sequence[str]) -> None:
        self.bench = bench
        self.scoring = ScoringPlan.of(conditions)          # which scorers judge which transcripts: the suites'
        self.scorers = reply_scorers(self.scoring.scorers, settings)
        self.grader: Optional[InspectEndpoint] = None
        self.asked: dict[tuple[str, Any], asyncio.Future[Any]] = {}

    async def judge(self, scorer: Any, case: Any) -> Any:
        assert self.grader is not None
        key = (scorer.name, case)
        if key not in self.asked:
            self.asked[key] = asyncio.ensure_future(scorer.score(self.grader, case))
        return await asyncio.shield(self.asked[key])

    async def records(self, tr: Transcript) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
        if self.grader is None:
            self.grader = InspectEndpoint(get_model(role=GRADER_ROLE), UsageLedger())
        mine = set(self.scoring.scorers_for(tr))
        wanted = [(s, target, case) for reply in tr.replies for s in self.scorers if s.name in mine
                  for target, case in s.cases(tr, reply, self.bench)]
        answers = await asyncio.gather(*(self.judge(s, case) for s, _, case in wanted), return_exceptions=True)
        out: dict[str, list[dict[str, Any]]] = {s.name: [] for s in self.scorers}
        failed = []
        for (s, target, _), answer in zip(wanted, answers):
            if isinstance(answer, BaseException):       # a failed call: the record is missing, as in the judge phase
                failed.append(f"{s.name} {target}: {answer}")
                continue
            out[s.name].append(record_row(reply_shape(s), target, answer, self.grader.config.model))
        return out, failed


# ---------------------------------------------------------------- the task's plan
def task_name(name: str) -> str:
    """A suite's task name as ``inspect eval`` takes it: inspect prefixes a task with its top-level package only when
    that is installed in site-packages (or as an editable install of a distribution of the same name); this
    package's distribution is "carryonbench", so an editable install names the task in full itself
    (``carryon_eval/<name>`` either way)."""
    return name if "site-packages" in __file__ else f"carryon_eval/{name}"


@dataclass(frozen=True)
class TaskPlan:
    """What a suite's task is built of: the dataset, its jobs and samples, the generation, the judges, run.json."""
    bench: Benchmark
    conditions: list[str]
    jobs: list[Job]
    gen: RunGeneration
    settings: JudgeSettings
    meta: RunMeta

    def dataset(self, name: str) -> MemoryDataset:
        return MemoryDataset(samples_of(self.bench, self.jobs), name=name, location=self.bench.source)

    def solver(self) -> Any:
        return play_conversation(Conversations(self.bench, self.jobs, self.gen))

    def judges(self) -> "Judges":
        return Judges(self.bench, self.settings, self.conditions)


def plan_task(dataset: Optional[str], revision: Optional[str], conditions: Optional[str | list[str]],
              subset: Optional[str], limit: Optional[int], shared_turn1: bool, seed: int, judge_format: str,
              scoring: dict[str, Any]) -> TaskPlan:
    """A task's arguments (see the suite's task) as its plan; ``scoring``: the judge settings of its suite's own."""
    conds = parse_conditions(conditions) if conditions is not None else list(default_conditions())
    limit = int(limit) if limit is not None else None
    bench = load_bench(dataset, revision, limit, subset)
    refuse_missing(bench, conds)
    jobs, skipped = plan_jobs(bench, conds, PlanSettings(shared_turn1=bool(shared_turn1)))
    gen = RunGeneration(target=Generation(temperature=defaults.TARGET_TEMPERATURE, seed=int(seed),
                                          max_tokens=defaults.TARGET_MAX_TOKENS),
                        user=Generation(temperature=defaults.USER_TEMPERATURE, seed=int(seed),
                                        max_tokens=defaults.USER_MAX_TOKENS))
    settings = JudgeSettings(max_tokens=defaults.JUDGE_MAX_TOKENS, judge_format=judge_format, scoring=scoring)
    meta = run_meta(bench, dataset, revision, conds, limit, subset, shared_turn1, gen, settings, skipped)
    return TaskPlan(bench, conds, jobs, gen, settings, meta)
