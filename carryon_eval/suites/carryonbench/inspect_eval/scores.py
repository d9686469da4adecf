"""CarryOnBench's part of a run folder as an inspect-ai eval log (carryon_eval.inspect_bridge.export asks for it
through the suite record's ``InspectPart``): each transcript's scores (Ben-Util per reply and of the conversation,
harm per reply and its worst: ``transcript_scores``) and results.json's headline numbers as the log's metrics (one
score per condition, Recovery%, mc's contrasts, and every other suite's section with intervals:
``headline_scores``). inspect_ai is imported by the functions that make its records.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Optional, Sequence

from carryon_eval.dataset.rows import keys
from carryon_eval.metrics.number import BOUNDS, INTERVAL, SCORED_SHARE, MetricBlock, Number
from carryon_eval.run.results import Results
from carryon_eval.suite import ReportInputs
from carryon_eval.suites.carryonbench.metrics.condition import known
from carryon_eval.suites.carryonbench.conditions import CONDITIONS
from carryon_eval.suites.carryonbench.metrics.intent import IntentNumber
from carryon_eval.suites.carryonbench.section import FURTHER, read
from carryon_eval.suites.carryonbench.metrics.conversations import Conversation, assemble, conversation_utility, turn_utility
from carryon_eval.suites.carryonbench.judging.judgments import SafetyJudgment, UtilityJudgment, load_safety, load_utility
from carryon_eval.suites.opensafeintent.public import parse_conversation_id

SCORER = "carryonbench"            # the scorer name of the log's headline metrics
N_CONVERSATIONS = "n_conversations"     # another suite's section: the conversations its numbers stand on


def _turn_key(turn: int) -> str:
    return f"turn_{turn}"


def utility_score(conv: Conversation, records: Sequence[UtilityJudgment]) -> Any:
    """Ben-Util of every reply and of the conversation (percent; None when nothing of it is scored)."""
    from inspect_ai.scorer import Score

    value: dict[str, Optional[float]] = {**{_turn_key(t.turn): turn_utility(t) for t in conv.turns},
                                         "conversation": conversation_utility(conv.turns)}
    items = [{"turn": r.turn, "item_id": r.item_id, "verdict": r.verdict, "p_yes": r.p_yes, "via": r.via,
              "raw": r.raw} for r in records]
    unscored = sum(r.verdict is None for r in records)
    return Score(value=value, answer=None,
                 explanation=f"{len(records)} item verdicts, {unscored} unscored",
                 metadata={"items": items, "judge_model": sorted({r.judge_model for r in records}),
                           "prompt_version": sorted({r.prompt_version for r in records})})


def harm_score(conv: Conversation, records: Sequence[SafetyJudgment]) -> Any:
    """Harm (1-5) of every reply and the conversation's worst, which needs every turn scored."""
    from inspect_ai.scorer import Score

    scores = [t.harm for t in conv.turns]
    worst = max(scores) if scores and all(h is not None for h in scores) else None   # type: ignore[type-var]
    value: dict[str, Optional[int]] = {**{_turn_key(t.turn): t.harm for t in conv.turns}, "max": worst}
    return Score(value=value, explanation=f"{sum(h is None for h in scores)} of {len(scores)} turns unscored",
                 metadata={"turns": [{"turn": r.turn, "score": r.score, "via": r.via, "raw": r.raw} for r in records],
                           "judge_model": sorted({r.judge_model for r in records}),
                           "prompt_version": sorted({r.prompt_version for r in records})})


def sample_scores(conv: Conversation, utility: Sequence[UtilityJudgment],
                  safety: Sequence[SafetyJudgment]) -> dict[str, Any]:
    if parse_conversation_id(conv.conversation_id) is not None:      # a triplet / OpenSafeIntent reply
        return {}
    # a triplet malicious reply of an earlier run (judged for harm only) has no Ben-Util score
    ben_util = bool(utility) or not conv.conversation_id.startswith("triplet:")
    return {**({"ben_util": utility_score(conv, utility)} if ben_util else {}), "harm": harm_score(conv, safety)}


def transcript_scores(inputs: ReportInputs) -> dict[str, dict[str, Any]]:
    """InspectPart.samples: every transcript's scores (``sample_scores``) by the judge of ``inputs``."""
    utility, safety = load_utility(inputs.run, inputs.judge), load_safety(inputs.run, inputs.judge)
    convs = assemble(inputs.transcripts, utility, safety,     # (their domains: no score shows them)
                     {q: [keys(i).item_id for i in items] for q, items in inputs.bench.checklists.items()})
    by_utility, by_safety = _by_conversation(utility), _by_conversation(safety)
    return {t.conversation_id: sample_scores(c, by_utility.get(t.conversation_id, []),
                                             by_safety.get(t.conversation_id, []))
            for t, c in zip(inputs.transcripts, convs)}


def _by_conversation(records: Sequence[Any]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for r in records:
        out.setdefault(r.conversation_id, []).append(r)
    return out


# ---------------------------------------------------------------- the log's metrics
def _metric_block(name: str, numbers: Mapping[str, Number], n_conversations: Optional[int] = None,
                  scored_share: Any = None) -> Any:
    """One EvalScore of some numbers: the non-null ones as metrics, the nulls with their reasons."""
    from inspect_ai.log import EvalMetric, EvalScore

    metrics = {m: EvalMetric(name=m, value=n.value, metadata={INTERVAL: n.ci95, BOUNDS: n.bounds})
               for m, n in numbers.items() if isinstance(n.value, (int, float))}
    null = {m: n.reason or "null in results.json" for m, n in numbers.items() if n.value is None}
    return EvalScore(name=name, scorer=SCORER, metrics=metrics,
                     metadata={"null": null, "n_conversations": n_conversations, SCORED_SHARE: scored_share})


def headline_scores(results: Results) -> list[Any]:
    section = read(results)
    scores = []
    for cond in [*CONDITIONS, *(c for c in section.conditions if c not in CONDITIONS)]:     # mc, when run
        block = section.conditions.get(cond)
        if block is not None and known(block.n_conversations):
            scores.append(_metric_block(cond, {m: block.number(m) for m in block.metrics.ci95},
                                        block.n_conversations, known(block.scored_share)))
    if section.recovery.to_json():
        rec = section.recovery.number
        scores.append(_metric_block("recovery", {"recovery": replace(rec, scored_share=None)}))
    if section.intent is not None:                          # condition mc's contrasts with bc
        sensitivity = (known(section.intent.sensitivity) or {}).get("utility") or IntentNumber()
        scores.append(_metric_block("intent", {"intent_sensitivity_utility": sensitivity.number,
                                               "exploitation": section.intent.part("exploitation").number}))
    for name, other in results.keyed_sections().items():     # the other suites' sections (triplet, ...)
        if name not in FURTHER and isinstance(other, dict) and other.get(INTERVAL):
            block = MetricBlock.from_json(other)
            scores.append(_metric_block(name, {m: block.number(m) for m in block.names},
                                        other.get(N_CONVERSATIONS), other.get(SCORED_SHARE)))
    return scores
