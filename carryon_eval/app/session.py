"""What one command holds (Session): the embedded model (started when a role first needs it, stopped on any
exit), the endpoints it opened (closed at the end), the token ledger, and the endpoint checks before anything is
spent."""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from carryon_eval.app.config import Output, check_url, run_role_key
from carryon_eval import defaults
from carryon_eval.model.cache import ResponseCache
from carryon_eval.cli_common import is_local
from carryon_eval.model.endpoint import EndpointConfig, UsageLedger
from carryon_eval.model.pool import EndpointPool, Heard, RoleWatch, served_by
from carryon_eval.model.redact import register_key_of
from carryon_eval.model.endpoint import ChatEndpoint
from carryon_eval.model.local import LocalModelServer, LocalServerCrashed
from carryon_eval.model.crash import CrashRecord
from carryon_eval.progress import human, tokens_by_role
from carryon_eval.run.records import RunMeta
from carryon_eval.run.folder import RunFolder, add_usage, read_usage
from carryon_eval.run.lock import hold
from carryon_eval.app.cost import Price, RoleUsage, parse_prices, usage_by_role

if TYPE_CHECKING:  # pragma: no cover
    from carryon_eval.model.client import Endpoint

POOL_RETRIES = 0                   # a pool member's own retries: none, the pool fails over (then retries rounds)


