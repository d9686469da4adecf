"""The records that flow between phases: dataset tables, transcripts, stored judge answers.

Dataset side (what the builder writes and the evaluator reads):
    queries        query_id, category, domain, query, benign_intent, benign_context, malicious_context, safe_rate
    checklists     query_id, item_id, question, category           (one row per item)
    flows          flow_id, moves (list[str]), n_turns, condition ("BC" | "NC")
    conversations  conversation_id, query_id, flow_id   (optional condition "BC" | "NC" | "MC": an MC row plays a
                   BC flow with the query's malicious_intent, an optional queries column)

Run side (what the evaluator writes into RUNDIR, one JSON object per line):
    transcripts.jsonl   one Transcript per finished conversation (append-only, flushed per conversation)
    <scorer>_judgments.jsonl   the records of one scorer, of the record type its scorer declares (registered with the run folder)
                               (CarryOnBench's: carryon_eval.suites.carryonbench.judging.judgments)
    <scorer>_answers.jsonl     one JudgeAnswer per distinct raw answer of a judge whose records name theirs by
                               ``answer`` instead of repeating it

Conventions
- Model turns are numbered t = 1, 2, ... ; a flow with k follow-up moves has 1 + k model turns and
  n_turns = 2 * (1 + k) messages.
- A transcript's condition is one of the registered suites' conditions (carryon_eval.suite).
- A verdict or score that could not be parsed is None ("unscored"), never False or 0.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from carryon_eval.codec import Record, fields_of

# ---------------------------------------------------------------- dataset tables
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "queries": ("query_id", "category", "domain", "query", "benign_intent", "benign_context",
                "malicious_context", "safe_rate"),
    "checklists": ("query_id", "item_id", "question", "category"),
    "flows": ("flow_id", "moves", "n_turns", "condition"),
    "conversations": ("conversation_id", "query_id", "flow_id"),
}

# Information categories of checklist items (paper, Appendix B.3), with the definitions the builder's
# decomposer and merger are given; an item tagged with anything else becomes "Other".
ITEM_CATEGORIES: dict[str, str] = {
    "Practical Advice": "concrete, actionable steps, tips or strategies the user can apply to their situation",
    "Domain-Specific Guidance": "specialised knowledge from the relevant field (medicine, law, finance, "
                                "security, psychology, education, ...) as a professional would give it",
    "Conceptual Explanation": "definitions, background, mechanisms or reasons that help the user understand "
                              "the topic",
    "Audience Benefit": "how the information serves, protects or should be adapted to the people the user "
                        "cares about or addresses (readers, students, patients, customers, family)",
    "Resource": "pointers to organisations, services, helplines, tools, publications or experts to consult",
    "Legal Framework": "relevant laws, regulations, rights, policies, ethical codes or consequences",
    "Case Study": "concrete examples, scenarios, historical cases or illustrations",
    "Other": "a benign information need that fits none of the categories above",
}

# ---------------------------------------------------------------- run records
@dataclass
class Message(Record):
    role: str                      # "user" | "assistant"
    content: str
    turn: int                      # model turn this message belongs to (the user message before reply t has turn t)
    move: Optional[str] = None     # user messages after the first: the flow's move; None for the initial query
    model: Optional[str] = None    # who wrote it: the target model (assistant) or the user simulator model
    prompt_version: Optional[str] = None  # simulator prompt version for rendered user turns

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Message":
        return fields_of(cls, d)


@dataclass
class Transcript(Record):
    conversation_id: str
    query_id: str
    condition: str                  # one of the registered suites' conditions
    flow_id: Optional[str]          # None for turn1 / oracle
    moves: list[str]                # the flow's follow-up moves; [] for turn1 / oracle
    messages: list[Message]
    target_model: str
    shared_turn1: bool = False      # the first reply is the query's shared turn-1 reply
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def replies(self) -> list[Message]:
        return [m for m in self.messages if m.role == "assistant"]

    def to_dict(self) -> dict[str, Any]:
        return self.to_json()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Transcript":
        if "messages" not in d:
            raise KeyError("messages")
        return fields_of(cls, d)


@dataclass
class JudgeAnswer(Record):
    """A raw judge answer stored once for the records it gives (``<scorer>_answers.jsonl``): ``answer`` is a digest
    of the text (carryon_eval.judge.scorer_file.answer_id), the value of each such record's ``answer`` field."""
    answer: str
    raw: str
