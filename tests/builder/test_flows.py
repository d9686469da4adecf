"""Move rules, enumeration counts (paper Appendix A.3) and the 1,866-flow pool and plan."""
from collections import Counter

import pytest

from carryonbench_builder.flows import POOL_QUOTA, POOL_SIZE, conversation_plan, flow_pool, pool_flows
from carryon_eval import moves as M

# Valid sequences and, of those, the ones with no benign clarification, for 1..5 follow-ups.
EXPECTED = {1: (5, 2), 2: (34, 8), 3: (213, 24), 4: (1361, 80), 5: (8654, 256)}


@pytest.mark.parametrize("k", sorted(EXPECTED))
def test_enumeration_counts(k):
    flows = list(M.enumerate_flows(k))
    assert (len(flows), sum(M.condition(f) == "NC" for f in flows)) == EXPECTED[k]
    assert len(set(flows)) == len(flows)


@pytest.mark.parametrize("moves, broken", [
    (["pushback", "delaying"], "last move"),
    (["delaying", "backchannel", "pushback"], "in a row"),
    (["delaying", "pushback", "backchannel", "rephrasing", "delaying", "pushback"], "follow-up moves"),
    (["delaying", "pushback", "backchannel", "rephrasing", "delaying", "benign_justification"], "non-contentful moves;"),
    (["context_switching", "rephrasing"], "rephrasing right after context_switching"),
    (["shouting"], "unknown move"),
    ([], "0 follow-up moves"),
])
def test_each_rule_is_named(moves, broken):
    assert any(broken in v for v in M.violations(moves)), M.violations(moves)


def test_rules_allow_what_the_paper_allows():
    assert M.is_valid(["delaying", "pushback", "backchannel", "benign_reasking"])
    assert M.is_valid(["context_switching", "pushback", "rephrasing"])      # one move in between is enough
    assert M.condition(["pushback", "rephrasing"]) == "NC"
    assert M.condition(["delaying", "context_switching"]) == "BC"
    assert M.n_turns(1) == 4 and M.n_turns(5) == 12


def test_pool_has_1866_unique_valid_flows_fixed_by_seed():
    pool = pool_flows(flow_pool(2026))
    assert len(pool) == POOL_SIZE == 1866
    assert len({f.flow_id for f in pool}) == 1866
    assert all(M.is_valid(f.moves) and f.condition == M.condition(f.moves) for f in pool)
    by_stratum = Counter((len(f.moves), f.condition) for f in pool)
    assert dict(by_stratum) == POOL_QUOTA
    assert [f.flow_id for f in pool_flows(flow_pool(2026))] == [f.flow_id for f in pool]
    assert {f.flow_id for f in pool_flows(flow_pool(7))} != {f.flow_id for f in pool}


@pytest.mark.parametrize("n_queries", [375, 398, 410])
def test_plan_uses_every_pool_flow_with_2bc_1nc_per_length(n_queries):
    pool = flow_pool(2026)
    ids = [f"q{i:03d}" for i in range(n_queries)]
    rows = conversation_plan(ids, pool, 2026)
    assert len(rows) == 15 * n_queries
    assert {r["flow_id"] for r in rows} == {f.flow_id for f in pool_flows(pool)}
    per = Counter((r["query_id"], r["n_turns"], r["condition"]) for r in rows)
    assert set(per.values()) == {1, 2}
    assert all(per[(q, t, "BC")] == 2 and per[(q, t, "NC")] == 1 for q in ids for t in (4, 6, 8, 10, 12))
    for q in ids:
        mine = [r["flow_id"] for r in rows if r["query_id"] == q]
        assert len(mine) == len(set(mine)) == 15
    if n_queries == 398:   # the paper's numbers
        flows = {f.flow_id: f for f in pool_flows(pool)}
        assert sum(flows[r["flow_id"]].n_turns // 2 for r in rows) == 23880


def test_plan_of_a_query_does_not_depend_on_the_other_queries_order():
    pool = flow_pool(2026)
    ids = [f"q{i:03d}" for i in range(400)]
    a = conversation_plan(ids, pool, 2026)
    b = conversation_plan(list(reversed(ids)), pool, 2026)
    assert sorted(map(str, a)) == sorted(map(str, b))
