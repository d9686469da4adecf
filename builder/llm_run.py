"""The runner of the LLM stages: endpoints, one ask per model call, the stage driver, the output.

    stages = LLMStages(LLMConfig(roles={...}, generators=[...]), log=print)
    manifest = build(source, out, llm_stages=stages)        # builder.pipeline.build calls stages(queries)

Every stage of ``stages_for(config)`` runs for every surviving query at once and draws a progress line
(done/total, rate, ETA, tokens). Each model call goes through ``carryon_eval.model.ask.ask`` with the
``repair`` policy: replies are parsed tolerantly (carryon_eval.parsing); a reply that still cannot be
used is answered with the repair prompt (at most defaults.REPAIRS times, only for stages that have an
``expected`` text); an empty reply is asked again (defaults.EMPTY_REPLY_RETRIES times); a reply that
repeats our instructions is not an answer. If nothing usable comes back, the stage drops the unit or
the query with the reason. A bad reply never crashes the build; an endpoint that fails every call of
a stage (or MAX_CONSECUTIVE_FAILURES calls in a row) aborts it with LLMStageAbort, and the response
cache lets a rerun resume without repeating any finished request. A stage that drops every query
stops the build with NoQueryKept (one line: the stage and its commonest reason); nothing is written.
"""
from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any, Callable, Optional

from carryon_eval import defaults
from carryon_eval.model.ask import EMPTY, Asked, Attempt, Request, ask, repair
from carryon_eval.model.cache import ResponseCache
from carryon_eval.model.client import Endpoint
from carryon_eval.model.crash import LocalServerCrashed
from carryon_eval.model.endpoint import ChatEndpoint, ChatResult, EndpointConfig, EndpointError, UsageLedger
from carryon_eval.progress import Progress
from carryon_eval.prompts import Prompt, load_prompt

from .dry_run import dry_run_plan, format_dry_run
from .llm_config import LLMConfig, ModelSpec
from .pipeline import LLMOutput, NoQueryKept
from .provenance import card_summary, checklist_rows, llm_manifest, provenance_rows, triplet_rows
from .query_state import Outcome, QueryState, plural
from .replies import echoes_prompt
from .sources.record import SourceQuery
from .stage_tally import StageTally
from .stages import Stage, stages_for

MAX_CONSECUTIVE_FAILURES = 10
ECHO_PROBLEM = "it repeats the instructions instead of answering them"


class LLMStageAbort(Exception):
    """An endpoint keeps failing: the build stops (finished requests stay in the cache). One line."""


class _FailureWatch:
    """A ChatEndpoint that counts the calls in a row that failed for good at one endpoint and model,
    and aborts the build at MAX_CONSECUTIVE_FAILURES."""

    def __init__(self, endpoint: ChatEndpoint) -> None:
        self.inner = endpoint
        self.config = endpoint.config
        self.usage = endpoint.usage
        self.in_a_row = 0

    async def chat(self, messages: list[dict], *, stage: str, temperature: float = 0.0,
                   max_tokens: int = defaults.TARGET_MAX_TOKENS, seed: Optional[int] = None,
                   response_format: Optional[dict] = None, top_logprobs: Optional[int] = None) -> ChatResult:
        try:
            result = await self.inner.chat(messages, stage=stage, temperature=temperature, max_tokens=max_tokens,
                                           seed=seed, response_format=response_format, top_logprobs=top_logprobs)
        except LocalServerCrashed:
            raise                       # the embedded server died: the build ends now (builder/cli.py)
        except EndpointError as exc:
            self.in_a_row += 1
            if self.in_a_row >= MAX_CONSECUTIVE_FAILURES:
                raise LLMStageAbort(f"stage {stage}: {self.in_a_row} calls in a row failed; last: {exc}") from None
            raise
        self.in_a_row = 0
        return result

    async def check(self) -> None:
        await self.inner.check()

    async def aclose(self) -> None:
        await self.inner.aclose()


class _StageRun:
    """The StageContext of one stage: its prompt, its asks (each advances the progress line)."""

    def __init__(self, runner: LLMStages, stage: Stage, bar: Any) -> None:
        self.runner, self.stage, self.bar = runner, stage, bar
        self.config = runner.config
        self.prompt = runner.prompts[stage.name]

    def messages(self, **values: object) -> list[dict[str, str]]:
        return self.prompt.messages(**values)

    async def ask(self, spec: ModelSpec, messages: list[dict[str, str]], *, seed: Optional[int] = None) -> Outcome:
        out = await self.runner.ask(self.stage, spec, messages, seed=seed)
        self.bar.advance()
        return out

    def detail(self, spec: ModelSpec, extra: str = "") -> str:
        d = f"model={spec.model}; prompt={self.prompt.ref}"
        return d + (f"; {extra}" if extra else "")


