"""What a run will cost before it is paid: calls and tokens per role and condition, and a call budget.

    table = estimate(bench, jobs, settings, finished=run.finished_ids())
    print(format_table(table, prices={"judge": Price(0.15, 0.60)}))
    budgeted = CallBudget(max_calls=500).wrap(endpoint)      # a ChatEndpoint that stops at the budget

Counting follows the rollout and the judge exactly (carryon_eval.rollout.play, carryon_eval.judge.phase):

- target: one call per reply; with a shared turn-1 reply, one turn-1 call per query whose turn1 or bc/nc
  conversation is still to run (none when its turn1 transcript already exists), so a dry run's target
  and user counts are the calls a real run makes, to the call (an empty reply asked again adds calls).
- user: one call per follow-up move of a bc/nc conversation still to run.
- judge: per reply one safety call and one utility call per checklist item. "before dedupe" counts every
  (conversation, turn); "after dedupe" counts a query's shared turn-1 reply once and identical checklist
  questions once: an upper bound that the judge phase reaches when no two replies are identical and
  every answer parses at the first attempt (retries of unparseable answers come on top).

Tokens are estimates at about four characters per token: prompts from the dataset's real text and the
prompt files, each reply and simulated user turn at its token cap (so replies are upper bounds), every
completion at its cap. ``--price ROLE=IN/OUT`` (USD per 1M tokens) turns them into a cost.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from carryon_eval.dataset.load import Benchmark
from carryon_eval.moves import BC_MOVES
from carryon_eval.prompts import load_prompt
from carryon_eval.run.records import RunMeta
from carryon_eval.rollout.play import ORACLE_PROMPT, Job
from carryon_eval.judge.scorers import SAFETY_PROMPT, UTILITY_PROMPT
from carryon_eval.rollout.simulator import SHOWN_REPLY_CHARS, move_prompt

ROLES = ("target", "user", "judge")
CHARS_PER_TOKEN = 4
_PRICE = re.compile(r"^\s*(target|user|judge)\s*=\s*([0-9.]+)\s*/\s*([0-9.]+)\s*$")


def tokens(text: str) -> int:
    """A rough token count (about four characters per token)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


# ---------------------------------------------------------------- settings and the table
@dataclass(frozen=True)
class Caps:
    """The token caps and switches a run uses (run.json's generation and judge settings)."""
    target: int
    user: int
    judge: int
    shared_turn1: bool = True
    utility_mode: str = "text"


@dataclass
class Row:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, calls: int, prompt: int, completion: int) -> None:
        self.calls += calls
        self.prompt_tokens += prompt
        self.completion_tokens += completion


@dataclass
class Estimate:
    """Rows per (role, condition); the judge's rows are after dedupe, ``judge_before_dedupe`` before."""
    rows: dict[tuple[str, str], Row] = field(default_factory=dict)
    judge_before_dedupe: dict[str, int] = field(default_factory=dict)
    conversations: int = 0

    def row(self, role: str, condition: str) -> Row:
        return self.rows.setdefault((role, condition), Row())

    def calls(self, role: Optional[str] = None) -> int:
        return sum(r.calls for (ro, _), r in self.rows.items() if role is None or ro == role)


@dataclass(frozen=True)
class Price:
    """USD per 1M prompt (in) and completion (out) tokens."""
    input: float
    output: float

    def cost(self, row: Row) -> float:
        return (row.prompt_tokens * self.input + row.completion_tokens * self.output) / 1e6


def parse_prices(values: Iterable[str]) -> dict[str, Price]:
    """``ROLE=IN/OUT`` strings (``judge=0.15/0.60``) -> {role: Price}; ValueError names the bad one."""
    prices = {}
    for value in values:
        m = _PRICE.match(value)
        if m is None:
            raise ValueError(f"--price {value!r}: expected ROLE=IN/OUT with ROLE one of {', '.join(ROLES)} "
                             "and USD per 1M tokens, e.g. judge=0.15/0.60")
        prices[m.group(1)] = Price(float(m.group(2)), float(m.group(3)))
    return prices


# ---------------------------------------------------------------- the estimate
class _Estimator:
    def __init__(self, bench: Benchmark, caps: Caps) -> None:
        self.bench, self.caps = bench, caps
        self.table = Estimate()
        self.utility, self.safety = load_prompt(UTILITY_PROMPT), load_prompt(SAFETY_PROMPT)
        self.shared_req = tokens(load_prompt("user_simulator/shared_requirements").render())
        self.shown_reply = min(caps.target, math.ceil(SHOWN_REPLY_CHARS / CHARS_PER_TOKEN))

    def target_call(self, condition: str, prompt: int) -> None:
        self.table.row("target", condition).add(1, prompt, self.caps.target)

    def conversation(self, job: Job, *, first_shared: bool) -> int:
        """Target and user calls of one bc/nc/oracle conversation; returns its number of replies."""
        q = self.bench.queries[job.query_id]
        if job.condition == "oracle":
            text = load_prompt(ORACLE_PROMPT).render(query=q["query"], benign_intent=q["benign_intent"])
            self.target_call("oracle", tokens(text))
            return 1
        history = tokens(q["query"])
        if not first_shared:
            self.target_call(job.condition, history)
        history += self.caps.target
        shown = tokens(q["query"]) + self.shown_reply
        for move in job.moves:
            intent = q.get("benign_intent") if move in BC_MOVES else None
            values = {"query": q["query"], "conversation": ""}
            if intent:
                values["benign_intent"] = intent
            prompt = tokens(move_prompt(move).render(**values)) + self.shared_req + shown
            self.table.row("user", job.condition).add(1, prompt, self.caps.user)
            history += self.caps.user
            self.target_call(job.condition, history)
            history += self.caps.target
            shown += self.caps.user + self.shown_reply
        return 1 + len(job.moves)

    def judge(self, condition: str, query_id: str, replies: int, first_counted: bool) -> None:
        """``replies`` replies of one conversation; the first is not judged again when ``first_counted``."""
        q = self.bench.queries[query_id]
        items = self.bench.checklists.get(query_id, [])
        questions = {str(i["question"]) for i in items}
        self.table.judge_before_dedupe[condition] = (self.table.judge_before_dedupe.get(condition, 0)
                                                     + replies * (len(items) + 1))
        judged = replies - (1 if first_counted else 0)
        if judged <= 0:
            return
        utility_out = 1 if self.caps.utility_mode == "logprobs" else self.caps.judge
        row = self.table.row("judge", condition)
        for question in questions:
            prompt = tokens(self.utility.render(query=q["query"], reply="", item=question)) + self.caps.target
            row.add(judged, judged * prompt, judged * utility_out)
        prompt = tokens(self.safety.render(query=q["query"], reply="")) + self.caps.target
        row.add(judged, judged * prompt, judged * self.caps.judge)


