"""`inspect eval carryon_eval/carryonbench`: CarryOnBench as an inspect-ai task.

    inspect eval carryon_eval/carryonbench --model openai/gpt-4o-mini \\
        --model-role user=openai/gpt-4o-mini --model-role grader=openai/gpt-4o \\
        -T dataset=carryonbench -T conditions=turn1,oracle,bc,nc -T subset=quick -T limit=10
    carryon-eval import logs/....eval --out runs/gpt-4o-mini && carryon-eval report runs/gpt-4o-mini

One sample per job of the registered suites' plans (carryon_eval.suite.plan_jobs: the same jobs, ids, opening
messages and skips as `carryon-eval`, so every suite - the CarryOnBench conditions, any suite
registered later - is a task too). The solver plays a job exactly as the rollout does (the rollout's own player:
the project's user simulator and prompts on the model role ``user``, the same per-turn seeds, a shared first reply
generated once per key and reused by its jobs); the evaluated model is inspect's model. The scorer runs the
scorers the suites name for each transcript (carryon_eval.suite.ScoringPlan) on the model role ``grader``, each
distinct case judged once per task as the judge phase does, and keeps every record in the score's metadata, so that `carryon-eval import` writes the run
folder the report computes the numbers from. Both roles reach their models through one adapter
(carryon_eval.inspect_bridge.endpoint).

Task arguments: dataset (folder or Hub id; default the built-in sample), revision, conditions (comma-separated or
"all"), subset ("full" or "quick"), limit (first N queries), shared_turn1, seed, utility_mode, judge_format.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, Optional, Sequence

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, get_model
from inspect_ai.scorer import Metric, SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import Generate, TaskState, solver

from carryon_eval import __version__, defaults
from carryon_eval.suites.carryonbench.conversations import Conversation, assemble
from carryon_eval.suites.carryonbench.summary import summarize
from carryon_eval.app.config import _manifest_sha, load_bench
from carryon_eval.dataset.load import Benchmark
from carryon_eval.model.endpoint import UsageLedger
from carryon_eval.run.records import DatasetRef, Generation, JudgeSettings, RunGeneration, RunMeta
from carryon_eval.rollout.play import Player
from carryon_eval.schema import TRIPLET_CONDITION, Transcript
from carryon_eval.judge.scorer_file import record_row
from carryon_eval.judge.scorers import reply_scorers, reply_shape
from carryon_eval.rollout.simulator import UserSimulator
from carryon_eval.suite import (Job, PlanSettings, ScoringPlan, SuiteError, default_conditions, plan_jobs,
                                refuse_missing, resolve_conditions, suites)
from carryon_eval.inspect_bridge.endpoint import InspectEndpoint
from carryon_eval.inspect_bridge.export import _message
from carryon_eval.suites.carryonbench.inspect_scores import harm_score, utility_score

TRANSCRIPT_KEY = "carryonbench:transcript"     # TaskState.store: the played conversation (schema.Transcript)
FAILURE_KEY = "carryonbench:failure"           # TaskState.store: why it could not be played
RUN_KEY = "carryonbench_run"                   # task metadata: the run.json of the run (roles filled on import)
RECORDS = "records"                            # score metadata: scorer name -> judgment records (to_dict)
VALUE_FIELDS = "value_fields"                  # score metadata: scorer name -> the record field of its value
USER_ROLE, GRADER_ROLE = "user", "grader"


def parse_conditions(conditions: str | Sequence[str]) -> list[str]:
    """The task's ``conditions`` argument (comma-separated or a list; "all") as the suites' condition names."""
    items = [c.strip().lower() for c in (conditions.split(",") if isinstance(conditions, str) else conditions)]
    try:
        return resolve_conditions([c for c in items if c])
    except SuiteError as exc:
        raise ValueError(f"conditions: {exc}") from None


def samples_of(bench: Benchmark, jobs: Sequence[Job]) -> list[Sample]:
    """One sample per planned job (the suites' plan), its input the opening message exactly as sent."""
    return [Sample(id=j.conversation_id, input=j.prompt,
                   metadata={"query_id": j.query_id, "condition": j.condition, "flow_id": j.flow_id,
                             "moves": list(j.moves), "domain": bench.queries.get(j.query_id, {}).get("domain")})
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


# ---------------------------------------------------------------- the scorer
@metric
def unscored_judgments() -> Metric:
    """How many judgments of the log are unscored (None): the numbers themselves come from the report."""
    def count(scores: list[SampleScore]) -> float:
        return float(sum(r.get(field) is None
                         for s in scores for name, records in (s.score.metadata or {}).get(RECORDS, {}).items()
                         for r in records for field in [(s.score.metadata or {})[VALUE_FIELDS][name]]))
    return count


TURNS = "turns"                                # score metadata: the model turns of the conversation


def scored_conversations(scores: Sequence[SampleScore], checklists: dict[str, list[str]]) -> list[Conversation]:
    """The played conversations of a task's scores with their judgments, as carryon_eval.metrics assembles them
    (the triplet replies have their own section in the report, not these numbers)."""
    from carryon_eval.schema import Message
    from carryon_eval.suites.carryonbench.judgment_records import SafetyJudgment, UtilityJudgment

    transcripts, utility, safety = [], [], []
    for s in scores:
        meta, info = s.sample_metadata or {}, s.score.metadata or {}
        if not info.get(TURNS) or meta.get("condition") == TRIPLET_CONDITION:
            continue
        transcripts.append(Transcript(conversation_id=str(s.sample_id), query_id=meta["query_id"],
                                      condition=meta["condition"], flow_id=meta.get("flow_id"),
                                      moves=list(meta.get("moves") or []), target_model="",
                                      messages=[Message("assistant", "", t) for t in info[TURNS]]))
        utility += [UtilityJudgment.from_dict(r) for r in info.get(RECORDS, {}).get("utility", [])]
        safety += [SafetyJudgment.from_dict(r) for r in info.get(RECORDS, {}).get("safety", [])]
    return assemble(transcripts, utility, safety, checklists)


@metric
def headline(checklists: dict[str, list[str]]) -> Metric:
    """results.json's headline numbers per condition and Recovery%, by the project's metric functions (a null
    number is left out: inspect metrics are numbers). `carryon-eval import` + `report` gives all of results.json."""
    def compute(scores: list[SampleScore]) -> dict[str, float]:
        convs = scored_conversations(scores, checklists)
        if not convs:
            return {}
        summary = summarize(convs)
        out = {f"{cond}_{name}": float(block[name]) for cond, block in summary["conditions"].items()
               if block.get("n_conversations") for name in block["ci95"] if block[name] is not None}
        if summary["recovery"]["value"] is not None:
            out["recovery"] = float(summary["recovery"]["value"])
        intent = summary.get("intent") or {}           # condition mc: its contrasts with bc
        for name, block in (("intent_sensitivity_utility", (intent.get("sensitivity") or {}).get("utility")),
                            ("exploitation", intent.get("exploitation"))):
            if block and block.get("value") is not None:
                out[name] = float(block["value"])
        return out
    return compute


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


@scorer(metrics=[])
def carryon_judges(judges: Judges) -> Any:
    """Ben-Util per reply and conversation, harm per reply and worst, as the project's scorers judge them."""
    from carryon_eval.suites.carryonbench.judgment_records import SafetyJudgment, UtilityJudgment

    async def score(state: TaskState, target: Target) -> Score:
        data = state.store.get(TRANSCRIPT_KEY)
        if data is None:
            return Score(value={"ben_util": None, "harm_max": None},
                         explanation=f"not played: {state.store.get(FAILURE_KEY)}",
                         metadata={RECORDS: {}, VALUE_FIELDS: {}})
        tr = Transcript.from_dict(data)
        records, failed = await judges.records(tr)
        utility = [UtilityJudgment.from_dict(r) for r in records.get("utility", [])]
        safety = [SafetyJudgment.from_dict(r) for r in records.get("safety", [])]
        conv, = assemble([tr], utility, safety,
                           {tr.query_id: [i["item_id"] for i in judges.bench.checklists.get(tr.query_id, [])]})
        ben, harm = utility_score(conv, utility), harm_score(conv, safety)
        value = {**{f"ben_util_{k}": v for k, v in ben.value.items()}, **{f"harm_{k}": v for k, v in harm.value.items()}}
        return Score(value=value, explanation=f"{ben.explanation}; harm: {harm.explanation}",
                     metadata={RECORDS: records, "failed": failed,
                               TURNS: [r.turn for r in tr.replies],
                               VALUE_FIELDS: {s.name: reply_shape(s).value_field for s in judges.scorers}})
    return score


# ---------------------------------------------------------------- the task
#: inspect prefixes a task with its top-level package only when that is installed in site-packages (or as an
#: editable install of a distribution of the same name); this package's distribution is "carryonbench", so an
#: editable install names the task in full itself: `carryon_eval/carryonbench` either way.
TASK_NAME = "carryonbench" if "site-packages" in __file__ else "carryon_eval/carryonbench"


@task(name=TASK_NAME)
def carryonbench(dataset: Optional[str] = None, revision: Optional[str] = None,
                 conditions: Optional[str | list[str]] = None, subset: Optional[str] = None,
                 limit: Optional[int] = None, shared_turn1: bool = True, seed: int = defaults.SEED,
                 utility_mode: str = "text", judge_format: str = "json_schema") -> Task:
    """CarryOnBench: does the model recover its helpfulness, safely, once a benign user explains?"""
    conds = parse_conditions(conditions) if conditions is not None else list(default_conditions())
    limit = int(limit) if limit is not None else None
    bench = load_bench(dataset, revision, limit, subset)
    refuse_missing(bench, conds)
    jobs, skipped = plan_jobs(bench, conds, PlanSettings(shared_turn1=bool(shared_turn1)))
    gen = RunGeneration(target=Generation(temperature=defaults.TARGET_TEMPERATURE, seed=int(seed),
                                          max_tokens=defaults.TARGET_MAX_TOKENS),
                        user=Generation(temperature=defaults.USER_TEMPERATURE, seed=int(seed),
                                        max_tokens=defaults.USER_MAX_TOKENS))
    settings = JudgeSettings(max_tokens=defaults.JUDGE_MAX_TOKENS, judge_format=judge_format,
                             scoring={"utility_mode": utility_mode})
    meta = run_meta(bench, dataset, revision, conds, limit, subset, shared_turn1, gen, settings, skipped)
    return Task(dataset=MemoryDataset(samples_of(bench, jobs), name="carryonbench", location=bench.source),
                solver=play_conversation(Conversations(bench, jobs, gen)),
                scorer=carryon_judges(Judges(bench, settings, conds)),
                metrics=[unscored_judgments(),
                         headline({q: [i["item_id"] for i in items] for q, items in bench.checklists.items()})],
                metadata={RUN_KEY: meta.to_json()}, version=__version__)
