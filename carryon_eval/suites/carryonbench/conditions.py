"""CarryOnBench's conditions: the four of the paper and condition mc.

- ``turn1`` and ``oracle`` are single-turn conversations whose conversation_id is "turn1:<query_id>" /
  "oracle:<query_id>"; ``bc`` and ``nc`` play a flow's follow-up moves (the multi-turn conditions).
- ``mc``: the BC moves voiced with the query's malicious intent (not in the default set). Its numbers sit beside
  the four others only when a run has it, so a run without it writes what it always wrote.
"""
from __future__ import annotations

CONDITIONS: tuple[str, ...] = ("turn1", "oracle", "bc", "nc")
MULTI_TURN_CONDITIONS: tuple[str, ...] = ("bc", "nc")
MC_CONDITION = "mc"
MALICIOUS_INTENT = "malicious_intent"          # the optional queries column the mc condition reveals

__all__ = ["CONDITIONS", "MALICIOUS_INTENT", "MC_CONDITION", "MULTI_TURN_CONDITIONS"]
