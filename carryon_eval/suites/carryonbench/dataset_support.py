"""How a dataset is scored by CarryOnBench: the utility measures its rows support and the conditions it can play.

A build records it in its MANIFEST.json under ``scoring`` (the builder writes ``scoring_record``'s result), e.g.
the OpenSafeIntent ``--no-llm`` build's::

    "scoring": {"utility": ["rubric"], "conditions": ["turn1", "oracle", "bc", "nc"]}

- ``utility``, most preferred first: ``benutil`` when the dataset has checklist items (Ben-Util scores a reply
  against its query's items); ``rubric`` when its queries are OpenSafeIntent prompt-sets, whose reference
  helpfulness judge the rubric is (it is read at evaluation time from the release folder: --opensafeintent DIR).
- ``conditions``: ``turn1`` (it has queries), ``oracle`` (a query with a benign intent), ``bc`` (a BC conversation
  whose query has a benign intent), ``nc`` (an NC conversation), ``mc`` (an MC conversation whose query has a
  malicious intent).

A dataset without the record (a build older than the record, release v0.1.0, a researcher's own folder) is read
from its rows by the same rules (``rubric`` then from its manifest's source format), so both say the same.
The evaluator scores with the first measure the dataset supports when the user names none
(carryon_eval.suites.carryonbench.metrics.measure) and refuses a measure or a condition it cannot support, in one line
naming what is missing and the flag or build step that gives it (``why_not``; a default run leaves such a
condition out: the suite's ``unplayable`` hook, ``why_unplayable``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional

if TYPE_CHECKING:
    from carryon_eval.dataset.load import Benchmark

UTILITY_MEASURES = ("benutil", "rubric")
CONDITIONS = ("turn1", "oracle", "bc", "nc", "mc")
#: The source format whose queries the rubric is the reference judge of (MANIFEST.json's source.format).
RUBRIC_SOURCE = "opensafeintent"
LLM_BUILD = "build it with the LLM stages (`carryon-build build` without --no-llm)"
RUBRIC_OPTION = "--utility rubric --opensafeintent DIR"
#: What a measure or condition needs, as the one line of a refusal says it (``why_not``).
NEEDS = {
    "benutil": f"it has no checklists (Ben-Util scores each reply against its query's checklist items): {LLM_BUILD}",
    "turn1": "it has no queries",
    "oracle": f"no query has a benign intent (the oracle prompt states it): {LLM_BUILD}",
    "bc": f"no BC conversation has a query with a benign intent (the user simulator voices it): {LLM_BUILD}",
    "nc": "it has no NC conversations",
    "mc": f"it has no MC conversations with a malicious intent (they are written by the LLM stages): {LLM_BUILD}",
}


@dataclass(frozen=True)
class Scoring:
    """What a dataset supports; ``recorded``: read from its MANIFEST.json's ``scoring`` (else from its rows)."""
    utility: tuple[str, ...]
    conditions: tuple[str, ...]
    recorded: bool = False

    @property
    def origin(self) -> str:
        return "its MANIFEST.json's scoring record" if self.recorded else "its rows, as its build records no scoring"


def scoring_record(queries: Iterable[Mapping[str, Any]], n_checklist_items: int,
                   conversations: Iterable[tuple[str, str]], rubric: bool) -> dict[str, list[str]]:
    """The ``scoring`` record of a dataset from its rows: ``conversations`` as (query_id, condition) pairs,
    the condition in any case ("BC", "nc", "mc"); ``rubric``: its queries are OpenSafeIntent prompt-sets."""
    rows = list(queries)
    benign = {str(q.get("query_id")) for q in rows if _text(q.get("benign_intent"))}
    malicious = {str(q.get("query_id")) for q in rows if _text(q.get("malicious_intent"))}
    played = {"turn1"} if rows else set()
    played |= {"oracle"} if benign else set()
    for query_id, condition in conversations:
        c = str(condition).lower()
        if c == "nc" or (c == "bc" and query_id in benign) or (c == "mc" and query_id in malicious):
            played.add(c)
    utility = [m for m, ok in (("benutil", n_checklist_items > 0), ("rubric", rubric)) if ok]
    return {"utility": utility, "conditions": [c for c in CONDITIONS if c in played]}


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def read_scoring(manifest: Optional[Mapping[str, Any]], inferred: dict[str, list[str]]) -> Scoring:
    """The dataset's scoring: its manifest's record when it holds a well-formed one, else ``inferred`` (the
    record computed from its rows)."""
    record = (manifest or {}).get("scoring")
    if isinstance(record, Mapping) and all(isinstance(record.get(k), list) for k in ("utility", "conditions")):
        return Scoring(tuple(m for m in record["utility"] if m in UTILITY_MEASURES),
                       tuple(c for c in record["conditions"] if c in CONDITIONS), recorded=True)
    return Scoring(tuple(inferred["utility"]), tuple(inferred["conditions"]))


def rubric_source(manifest: Optional[Mapping[str, Any]]) -> bool:
    """Whether a build's manifest says its queries are OpenSafeIntent prompt-sets (for builds without the record)."""
    source = (manifest or {}).get("source")
    return isinstance(source, Mapping) and source.get("format") == RUBRIC_SOURCE


def why_not(name: str) -> str:
    """Why a dataset cannot support this measure or condition, and what gives it to it (one clause)."""
    return NEEDS.get(name, f"it has no {name} inputs")


def dataset_scoring(bench: "Benchmark") -> Scoring:
    """The utility measures and conditions a dataset supports: its build's record, else read from its rows."""
    from carryon_eval.dataset.load import conversation_condition

    convs = [(c["query_id"], conversation_condition(c, bench.flows[c["flow_id"]])) for c in bench.conversations
             if c["flow_id"] in bench.flows]
    n_items = sum(len(items) for items in bench.checklists.values())
    return read_scoring(bench.manifest, scoring_record(bench.queries.values(), n_items, convs,
                                                       rubric_source(bench.manifest)))


def why_unplayable(bench: "Benchmark", condition: str) -> Optional[str]:
    """Suite.unplayable: why a dataset cannot play one of CarryOnBench's conditions (one clause), None when it can."""
    return None if condition in dataset_scoring(bench).conditions else why_not(condition)


def dataset_notes(bench: "Benchmark", measure: Optional[str]) -> list[str]:
    """The dataset's notes for a run that measures utility with ``measure``: queries without checklist items
    concern Ben-Util only (rubric utility needs no checklist), then the notes of every run."""
    empty = [q for q, items in bench.checklists.items() if not items]
    if not empty or measure not in (None, "benutil"):
        return list(bench.notes)
    return [f"{len(empty)} of {len(bench.queries)} queries have no checklist items: their utility "
            "cannot be computed and is reported as unscored", *bench.notes]
