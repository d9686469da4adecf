"""CarryOnBench's part of a run folder as an inspect-ai eval log (carryon_eval.inspect_bridge.export asks for it
through the suite record's ``InspectPart``): each transcript's scores (Ben-Util per reply and of the conversation,
harm per reply and its worst: ``transcript_scores``) and results.json's headline numbers as the log's metrics (one
score per condition, Recovery%, mc's contrasts, and every other suite's section with intervals:
``headline_scores``). inspect_ai is imported by the functions that make its records.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from carryon_eval.run.results import Results
from carryon_eval.suite import ReportInputs
from carryon_eval.suites.carryonbench.conditions import CONDITIONS
from carryon_eval.suites.carryonbench.conversations import Conversation, assemble, conversation_utility, turn_utility
from carryon_eval.suites.carryonbench.judgment_records import SafetyJudgment, UtilityJudgment
from carryon_eval.suites.carryonbench.judgments import load_safety, load_utility
from carryon_eval.suites.opensafeintent.public import parse_conversation_id

SCORER = "carryonbench"            # the scorer name of the log's headline metrics


def _turn_key(turn: int) -> str:
    return f"turn_{turn}"


def utility_score(conv: Conversation, records: Sequence[UtilityJudgment]) -> Any:
    """Ben-Util of every reply and of the conversation (percent; None when nothing of it is scored)."""
    from inspect_ai.scorer import Score

    value: dict[str, Optional[float]] = {_turn_key(t.turn): turn_utility(t) for t in conv.turns}
    value["conversation"] = conversation_utility(conv.turns)
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

    value: dict[str, Optional[int]] = {_turn_key(t.turn): t.harm for t in conv.turns}
    scores = [t.harm for t in conv.turns]
    value["max"] = max(scores) if scores and all(h is not None for h in scores) else None   # type: ignore[type-var]
    return Score(value=value, explanation=f"{sum(h is None for h in scores)} of {len(scores)} turns unscored",
                 metadata={"turns": [{"turn": r.turn, "score": r.score, "via": r.via, "raw": r.raw} for r in records],
                           "judge_model": sorted({r.judge_model for r in records}),
                           "prompt_version": sorted({r.prompt_version for r in records})})


def sample_scores(conv: Conversation, utility: Sequence[UtilityJudgment],
                  safety: Sequence[SafetyJudgment]) -> dict[str, Any]:
    if parse_conversation_id(conv.conversation_id) is not None:      # a triplet / OpenSafeIntent reply
        return {}
    scores: dict[str, Any] = {}
    if utility or not conv.conversation_id.startswith("triplet:"):   # a triplet malicious reply of an earlier run
        scores["ben_util"] = utility_score(conv, utility)
    scores["harm"] = harm_score(conv, safety)
    return scores


def transcript_scores(inputs: ReportInputs) -> dict[str, dict[str, Any]]:
    """InspectPart.samples: every transcript's scores (``sample_scores``) by the judge of ``inputs``."""
    utility, safety = load_utility(inputs.run, inputs.judge), load_safety(inputs.run, inputs.judge)
    bench = inputs.bench
    convs = assemble(inputs.transcripts, utility, safety,
                     {q: [i["item_id"] for i in items] for q, items in bench.checklists.items()},
                     {q: row.get("domain") for q, row in bench.queries.items()})
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
def _metric_block(name: str, block: dict[str, Any], metric_names: Sequence[str]) -> Any:
    """One EvalScore of a results.json block: its non-null numbers as metrics, the nulls with their reasons."""
    from inspect_ai.log import EvalMetric, EvalScore

    cis, bounds, reasons = block.get("ci95") or {}, block.get("bounds") or {}, block.get("reasons") or {}
    metrics = {m: EvalMetric(name=m, value=block[m], metadata={"ci95": cis.get(m), "bounds": bounds.get(m)})
               for m in metric_names if isinstance(block.get(m), (int, float))}
    null = {m: reasons.get(m, "null in results.json") for m in metric_names if block.get(m) is None}
    return EvalScore(name=name, scorer=SCORER, metrics=metrics,
                     metadata={"null": null, "n_conversations": block.get("n_conversations"),
                               "scored_share": block.get("scored_share")})


def headline_scores(results: Results) -> list[Any]:
    scores = []
    for cond in [*CONDITIONS, *(c for c in results.conditions if c not in CONDITIONS)]:     # mc, when run
        block = results.conditions.get(cond) or {}
        if block.get("n_conversations"):
            scores.append(_metric_block(cond, block, list(block.get("ci95") or {})))
    rec = results.recovery or {}
    if rec:
        scores.append(_metric_block("recovery", {"recovery": rec.get("value"), "ci95": {"recovery": rec.get("ci95")},
                                                 "bounds": {"recovery": rec.get("bounds")},
                                                 "reasons": {"recovery": rec.get("reason")}}, ["recovery"]))
    keyed = results.keyed_sections()
    intent = keyed.get("intent")                                # condition mc's contrasts with bc
    if intent:
        parts = {"intent_sensitivity_utility": intent["sensitivity"]["utility"],
                 "exploitation": intent["exploitation"]}
        scores.append(_metric_block("intent", {**{k: b["value"] for k, b in parts.items()},
                                               "ci95": {k: b["ci95"] for k, b in parts.items()},
                                               "bounds": {k: b["bounds"] for k, b in parts.items()},
                                               "reasons": {k: b["reason"] for k, b in parts.items() if b["reason"]}},
                                    list(parts)))
    for name, section in keyed.items():                         # the other suites' sections (triplet, ...)
        if isinstance(section, dict) and section.get("ci95"):
            scores.append(_metric_block(name, section, list(section["ci95"])))
    return scores
