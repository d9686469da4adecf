"""A pool of endpoints serving one model, behind the one ChatEndpoint protocol.

    pool = EndpointPool([Endpoint(cfg_a, cache=c, usage=u), Endpoint(cfg_b, cache=c, usage=u)])
    result = await pool.chat(messages, stage="judge_utility")      # like any ChatEndpoint

- Each request goes to the live member with the fewest requests in flight (ties: the first given).
- A member whose call fails for good with a transport error (its own retries exhausted: connection
  refused or dropped, timeouts, 5xx, 429) gets a strike; after ``STRIKES`` strikes in a row it is taken
  out for ``COOL_DOWN`` seconds and then tried again (one success clears its strikes). The failed request
  is sent again to another member, so a member dying mid-run changes no result: the members share one
  response cache and every request is the same wherever it goes.
- A request the server rejects (HTTP 4xx other than 408/429) is not the member's fault: it is raised.
- When no member is live the request goes to the one that is due back first; its error is raised if it
  fails too.

Every member serves the same model (checked with ``check()``); run.json records the pool's base URLs.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Optional, Sequence

from carryon_eval.model.endpoint import ChatEndpoint, ChatResult, EndpointConfig, EndpointError, UsageLedger

log = logging.getLogger("carryon.pool")

STRIKES = 2            # transport failures in a row that take a member out
COOL_DOWN = 30.0       # seconds a member stays out before it is tried again
REJECTED = "rejected the request"     # carryon_eval.model.client's wording for a non-retryable HTTP error


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
                 cool_down: float = COOL_DOWN) -> None:
        if not endpoints:
            raise ValueError("an endpoint pool needs at least one endpoint")
        models = {ep.config.model for ep in endpoints}
        if len(models) != 1:
            raise ValueError(f"every endpoint of a pool serves the same model, got {sorted(models)}")
        self.members = [_Member(ep) for ep in endpoints]
        self.strikes, self.cool_down = strikes, cool_down

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

    async def chat(self, messages: list[dict], *, stage: str, **params: Any) -> ChatResult:
        tried: set[int] = set()
        last_error = EndpointError(f"no endpoint of the pool for model '{self.config.model}' answered")
        while True:
            member = self._pick(tried)
            if member is None:
                raise last_error
            tried.add(self.members.index(member))
            member.in_flight += 1
            try:
                result = await member.endpoint.chat(messages, stage=stage, **params)
            except EndpointError as exc:
                if REJECTED in str(exc):
                    raise
                self._strike(member, exc)
                last_error = exc
                continue
            finally:
                member.in_flight -= 1
            member.strikes = 0
            return result

    def _strike(self, member: _Member, exc: EndpointError) -> None:
        member.strikes += 1
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
