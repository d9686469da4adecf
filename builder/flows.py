"""The flow pool and the conversation plan (paper §2.1, Appendix A.3).

Pool. All valid flows of 1..5 follow-up moves are enumerated with carryon_eval.moves. The pool of a
release holds exactly 1,866 of them (the paper's count), chosen by the seed alone, never by the query
set, so the pool is frozen with the release. Per (length, condition) stratum the pool takes a fixed
quota (POOL_QUOTA): every flow of 1-3 follow-ups (5 + 34 + 213 = 252), all 80 NC flows of 4 follow-ups,
and seeded samples of the larger strata. A stratum's members are its flows ranked by
sha256(f"{seed}:pool:{flow_id}"), the first `quota` kept: a shuffle that depends on no library version.

Plan. For each query and each length: 2 BC flows and 1 NC flow from the pool stratum, no flow twice for
one query. Queries are put in a seeded order (sha256(f"{seed}:plan:{query_id}")) and dealt the stratum's
flows round-robin (BC: slots 2i and 2i+1; NC: slot i) in the stratum's seeded order. So every pool flow
is used at least once as soon as 2Q >= the largest BC quota and Q >= the largest NC quota (Q >= 375),
usage is balanced (each flow used floor or ceil of 2Q/|stratum| times), and the plan of a query does
not depend on the file's row order.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from carryon_eval import moves as M

# (number of follow-up moves, condition) -> number of pool flows. Sums to 1,866.
POOL_QUOTA: dict[tuple[int, str], int] = {
    (1, "BC"): 3, (1, "NC"): 2,
    (2, "BC"): 26, (2, "NC"): 8,
    (3, "BC"): 189, (3, "NC"): 24,
    (4, "BC"): 580, (4, "NC"): 80,
    (5, "BC"): 750, (5, "NC"): 204,
}
POOL_SIZE = 1866
PER_LENGTH = {"BC": 2, "NC": 1}   # conversations per query and length
DEFAULT_SEED = 2026
assert sum(POOL_QUOTA.values()) == POOL_SIZE


@dataclass(frozen=True)
class Flow:
    flow_id: str
    moves: tuple[str, ...]
    n_turns: int
    condition: str

    def row(self) -> dict:
        return {"flow_id": self.flow_id, "moves": list(self.moves), "n_turns": self.n_turns,
                "condition": self.condition, "n_follow_ups": len(self.moves),
                "n_benign_moves": sum(m in M.BC_MOVES for m in self.moves)}


def _rank(seed: int, purpose: str, key: str) -> str:
    return hashlib.sha256(f"{seed}:{purpose}:{key}".encode()).hexdigest()


def make_flow(moves: tuple[str, ...]) -> Flow:
    return Flow(M.flow_id(moves), moves, M.n_turns(len(moves)), M.condition(moves))


def flow_pool(seed: int = DEFAULT_SEED) -> dict[tuple[int, str], list[Flow]]:
    """The pool by stratum, each stratum in its seeded order."""
    pool: dict[tuple[int, str], list[Flow]] = {}
    for k in range(M.MIN_FOLLOW_UPS, M.MAX_FOLLOW_UPS + 1):
        for cond in ("BC", "NC"):
            stratum = [make_flow(s) for s in M.enumerate_flows(k) if M.condition(s) == cond]
            stratum.sort(key=lambda f: _rank(seed, "pool", f.flow_id))
            quota = POOL_QUOTA[(k, cond)]
            if quota > len(stratum):
                raise ValueError(f"pool quota {quota} for {k} moves {cond} exceeds the {len(stratum)} valid flows")
            pool[(k, cond)] = stratum[:quota]
    return pool


def pool_flows(pool: dict[tuple[int, str], list[Flow]]) -> list[Flow]:
    """The pool as one list, ordered by length then flow_id (the order of the flows table)."""
    return sorted((f for s in pool.values() for f in s), key=lambda f: (len(f.moves), f.flow_id))


def conversation_plan(query_ids: list[str], pool: dict[tuple[int, str], list[Flow]],
                      seed: int = DEFAULT_SEED) -> list[dict]:
    """Rows of the conversations table: per query and length, 2 BC + 1 NC flows from the pool."""
    order = sorted(query_ids, key=lambda q: _rank(seed, "plan", q))
    assigned: dict[str, list[tuple[Flow, str, int]]] = {q: [] for q in query_ids}
    for (k, cond), stratum in pool.items():
        per = PER_LENGTH[cond]
        for i, q in enumerate(order):
            for j in range(per):
                assigned[q].append((stratum[(per * i + j) % len(stratum)], cond, j + 1))
    rows: list[dict] = []
    for q in query_ids:
        for flow, cond, j in sorted(assigned[q], key=lambda a: (a[0].n_turns, a[1], a[2])):
            rows.append({"conversation_id": f"{q}-t{flow.n_turns:02d}-{cond.lower()}{j}", "query_id": q,
                         "flow_id": flow.flow_id, "n_turns": flow.n_turns, "condition": cond})
    return rows
