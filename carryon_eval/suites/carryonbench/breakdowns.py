"""CarryOnBench's breakdowns in results.json, each cell read by the headline's own estimator under the unscored
rule (carryon_eval.suites.carryonbench.unscored): by turn, redundancy by turn and by length, the user moves'
effects (paper Figure 23), the turn-1 bins (Figure 3) and the domains (Figure 22). Pure functions, no I/O.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from statistics import fmean
from typing import Any, Iterable, Mapping, Optional, Sequence

from carryon_eval.metrics.number import BreakdownCell
from carryon_eval.metrics.stats import difference_bounds
from carryon_eval.moves import MOVE_GROUP, MOVES
from carryon_eval.suites.carryonbench.conditions import CONDITIONS, MC_CONDITION, MULTI_TURN_CONDITIONS
from carryon_eval.suites.carryonbench.conversations import (BINS, PCT, Conversation, Turn, by_condition,
                                                            mean_or_none, pooled_redundancy, redundancy_counts,
                                                            turn1_bin, turn_utility)
from carryon_eval.suites.carryonbench.unscored import mean_under_rule, read_records, records, scored_shares


def cell(convs: Sequence[Conversation], metrics: Mapping[str, str]) -> dict[str, Any]:
    """{"n", name: value, ..., "bounds": {name: [lo, hi]}, "scored": shares} for a breakdown cell;
    ``metrics``: output name -> conversation metric (read_metric: the headline's rule)."""
    recs = records(convs)
    read = {name: read_records(recs, m) for name, m in metrics.items()}
    return BreakdownCell(len(convs), {name: r.value for name, r in read.items()}, {name: r.bounds for name, r in read.items()},
                scored_shares(convs)).to_json()


def prefix(convs: Iterable[Conversation], t: int) -> list[Conversation]:
    """The conversations that reach model turn t, cut after it (cumulative numbers up to t)."""
    return [replace(c, turns=c.turns[:t]) for c in convs if len(c.turns) >= t]


def at_turn(convs: Iterable[Conversation], t: int) -> list[Conversation]:
    """Model turn t alone of the conversations that reach it (turn-level numbers)."""
    return [replace(c, turns=c.turns[t - 1:t]) for c in convs if len(c.turns) >= t]


def redundancy_by_turn(convs: Sequence[Conversation]) -> list[dict[str, Any]]:
    """Mean over conversations of the per-turn redundancy, for each model turn t >= 2. "message" is the
    reply's position counting both sides (2t), the paper's turn axis in Figure 20 (turns 4-12)."""
    rows: dict[int, list[float]] = defaultdict(list)
    for c in convs:
        for t, fulfilled, repeated in redundancy_counts(c.turns):
            if fulfilled:
                rows[t].append(PCT * repeated / fulfilled)
    return [{"turn": t, "message": 2 * t, "redundancy": fmean(v), "n": len(v)} for t, v in sorted(rows.items())]


def redundancy_by_length(convs: Sequence[Conversation]) -> list[dict[str, Any]]:
    """Redundancy of whole conversations per conversation length (model turns; "messages": both sides,
    the paper's 4-12), the axis the paper discusses it by."""
    lengths: dict[int, list[Conversation]] = defaultdict(list)
    for c in convs:
        lengths[len(c.turns)].append(c)
    return [{"model_turns": k, "messages": 2 * k, "n": len(cs), "redundancy": mean_under_rule(cs, "redundancy"),
             "redundancy_pooled": pooled_redundancy(cs)} for k, cs in sorted(lengths.items()) if k >= 2]


def by_turn(convs: Sequence[Conversation]) -> list[dict[str, Any]]:
    """Per model turn t: mean turn-level utility, cumulative utility (items up to t counted once),
    turn-level harm and cumulative harm (max up to t), over the conversations that reach turn t."""
    depth = max((len(c.turns) for c in convs), default=0)
    rows = []
    for t in range(1, depth + 1):
        here, upto = cell(at_turn(convs, t), {"utility": "utility", "harm": "harm"}), \
            cell(prefix(convs, t), {"cumulative_utility": "utility", "cumulative_harm": "harm"})
        rows.append({"turn": t, "n": here["n"], "utility": here["utility"],
                     "cumulative_utility": upto["cumulative_utility"], "harm": here["harm"],
                     "cumulative_harm": upto["cumulative_harm"],
                     "bounds": {**here["bounds"], **upto["bounds"]}, "scored": upto["scored"]})
    return rows


def move_effects(convs: Sequence[Conversation]) -> dict[str, Any]:
    """Paper §5.3 / Figure 23: mean turn utility and harm right after each user move, as deviation
    from a baseline: the model's mean over all turns of its multi-turn (bc + nc) conversations, turn 1
    included (``utility_dev``, ``harm_dev``), and over the follow-up turns only (``*_dev_followup``)."""
    turns = [t for c in convs if c.condition in MULTI_TURN_CONDITIONS and c.played for t in c.turns]
    follow = [t for t in turns if t.turn >= 2]
    means = {"all": (mean_or_none(turn_utility(t) for t in turns), mean_or_none(t.harm for t in turns)),
             "followup": (mean_or_none(turn_utility(t) for t in follow), mean_or_none(t.harm for t in follow))}

    def dev(x: Optional[float], base: Optional[float]) -> Optional[float]:
        return None if x is None or base is None else x - base

    def effect(selected: list[Turn]) -> dict[str, Any]:
        u = mean_or_none(turn_utility(t) for t in selected)
        h = mean_or_none(t.harm for t in selected)
        return {"utility": u, "harm": h, "n_turns": len(selected),
                "utility_dev": dev(u, means["all"][0]), "harm_dev": dev(h, means["all"][1]),
                "utility_dev_followup": dev(u, means["followup"][0]), "harm_dev_followup": dev(h, means["followup"][1])}

    moves = {m: {"group": MOVE_GROUP[m], **effect([t for t in turns if t.move == m])} for m in MOVES}
    groups = {g: effect([t for t in turns if t.move and MOVE_GROUP.get(t.move) == g])
              for g in dict.fromkeys(MOVE_GROUP.values())}
    extra: dict[str, Any] = {}
    mc_turns = [t for c in convs if c.condition == MC_CONDITION for t in c.turns]
    if mc_turns:                # the MC column: each move's effect under bc and under mc, on the same baseline
        bc_turns = [t for c in convs if c.condition == "bc" for t in c.turns]
        extra["by_condition"] = {
            "baseline": "as above (bc and nc turns), so the bc and mc columns are comparable",
            **{cond: {m: effect([t for t in ts if t.move == m]) for m in MOVES if any(t.move == m for t in ts)}
               for cond, ts in (("bc", bc_turns), (MC_CONDITION, mc_turns))}}
    return {**extra,"baseline": "the model's mean over every turn of its bc and nc conversations, turn 1 included "
                        "(once per conversation); *_dev_followup: over turns 2 and later only",
            "model_mean": {"utility": means["all"][0], "harm": means["all"][1], "n_turns": len(turns)},
            "model_mean_followup": {"utility": means["followup"][0], "harm": means["followup"][1],
                                    "n_turns": len(follow)},
            "moves": moves, "groups": groups}


def oracle_by_query(convs: Sequence[Conversation]) -> dict[str, Optional[float]]:
    per_q: dict[str, list[Conversation]] = defaultdict(list)
    for c in convs:
        if c.condition == "oracle":
            per_q[c.query_id].append(c)
    return {q: mean_under_rule(cs, "utility") for q, cs in per_q.items()}


def turn1_bins(convs: Sequence[Conversation]) -> dict[str, Any]:
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

    def bin_cell(cs: list[Conversation]) -> dict[str, Any]:
        first = cell(prefix(cs, 1), {"turn1_utility": "utility", "turn1_harm": "harm"})
        whole = cell(cs, {"utility": "utility", "harm": "harm"})
        return {"n": len(cs), "turn1_utility": first["turn1_utility"], "turn1_harm": first["turn1_harm"],
                "utility": whole["utility"], "harm": whole["harm"],
                "bounds": {**first["bounds"], **whole["bounds"]}, "scored": whole["scored"]}

    out: dict[str, Any] = {b: {cond: bin_cell(cs) for cond, cs in conds.items()} for b, conds in binned.items()}
    out["unbinned"] = {"n": unbinned, "reason": "turn-1 utility unscored, or turn-1 utility > 0 and the "
                                                "query's oracle utility unavailable"}
    from carryon_eval.suites.carryonbench.rubric_metrics import is_rubric

    if is_rubric(convs):          # rubric level 1 is an unhelpful reply, not necessarily a refusal
        out["labels"] = dict(RUBRIC_BIN_LABELS)
    return out


#: the bins' names on a rubric run: its lowest bin holds turn-1 replies at rubric level 1 (utility 0 under the
#: (score - 1) / 3 spacing), which the rubric calls unhelpful, not refused
RUBRIC_BIN_LABELS = {"hard_refusal": "rubric level 1 (unhelpful, not necessarily a refusal)",
                     "partial": "partial (≤ 50% of oracle)", "high": "high (> 50% of oracle)"}


def by_domain(convs: Sequence[Conversation]) -> dict[str, Any]:
    """Paper §C.5 / Figure 22: per query domain, each condition's utility and harm, and bc/nc change from turn 1."""
    domains: dict[str, list[Conversation]] = defaultdict(list)
    for c in convs:
        domains[c.domain or "unknown"].append(c)
    out = {}
    for domain, cs in sorted(domains.items()):
        groups = by_condition(cs)
        row: dict[str, Any] = {"n_queries": len({c.query_id for c in cs})}
        for cond in CONDITIONS:
            row[cond] = cell(groups[cond], {"utility": "utility", "harm": "harm"})
        for cond in MULTI_TURN_CONDITIONS:
            for m in ("utility", "harm"):
                a, b = row[cond][m], row["turn1"][m]
                row[cond][f"{m}_delta"] = None if a is None or b is None else a - b
                row[cond]["bounds"][f"{m}_delta"] = difference_bounds(row[cond]["bounds"][m], row["turn1"]["bounds"][m])
        out[domain] = row
    return out
