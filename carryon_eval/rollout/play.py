"""Rollout: every planned job (carryon_eval.suite.Job) played against the target model.

A job is a single-turn prompt or a scripted conversation: its opening message (``job.prompt``, exactly as
planned by its suite) and, for a flow of k moves, k follow-up user turns rendered by the user simulator, giving
1 + k target replies. Jobs with the same ``shares`` key reuse one first reply, generated once (CarryOnBench's
shared turn-1 reply: the turn1 transcript's reply and the first reply of the query's bc/nc conversations).

Conversations run concurrently (up to `concurrency`), turns in order within one, longest first (the
long ones decide the wall time), and each starts as soon as its own shared first reply is back (not
after every query's). Each finished conversation is appended to transcripts.jsonl at once (and
``on_finished(transcript)`` is called after the append, so that the judge can start on it); a rerun skips those, and the response
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
from carryon_eval.parsing import strip_reasoning
from carryon_eval.progress import Progress
from carryon_eval.run.records import Generation
from carryon_eval.run.folder import RunFolder, has_empty_reply
from carryon_eval.run.heap import many_calls
from carryon_eval.schema import Message, Transcript
from carryon_eval.rollout.simulator import INTENT_SLOT, SimulatorError, UserSimulator
from carryon_eval.suite import Job, JobGeneration

STAGE = "target"
__all__ = ["EMPTY_REPLY_RETRIES", "Generation", "Job", "RolloutSummary", "rollout", "turn_seed"]


def turn_seed(base: int, conversation_id: str, turn: int, role: str) -> int:
    """A fixed seed per (run seed, conversation, turn, role): reruns hit the cache, conversations differ."""
    digest = hashlib.sha256(f"{base}|{role}|{conversation_id}|{turn}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


@dataclass
class RolloutSummary:
    total: int                       # conversations planned
    finished: int                    # in transcripts.jsonl at the end
    new: int                         # finished by this call
    failed: dict[str, str] = field(default_factory=dict)   # conversation_id -> reason


def _chat_messages(messages: Sequence[Message]) -> list[dict[str, str]]:
    """The conversation as the target is sent it: its earlier replies without their reasoning (providers that
    return reasoning apart from the answer expect it not to be sent back; the transcript keeps it)."""
    return [{"role": m.role, "content": strip_reasoning(m.content)
             if m.role == "assistant" and "<think>" in m.content.lower() else m.content} for m in messages]


def _as_reply(text: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    return text, None          # any non-empty reply is the model's answer, kept as it came


async def rollout(jobs: Sequence[Job], bench: Benchmark, run: RunFolder, target: ChatEndpoint,
                  simulator: UserSimulator, *, gen: Generation, concurrency: int = CONCURRENCY,
                  show_progress: Optional[bool] = None,
                  on_finished: Optional[Callable[[Transcript], None]] = None) -> RolloutSummary:
    """Play every job not yet in the run folder; see the module docstring. ``bench`` gives the simulator the
    query and benign intent of a conversation's row."""
    player = Player(bench, run, target, simulator, gen=gen, concurrency=concurrency)
    player.on_finished = on_finished
    todo = [j for j in jobs if j.conversation_id not in player.existing]
    already = len(jobs) - len(todo)
    player.bar = Progress(len(jobs), "rollout", usage=target.usage, initial=already,
                          disable=None if show_progress is None else not show_progress)
    owners = {j.shares: j for j in todo if j.shares is not None and j.conversation_id == j.shares}
    conversations = longest_first([j for j in todo if j.shares is None or j.conversation_id != j.shares])
    first = player.first_replies_needed(todo)
    order = {key: i for i, key in enumerate(dict.fromkeys(j.shares for j in conversations if j.shares))}
    try:
        # shared first replies first (those of the longest conversations first); a conversation that shares
        # one waits for that one alone
        player.pending = {key: asyncio.ensure_future(player.first_reply(job, owners.get(key)))
                          for key, job in sorted(first.items(), key=lambda kv: order.get(kv[0], len(order)))}
        with many_calls():
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


