"""The call budget of ``--max-calls``: a ChatEndpoint wrapper that stops a run once N calls reached a server.

    budgeted = CallBudget(max_calls=500).wrap(endpoint)

Cache hits are free; a call is reserved before it starts, so concurrent calls never overshoot.
"""
from __future__ import annotations

import asyncio
from typing import Any, Optional

from carryon_eval.model.cache import lookup
from carryon_eval.model.endpoint import ChatEndpoint, ChatResult, EndpointError, EndpointWrapper


class CallBudgetSpent(EndpointError):
    """The run's --max-calls budget is spent; the run stops cleanly and a rerun resumes it."""


class CallBudget:
    """At most ``max_calls`` model calls that reach a server (cache hits are free), over every endpoint
    it wraps. A call is reserved before it starts, so concurrent calls never overshoot; once the budget
    is spent, the next call waits until the calls in flight are back (and cached), then raises
    CallBudgetSpent, so nothing paid for is lost."""

    def __init__(self, max_calls: int) -> None:
        self.max_calls = max_calls
        self.reserved = 0
        self.in_flight = 0
        self.spent = False
        self._idle: Optional[asyncio.Event] = None

    def wrap(self, endpoint: ChatEndpoint) -> "BudgetedEndpoint":
        return BudgetedEndpoint(endpoint, self)

    async def take(self) -> None:
        if self.reserved >= self.max_calls:
            self.spent = True
            while self.in_flight:
                self._idle = self._idle or asyncio.Event()
                await self._idle.wait()
            raise CallBudgetSpent(f"--max-calls {self.max_calls} reached; the run stopped cleanly")
        self.reserved += 1
        self.in_flight += 1

    def done(self, *, refund: bool) -> None:
        self.in_flight -= 1
        self.reserved -= refund
        if not self.in_flight and self._idle is not None:
            self._idle.set()
            self._idle = None


class BudgetedEndpoint(EndpointWrapper):
    """A ChatEndpoint whose calls count against a CallBudget."""

    def __init__(self, inner: ChatEndpoint, budget: CallBudget) -> None:
        super().__init__(inner)
        self.budget = budget

    async def chat(self, messages: list[dict], *, stage: str, **params: Any) -> ChatResult:
        _, _, hit = lookup(getattr(self.inner, "cache", None), self.inner.config, messages, params)
        if hit is not None:                   # the inner endpoint answers from its cache: free
            return await self.inner.chat(messages, stage=stage, **params)
        await self.budget.take()
        refund = False
        try:
            result = await self.inner.chat(messages, stage=stage, **params)
            refund = result.cached            # it shared an identical call in flight
        except asyncio.CancelledError:
            refund = True                     # never sent, or its answer is not kept
            raise
        finally:
            self.budget.done(refund=refund)
        return result
