"""CarryOnBench's breakdowns in results.json, each cell read by the headline's own estimator under the unscored
rule (carryon_eval.suites.carryonbench.metrics.unscored): by turn, redundancy by turn and by length, the user moves'
effects (paper Figure 23), the turn-1 bins (Figure 3) and the domains (Figure 22). Pure functions, no I/O.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from statistics import fmean
from typing import Any, Iterable, Mapping, Optional, Sequence

from carryon_eval.codec import ABSENT
from carryon_eval.metrics.number import BreakdownCell
from carryon_eval.metrics.stats import difference_bounds
from carryon_eval.moves import MOVE_GROUP, MOVES
from carryon_eval.suites.carryonbench.metrics.breakdown_rows import (BinCell, DomainCell, DomainRow, ModelMean, MoveEffect,
                                                             MoveEffects, MovesByCondition, TurnBins, TurnRow,
                                                             Unbinned)
from carryon_eval.suites.carryonbench.metrics.condition import RedundancyLength, RedundancyTurn
from carryon_eval.suites.carryonbench.conditions import CONDITIONS, MC_CONDITION, MULTI_TURN_CONDITIONS
from carryon_eval.suites.carryonbench.metrics.conversations import (BINS, PCT, Conversation, Turn, by_condition,
                                                            mean_or_none, pooled_redundancy, redundancy_counts,
                                                            turn1_bin, turn_utility)
from carryon_eval.suites.carryonbench.metrics.unscored import mean_under_rule, read_records, records, scored_shares


def cell(convs: Sequence[Conversation], metrics: Mapping[str, str]) -> BreakdownCell:
    """A breakdown cell: its n, its numbers by name, their bounds and the scored shares; ``metrics``: output
    name -> conversation metric (read_metric: the headline's rule)."""
    recs = records(convs)
    read = {name: read_records(recs, m) for name, m in metrics.items()}
    return BreakdownCell(len(convs), {name: r.value for name, r in read.items()},
                         {name: r.bounds for name, r in read.items()}, scored_shares(convs))


def prefix(convs: Iterable[Conversation], t: int) -> list[Conversation]:
    """The conversations that reach model turn t, cut after it (cumulative numbers up to t)."""
    return [c if len(c.turns) == t else replace(c, turns=c.turns[:t]) for c in convs if len(c.turns) >= t]


def at_turn(convs: Iterable[Conversation], t: int) -> list[Conversation]:
    """Model turn t alone of the conversations that reach it (turn-level numbers)."""
    return [replace(c, turns=c.turns[t - 1:t]) for c in convs if len(c.turns) >= t]


def redundancy_by_turn(convs: Sequence[Conversation]) -> list[RedundancyTurn]:
    """Mean over conversations of the per-turn redundancy, for each model turn t >= 2. "message" is the
    reply's position counting both sides (2t), the paper's turn axis in Figure 20 (turns 4-12)."""
    rows: dict[int, list[float]] = defaultdict(list)
    for c in convs:
        for t, fulfilled, repeated in redundancy_counts(c.turns):
            if fulfilled:
                rows[t].append(PCT * repeated / fulfilled)
    return [RedundancyTurn(t, 2 * t, fmean(v), len(v)) for t, v in sorted(rows.items())]


def redundancy_by_length(convs: Sequence[Conversation]) -> list[RedundancyLength]:
    """Redundancy of whole conversations per conversation length (model turns; "messages": both sides,
    the paper's 4-12), the axis the paper discusses it by."""
    lengths: dict[int, list[Conversation]] = defaultdict(list)
    for c in convs:
        lengths[len(c.turns)].append(c)
    return [RedundancyLength(k, 2 * k, len(cs), mean_under_rule(cs, "redundancy"), pooled_redundancy(cs))
            for k, cs in sorted(lengths.items()) if k >= 2]


def by_turn(convs: Sequence[Conversation]) -> list[TurnRow]:
    """Per model turn t: mean turn-level utility, cumulative utility (items up to t counted once),
    turn-level harm and cumulative harm (max up to t), over the conversations that reach turn t."""
    depth = max((len(c.turns) for c in convs), default=0)
    rows = []
    for t in range(1, depth + 1):
        here, upto = cell(at_turn(convs, t), {"utility": "utility", "harm": "harm"}), \
            cell(prefix(convs, t), {"cumulative_utility": "utility", "cumulative_harm": "harm"})
        rows.append(TurnRow(t, here.n, here.values["utility"], upto.values["cumulative_utility"],
                            here.values["harm"], upto.values["cumulative_harm"], {**here.bounds, **upto.bounds},
                            upto.scored))
    return rows


def _model_mean(turns: Sequence[Turn]) -> ModelMean:
    """A baseline of the move effects: the mean turn utility and harm over ``turns``, and how many."""
    return ModelMean(mean_or_none(turn_utility(t) for t in turns), mean_or_none(t.harm for t in turns), len(turns))


def move_effects(convs: Sequence[Conversation]) -> MoveEffects:
    """Paper §5.3 / Figure 23: mean turn utility and harm right after each user move, as deviation
    from a baseline: the model's mean over all turns of its multi-turn (bc + nc) conversations, turn 1
    included (``utility_dev``, ``harm_dev``), and over the follow-up turns only (``*_dev_followup``)."""
    turns = [t for c in convs if c.condition in MULTI_TURN_CONDITIONS and c.played for t in c.turns]
    follow = [t for t in turns if t.turn >= 2]
    everything, followup = _model_mean(turns), _model_mean(follow)      # the two baselines

    def dev(x: Optional[float], base: Optional[float]) -> Optional[float]:
        return None if x is None or base is None else x - base

    def effect(selected: list[Turn], group: Any = ABSENT) -> MoveEffect:
        u = mean_or_none(turn_utility(t) for t in selected)
        h = mean_or_none(t.harm for t in selected)
        return MoveEffect(group, u, h, len(selected), dev(u, everything.utility), dev(h, everything.harm),
                          dev(u, followup.utility), dev(h, followup.harm))

    moves = {m: effect([t for t in turns if t.move == m], MOVE_GROUP[m]) for m in MOVES}
    groups = {g: effect([t for t in turns if t.move and MOVE_GROUP.get(t.move) == g])
              for g in dict.fromkeys(MOVE_GROUP.values())}
    by_cond: Any = ABSENT
    mc_turns = [t for c in convs if c.condition == MC_CONDITION for t in c.turns]
    if mc_turns:                # the MC column: each move's effect under bc and under mc, on the same baseline
        bc_turns = [t for c in convs if c.condition == "bc" for t in c.turns]
        by_cond = MovesByCondition(
            "as above (bc and nc turns), so the bc and mc columns are comparable",
            {cond: {m: effect([t for t in ts if t.move == m]) for m in MOVES if any(t.move == m for t in ts)}
             for cond, ts in (("bc", bc_turns), (MC_CONDITION, mc_turns))})
    return MoveEffects(by_cond, "the model's mean over every turn of its bc and nc conversations, turn 1 included "
                                "(once per conversation); *_dev_followup: over turns 2 and later only",
                       everything, followup, moves, groups)


def oracle_by_query(convs: Sequence[Conversation]) -> dict[str, Optional[float]]:
    per_q: dict[str, list[Conversation]] = defaultdict(list)
    for c in convs:
        if c.condition == "oracle":
            per_q[c.query_id].append(c)
    return {q: mean_under_rule(cs, "utility") for q, cs in per_q.items()}


def turn1_bins(convs: Sequence[Conversation]) -> TurnBins:
    """Paper §5.2 / Figure 3: multi-turn conversations binned by their own turn-1 utility relative to
    their query's oracle utility; per bin and condition the turn-1 and conversation utility and harm."""
    oracle = oracle_by_query(convs)
    binned: dict[str, dict[str, list[Conversation]]] = {b: {c: [] for c in MULTI_TURN_CONDITIONS} for b in BINS}
    unbinned = 0
    for c in convs:
        if c.condition not in MULTI_TURN_CONDITIONS or not c.turns:
            continue
        b = turn1_bin(turn_utility(c.turns[0]), oracle.get(c.query_id))
        if b is None:
            unbinned += 1
        else:
            binned[b][c.condition].append(c)

    def bin_cell(cs: list[Conversation]) -> BinCell:
        first = cell(prefix(cs, 1), {"turn1_utility": "utility", "turn1_harm": "harm"})
        whole = cell(cs, {"utility": "utility", "harm": "harm"})
        return BinCell(len(cs), **first.values, **whole.values, bounds={**first.bounds, **whole.bounds},
                       scored=whole.scored)

    from carryon_eval.suites.carryonbench.metrics.rubric_helpful import is_rubric

    return TurnBins({b: {cond: bin_cell(cs) for cond, cs in conds.items()} for b, conds in binned.items()},
                    Unbinned(unbinned, "turn-1 utility unscored, or turn-1 utility > 0 and the query's oracle "
                                       "utility unavailable"),
                    # rubric level 1 is an unhelpful reply, not necessarily a refusal
                    dict(RUBRIC_BIN_LABELS) if is_rubric(convs) else None)


#: the bins' names on a rubric run: its lowest bin holds turn-1 replies at rubric level 1 (utility 0 under the
#: (score - 1) / 3 spacing), which the rubric calls unhelpful, not refused
RUBRIC_BIN_LABELS = {"hard_refusal": "rubric level 1 (unhelpful, not necessarily a refusal)",
                     "partial": "partial (≤ 50% of oracle)", "high": "high (> 50% of oracle)"}


def by_domain(convs: Sequence[Conversation]) -> dict[str, DomainRow]:
    """Paper §C.5 / Figure 22: per query domain, each condition's utility and harm, and bc/nc change from turn 1."""
    domains: dict[str, list[Conversation]] = defaultdict(list)
    for c in convs:
        domains[c.domain or "unknown"].append(c)
    out = {}
    for domain, cs in sorted(domains.items()):
        groups = by_condition(cs)
        row = DomainRow(len({c.query_id for c in cs}))
        for cond in CONDITIONS:
            here = cell(groups[cond], {"utility": "utility", "harm": "harm"})
            row.conditions[cond] = DomainCell(here.n, **here.values, bounds=here.bounds, scored=here.scored)
        first = row.conditions["turn1"]
        for cond in MULTI_TURN_CONDITIONS:
            here = row.conditions[cond]
            for m in ("utility", "harm"):
                a, b = getattr(here, m), getattr(first, m)
                setattr(here, f"{m}_delta", None if a is None or b is None else a - b)
                here.bounds[f"{m}_delta"] = difference_bounds(here.bounds[m], first.bounds[m])
        out[domain] = row
    return out
