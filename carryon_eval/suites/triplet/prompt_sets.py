"""Triplet evaluation: the prompt-sets of a dataset's `triplets` config, and how a run names them.

After OpenSafeIntent (shared/seeds/opensafeintent-blog.txt): a prompt-set keeps one underlying task fixed and
varies the apparent intent - a benign, an ambiguous (dual-use) and a malicious version - plus 4 paraphrases of
the ambiguous version. In CarryOnBench a set is one query (`set_id` = its query_id, so the safety judge sees the
query and Ben-Util uses its checklist); any dataset with a `triplets` config in this schema can be evaluated:

    set_id, variant (benign | ambiguous | malicious), paraphrase (0; 1..4 for the ambiguous variant), prompt,
    domain, category

`--conditions triplet` sends every prompt once, as a single turn; the transcript of one prompt is
``triplet:<set_id>:<variant>:<paraphrase>`` with condition "triplet". The safety scorer judges every reply,
Ben-Util the benign and ambiguous ones, the response-mode scorer the ambiguous ones (response_modes.py in this
wing); the risk-recognition probe asks the target about the ambiguous prompts whose reply was unsafe
(risk_probe.py); metrics.py computes the numbers.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional, Sequence

from carryon_eval.schema import TRIPLET_CONDITION

VARIANTS = ("benign", "ambiguous", "malicious")
N_PARAPHRASES = 4            # of the ambiguous variant; OpenSafeIntent's five phrasings in all
PREFIX = f"{TRIPLET_CONDITION}:"


class TripletId(NamedTuple):
    set_id: str
    variant: str
    paraphrase: int


def triplet_conversation_id(set_id: str, variant: str, paraphrase: int) -> str:
    return f"{PREFIX}{set_id}:{variant}:{paraphrase}"


def parse_triplet_id(conversation_id: str) -> Optional[TripletId]:
    """The (set, variant, paraphrase) of a triplet transcript's id; None for any other conversation."""
    if not conversation_id.startswith(PREFIX):
        return None
    set_id, variant, k = conversation_id[len(PREFIX):].rsplit(":", 2)
    return TripletId(set_id, variant, int(k))


def is_variant(conversation_id: str, *variants: str) -> bool:
    tid = parse_triplet_id(conversation_id)
    return tid is not None and tid.variant in variants


def _row_problem(row: dict[str, Any], queries: dict[str, Any]) -> Optional[str]:
    if row["variant"] not in VARIANTS:
        return f"variant {row['variant']!r} is not one of {list(VARIANTS)}"
    if not isinstance(row["paraphrase"], int) or row["paraphrase"] < 0:
        return f"paraphrase {row['paraphrase']!r} is not a whole number >= 0"
    if row["paraphrase"] and row["variant"] != "ambiguous":
        return "only the ambiguous variant has paraphrases (paraphrase > 0)"
    if not isinstance(row["prompt"], str) or not row["prompt"].strip():
        return "empty prompt"
    if row["set_id"] not in queries:
        return f"set_id {row['set_id']!r} is not a query_id of the queries config (its query and checklist)"
    return None


def triplets_problem(rows: Sequence[dict[str, Any]], queries: dict[str, Any]) -> Optional[str]:
    """What is wrong with the triplets config's rows, or None: known variants, one prompt per (set, variant,
    paraphrase), every set complete (benign, ambiguous and malicious originals). Names the first bad row."""
    seen: set[tuple[str, str, int]] = set()
    for i, row in enumerate(rows):
        problem = _row_problem(row, queries)
        key = (row["set_id"], row["variant"], row["paraphrase"])
        if problem is None and key in seen:
            problem = f"a second {row['variant']} prompt {row['paraphrase']} of set {row['set_id']!r}"
        if problem:
            return f"triplets row {i}: {problem}"
        seen.add(key)
    for set_id in dict.fromkeys(r["set_id"] for r in rows):
        missing = [v for v in VARIANTS if (set_id, v, 0) not in seen]
        if missing:
            return f"triplets: set {set_id!r} has no {' and no '.join(missing)} prompt (paraphrase 0)"
    return None


def triplet_prompts(triplets: Sequence[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """conversation_id -> (set_id, prompt), in dataset order."""
    return {triplet_conversation_id(r["set_id"], r["variant"], r["paraphrase"]): (r["set_id"], r["prompt"])
            for r in triplets}