class Player:
    """Plays jobs against a target and a user simulator: ``first_reply(job, owner)`` gets a shared turn-1 reply,
    ``converse(job)`` a whole conversation, each appended to the run folder. It holds one rollout's state (the
    shared turn-1 replies, the failures); ``rollout()`` drives it over a plan, and the inspect-ai task
    (carryon_eval.inspect_bridge.task) one sample at a time."""

    def __init__(self, bench: Benchmark, run: RunFolder, target: ChatEndpoint, simulator: UserSimulator, *,
                 gen: Generation, concurrency: int) -> None:
        self.bench, self.run, self.target, self.simulator = bench, run, target, simulator
        self.gen = gen
        self.model = target.config.model
        self.gate = asyncio.Semaphore(max(1, concurrency))
        self.existing = {t.conversation_id: t for t in run.transcripts() if not has_empty_reply(t)}
        self.first: dict[str, tuple[Message, Optional[str]]] = {}   # shares key -> first reply, finish reason
        self.failed: dict[str, str] = {}
        self.bar: Any = None
        self.pending: dict[str, asyncio.Future[None]] = {}        # shares key -> its first-reply call
        self.on_finished: Optional[Callable[[Transcript], None]] = None
        # appends (each fsynced) run in one thread of their own, in order, never on the event loop
        self.writer = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="carryon-transcripts")

    async def write(self, fn: Callable[..., None], *args: Any) -> None:
        await asyncio.get_running_loop().run_in_executor(self.writer, fn, *args)

    def first_replies_needed(self, todo: Sequence[Job]) -> dict[str, Job]:
        """The shared first replies to generate, each with a job whose prompt it answers; one whose owner
        transcript (conversation_id == key) is already in transcripts.jsonl is reused."""
        need: dict[str, Job] = {}
        for j in todo:
            if j.shares is not None:
                need.setdefault(j.shares, j)
        for key in list(need):
            done = self.existing.get(key)
            if done is not None:
                self.first[key] = (done.replies[0], (done.meta.get("finish_reasons") or [None])[0])
                del need[key]
        return need

    async def reply(self, conversation_id: str, messages: Sequence[Message],
                    turn: int, own: Optional[JobGeneration] = None) -> tuple[Message, Optional[str]]:
        """The target's reply; an empty one is asked again, and one still empty is kept as "" with finish
        reason "empty": the report counts it (unscored) and the next rollout asks that conversation again.
        ``own``: the job's own generation settings."""
        gen = self.gen
        temperature = gen.temperature if own is None or own.temperature is None else own.temperature
        max_tokens = gen.max_tokens if own is None or own.max_tokens is None else own.max_tokens
        request = Request(_chat_messages(messages), temperature=temperature, max_tokens=max_tokens,
                          seed=turn_seed(gen.seed, conversation_id, turn, "target"))
        again = same_request(EMPTY_REPLY_RETRIES) if own is None or own.retry_empty else None
        asked = await ask(self.target, request, _as_reply, stage=STAGE, retry=again)
        if asked.ok and asked.raw:
            return Message(role="assistant", content=asked.raw, turn=turn, model=self.model), asked.finish_reason
        return Message(role="assistant", content="", turn=turn, model=self.model), "empty"

    async def finish(self, job: Job, messages: list[Message], finish_reasons: list[Optional[str]], shared: bool,
                     **meta: Any) -> None:
        transcript = Transcript(conversation_id=job.conversation_id, query_id=job.query_id,
                                condition=job.condition, flow_id=job.flow_id, moves=list(job.moves),
                                messages=messages, target_model=self.model, shared_turn1=shared,
                                meta={"finish_reasons": finish_reasons, **meta,
                                      **({"generation": job.generation.to_json()} if job.generation else {})})
        await self.write(self.run.append, transcript)
        self.bar.advance()
        if self.on_finished is not None:
            self.on_finished(transcript)

    async def first_reply(self, job: Job, owner: Optional[Job]) -> None:
        """The shared first reply of ``job.shares``; the owner job (if planned) is written with it."""
        key = str(job.shares)
        async with self.gate:
            opening = Message(role="user", content=job.prompt, turn=1)
            self.first[key] = await self.reply(key, [opening], 1, job.generation)
            if owner is not None:
                answer, why = self.first[key]
                await self.finish(owner, [opening, answer], [why], True)

    async def converse(self, job: Job) -> None:
        shared = job.shares is not None
        if shared and job.shares in self.pending:
            await asyncio.shield(self.pending[job.shares])      # its own shared first reply, not all
        async with self.gate:
            meta: dict[str, Any] = dict(job.meta)
            messages = [Message(role="user", content=job.prompt, turn=1)]
            answer, why = self.first[job.shares] if shared else await self.reply(job.conversation_id, messages, 1,
                                                                                 job.generation)
            messages.append(answer)
            reasons = [why]
            q = self.bench.queries.get(job.query_id, {}) if job.moves else {}
            for turn, move in enumerate(job.moves, start=2):
                try:
                    user = await self.simulator.render(
                        move, query=q["query"], history=messages, turn=turn,
                        seed=turn_seed(self.gen.seed, job.conversation_id, turn, "user"),
                        benign_intent=q.get(INTENT_SLOT[job.intent]) if move in BC_MOVES else None,
                        intent=job.intent)
                except SimulatorError as exc:
                    self.failed[job.conversation_id] = str(exc)
                    await self.write(self.run.record_failure, job.conversation_id, str(exc))
                    self.bar.advance()
                    return
                messages.append(user)
                answer, why = await self.reply(job.conversation_id, messages, turn, job.generation)
                messages.append(answer)
                reasons.append(why)
            if job.moves:
                meta["user_model"] = self.simulator.model
            await self.finish(job, messages, reasons, shared, **meta)