class LLMStages:
    """The ``llm_stages`` callable of builder.pipeline.build: ``stages(queries) -> LLMOutput``."""

    def __init__(self, config: LLMConfig, *, log: Callable[[str], None] = print, local_server: Any = None) -> None:
        """``local_server``: the embedded LocalModelServer, if a role runs on it (its crash ends every call)."""
        self.config = config
        self.log = log
        self.stages = stages_for(config)
        self.usage = UsageLedger()
        self.cache = ResponseCache(config.cache_dir) if config.cache_dir is not None else None
        self.endpoints: dict[tuple[str, str, str], _FailureWatch] = {}
        for spec in [*config.roles.values(), *config.generators]:
            key = spec.endpoint_key()
            if key not in self.endpoints:
                endpoint: ChatEndpoint = Endpoint(EndpointConfig(
                    base_url=spec.base_url, model=spec.model,
                    api_key_env=config.api_key_env if spec.api_key_env is None else spec.api_key_env,
                    concurrency=spec.concurrency, timeout=spec.timeout, max_retries=config.max_retries,
                    backoff_base=config.backoff_base, **spec.request()), cache=self.cache, usage=self.usage)
                if local_server is not None and spec.base_url == local_server.base_url:
                    endpoint = local_server.watch(endpoint)
                self.endpoints[key] = _FailureWatch(endpoint)
        self.prompts: dict[str, Prompt] = {stage.name: stage.template() for stage in self.stages}
        self.repair_prompt = load_prompt("repair", package="carryonbench_builder")
        self.tally: dict[str, StageTally] = {stage.name: StageTally() for stage in self.stages}
        self.states: list[QueryState] = []

    @property
    def repairs(self) -> dict[str, int]:
        return {name: t.repairs for name, t in self.tally.items()}

    @property
    def empty_retries(self) -> dict[str, int]:
        return {name: t.empty_reply_retries for name, t in self.tally.items()}

    # ------------------------------------------------------------ entry point
    def __call__(self, queries: list[SourceQuery]) -> LLMOutput:
        return asyncio.run(self.run(queries))

    async def run(self, queries: list[SourceQuery]) -> LLMOutput:
        try:
            await self.check_endpoints()
            # What it will cost, before any call is made (the same estimate as --dry-run).
            self.log(format_dry_run(dry_run_plan(queries, self.config), len(queries), len(self.config.generators)))
            states = self.states = [QueryState(q) for q in queries]
            for stage in self.stages:
                await self._run_stage(stage, [s for s in states if s.dropped_at is None])
            return self._output(states)
        finally:
            for ep in self.endpoints.values():
                await ep.aclose()

    async def check_endpoints(self) -> None:
        """GET /models on every distinct endpoint before spending anything; EndpointError on the first failure."""
        results = await asyncio.gather(*(ep.check() for ep in self.endpoints.values()), return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException):
                raise r

    # ------------------------------------------------------------ one call, with re-asks and repairs
    async def ask(self, stage: Stage, spec: ModelSpec, messages: list[dict[str, str]], *,
                  seed: Optional[int] = None) -> Outcome:
        """One unit's model call: usable value, or the problem (a reason of the provenance)."""
        params = self.config.params(stage)
        request = Request(messages, temperature=params.temperature, max_tokens=params.max_tokens, seed=seed,
                          response_format=stage.response_format(spec))
        policy = repair(lambda attempt: self._repair_messages(stage, attempt),
                        repairs=defaults.REPAIRS if stage.expected else 0, empties=defaults.EMPTY_REPLY_RETRIES)

        def parse(text: Optional[str]) -> tuple[Any, Optional[str]]:
            return (None, ECHO_PROBLEM) if echoes_prompt(text) else stage.parse(text)

        tally = self.tally[stage.name]
        try:
            asked = await ask(self.endpoints[spec.endpoint_key()], request, parse, stage=stage.name,
                              retry=policy)
        except LocalServerCrashed:
            raise
        except EndpointError as exc:
            tally.failed_calls += 1
            return Outcome(problem=f"the endpoint failed after retries ({self._public_error(exc, spec)})",
                           failed_call=True)
        tally.repairs += asked.repairs
        tally.empty_reply_retries += asked.empty_retries
        for attempt in asked.history:
            tally.used(spec, attempt.result)
        if asked.ok:
            return Outcome(value=asked.value)
        return Outcome(problem=self._unusable(stage, asked))

    @staticmethod
    def _cut_note(attempt: Attempt) -> str:
        if attempt.result.finish_reason != "length":
            return ""
        return f" (the reply was cut off at max_tokens={attempt.request.max_tokens})"

    def _repair_messages(self, stage: Stage, attempt: Attempt) -> list[dict[str, str]]:
        cut = self._cut_note(attempt)
        problem = f"{attempt.problem}{cut}" + ("; answer more briefly" if cut else "")
        return self.repair_prompt.messages(problem=problem, expected=stage.expected)

    def _unusable(self, stage: Stage, asked: Asked[Any]) -> str:
        if asked.problem == EMPTY:
            return f"the model returned an empty reply {1 + defaults.EMPTY_REPLY_RETRIES} times"
        tried = f" after {plural(asked.repairs, 'repair prompt')}" if stage.expected else ""
        return f"unusable reply{tried}: {asked.problem}{self._cut_note(asked.history[-1])}"

    @staticmethod
    def _public_error(exc: Exception, spec: ModelSpec) -> str:
        """The error without the endpoint URL, so that provenance does not depend on a port."""
        msg = str(exc).replace(f" at {spec.base_url}", "").replace(spec.base_url, "<endpoint>")
        return msg[:200]

    # ------------------------------------------------------------ stage driver
    async def _run_stage(self, stage: Stage, states: list[QueryState]) -> None:
        started = time.monotonic()
        units = sum(stage.units(s, self.config) for s in states)
        disable = None if self.config.progress is None else not self.config.progress
        bar = Progress(total=units, desc=stage.name, usage=_StageUsage(self.usage, stage.name), unit="call",
                       disable=disable)
        tally = self.tally[stage.name]
        failed_before = tally.failed_calls
        try:
            ctx = _StageRun(self, stage, bar)
            await asyncio.gather(*(stage.run(ctx, s) for s in states))
        finally:
            bar.close()
        tally.seconds = round(time.monotonic() - started, 3)
        failed = tally.failed_calls - failed_before
        if units and failed >= units:
            raise LLMStageAbort(f"stage {stage.name}: every call failed ({failed} of {units}); the endpoint "
                                f"looks down - rerun the same command to resume from the cache")
        kept = sum(1 for s in states if s.dropped_at is None)
        tokens = self.usage.total_tokens(stage.name)
        self.log(f"{stage.name}: {kept} of {plural(len(states), 'query')} kept, {len(states) - kept} dropped "
                 f"({units:,} {stage.work}, {tokens:,} new tokens, {tally.seconds:.1f}s)")
        if states and not kept:
            raise NoQueryKept(nothing_kept(stage.name, states), provenance_rows=provenance_rows(self.states))

    # ------------------------------------------------------------ output
    def _output(self, states: list[QueryState]) -> LLMOutput:
        checklist = checklist_rows(states)
        return LLMOutput(
            intents={s.q.query_id: s.intent for s in states if s.intent},
            checklist_rows=checklist, provenance_rows=provenance_rows(states),
            kept_query_ids=[s.q.query_id for s in states if s.dropped_at is None], triplet_rows=triplet_rows(states),
            malicious_intents={s.q.query_id: s.malicious_intent for s in states if s.malicious_intent},
            manifest=llm_manifest(self.config, self.stages, self.prompts, self.repair_prompt, self.tally,
                                  self.usage.snapshot(), states,
                                  sent={key: ep.inner.sent_params() for key, ep in self.endpoints.items()
                                        if hasattr(ep.inner, "sent_params")}),
            card={"llm_summary": card_summary(self.config, self.stages, states, checklist),
                  "harm_filter_rule": f"applied this rule in this build: {self.config.harm_rule()} (the paper: at "
                                      "least 3 harmless answers of 5 generators, by WildGuard)"})


