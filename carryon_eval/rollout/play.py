"""Rollout: every conversation of the selected conditions, played against the target model.

Conditions (paper §4): "turn1" (the query alone), "oracle" (query + benign intent in one prompt),
"bc" and "nc" (the dataset's conversations; a flow of k moves gives 1 + k target replies, each
follow-up user turn rendered by the user simulator). With shared_turn1 the turn-1 reply of a query
is generated once and is the first reply of all its bc/nc conversations.

Conversations run concurrently (up to `concurrency`), turns in order within one, longest first (the
long ones decide the wall time), and each starts as soon as its own query's turn-1 reply is back (not
after every query's). Each finished conversation is appended to transcripts.jsonl at once (and
``on_finished`` is called, so that the judge can start on it); a rerun skips those, and the response
cache makes the finished turns of an interrupted conversation free.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from carryon_eval.model.ask import Request, ask, same_request
from carryon_eval.dataset.load import Benchmark
from carryon_eval.defaults import CONCURRENCY, EMPTY_REPLY_RETRIES
from carryon_eval.model.endpoint import ChatEndpoint
from carryon_eval.moves import BC_MOVES
from carryon_eval.progress import Progress
from carryon_eval.prompts import load_prompt
from carryon_eval.run.records import Generation, Skipped
from carryon_eval.run.folder import RunFolder
from carryon_eval.schema import ALL_CONDITIONS, TRIPLET_CONDITION, Message, Transcript
from carryon_eval.rollout.simulator import SimulatorError, UserSimulator
from carryon_eval.triplet.prompt_sets import triplet_prompts

STAGE = "target"
ORACLE_PROMPT = "target/oracle"
__all__ = ["EMPTY_REPLY_RETRIES", "Generation", "Job", "ORACLE_PROMPT", "RolloutSummary", "plan", "rollout",
           "turn_seed"]


def turn_seed(base: int, conversation_id: str, turn: int, role: str) -> int:
    """A fixed seed per (run seed, conversation, turn, role): reruns hit the cache, conversations differ."""
    digest = hashlib.sha256(f"{base}|{role}|{conversation_id}|{turn}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


@dataclass(frozen=True)
class Job:
    conversation_id: str
    query_id: str
    condition: str
    flow_id: Optional[str] = None
    moves: tuple[str, ...] = ()


def plan(bench: Benchmark, conditions: Sequence[str]) -> tuple[list[Job], list[Skipped]]:
    """All conversations to run, in order (turn1, oracle, then the dataset's), and those skipped with why."""
    unknown = [c for c in conditions if c not in ALL_CONDITIONS]
    if unknown:
        raise ValueError(f"unknown condition(s) {unknown}; expected some of {list(ALL_CONDITIONS)}")
    jobs: list[Job] = []
    skipped: list[Skipped] = []
    for qid, q in bench.queries.items():
        if "turn1" in conditions:
            jobs.append(Job(f"turn1:{qid}", qid, "turn1"))
        if "oracle" in conditions:
            if q.get("benign_intent"):
                jobs.append(Job(f"oracle:{qid}", qid, "oracle"))
            else:
                skipped.append(Skipped(f"oracle:{qid}", "oracle",
                                       "query has no benign_intent (the oracle prompt needs it)"))
    for conv in bench.conversations:
        flow = bench.flows[conv["flow_id"]]
        moves = tuple(flow["moves"])
        cond = str(flow["condition"]).lower()      # load_benchmark checked it against the moves
        if cond not in conditions:
            continue
        if any(m in BC_MOVES for m in moves) and not bench.queries[conv["query_id"]].get("benign_intent"):
            skipped.append(Skipped(conv["conversation_id"], cond,
                                   "query has no benign_intent (benign clarification moves need it)"))
            continue
        jobs.append(Job(conv["conversation_id"], conv["query_id"], cond, flow["flow_id"], moves))
    if TRIPLET_CONDITION in conditions:      # one single-turn job per triplet prompt
        jobs += [Job(cid, set_id, TRIPLET_CONDITION) for cid, (set_id, _) in triplet_prompts(bench.triplets).items()]
        if not bench.triplets:
            skipped.append(Skipped(TRIPLET_CONDITION, TRIPLET_CONDITION, "the dataset has no triplets config"))
    return jobs, skipped


@dataclass
class RolloutSummary:
    total: int                       # conversations planned
    finished: int                    # in transcripts.jsonl at the end
    new: int                         # finished by this call
    failed: dict[str, str] = field(default_factory=dict)   # conversation_id -> reason


def _chat_messages(messages: Sequence[Message]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


def _as_reply(text: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    return text, None          # any non-empty reply is the model's answer, kept as it came


async def rollout(bench: Benchmark, run: RunFolder, target: ChatEndpoint, simulator: UserSimulator, *,
                  conditions: Sequence[str], gen: Generation, shared_turn1: bool = True,
                  concurrency: int = CONCURRENCY, show_progress: Optional[bool] = None,
                  on_finished: Optional[Callable[[], None]] = None) -> RolloutSummary:
    """Play every planned conversation not yet in the run folder; see the module docstring."""
    jobs, _ = plan(bench, conditions)
    player = _Player(bench, run, target, simulator, conditions=conditions, gen=gen, shared_turn1=shared_turn1,
                     concurrency=concurrency)
    player.on_finished = on_finished
    todo = [j for j in jobs if j.conversation_id not in player.existing]
    already = len(jobs) - len(todo)
    player.bar = Progress(len(jobs), "rollout", usage=target.usage, initial=already,
                          disable=None if show_progress is None else not show_progress)
    conversations = longest_first([j for j in todo if j.condition != "turn1"])
    first = player.first_replies_needed(todo)
    order = {qid: i for i, qid in enumerate(dict.fromkeys(j.query_id for j in conversations))}
    try:
        # turn-1 replies first (for the queries of the longest conversations first); a conversation that
        # shares one waits for that one alone
        player.pending = {qid: asyncio.ensure_future(player.turn1(qid))
                          for qid in sorted(first, key=lambda q: order.get(q, len(order)))}
        await _all_of([*player.pending.values(), *(player.converse(j) for j in conversations)])
    finally:
        player.bar.close()
        player.writer.shutdown(wait=True)
    finished = len(run.finished_ids() & {j.conversation_id for j in jobs})
    return RolloutSummary(total=len(jobs), finished=finished, new=finished - already, failed=player.failed)


def longest_first(jobs: Sequence[Job]) -> list[Job]:
    """Most follow-up moves first; ties keep plan order (so the order is reproducible)."""
    return sorted(jobs, key=lambda j: -len(j.moves))


async def _all_of(coros: list[Any]) -> None:
    """Run all; on the first error (or cancellation) cancel the rest and wait for them."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        for fut in asyncio.as_completed(tasks):
            await fut
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class _Player:
    """One rollout call's state: the target, the simulator, the shared turn-1 replies, the failures."""

    def __init__(self, bench: Benchmark, run: RunFolder, target: ChatEndpoint, simulator: UserSimulator, *,
                 conditions: Sequence[str], gen: Generation, shared_turn1: bool, concurrency: int) -> None:
        self.bench, self.run, self.target, self.simulator = bench, run, target, simulator
        self.conditions, self.gen, self.shared_turn1 = conditions, gen, shared_turn1
        self.model = target.config.model
        self.gate = asyncio.Semaphore(max(1, concurrency))
        self.existing = {t.conversation_id: t for t in run.transcripts()}
        self.first: dict[str, tuple[Message, Optional[str]]] = {}   # query_id -> turn-1 reply, finish reason
        self.failed: dict[str, str] = {}
        self.bar: Any = None
        self.pending: dict[str, asyncio.Future[None]] = {}        # query_id -> its turn-1 call
        self.on_finished: Optional[Callable[[], None]] = None
        # appends (each fsynced) run in one thread of their own, in order, never on the event loop
        self.writer = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="carryon-transcripts")

    async def write(self, fn: Callable[..., None], *args: Any) -> None:
        await asyncio.get_running_loop().run_in_executor(self.writer, fn, *args)

    def first_replies_needed(self, todo: Sequence[Job]) -> set[str]:
        """Queries whose turn-1 reply must be generated (their own turn1 transcript, or shared by bc/nc);
        one already in transcripts.jsonl is reused."""
        need = {j.query_id for j in todo if j.condition == "turn1"}
        if self.shared_turn1:
            need |= {j.query_id for j in todo if j.condition in ("bc", "nc")}
        for qid in list(need):
            done = self.existing.get(f"turn1:{qid}")
            if done is not None:
                self.first[qid] = (done.replies[0], (done.meta.get("finish_reasons") or [None])[0])
                need.discard(qid)
        return need

    async def reply(self, conversation_id: str, messages: Sequence[Message],
                    turn: int) -> tuple[Message, Optional[str]]:
        """The target's reply; an empty one is asked again, and one still empty is kept as "" (the model's
        answer) with finish reason "empty", which the report counts."""
        gen = self.gen
        request = Request(_chat_messages(messages), temperature=gen.temperature, max_tokens=gen.max_tokens,
                          seed=turn_seed(gen.seed, conversation_id, turn, "target"))
        asked = await ask(self.target, request, _as_reply, stage=STAGE, retry=same_request(EMPTY_REPLY_RETRIES))
        if asked.ok and asked.raw:
            return Message(role="assistant", content=asked.raw, turn=turn, model=self.model), asked.finish_reason
        return Message(role="assistant", content="", turn=turn, model=self.model), "empty"

    async def finish(self, job: Job, messages: list[Message], finish_reasons: list[Optional[str]], shared: bool,
                     **meta: Any) -> None:
        await self.write(self.run.append, Transcript(conversation_id=job.conversation_id, query_id=job.query_id,
                                   condition=job.condition, flow_id=job.flow_id, moves=list(job.moves),
                                   messages=messages, target_model=self.model, shared_turn1=shared,
                                   meta={"finish_reasons": finish_reasons, **meta}))
        self.bar.advance()
        if self.on_finished is not None:
            self.on_finished()

    async def turn1(self, qid: str) -> None:
        async with self.gate:
            query = Message(role="user", content=self.bench.queries[qid]["query"], turn=1)
            self.first[qid] = await self.reply(f"turn1:{qid}", [query], 1)
            if "turn1" in self.conditions and f"turn1:{qid}" not in self.existing:
                answer, why = self.first[qid]
                await self.finish(Job(f"turn1:{qid}", qid, "turn1"), [query, answer], [why], self.shared_turn1)

    def opening(self, job: Job, meta: dict[str, Any]) -> Message:
        q = self.bench.queries[job.query_id]
        if job.condition == TRIPLET_CONDITION:
            return Message(role="user", content=triplet_prompts(self.bench.triplets)[job.conversation_id][1], turn=1)
        if job.condition != "oracle":
            return Message(role="user", content=q["query"], turn=1)
        prompt = load_prompt(ORACLE_PROMPT)
        meta["prompt"] = prompt.ref
        return Message(role="user", content=prompt.render(query=q["query"], benign_intent=q["benign_intent"]),
                       turn=1)

    async def converse(self, job: Job) -> None:
        shared = self.shared_turn1 and job.condition in ("bc", "nc")
        if shared and job.query_id in self.pending:
            await asyncio.shield(self.pending[job.query_id])      # its own query's turn-1 reply, not all
        async with self.gate:
            q = self.bench.queries[job.query_id]
            meta: dict[str, Any] = {}
            messages = [self.opening(job, meta)]
            answer, why = self.first[job.query_id] if shared else await self.reply(job.conversation_id, messages, 1)
            messages.append(answer)
            reasons = [why]
            for turn, move in enumerate(job.moves, start=2):
                try:
                    user = await self.simulator.render(
                        move, query=q["query"], history=messages, turn=turn,
                        seed=turn_seed(self.gen.seed, job.conversation_id, turn, "user"),
                        benign_intent=q.get("benign_intent") if move in BC_MOVES else None)
                except SimulatorError as exc:
                    self.failed[job.conversation_id] = str(exc)
                    await self.write(self.run.record_failure, job.conversation_id, str(exc))
                    self.bar.advance()
                    return
                messages.append(user)
                answer, why = await self.reply(job.conversation_id, messages, turn)
                messages.append(answer)
                reasons.append(why)
            if job.moves:
                meta["user_model"] = self.simulator.model
            await self.finish(job, messages, reasons, shared, **meta)
