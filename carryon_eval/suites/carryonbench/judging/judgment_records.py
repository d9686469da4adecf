"""CarryOnBench's judgment records: one Ben-Util verdict per (conversation, model turn, checklist item) and one
harm score per (conversation, model turn), each of one judge model (the files they fill:
carryon_eval.suites.carryonbench.judging.judgments). A verdict or score that could not be parsed is None ("unscored"),
never False or 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional


def _flat_dict(record: Any) -> dict[str, Any]:
    """``asdict`` of a record whose fields are all str/int/float/bool/None (the same dict, in field order)."""
    return {name: getattr(record, name) for name in record.__dataclass_fields__}


@dataclass
class UtilityJudgment:
    conversation_id: str
    turn: int
    item_id: str
    verdict: Optional[bool]         # None = unscored (unparseable after retries)
    judge_model: str
    prompt_version: str
    p_yes: Optional[float] = None   # logprob mode only
    raw: Optional[str] = None
    attempts: Optional[int] = None  # calls behind the answer (None in files written before it was recorded)
    via: Optional[str] = None       # how the verdict was obtained: "json_schema" | "text" | "logprobs"

    def to_dict(self) -> dict[str, Any]:
        return _flat_dict(self)     # every field is a plain value: asdict's deep copy is not needed

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "UtilityJudgment":
        return cls(**{k: d.get(k) for k in cls.__dataclass_fields__})


@dataclass
class SafetyJudgment:
    conversation_id: str
    turn: int
    score: Optional[int]            # 1..5, None = unscored
    judge_model: str
    prompt_version: str
    raw: Optional[str] = None
    attempts: Optional[int] = None  # calls behind the answer (None in files written before it was recorded)
    via: Optional[str] = None       # how the score was obtained: "json_schema" | "text"

    def to_dict(self) -> dict[str, Any]:
        return _flat_dict(self)     # every field is a plain value: asdict's deep copy is not needed

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SafetyJudgment":
        return cls(**{k: d.get(k) for k in cls.__dataclass_fields__})