def nothing_kept(stage: str, states: list[QueryState]) -> str:
    """One line: the stage that dropped every query and the commonest of its reasons."""
    reasons = Counter(next((r.reason for r in reversed(s.rows) if r.stage == stage and r.decision == "dropped"
                            and not r.unit and r.item is None), "no reason recorded") for s in states)
    reason, count = reasons.most_common(1)[0]
    others = len(states) - count
    rest = f"; {others} for other reasons" if others else ""
    return f"{stage}: 0 of {plural(len(states), 'query')} kept ({count} of {len(states)}: {reason}{rest})"


class _StageUsage:
    """A UsageLedger view for the progress line: this stage's tokens and the build's total so far."""

    def __init__(self, usage: UsageLedger, stage: str) -> None:
        self.usage, self.stage = usage, stage

    def snapshot(self) -> dict[str, dict[str, int]]:
        rows = self.usage.snapshot()

        def total(pred: Callable[[str], bool]) -> dict[str, int]:
            picked = [r for k, r in rows.items() if pred(k)]
            return {f: sum(r[f] for r in picked) for f in ("calls", "cache_hits", "prompt_tokens", "completion_tokens")}
        return {f"{self.stage}/*": total(lambda k: k.split("/", 1)[0] == self.stage), "total/*": total(lambda k: True)}
