"""`inspect eval carryon_eval/carryonbench`: CarryOnBench as an inspect-ai task (the suite record's
``InspectPart.task``, which the package's ``inspect_ai`` entry point imports).

    inspect eval carryon_eval/carryonbench --model openai/gpt-4o-mini \\
        --model-role user=openai/gpt-4o-mini --model-role grader=openai/gpt-4o \\
        -T dataset=carryonbench -T conditions=turn1,oracle,bc,nc -T subset=quick -T limit=10
    carryon-eval import logs/....eval --out runs/gpt-4o-mini && carryon-eval report runs/gpt-4o-mini

One sample per job of the registered suites' plans, played by the rollout's own player and judged by the scorers
the suites name (carryon_eval.inspect_bridge.task: the stage's parts). This module adds what is CarryOnBench's: the
score of a sample (Ben-Util per reply and of the conversation, harm per reply and its worst) and the log's
headline metrics (per condition, Recovery%, mc's contrasts), by the project's metric functions.

Task arguments: dataset (folder or Hub id; default the built-in sample), revision, conditions (comma-separated or
"all"), subset ("full" or "quick"), limit (first N queries), shared_turn1, seed, utility_mode, judge_format.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from inspect_ai import Task, task
from inspect_ai.scorer import Metric, SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import TaskState

from carryon_eval import __version__, defaults
from carryon_eval.inspect_bridge.task import (FAILURE_KEY, RUN_KEY, TRANSCRIPT_KEY, Judges, SampleMeta, ScoreMetadata,
                                              plan_task, task_name, unscored_judgments, value_fields)
from carryon_eval.schema import Message, Transcript
from carryon_eval.suites.carryonbench.conditions import CONDITIONS, MC_CONDITION
from carryon_eval.suites.carryonbench.metrics.conversations import Conversation, assemble
from carryon_eval.suites.carryonbench.inspect_eval.scores import harm_score, utility_score
from carryon_eval.suites.carryonbench.judging.judgments import SafetyJudgment, UtilityJudgment
from carryon_eval.suites.carryonbench.metrics.condition import known
from carryon_eval.suites.carryonbench.section import CarryOnBenchSection
from carryon_eval.suites.carryonbench.metrics.headline import summarize_records

NAME = "carryonbench"
OWN_CONDITIONS = (*CONDITIONS, MC_CONDITION)      # the samples its numbers stand on (other suites have sections)


def _judgments(records: dict[str, list[dict[str, Any]]]) -> tuple[list[UtilityJudgment], list[SafetyJudgment]]:
    return ([UtilityJudgment.from_dict(r) for r in records.get("utility", [])],
            [SafetyJudgment.from_dict(r) for r in records.get("safety", [])])


def scored_conversations(scores: Sequence[SampleScore], checklists: dict[str, list[str]]) -> list[Conversation]:
    """The played conversations of a task's scores with their judgments, as the metric functions assemble them
    (the other suites' replies have their own sections in the report, not these numbers)."""
    transcripts, utility, safety = [], [], []
    for s in scores:
        meta, info = SampleMeta.from_json(s.sample_metadata or {}), ScoreMetadata.of(s.score)
        if not info.turns or meta.condition not in OWN_CONDITIONS:
            continue
        transcripts.append(Transcript(conversation_id=str(s.sample_id), query_id=meta.query_id,
                                      condition=meta.condition, flow_id=meta.flow_id,
                                      moves=list(meta.moves or []), target_model="",
                                      messages=[Message("assistant", "", t) for t in info.turns]))
        mine = _judgments(info.records)
        utility += mine[0]
        safety += mine[1]
    return assemble(transcripts, utility, safety, checklists)


@metric
def headline(checklists: dict[str, list[str]]) -> Metric:
    """results.json's headline numbers per condition and Recovery%, by the project's metric functions (a null
    number is left out: inspect metrics are numbers). `carryon-eval import` + `report` gives all of results.json."""
    def compute(scores: list[SampleScore]) -> dict[str, float]:
        convs = scored_conversations(scores, checklists)
        if not convs:
            return {}
        section = CarryOnBenchSection(**summarize_records(convs))
        out = {f"{cond}_{name}": float(block.value(name)) for cond, block in section.conditions.items()
               if known(block.n_conversations) for name in block.names if block.value(name) is not None}
        recovery = section.recovery.number
        if recovery.value is not None:
            out["recovery"] = float(recovery.value)
        return out
    return compute


@scorer(metrics=[])
def carryon_judges(judges: Judges) -> Any:
    """Ben-Util per reply and conversation, harm per reply and worst, as the project's scorers judge them."""
    async def score(state: TaskState, target: Target) -> Score:
        data = state.store.get(TRANSCRIPT_KEY)
        if data is None:
            return Score(value={"ben_util": None, "harm_max": None},
                         explanation=f"not played: {state.store.get(FAILURE_KEY)}",
                         metadata=ScoreMetadata().to_json())
        tr = Transcript.from_dict(data)
        records, failed = await judges.records(tr)
        utility, safety = _judgments(records)
        conv, = assemble([tr], utility, safety,
                         {tr.query_id: [i["item_id"] for i in judges.bench.checklists.get(tr.query_id, [])]})
        ben, harm = utility_score(conv, utility), harm_score(conv, safety)
        value = {**{f"ben_util_{k}": v for k, v in ben.value.items()}, **{f"harm_{k}": v for k, v in harm.value.items()}}
        return Score(value=value, explanation=f"{ben.explanation}; harm: {harm.explanation}",
                     metadata=ScoreMetadata(records, failed, [r.turn for r in tr.replies],
                                            value_fields(judges)).to_json())
    return score


@task(name=task_name(NAME))
def carryonbench(dataset: Optional[str] = None, revision: Optional[str] = None,
                 conditions: Optional[str | list[str]] = None, subset: Optional[str] = None,
                 limit: Optional[int] = None, shared_turn1: bool = True, seed: int = defaults.SEED,
                 utility_mode: str = "text", judge_format: str = "json_schema") -> Task:
    """CarryOnBench: does the model recover its helpfulness, safely, once a benign user explains?"""
    plan = plan_task(dataset, revision, conditions, subset, limit, shared_turn1, seed, judge_format,
                     scoring={"utility_mode": utility_mode})
    return Task(dataset=plan.dataset(NAME), solver=plan.solver(), scorer=carryon_judges(plan.judges()),
                metrics=[unscored_judgments(),
                         headline({q: [i["item_id"] for i in items] for q, items in plan.bench.checklists.items()})],
                metadata={RUN_KEY: plan.meta.to_json()}, version=__version__)