# ---------------------------------------------------------------- one command's resources
class Session:
    """What one command holds: the embedded model (started when a role first needs it), the endpoints
    it opened (closed at the end), and the token ledger. ``async with Session(...)`` releases all."""

    def __init__(self, out: Output, *, model_check: bool = True,
                 give_up_after: Optional[float] = None, prices: Sequence[str] = (),
                 limits: Optional[dict[tuple[str, ...], Any]] = None, priority: int = 0) -> None:
        self.out = out
        #: this command's place among the sessions sharing ``limits`` (a sweep's run: its index): its requests
        #: waiting on a shared limiter go before those of a later one
        self.priority = priority
        #: (base URL, model) -> the limiter its endpoints share, across the sessions given the same dict (a
        #: sweep's runs: a judge they share has at most its concurrency in flight in all); None: one per endpoint.
        #: The same dict holds, under ("heard", URL, ...), each server's clock of its last answer: a run whose
        #: calls wait for the shared limiter while the server answers another run's is not waiting on silence.
        self.limits = limits
        self.prices = parse_prices(prices)    # --price: this command's usage (and run.json's) priced with them
        self.give_up_after = give_up_after    # None: GIVE_UP_AFTER, or 1.5 timeouts of a slow (local) endpoint
        self.model_check = model_check    # False: the endpoints' check() asks nothing
        self.usage = UsageLedger()
        self._stack = contextlib.ExitStack()
        self._server: Optional[LocalModelServer] = None
        self._opened: list[Endpoint] = []
        self._caches: dict[Path, ResponseCache] = {}
        self.by_role: dict[str, list[Endpoint]] = {}   # the endpoints opened for each role
        self._runs: dict[Path, RunFolder] = {}      # run folders whose usage.json gets this command's usage
        self._heard: dict[tuple[str, ...], Heard] = {}   # per server (its base URLs): when it last answered

    async def __aenter__(self) -> "Session":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._server is not None:      # the embedded server's last crash, per run folder: is this the same?
            for run in self._runs.values():
                if isinstance(exc, LocalServerCrashed):
                    CrashRecord(run.path).note(exc)
                elif exc is None:
                    CrashRecord(run.path).clear()
        try:
            try:
                for run in self._runs.values():
                    add_usage(run, self.usage.snapshot())
                    self._record_usage(run)
            finally:                          # closed even when the usage cannot be written (a full disk)
                for ep in self._opened:
                    await ep.aclose()
        finally:
            try:
                for cache in self._caches.values():   # every queued cache entry on disk before we return
                    cache.close()
            finally:
                self._stack.close()

    def hold(self, run: RunFolder, what: str) -> None:
        """Hold the run folder's lock (carryon_eval.run.lock) until the session ends, after its last write."""
        self._stack.enter_context(hold(run.path, what))

    def local_server(self) -> LocalModelServer:
        if self._server is None:
            self.out.note("starting the embedded model (Gemma 3 270M via llama.cpp) ...")
            self._server = self._stack.enter_context(LocalModelServer())
        return self._server

    def endpoint(self, config: EndpointConfig, run: RunFolder, role: Optional[str] = None) -> "Endpoint":
        """An endpoint that caches in the run folder and counts usage; closed when the session ends. The
        cache writes in a thread (fsyncs never stall the event loop) and is flushed when the session ends."""
        cache = self._caches.get(run.cache_dir)
        if cache is None:
            cache = self._caches[run.cache_dir] = ResponseCache(run.cache_dir, background=True)
        register_key_of(config.api_key_env)          # its value is masked in everything written
        from carryon_eval.model.client import Endpoint, shared_limiter   # the openai library, only when calling
        limiter = None if self.limits is None else self.limits.setdefault(
            (config.base_url, config.model), shared_limiter(config.concurrency))
        ep = Endpoint(config, cache=cache, usage=self.usage, model_check=self.model_check, limiter=limiter,
                      priority=self.priority)
        self._opened.append(ep)
        if role is not None:
            self.by_role.setdefault(role, []).append(ep)
        self._runs.setdefault(run.path, run)
        if self._server is not None and config.base_url == self._server.base_url:
            return self._server.watch(ep)      # the embedded server's crash ends its calls at once
        return ep

    def role_endpoint(self, config: EndpointConfig, pool: Sequence[str], run: RunFolder,
                      role: str = "target") -> ChatEndpoint:
        """One endpoint, or a pool of it and the ``pool`` URLs (members retry once, then fail over), watched:
        a role that stops answering ends the phase (pool.RoleWatch)."""
        if not pool:
            return self.watched(self.endpoint(config, run, role), role)
        members = [dataclasses.replace(config, base_url=url, max_retries=min(config.max_retries, POOL_RETRIES))
                   for url in (config.base_url, *pool)]
        return self.watched(EndpointPool([self.endpoint(c, run, role) for c in members],
                                         rounds=1 + config.max_retries), role)

    def watched(self, endpoint: ChatEndpoint, role: str) -> ChatEndpoint:
        """The role's endpoint behind a RoleWatch; roles served by the same server(s) share one clock of its last
        answer (a server busy answering the judge is not silent to the target)."""
        give_up = self.give_up_after
        if give_up is None:
            give_up = max(defaults.GIVE_UP_AFTER, 1.5 * endpoint.config.timeout)
        servers = served_by(endpoint)
        heard = (self._heard if self.limits is None else self.limits).setdefault(
            servers if self.limits is None else ("heard", *servers), Heard())
        return RoleWatch(endpoint, role, give_up, heard=heard)

    def record_sent(self, run: RunFolder) -> None:
        """run.json's ``roles.ROLE.sent``: the parameters each role's endpoints refused and what was sent
        instead (learned during this command), so that the report can say so."""
        learned = {role: {k: v for ep in eps for k, v in ep.sent_params().items()}
                   for role, eps in self.by_role.items()}
        learned = {role: sent for role, sent in learned.items() if sent}
        if not learned or not run.run_file.exists():
            return
        meta = run.read_meta()
        changed = False
        for role, sent in learned.items():
            record = meta.roles.get(role)
            if record is not None and {**record.sent, **sent} != record.sent:
                meta.roles[role] = dataclasses.replace(record, sent={**record.sent, **sent})
                changed = True
        if changed:
            run.write_meta(meta)
        for role, sent in learned.items():
            for name, how in sent.items():
                self.out.note(f"{role}: {self.by_role[role][0].config.model} refused {name}: {how} "
                              f"(recorded in {run.run_file})")

    def on_local(self, cfg: EndpointConfig) -> EndpointConfig:
        """``cfg`` pointed at the embedded model (started if need be). Its requests get the local timeout: one
        CPU-bound server answers every role in turn, so a request may wait behind the other roles' long ones."""
        srv = self.local_server()
        return dataclasses.replace(cfg, base_url=srv.base_url, model=srv.model,
                                   timeout=max(cfg.timeout, defaults.LOCAL_TIMEOUT))

    def role_config(self, meta: RunMeta, role: str, *, endpoint: Optional[str] = None, model: Optional[str] = None,
                    api_key_env: Optional[str] = None, key_option: str = "--api-key-env",
                    concurrency: Optional[int] = None, **request: Any) -> EndpointConfig:
        """Role ``role`` of a run folder's run.json as this command calls it; the embedded model again if it ran
        there, unless overridden (``request``: request options given again; None keeps the recorded ones). Its
        key: ``api_key_env`` (option ``key_option``) or the one given for its endpoint (app.config.run_role_key)."""
        record = meta.role(role)
        check_url("--endpoint" if record is None else "endpoint", endpoint)
        key = run_role_key(meta, role, endpoint, api_key_env, key_option)
        if is_local(endpoint) if endpoint is not None else record.local:
            return self.on_local(record.config(api_key_env=key, concurrency=concurrency, **request))
        return record.config(base_url=endpoint, model=model, api_key_env=key, concurrency=concurrency, **request)

    def print_usage(self) -> None:
        tokens = tokens_by_role(self.usage)
        if tokens:
            self.out.info("tokens: " + ", ".join(f"{role} {human(n)}" for role, n in tokens.items()))
        roles = usage_by_role(self.usage.snapshot(), self.prices)
        cached = {r: u for r, u in roles.items() if u.cached_prompt_tokens or u.reasoning_tokens}
        if cached:
            self.out.info("of which: " + "; ".join(
                f"{role} {human(u.cached_prompt_tokens)} of {human(u.prompt_tokens)} prompt tokens cached by "
                f"the provider, {human(u.reasoning_tokens)} reasoning" for role, u in cached.items()))
        priced = {r: u.usd for r, u in roles.items() if u.usd is not None}
        if priced:
            self.out.info("cost: " + ", ".join(f"{role} {usd:,.4f} USD" for role, usd in priced.items())
                          + " (this command's calls at --price; cached prompt tokens at their own rate)")

    def _record_usage(self, run: RunFolder) -> None:
        """run.json's ``usage``: usage.json (every command so far) per role, priced at this command's --price
        (or the prices recorded before)."""
        if not run.run_file.exists():
            return
        meta = run.read_meta()
        prices = dict(self.prices)
        for role, u in meta.usage.items():
            given = RoleUsage.from_json(u).price_per_1m if isinstance(u, dict) else None
            if role not in prices and isinstance(given, Price):
                prices[role] = given
        usage = {role: u.to_json() for role, u in usage_by_role(read_usage(run), prices).items()}
        if usage != meta.usage:
            run.write_meta(dataclasses.replace(meta, usage=usage))


async def check_configs(configs: Sequence[EndpointConfig], model_check: bool = True) -> None:
    """Check endpoints before a run folder is touched: no cache, no usage, closed right after."""
    from carryon_eval.model.client import Endpoint
    probes = [Endpoint(c, model_check=model_check) for c in configs]
    try:
        await check_endpoints(probes)
    finally:
        for probe in probes:
            await probe.aclose()


async def check_endpoints(eps: Sequence[ChatEndpoint]) -> None:
    """Every endpoint answers and serves its model; one check per distinct (URL, model)."""
    seen: dict[tuple[str, str], ChatEndpoint] = {}
    for ep in eps:
        seen.setdefault((ep.config.base_url, ep.config.model), ep)
    results = await asyncio.gather(*(ep.check() for ep in seen.values()), return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
