"""Named subsets of a benchmark: fewer conversations, drawn reproducibly from the dataset's own plan.

    bench = apply_subset(load_benchmark(...), "quick")      # "full" (or None): the benchmark as it is

``quick`` keeps every query (so turn1 and oracle are complete) and, per query, one BC and one NC
conversation of the dataset's conversation plan, stratified over conversation lengths:

1. the lengths L_1 < ... < L_n are the distinct ``n_turns`` of the flows the conversations use (4-12 in
   CarryOnBench: n = 5);
2. the queries are ranked by sha256("quick|<query_id>") (reproducible and independent of dataset order; with
   --limit, among the queries kept), and the query of rank r gets its BC conversation at length L_(r mod n) and its NC
   conversation at length L_((r + floor(n/2)) mod n); so over the queries every length appears equally
   often (to within one) in BC and in NC, and one query's two conversations differ in length;
3. of the query's conversations of that condition and length (CarryOnBench: 2 BC or 1 NC), the one with
   the smallest sha256("quick|<conversation_id>") is taken; when a query has none at that length (a
   bring-your-own dataset), the next length in the cycle that it has is used.
4. a dataset with mc conversations (the BC moves voiced with the malicious intent) keeps one per query too,
   stratified like BC: at the BC conversation's length, drawn the same way; and the BC conversation is then the
   one of the MC conversation's flow when the query has it, so the two pair (same query, same flow) for the
   intent-sensitivity contrast. A dataset without mc conversations gets exactly the draw above.

On CarryOnBench this is 2 of the 15 conversations of a query: 410 x 2 = 820 bc/nc conversations instead of
6,150, and with turn1 and oracle about 1/5 of a full run's calls.
"""
from __future__ import annotations

import hashlib
from typing import Any, Optional

from carryon_eval.dataset.load import Benchmark, conversation_condition
from carryon_eval.dataset.rows import RowKeys, keys

SUBSETS = ("full", "quick")


class SubsetError(ValueError):
    """An unknown subset name."""


def _rank(text: str) -> str:
    return hashlib.sha256(f"quick|{text}".encode()).hexdigest()


def quick_conversations(bench: Benchmark) -> list[dict[str, Any]]:
    """The quick subset's conversation rows, in dataset order; see the module docstring."""
    convs = [keys(c) for c in bench.conversations]
    n_turns = {f: int(keys(row).n_turns) for f, row in bench.flows.items() if f in {c.flow_id for c in convs}}
    lengths = sorted(set(n_turns.values()))
    if not lengths:
        return []
    options: dict[tuple[str, str, int], list[RowKeys]] = {}
    for conv, row in zip(convs, bench.conversations):
        condition = conversation_condition(row, bench.flows[conv.flow_id])
        options.setdefault((conv.query_id, condition, n_turns[conv.flow_id]), []).append(conv)
    n = len(lengths)
    chosen: set[str] = set()
    for rank, qid in enumerate(sorted(bench.queries, key=_rank)):
        cycle = [lengths[(rank + k) % n] for k in range(n)]
        mc = _pick(options, qid, "mc", cycle)
        if mc is not None:           # the BC draw's length, and the BC conversation of its flow (a pair)
            chosen.add(mc.conversation_id)
            length = n_turns[mc.flow_id]
            twin = [c for c in options.get((qid, "bc", length), []) if c.flow_id == mc.flow_id]
            if twin:
                options[(qid, "bc", length)] = twin
        for condition, shift in (("bc", 0), ("nc", n // 2)):
            conv = _pick(options, qid, condition, [lengths[(rank + shift + k) % n] for k in range(n)])
            if conv is not None:
                chosen.add(conv.conversation_id)
    return [row for conv, row in zip(convs, bench.conversations) if conv.conversation_id in chosen]


def _pick(options: dict[tuple[str, str, int], list[RowKeys]], qid: str, condition: str,
          lengths: list[int]) -> Optional[RowKeys]:
    for length in lengths:
        convs = options.get((qid, condition, length))
        if convs:
            return min(convs, key=lambda c: _rank(str(c.conversation_id)))
    return None


def apply_subset(bench: Benchmark, name: Optional[str]) -> Benchmark:
    """The benchmark restricted to the named subset (None or "full": unchanged)."""
    if name in (None, "full"):
        return bench
    if name != "quick":
        raise SubsetError(f"unknown subset {name!r}; expected one of {', '.join(SUBSETS)}")
    convs = quick_conversations(bench)
    used = {keys(c).flow_id for c in convs}
    return Benchmark(source=bench.source, revision=bench.revision, queries=bench.queries,
                     checklists=bench.checklists, flows={f: r for f, r in bench.flows.items() if f in used},
                     conversations=convs, manifest=bench.manifest, notes=list(bench.notes))
