"""A pool of endpoints serving one model, behind the one ChatEndpoint protocol.

    pool = EndpointPool([Endpoint(cfg_a, cache=c, usage=u), Endpoint(cfg_b, cache=c, usage=u)])
    result = await pool.chat(messages, stage="judge_utility")      # like any ChatEndpoint

- Each request goes to the live member with the fewest requests in flight (ties: the first given).
- A member whose call fails for good with a transport error (its own retries exhausted: connection
  refused or dropped, timeouts, 5xx, 429) gets a strike; after ``STRIKES`` strikes in a row it is taken
  out for ``COOL_DOWN`` seconds and then tried again (one success clears its strikes). The failed request
  is sent again to another member, so a member dying mid-run changes no result: the members share one
  response cache and every request is the same wherever it goes.
- With ``rounds`` > 1 a request that every member failed is tried on them again (after a backoff), up to
  ``rounds`` times: the members themselves do not retry (a hung member costs one timeout), the pool does.
- A request the server rejects (HTTP 4xx other than 408/429) is not the member's fault: it is raised.
- When no member is live the request goes to the one that is due back first; its error is raised if it
  fails too.

- A member whose request timed out is taken out at once (a hung server costs one timeout, not two).
- Hedging: a request unanswered after ``hedge_after()`` seconds (HEDGE_AFTER, or 3x the slowest answer so far)
  also goes to another live member; the first answer wins, the other call is cancelled and its member taken out
  as hung. A hung member thus costs seconds, not a request timeout; the members share the response cache and
  every request is the same wherever it goes, so results do not change. With no other member live, a slow
  answer is waited for (up to the request timeout).

Every member serves the same model (checked with ``check()``); run.json records the pool's base URLs.

``RoleWatch`` wraps the endpoint (or pool) of one role and ends the phase when the role is gone: once no
call of the role (nor of another role on the same server) has been answered for ``give_up_after`` seconds while
calls wait or fail (connection
refused, timeouts, 5xx on every member), the waiting calls and every later one raise ``EndpointGone``,
one line naming the role and its endpoint(s). A reply the server refuses (HTTP 4xx) is an answer. A call that
fails for good sooner (its retries spent on refused connections, timeouts, 5xx) raises ``RoleFailed``, which names
the role too: the judge counts it as a missing judgment and goes on; the rollout, which cannot, ends the run
incomplete (exit 4) like a role gone.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from typing import Any, Optional, Sequence

from carryon_eval.model.endpoint import (ChatEndpoint, ChatResult, EndpointConfig, EndpointError, EndpointRejected,
                                        EndpointWrapper, UsageLedger)
from carryon_eval import defaults
from carryon_eval.model.redact import redact

log = logging.getLogger("carryon.pool")

STRIKES = 2            # transport failures in a row that take a member out
COOL_DOWN = 30.0       # seconds a member stays out before it is tried again
REJECTED = "rejected the request"     # carryon_eval.model.client's wording for a non-retryable HTTP error
TIMED_OUT = "timed out after"         # carryon_eval.model.client's wording for a request that got no answer in time
HEDGE_AFTER = 10.0     # seconds without an answer before a request also goes to another live member


class _Member:
    def __init__(self, endpoint: ChatEndpoint) -> None:
        self.endpoint = endpoint
        self.in_flight = 0
        self.strikes = 0
        self.out_until = 0.0

    def live(self, now: float) -> bool:
        return self.out_until <= now


class EndpointPool:
    """See the module docstring."""

    def __init__(self, endpoints: Sequence[ChatEndpoint], *, strikes: int = STRIKES,
                 cool_down: float = COOL_DOWN, rounds: int = 1) -> None:
        if not endpoints:
            raise ValueError("an endpoint pool needs at least one endpoint")
        models = {ep.config.model for ep in endpoints}
        if len(models) != 1:
            raise ValueError(f"every endpoint of a pool serves the same model, got {sorted(models)}")
        self.members = [_Member(ep) for ep in endpoints]
        self.strikes, self.cool_down = strikes, cool_down
        self.rounds = max(1, rounds)       # times every member is tried for one request before it fails
        self.slowest = 0.0                 # seconds of the slowest answer so far (the hedging delay's floor)

    @property
    def config(self) -> EndpointConfig:
        return self.members[0].endpoint.config

    @property
    def usage(self) -> Optional[UsageLedger]:
        return self.members[0].endpoint.usage

    @property
    def base_urls(self) -> list[str]:
        return [m.endpoint.config.base_url for m in self.members]

    def _pick(self, tried: set[int]) -> Optional[_Member]:
        now = time.monotonic()
        candidates = [m for i, m in enumerate(self.members) if i not in tried and m.live(now)]
        if not candidates:
            waiting = [m for i, m in enumerate(self.members) if i not in tried]
            return min(waiting, key=lambda m: m.out_until) if waiting else None
        return min(candidates, key=lambda m: m.in_flight)

    def hedge_after(self) -> float:
        """Seconds an attempt may go unanswered before the same request also goes to another live member:
        HEDGE_AFTER, or three times the slowest answer so far when that is longer (long replies are not asked
        twice), never more than the request timeout."""
        return min(max(HEDGE_AFTER, 3 * self.slowest), self.config.timeout)

    def _live_untried(self, tried: set[int]) -> Optional[_Member]:
        now = time.monotonic()
        live = [m for i, m in enumerate(self.members) if i not in tried and m.live(now)]
        return min(live, key=lambda m: m.in_flight) if live else None

    async def chat(self, messages: list[dict], *, stage: str, **params: Any) -> ChatResult:
        """The request on one member; unanswered after ``hedge_after()`` seconds, also on another live member
        (the first answer wins, the other is cancelled and its member taken out as hung); a slow answer is
        still taken when no other member is live."""
        tried: set[int] = set()
        last_error = EndpointError(f"no endpoint of the pool for model '{self.config.model}' answered")
        round_ = 1
        running: dict["asyncio.Future[ChatResult]", tuple[_Member, float]] = {}

        def start(member: _Member) -> None:
            tried.add(self.members.index(member))
            member.in_flight += 1
            running[asyncio.ensure_future(member.endpoint.chat(messages, stage=stage, **params))] = (
                member, time.monotonic())

        try:
            while True:
                if not running:
                    member = self._pick(tried)
                    if member is None and round_ < self.rounds:       # every member failed: again after a backoff
                        cfg = self.config
                        await asyncio.sleep(min(cfg.backoff_base * 2 ** (round_ - 1), defaults.BACKOFF_MAX))
                        round_ += 1
                        tried.clear()
                        member = self._pick(tried)
                    if member is None:
                        raise last_error
                    start(member)
                can_hedge = self._live_untried(tried) is not None
                done, _ = await asyncio.wait(running, timeout=self.hedge_after() if can_hedge else None,
                                             return_when=asyncio.FIRST_COMPLETED)
                if not done:                       # no answer in time: the same request to another member too
                    spare = self._live_untried(tried)
                    if spare is not None:
                        log.warning("pool: no answer from %s in %gs; asking %s too",
                                    ", ".join(m.endpoint.config.base_url for m, _ in running.values()),
                                    self.hedge_after(), spare.endpoint.config.base_url)
                        start(spare)
                    continue
                for fut in done:
                    member, began = running.pop(fut)
                    member.in_flight -= 1
                    exc = fut.exception()
                    if exc is None:
                        member.strikes = 0
                        self.slowest = max(self.slowest, time.monotonic() - began)
                        for other, _ in running.values():          # slower than a hedge: hung, out at once
                            self._strike(other, EndpointError(f"{TIMED_OUT} {self.hedge_after():g}s (another "
                                                              "member answered first)"))
                        return fut.result()
                    if not isinstance(exc, EndpointError) or REJECTED in str(exc):
                        raise exc
                    self._strike(member, exc)
                    last_error = exc
        finally:
            for fut, (member, _) in running.items():
                fut.cancel()
                member.in_flight -= 1
            await asyncio.gather(*running, return_exceptions=True)

    def _strike(self, member: _Member, exc: EndpointError) -> None:
        member.strikes += self.strikes if TIMED_OUT in str(exc) else 1      # a hung member: out at once
        if member.strikes >= self.strikes and member.live(time.monotonic()):
            member.out_until = time.monotonic() + self.cool_down
            log.warning("pool: %s taken out for %gs after %d failures (%s)", member.endpoint.config.base_url,
                        self.cool_down, member.strikes, exc)

    async def check(self) -> None:
        for member in self.members:
            await member.endpoint.check()

    async def aclose(self) -> None:
        for member in self.members:
            await member.endpoint.aclose()


class EndpointGone(EndpointError):
    """Every endpoint of a role stopped answering (RoleWatch): the phase ends; the same command resumes."""


class RoleFailed(EndpointError):
    """One call of a role failed for good with a transport error (RoleWatch; the message names the role)."""


def served_by(endpoint: ChatEndpoint) -> tuple[str, ...]:
    """The base URL(s) an endpoint (or each member of a pool) sends its calls to."""
    return tuple(getattr(endpoint, "base_urls", None) or [endpoint.config.base_url])


@dataclasses.dataclass
class Heard:
    """When a server last answered any role (time.monotonic()); shared by the RoleWatches of the roles it serves."""
    at: float = float("-inf")


class RoleWatch(EndpointWrapper):
    """One role's ChatEndpoint (an endpoint or a pool) that gives up when the role has gone silent; see the
    module docstring. Everything but ``chat`` is the wrapped endpoint's. Roles served by the same server share
    ``heard``: an answer to any of them shows the server is there (one busy local server answers in turn)."""

    def __init__(self, endpoint: ChatEndpoint, role: str, give_up_after: float = defaults.GIVE_UP_AFTER,
                 heard: Optional[Heard] = None) -> None:
        super().__init__(endpoint)
        self.role, self.give_up_after = role, give_up_after
        self.heard = heard if heard is not None else Heard()
        self.quiet_since = time.monotonic()     # the last answer, or when the role was asked after a quiet time
        self.in_flight = 0
        self.failing = False                    # a call failed since the last answer
        self.gone: Optional[EndpointGone] = None

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _where(self) -> str:
        return ", ".join(served_by(self.inner))

    def _give_up(self, why: str) -> EndpointGone:
        if self.gone is None:
            self.gone = EndpointGone(
                f"the {self.role} endpoint {self._where()} (model '{self.config.model}') has not answered for "
                f"{self.give_up_after:g}s ({why}); what was done is written")
            log.error("%s", self.gone)
        return self.gone

    def _answered(self) -> None:
        self.quiet_since, self.failing = time.monotonic(), False
        self.heard.at = self.quiet_since

    def _silent_since(self) -> float:
        return max(self.quiet_since, self.heard.at)

    async def chat(self, messages: list[dict], *, stage: str, **params: Any) -> ChatResult:
        if self.gone is not None:
            raise self.gone
        if self.in_flight == 0 and not self.failing:
            self.quiet_since = time.monotonic()          # idle until now is not silence
        self.in_flight += 1
        call = asyncio.ensure_future(self.inner.chat(messages, stage=stage, **params))
        call.add_done_callback(_retrieve)    # this call may be cancelled just as its own call fails
        try:
            while not call.done():
                left = self._silent_since() + self.give_up_after - time.monotonic()
                if left <= 0:
                    raise self._give_up("calls wait without an answer")
                await asyncio.wait({call}, timeout=left)
                if self.gone is not None and not call.done():
                    raise self.gone
            try:
                result = call.result()
            except EndpointRejected:
                self._answered()                         # the server is there; the request is wrong
                raise
            except EndpointGone:                         # said by the wrapped endpoint (a crashed server)
                raise
            except EndpointError as exc:
                self.failing = True
                if time.monotonic() - self._silent_since() >= self.give_up_after:
                    raise self._give_up(str(exc)) from None
                raise RoleFailed(f"the {self.role} endpoint {self._where()} (model '{self.config.model}') stopped "
                                 f"answering ({exc}); what was done is written") from None
        finally:
            self.in_flight -= 1
            if not call.done():
                call.cancel()
                await asyncio.gather(call, return_exceptions=True)
        self._answered()
        return dataclasses.replace(result, text=redact(result.text)) if result.text else result


def _retrieve(task: "asyncio.Future[Any]") -> None:
    """Marks a finished task's exception as retrieved: whoever awaited it may have been cancelled first."""
    if not task.cancelled():
        task.exception()