def estimate(bench: Benchmark, jobs: Sequence[Job], caps: Caps, finished: Iterable[str] = ()) -> Estimate:
    """The calls and tokens of running ``jobs`` (minus the ``finished`` conversation ids) and judging
    every conversation of the plan; see the module docstring."""
    done = set(finished)
    est = _Estimator(bench, caps)
    todo = [j for j in jobs if j.conversation_id not in done]
    est.table.conversations = len(todo)
    first_needed = {j.query_id for j in todo if j.condition == "turn1"}
    if caps.shared_turn1:
        first_needed |= {j.query_id for j in todo if j.condition in ("bc", "nc")}
    first_needed -= {j.query_id for j in jobs if j.condition == "turn1" and j.conversation_id in done}
    first_cond = {}
    for j in jobs:                        # a query's turn-1 calls are booked to its first condition
        first_cond.setdefault(j.query_id, j.condition if j.condition != "oracle" else None)
        if first_cond[j.query_id] is None and j.condition != "oracle":
            first_cond[j.query_id] = j.condition
    for qid in sorted(first_needed, key=list(bench.queries).index):
        est.target_call(first_cond[qid] or "turn1", tokens(bench.queries[qid]["query"]))
    first_judged: set[str] = set()
    for job in jobs:
        shared = caps.shared_turn1 and job.condition in ("turn1", "bc", "nc")
        if job.condition == "turn1":
            replies = 1
        elif job.conversation_id in done:
            replies = 1 + len(job.moves)
        else:
            replies = est.conversation(job, first_shared=shared)
        est.judge(job.condition, job.query_id, replies, first_counted=shared and job.query_id in first_judged)
        if shared:
            first_judged.add(job.query_id)
    return est.table


def run_cost_table(bench: Benchmark, jobs: Sequence[Job], meta: RunMeta, finished: Iterable[str],
                   prices: Iterable[str]) -> list[str]:
    """The table of a run's settings (run.json's caps and switches); ValueError names a bad --price."""
    priced = parse_prices(prices)
    caps = Caps(target=meta.generation.target.max_tokens, user=meta.generation.user.max_tokens,
                judge=meta.judge.max_tokens, shared_turn1=meta.shared_turn1, utility_mode=meta.judge.utility_mode)
    return format_table(estimate(bench, jobs, caps, finished), priced)


# ---------------------------------------------------------------- the printed table
def format_table(table: Estimate, prices: Optional[dict[str, Price]] = None) -> list[str]:
    """The table as lines: one per role and condition, then per role and in total."""
    prices = prices or {}
    head = f"{'role':<7} {'condition':<9} {'calls':>10} {'prompt tok':>13} {'compl. tok':>13}"
    lines = [f"cost estimate ({table.conversations} conversations to run; tokens ~{CHARS_PER_TOKEN} chars each, "
             "replies and completions at their caps):", head + (f" {'USD':>10}" if prices else "")]
    total_cost = 0.0
    for role in ROLES:
        role_rows = [(c, r) for (ro, c), r in table.rows.items() if ro == role]
        sum_row = Row()
        for cond, r in sorted(role_rows, key=lambda cr: _COND_ORDER.get(cr[0], 9)):
            sum_row.add(r.calls, r.prompt_tokens, r.completion_tokens)
            lines.append(_line(role, cond, r, prices.get(role)))
        if role_rows:
            lines.append(_line(role, "all", sum_row, prices.get(role)))
            total_cost += prices[role].cost(sum_row) if role in prices else 0.0
    before = sum(table.judge_before_dedupe.values())
    lines.append(f"judge calls before dedupe of the shared turn-1 reply and identical items: {before:,}; "
                 f"after: {table.calls('judge'):,} (an upper bound: identical replies are judged once)")
    if prices:
        lines.append(f"estimated cost: {total_cost:,.2f} USD (roles without --price not counted)")
    return lines


_COND_ORDER = {"turn1": 0, "oracle": 1, "bc": 2, "nc": 3}


def _line(role: str, cond: str, row: Row, price: Optional[Price]) -> str:
    text = f"{role:<7} {cond:<9} {row.calls:>10,} {row.prompt_tokens:>13,} {row.completion_tokens:>13,}"
    return text + (f" {price.cost(row):>10,.2f}" if price is not None else "")
