"""Rollout and judging at the same time, in one event loop.

    summary = await judge_while_rolling_out(lambda done: rollout(..., on_finished=done),
                                            judge_pass, batch=50)
    await judge_phase(...)             # the last pass: whatever finished after the last batch

The rollout calls ``done()`` for every conversation it appends to transcripts.jsonl. Whenever ``batch``
more conversations have finished and no pass is running, ``judge_pass()`` judges everything finished so
far (carryon_eval.judge.phase reads transcripts.jsonl, keeps the judgments it already has and asks only for the
new ones, through the response cache), while the rollout goes on. So the judge endpoint works during the
rollout instead of after it, and resume stays what it was: transcripts and judgments are the same
append-only files, and a pass interrupted half-way costs nothing twice (the cache).
"""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, TypeVar

T = TypeVar("T")


class Finished:
    """Counts finished conversations; ``wait_for(n)`` returns once at least n have finished."""

    def __init__(self) -> None:
        self.count = 0
        self._changed = asyncio.Event()

    def __call__(self) -> None:
        self.count += 1
        self._changed.set()

    async def wait_for(self, n: int) -> None:
        while self.count < n:
            self._changed.clear()
            await self._changed.wait()


async def judge_while_rolling_out(rollout: Callable[[Callable[[], None]], Awaitable[T]],
                                  judge_pass: Callable[[], Awaitable[Any]], *, batch: int) -> T:
    """Run ``rollout(done)``; meanwhile run ``judge_pass()`` each time ``batch`` more conversations have
    finished. Returns the rollout's result once the rollout and any pass in progress are over; an error
    of either cancels the other."""
    finished = Finished()
    rolling = asyncio.ensure_future(rollout(finished))
    judging = asyncio.ensure_future(_passes(rolling, finished, judge_pass, max(1, batch)))
    try:
        await asyncio.wait({rolling, judging}, return_when=asyncio.FIRST_EXCEPTION)
        if judging.done() and judging.exception() is not None:
            judging.result()                    # raise the pass's error (the finally cancels the rollout)
        result = await rolling
        await judging
        return result
    finally:
        for task in (rolling, judging):
            task.cancel()
        await asyncio.gather(rolling, judging, return_exceptions=True)


async def _passes(rolling: "asyncio.Future[Any]", finished: Finished, judge_pass: Callable[[], Awaitable[Any]],
                  batch: int) -> None:
    judged_at = 0
    while not rolling.done():
        more = asyncio.ensure_future(finished.wait_for(judged_at + batch))
        try:
            await asyncio.wait({rolling, more}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            more.cancel()
        if rolling.done():
            return
        judged_at = finished.count
        await judge_pass()
