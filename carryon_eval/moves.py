"""User moves and the rules that make a sequence of them a valid conversation flow.

This module is the single place where move names, their groups and the flow rules live
(paper §2.1, Table 1, Appendix A.3). The builder enumerates and samples flows with it; the
evaluator and `carryon-build verify` check flows with it.
"""
from __future__ import annotations

import itertools
from typing import Iterable, Iterator, Sequence

# Benign clarifications (BC): reveal information about the benign intent.
BENIGN_JUSTIFICATION = "benign_justification"
BENIGN_REASKING = "benign_reasking"
CONTEXT_SWITCHING = "context_switching"
# Challenge: contest the refusal without new information.
PUSHBACK = "pushback"
REPHRASING = "rephrasing"
# Non-contentful: hold the floor or acknowledge, no content.
DELAYING = "delaying"
BACKCHANNEL = "backchannel"

BC_MOVES: tuple[str, ...] = (BENIGN_JUSTIFICATION, BENIGN_REASKING, CONTEXT_SWITCHING)
CHALLENGE_MOVES: tuple[str, ...] = (PUSHBACK, REPHRASING)
NON_CONTENTFUL_MOVES: tuple[str, ...] = (DELAYING, BACKCHANNEL)
MOVES: tuple[str, ...] = BC_MOVES + CHALLENGE_MOVES + NON_CONTENTFUL_MOVES

MOVE_GROUP: dict[str, str] = {
    **{m: "benign_clarification" for m in BC_MOVES},
    **{m: "challenge" for m in CHALLENGE_MOVES},
    **{m: "non_contentful" for m in NON_CONTENTFUL_MOVES},
}

MIN_FOLLOW_UPS = 1
MAX_FOLLOW_UPS = 5
MAX_NON_CONTENTFUL = 2


def n_turns(n_follow_ups: int) -> int:
    """Messages of both sides: the initial query, its reply, then a user move and a reply per follow-up."""
    return 2 * (1 + n_follow_ups)


def n_model_turns(n_follow_ups: int) -> int:
    return 1 + n_follow_ups


def condition(moves: Sequence[str]) -> str:
    """"BC" if the flow has at least one benign clarification, else "NC"."""
    return "BC" if any(m in BC_MOVES for m in moves) else "NC"


def violations(moves: Sequence[str]) -> list[str]:
    """Every rule the sequence breaks, as readable sentences; empty when the flow is valid."""
    problems: list[str] = []
    unknown = [m for m in moves if m not in MOVES]
    if unknown:
        problems.append(f"unknown move(s) {unknown}; expected one of {list(MOVES)}")
        return problems
    if not MIN_FOLLOW_UPS <= len(moves) <= MAX_FOLLOW_UPS:
        problems.append(f"{len(moves)} follow-up moves; expected {MIN_FOLLOW_UPS} to {MAX_FOLLOW_UPS}")
    if moves and moves[-1] in NON_CONTENTFUL_MOVES:
        problems.append(f"last move {moves[-1]!r} is non-contentful")
    for i in range(1, len(moves)):
        if moves[i - 1] in NON_CONTENTFUL_MOVES and moves[i] in NON_CONTENTFUL_MOVES:
            problems.append(f"non-contentful moves in a row at positions {i - 1} and {i}")
        if moves[i - 1] == CONTEXT_SWITCHING and moves[i] == REPHRASING:
            problems.append(f"rephrasing right after context_switching at position {i}")
    n_nc = sum(m in NON_CONTENTFUL_MOVES for m in moves)
    if n_nc > MAX_NON_CONTENTFUL:
        problems.append(f"{n_nc} non-contentful moves; at most {MAX_NON_CONTENTFUL} allowed")
    return problems


def flow_problems(moves: Sequence[str], *, n_turns_given: int | None = None,
                  condition_given: str | None = None) -> list[str]:
    """Everything wrong with a flow record: its move rules, then (when given and the moves are valid)
    whether its n_turns and condition agree with its moves."""
    problems = violations(moves)
    if problems:
        return problems
    if n_turns_given is not None and n_turns_given != n_turns(len(moves)):
        problems.append(f"n_turns {n_turns_given}, but its {len(moves)} moves make {n_turns(len(moves))}")
    if condition_given is not None and condition_given != condition(moves):
        problems.append(f"condition {condition_given!r}, but its moves make it {condition(moves)!r}")
    return problems


def is_valid(moves: Sequence[str]) -> bool:
    return not violations(moves)


def enumerate_flows(n_follow_ups: int) -> Iterator[tuple[str, ...]]:
    """All valid move sequences of one length, in a fixed (lexicographic by MOVES order) order."""
    for seq in itertools.product(MOVES, repeat=n_follow_ups):
        if is_valid(seq):
            yield seq


def flow_id(moves: Iterable[str]) -> str:
    """A readable, stable id: the move initials joined, e.g. "F3-bj.pb.bk"."""
    moves = tuple(moves)
    return f"F{len(moves)}-" + ".".join(MOVE_ABBREV[m] for m in moves)


MOVE_ABBREV: dict[str, str] = {
    BENIGN_JUSTIFICATION: "bj",
    BENIGN_REASKING: "br",
    CONTEXT_SWITCHING: "cs",
    PUSHBACK: "pb",
    REPHRASING: "rp",
    DELAYING: "dl",
    BACKCHANNEL: "bk",
}
