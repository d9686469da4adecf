"""Rollout and judging at the same time, in one event loop: the judge takes each conversation as it finishes.

    rolled, judged = await judge_while_rolling_out(
        lambda done: rollout(..., on_finished=done),           # done(transcript) after each append
        lambda incoming: judge_run(..., incoming=incoming))     # judges them as they come

The rollout calls ``done(transcript)`` for every conversation right after appending it to transcripts.jsonl;
the judge phase (carryon_eval.judge.phase) plans that transcript's cases at once and its workers take them from
one queue, so judge calls run continuously beside the rollout rather than in passes, and the run ends soon
after the longer of the two. The judge's one pass starts with what transcripts.jsonl already holds (a resumed
run), keeps the judgments it already has, and rewrites each judgment file in transcript order at its end: the
files are the same as a judge pass after the rollout writes. Resume stays what it was: transcripts and
judgments are append-only, and an interrupted run costs nothing twice (the response cache).
"""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Awaitable, Callable, Generic, TypeVar

T = TypeVar("T")
J = TypeVar("J")
X = TypeVar("X")
_END = object()


class Finished(Generic[X]):
    """What the rollout hands over, as an async iterator: ``finished(x)`` adds one, ``end()`` closes it."""

    def __init__(self) -> None:
        self.count = 0
        self._queue: "asyncio.Queue[Any]" = asyncio.Queue()

    def __call__(self, item: X) -> None:
        self.count += 1
        self._queue.put_nowait(item)

    def end(self) -> None:
        self._queue.put_nowait(_END)

    def __aiter__(self) -> AsyncIterator[X]:
        return self._items()

    async def _items(self) -> AsyncIterator[X]:
        while True:
            item = await self._queue.get()
            if item is _END:
                return
            yield item


async def judge_while_rolling_out(rollout: Callable[[Callable[[Any], None]], Awaitable[T]],
                                  judge: Callable[[AsyncIterator[Any]], Awaitable[J]]) -> tuple[T, J]:
    """Run ``rollout(done)`` and ``judge(incoming)`` together; ``incoming`` yields what the rollout passes to
    ``done`` and ends when the rollout does. Returns both results once both are over; an error of either
    cancels the other."""
    finished: Finished[Any] = Finished()

    async def roll() -> T:
        try:
            return await rollout(finished)
        finally:
            finished.end()

    rolling = asyncio.ensure_future(roll())
    judging = asyncio.ensure_future(judge(finished))
    try:
        done, _ = await asyncio.wait({rolling, judging}, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if task.exception() is not None:
                task.result()             # raise it (the finally cancels the other)
        return await rolling, await judging
    finally:
        for task in (rolling, judging):
            task.cancel()
        await asyncio.gather(rolling, judging, return_exceptions=True)
