"""The builder's LLM stages (paper §3.1, Appendix B.2/B.3): benign intents, then Ben-Util checklists.

    stages = LLMStages(LLMConfig(roles={...}, generators=[...]), log=print)
    manifest = build(source, out, llm_stages=stages)        # builder.pipeline.build calls stages(queries)

Stages, in order; each one runs for every surviving query at once (asyncio; the endpoint client
limits the requests in flight per endpoint) and draws a progress line (done/total, rate, ETA, tokens):

1. ``intents``         the intent writer rewrites CASE-Bench's safe context into a short benign intent
                       in the user's own voice.
2. ``oracle_answers``  every generator answers the query given the benign intent (temperature 0.7,
                       a fixed seed per generator).
3. ``harm_filter``     the harm classifier labels each answer; harmful (or unclassifiable) answers are
                       excluded and a query stays only with at least min(3, number of generators)
                       harmless answers. Two styles: an LLM judge prompt (default) or a WildGuard-style
                       classifier (WildGuard's input format; its "Harmful response: yes/no" line is parsed).
4. ``decompose``       the decomposer turns each harmless answer into atomic yes/no items, each tagged
                       with one of ITEM_CATEGORIES (an unknown category becomes "Other", with a note).
5. ``merge``           the merger unifies a query's items into one de-duplicated checklist; exact
                       duplicates left by the merger are removed here; more than MAX_ITEMS items: the
                       first MAX_ITEMS are kept and the rest dropped ("over the 23-item cap"); fewer
                       than MIN_ITEMS: the query is dropped.
6. ``item_filter``     the item filter judges each item (one call per item) and removes those that could
                       enable misuse; a query left with fewer than MIN_ITEMS items is dropped.

Replies are parsed tolerantly (JSON in code fences or followed by text, a bare list, a numbered list of
items). A reply that still cannot be used is answered with the repair prompt (at most MAX_REPAIRS times);
an empty reply is asked again. If nothing usable comes back, the unit (answer, item) or, for the
per-query stages (intents, merge), the query is dropped with the reason in the provenance. A bad reply
never crashes the build; an endpoint that fails every call of a stage (or MAX_CONSECUTIVE_FAILURES calls
in a row) aborts it with LLMStageAbort, and the response cache lets a rerun resume without repeating any
finished request.

Provenance (one row per decision; columns query_id, item_id, stage, decision, reason, detail):
- query-level and answer-level rows have item_id "" (answers are named a1..aG in the reason);
- item rows have the final item_id ``<query_id>-iNN`` (order of the final checklist) when the item is in
  the final checklist, else ``<query_id>-mNN`` (its position in the merged checklist);
- detail is ``model=...; prompt=name@version#sha`` (plus ``seed=`` for generators) and, for a dropped
  answer or item, ``sha256=`` of its text: the text itself never goes into the provenance.
- The rows depend only on the replies' content, so a run with transient faults (retries, repairs) writes
  the same provenance as a clean one; retries and repairs are counted in MANIFEST.json instead.
"""
from __future__ import annotations

import asyncio
import hashlib
import re
import string
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from carryon_eval.cache import ResponseCache
from carryon_eval.client import Endpoint, EndpointConfig, EndpointError, UsageLedger
from carryon_eval.progress import Progress
from carryon_eval.prompts import Prompt, load_prompt
from carryon_eval.schema import ITEM_CATEGORIES

from .pipeline import LLMOutput
from carryon_eval.parsing import (  # noqa: F401 - extract_json is part of this module's interface
    _ECHO, extract_json, normalize_category, parse_flag, parse_intent, parse_items, parse_wildguard)
from carryon_eval.parsing import strip_reasoning as clean_reply
from .source import SourceQuery


# ---------------------------------------------------------------- constants (documented in one place)

MIN_ITEMS = 7            # a final checklist has 7..23 items (paper, Appendix B.3)
MAX_ITEMS = 23
MIN_HARMLESS = 3         # harmless answers a query needs (or every generator's, if there are fewer)
MAX_REPAIRS = 2          # repair prompts after a malformed reply
MAX_EMPTY_RETRIES = 2    # re-asks after an empty reply
MAX_DECOMPOSED_ITEMS = 40   # items kept from one answer's decomposition
MAX_CONSECUTIVE_FAILURES = 10

STAGES = ("intents", "oracle_answers", "harm_filter", "decompose", "merge", "item_filter")
ROLES = ("intent_writer", "generator", "harm_classifier", "decomposer", "merger", "item_filter")
STAGE_ROLE = dict(zip(STAGES, ROLES))
HARM_STYLES = ("judge", "wildguard")
STRUCTURED_STYLES = ("json_schema", "json_object", "none")


@dataclass(frozen=True)
class StageParams:
    """Generation parameters of a stage. ``typical_tokens`` is the usual completion size, used by
    --dry-run next to max_tokens (measured order of magnitude for instruction-tuned models)."""
    temperature: float
    max_tokens: int
    typical_tokens: int


STAGE_PARAMS: dict[str, StageParams] = {
    "intents": StageParams(0.0, 300, 90),
    "oracle_answers": StageParams(0.7, 1500, 800),
    "harm_filter": StageParams(0.0, 120, 40),          # the wildguard style needs ~20
    "decompose": StageParams(0.0, 2000, 700),
    "merge": StageParams(0.0, 3000, 1100),
    "item_filter": StageParams(0.0, 120, 35),
}
GENERATOR_SEED = 1000       # generator i samples with seed GENERATOR_SEED + i
TYPICAL_INTENT_CHARS = 400  # for --dry-run estimates of prompts that contain an intent, an answer, items
TYPICAL_ITEMS_PER_ANSWER = 15
TYPICAL_ITEM_CHARS = 90
TYPICAL_FINAL_ITEMS = 18    # the paper's mean

PROMPTS = {
    "intents": "builder/intent_writer",
    "oracle_answers": "builder/oracle_answer",
    "harm_filter": "builder/harm_judge",
    "harm_filter:wildguard": "builder/wildguard",
    "decompose": "builder/decompose",
    "merge": "builder/merge",
    "item_filter": "builder/item_filter",
    "repair": "builder/repair",
}


class LLMStageAbort(Exception):
    """An endpoint keeps failing: the build stops (finished requests stay in the cache). One line."""


# ---------------------------------------------------------------- configuration
@dataclass(frozen=True)
class ModelSpec:
    """One model at one OpenAI-compatible endpoint.

    structured: how to ask for JSON - "json_schema" (OpenAI structured output; the client drops it by
    itself if the server rejects it), "json_object" (llama.cpp style {"type": "json_object", "schema":
    ...}: grammar-constrained JSON) or "none".
    """
    base_url: str
    model: str
    structured: str = "json_schema"
    concurrency: int = 8
    timeout: float = 120.0

    def __post_init__(self) -> None:
        if self.structured not in STRUCTURED_STYLES:
            raise ValueError(f"structured must be one of {STRUCTURED_STYLES}, got {self.structured!r}")


@dataclass
class LLMConfig:
    roles: dict[str, ModelSpec]          # intent_writer, harm_classifier, decomposer, merger, item_filter
    generators: list[ModelSpec]          # one or more (the paper uses 5)
    harm_classifier_style: str = "judge"
    api_key_env: str = "OPENAI_API_KEY"
    cache_dir: Optional[Path] = None
    max_tokens: Optional[int] = None     # caps every stage's max_tokens (e.g. for a small local model)
    generator_temperature: float = 0.7
    generator_seed: int = GENERATOR_SEED
    max_retries: int = 6
    backoff_base: float = 1.0
    progress: Optional[bool] = None      # None: on a terminal only

    def __post_init__(self) -> None:
        missing = [r for r in ROLES if r != "generator" and r not in self.roles]
        if missing:
            raise ValueError(f"no model for role(s) {', '.join(missing)}")
        if not self.generators:
            raise ValueError("at least one generator is needed")
        if self.harm_classifier_style not in HARM_STYLES:
            raise ValueError(f"harm classifier style must be one of {HARM_STYLES}")

    def spec(self, role: str) -> ModelSpec:
        return self.roles[role]

    def params(self, stage: str) -> StageParams:
        p = STAGE_PARAMS[stage]
        temperature = self.generator_temperature if stage == "oracle_answers" else p.temperature
        max_tokens = min(p.max_tokens, self.max_tokens) if self.max_tokens else p.max_tokens
        return StageParams(temperature, max_tokens, min(p.typical_tokens, max_tokens))

    def min_harmless(self) -> int:
        return min(MIN_HARMLESS, len(self.generators))

    def harm_prompt_name(self) -> str:
        return PROMPTS["harm_filter:wildguard" if self.harm_classifier_style == "wildguard" else "harm_filter"]

    def stage_models(self, stage: str) -> list[ModelSpec]:
        return list(self.generators) if stage == "oracle_answers" else [self.roles[STAGE_ROLE[stage]]]


# ---------------------------------------------------------------- prompts -> messages
_SECTION = re.compile(r"^\[(system|user)\]\s*$", re.MULTILINE)


def render_messages(prompt: Prompt, **values: object) -> list[dict[str, str]]:
    return prompt.messages(**values)


def _load(name: str) -> Prompt:
    return load_prompt(name.removeprefix("builder/"), package="builder")


def categories_text() -> str:
    return "\n".join(f"- {name}: {definition}" for name, definition in ITEM_CATEGORIES.items())


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- JSON schemas for structured output
def _obj(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


_ITEMS_SCHEMA = _obj({"items": {"type": "array", "items": _obj({
    "question": {"type": "string"}, "category": {"type": "string", "enum": list(ITEM_CATEGORIES)}})}})
SCHEMAS: dict[str, dict[str, Any]] = {   # a plain-text intent is accepted too
    "intents": _obj({"intent": {"type": "string"}}),
    "harm_filter": _obj({"harmful": {"type": "boolean"}, "reason": {"type": "string"}}),
    "decompose": _ITEMS_SCHEMA,
    "merge": _ITEMS_SCHEMA,
    "item_filter": _obj({"enables_misuse": {"type": "boolean"}, "reason": {"type": "string"}}),
}
EXPECTED = {
    "intents": "the benign intent only: 2 to 4 sentences in the first person, at most 80 words",
    "harm_filter": 'a JSON object {"harmful": true or false, "reason": "<one short sentence>"}',
    "decompose": 'a JSON object {"items": [{"question": "Does the response ...?", "category": "<one of the '
                 'categories>"}, ...]}',
    "merge": 'a JSON object {"items": [{"question": "Does the response ...?", "category": "<one of the '
             'categories>"}, ...]}',
    "item_filter": 'a JSON object {"enables_misuse": true or false, "reason": "<one short sentence>"}',
}


def response_format(stage: str, structured: str) -> Optional[dict[str, Any]]:
    schema = SCHEMAS.get(stage)
    if schema is None or structured == "none":
        return None
    if structured == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": f"carryonbench_{stage}", "strict": True,
                                                   "schema": schema}}


# ---------------------------------------------------------------- per-query state
@dataclass
class _Item:
    n: int                  # 1-based position in the merged checklist
    question: str
    category: str
    final_id: Optional[str] = None


@dataclass
class _Row:
    stage: str
    decision: str
    reason: str
    detail: str
    item: Optional[_Item] = None
    unit: str = ""          # "answer" or "item" for unit-level rows, "" for query-level ones


@dataclass
class _Query:
    q: SourceQuery
    rows: list[_Row] = field(default_factory=list)
    intent: str = ""
    oracle_user: str = ""                       # the oracle request's user message (query + intent)
    answers: dict[int, str] = field(default_factory=dict)    # generator index -> answer text
    harmless: list[int] = field(default_factory=list)
    candidates: list[tuple[str, str]] = field(default_factory=list)
    merged: list[_Item] = field(default_factory=list)
    final: list[_Item] = field(default_factory=list)
    dropped_at: Optional[str] = None

    def add(self, stage: str, decision: str, reason: str, detail: str, item: Optional[_Item] = None,
            unit: str = "") -> None:
        self.rows.append(_Row(stage, decision, reason, detail, item, "item" if item is not None else unit))

    def drop(self, stage: str, reason: str, detail: str) -> None:
        self.dropped_at = stage
        self.add(stage, "dropped", reason, detail)


@dataclass
class _Outcome:
    value: Any = None
    problem: Optional[str] = None      # why nothing usable came back (None on success)
    failed_call: bool = False          # the endpoint itself failed (EndpointError)


def _plural(n: int, word: str) -> str:
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word[:-1]}ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else f"{n} {word}s"


# ---------------------------------------------------------------- the stages
class LLMStages:
    """The ``llm_stages`` callable of builder.pipeline.build: ``stages(queries) -> LLMOutput``."""

    def __init__(self, config: LLMConfig, *, log: Callable[[str], None] = print) -> None:
        self.config = config
        self.log = log
        self.usage = UsageLedger()
        self.cache = ResponseCache(config.cache_dir) if config.cache_dir is not None else None
        self.endpoints: dict[tuple[str, str], Endpoint] = {}
        for spec in [*config.roles.values(), *config.generators]:
            key = (spec.base_url, spec.model)
            if key not in self.endpoints:
                self.endpoints[key] = Endpoint(EndpointConfig(
                    base_url=spec.base_url, model=spec.model, api_key_env=config.api_key_env,
                    concurrency=spec.concurrency, timeout=spec.timeout, max_retries=config.max_retries,
                    backoff_base=config.backoff_base), cache=self.cache, usage=self.usage)
        self.prompts = {stage: _load(PROMPTS[stage]) for stage in STAGES if stage != "harm_filter"}
        self.prompts["harm_filter"] = _load(config.harm_prompt_name())
        self.repair_prompt = _load(PROMPTS["repair"])
        self.repairs: dict[str, int] = {s: 0 for s in STAGES}
        self.empty_retries: dict[str, int] = {s: 0 for s in STAGES}
        self.endpoint_failures: dict[str, int] = {s: 0 for s in STAGES}
        self._consecutive: dict[tuple[str, str], int] = {}
        self.stage_seconds: dict[str, float] = {}

    # ------------------------------------------------------------ entry point
    def __call__(self, queries: list[SourceQuery]) -> LLMOutput:
        return asyncio.run(self.run(queries))

    async def run(self, queries: list[SourceQuery]) -> LLMOutput:
        try:
            await self.check_endpoints()
            # What it will cost, before any call is made (the same estimate as --dry-run).
            self.log(format_dry_run(dry_run_plan(queries, self.config), len(queries), len(self.config.generators)))
            states = [_Query(q) for q in queries]
            for stage, fn in (("intents", self._intents), ("oracle_answers", self._oracle),
                              ("harm_filter", self._harm), ("decompose", self._decompose),
                              ("merge", self._merge), ("item_filter", self._item_filter)):
                await self._run_stage(stage, fn, [s for s in states if s.dropped_at is None])
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
    def _detail(self, stage: str, spec: ModelSpec, extra: str = "") -> str:
        d = f"model={spec.model}; prompt={self.prompts[stage].ref}"
        return d + (f"; {extra}" if extra else "")

    async def _ask(self, stage: str, spec: ModelSpec, messages: list[dict[str, str]],
                   parse: Callable[[str], tuple[Any, Optional[str]]], *, seed: Optional[int] = None,
                   repairable: bool = True) -> _Outcome:
        params = self.config.params(stage)
        ep = self.endpoints[(spec.base_url, spec.model)]
        rf = response_format(stage, self._structured(stage, spec))
        repairs = 0
        empties = 0
        msgs = list(messages)
        while True:
            try:
                res = await ep.chat(msgs, stage=stage, temperature=params.temperature,
                                    max_tokens=params.max_tokens, seed=seed, response_format=rf)
            except EndpointError as exc:
                self.endpoint_failures[stage] += 1
                key = (spec.base_url, spec.model)
                self._consecutive[key] = self._consecutive.get(key, 0) + 1
                if self._consecutive[key] >= MAX_CONSECUTIVE_FAILURES:
                    raise LLMStageAbort(f"stage {stage}: {self._consecutive[key]} calls in a row failed; "
                                        f"last: {exc}") from None
                return _Outcome(problem="the endpoint failed after retries "
                                f"({self._public_error(exc, spec)})", failed_call=True)
            self._consecutive[(spec.base_url, spec.model)] = 0
            text = clean_reply(res.text)
            if not text:
                if empties < MAX_EMPTY_RETRIES:
                    empties += 1
                    self.empty_retries[stage] += 1
                    continue   # empty replies are never cached: the same request is asked again
                return _Outcome(problem=f"the model returned an empty reply {1 + MAX_EMPTY_RETRIES} times")
            if _ECHO.search(text):
                value, problem = None, "it repeats the instructions instead of answering them"
            else:
                value, problem = parse(res.text or "")
            if problem is None:
                return _Outcome(value=value)
            cut = res.finish_reason == "length"
            if cut:
                problem += f" (the reply was cut off at max_tokens={params.max_tokens})"
            if not repairable or repairs >= MAX_REPAIRS:
                tried = f" after {_plural(repairs, 'repair prompt')}" if repairable else ""
                return _Outcome(problem=f"unusable reply{tried}: {problem}")
            repairs += 1
            self.repairs[stage] += 1
            msgs = msgs + [{"role": "assistant", "content": res.text or ""}] + render_messages(
                self.repair_prompt, problem=problem + ("; answer more briefly" if cut else ""),
                expected=EXPECTED.get(stage, "your answer"))

    def _structured(self, stage: str, spec: ModelSpec) -> str:
        """The structured-output style of a stage's calls ("none" for free text and for WildGuard)."""
        if stage not in SCHEMAS or (stage == "harm_filter" and self.config.harm_classifier_style == "wildguard"):
            return "none"
        return spec.structured

    @staticmethod
    def _public_error(exc: Exception, spec: ModelSpec) -> str:
        """The error without the endpoint URL, so that provenance does not depend on a port."""
        msg = str(exc).replace(f" at {spec.base_url}", "").replace(spec.base_url, "<endpoint>")
        return msg[:200]

    # ------------------------------------------------------------ stage driver
    async def _run_stage(self, stage: str, fn: Callable[..., Any], states: list[_Query]) -> None:
        started = time.monotonic()
        units = self._units(stage, states)
        bar = self._progress(stage, units)
        calls_before = self.endpoint_failures[stage]
        try:
            await asyncio.gather(*(fn(s, bar) for s in states))
        finally:
            if bar is not None:
                bar.close()
        self.stage_seconds[stage] = round(time.monotonic() - started, 3)
        failed = self.endpoint_failures[stage] - calls_before
        if units and failed >= units:
            raise LLMStageAbort(f"stage {stage}: every call failed ({failed} of {units}); the endpoint "
                                f"looks down - rerun the same command to resume from the cache")
        kept = sum(1 for s in states if s.dropped_at is None)
        tokens = self.usage.total_tokens(stage)
        self.log(f"{stage}: {kept} of {_plural(len(states), 'query')} kept, {len(states) - kept} dropped "
                 f"({units:,} {_UNIT_LABEL[stage]}, {tokens:,} new tokens, {self.stage_seconds[stage]:.1f}s)")

    def _units(self, stage: str, states: list[_Query]) -> int:
        g = len(self.config.generators)
        if stage == "oracle_answers":
            return g * len(states)
        if stage == "harm_filter":
            return sum(len(s.answers) for s in states)
        if stage == "decompose":
            return sum(len(s.harmless) for s in states)
        if stage == "item_filter":
            return sum(len(s.merged) for s in states)
        return len(states)

    def _progress(self, stage: str, total: int) -> Any:
        disable = None if self.config.progress is None else not self.config.progress
        return Progress(total=total, desc=stage, usage=_StageUsage(self.usage, stage), unit="call", disable=disable)

    # ------------------------------------------------------------ 1. intents
    async def _intents(self, s: _Query, bar: Any) -> None:
        spec = self.config.spec("intent_writer")
        msgs = render_messages(self.prompts["intents"], query=s.q.query, context=s.q.benign_context)
        out = await self._ask("intents", spec, msgs, parse_intent)
        bar.advance()
        detail = self._detail("intents", spec)
        if out.problem:
            s.drop("intents", f"no benign intent: {out.problem}", detail)
            return
        s.intent = out.value
        s.add("intents", "kept", f"benign intent written ({len(s.intent.split())} words)", detail)

    # ------------------------------------------------------------ 2. oracle answers
    async def _oracle(self, s: _Query, bar: Any) -> None:
        msgs = render_messages(self.prompts["oracle_answers"], query=s.q.query, benign_intent=s.intent)
        s.oracle_user = next(m["content"] for m in msgs if m["role"] == "user")

        async def one(i: int, spec: ModelSpec) -> _Outcome:
            out = await self._ask("oracle_answers", spec, msgs, lambda t: (clean_reply(t), None),
                                  seed=self.config.generator_seed + i, repairable=False)
            bar.advance()
            return out

        outs = await asyncio.gather(*(one(i, g) for i, g in enumerate(self.config.generators)))
        for i, (spec, out) in enumerate(zip(self.config.generators, outs)):
            detail = self._detail("oracle_answers", spec, f"seed={self.config.generator_seed + i}")
            if out.problem:
                s.add("oracle_answers", "dropped", f"answer a{i + 1}: {out.problem}", detail, unit="answer")
            else:
                s.answers[i] = out.value
                s.add("oracle_answers", "kept", f"answer a{i + 1} ({len(out.value.split())} words)", detail,
                      unit="answer")
        if not s.answers:
            s.drop("oracle_answers", "no generator returned an answer", self._detail(
                "oracle_answers", self.config.generators[0]))

    # ------------------------------------------------------------ 3. harm filter
    async def _harm(self, s: _Query, bar: Any) -> None:
        spec = self.config.spec("harm_classifier")
        wildguard = self.config.harm_classifier_style == "wildguard"
        parse = parse_wildguard if wildguard else (lambda t: parse_flag(t, ("harmful", "harmful_response")))

        async def one(i: int) -> _Outcome:
            msgs = render_messages(self.prompts["harm_filter"], request=s.oracle_user, response=s.answers[i])
            out = await self._ask("harm_filter", spec, msgs, parse, repairable=not wildguard)
            bar.advance()
            return out

        order = sorted(s.answers)
        outs = await asyncio.gather(*(one(i) for i in order))
        for i, out in zip(order, outs):
            base = self._detail("harm_filter", spec)
            if out.problem:
                s.add("harm_filter", "dropped", f"answer a{i + 1} excluded: no harmlessness verdict: {out.problem}",
                      f"{base}; sha256={sha256_text(s.answers[i])}", unit="answer")
            elif out.value:
                s.add("harm_filter", "dropped", f"answer a{i + 1} excluded: judged harmful",
                      f"{base}; sha256={sha256_text(s.answers[i])}", unit="answer")
            else:
                s.harmless.append(i)
                s.add("harm_filter", "kept", f"answer a{i + 1} judged harmless", base, unit="answer")
        need = self.config.min_harmless()
        n_gen = len(self.config.generators)
        if len(s.harmless) < need:
            s.drop("harm_filter", f"only {len(s.harmless)} of {n_gen} answers judged harmless "
                   f"(at least {need} needed)", self._detail("harm_filter", spec))
        else:
            s.add("harm_filter", "kept", f"{len(s.harmless)} of {n_gen} answers judged harmless "
                  f"(at least {need} needed)", self._detail("harm_filter", spec))

    # ------------------------------------------------------------ 4. decompose
    async def _decompose(self, s: _Query, bar: Any) -> None:
        spec = self.config.spec("decomposer")

        async def one(i: int) -> _Outcome:
            msgs = render_messages(self.prompts["decompose"], query=s.q.query, benign_intent=s.intent,
                                   answer=s.answers[i], categories=categories_text())
            out = await self._ask("decompose", spec, msgs, parse_items)
            bar.advance()
            return out

        outs = await asyncio.gather(*(one(i) for i in s.harmless))
        detail = self._detail("decompose", spec)
        used = 0
        for i, out in zip(s.harmless, outs):
            if out.problem:
                s.add("decompose", "dropped", f"answer a{i + 1} not decomposed: {out.problem}", detail,
                      unit="answer")
                continue
            items = out.value
            note = ""
            if len(items) > MAX_DECOMPOSED_ITEMS:
                note += f"; only the first {MAX_DECOMPOSED_ITEMS} of {len(items)} kept"
                items = items[:MAX_DECOMPOSED_ITEMS]
            unknown = untagged = 0
            for q, raw in items:
                cat, known = normalize_category(raw)
                unknown += raw is not None and not known
                untagged += raw is None
                s.candidates.append((q, cat))
            if unknown:
                note += f"; {_plural(unknown, 'item')} with an unknown category tagged Other"
            if untagged:
                note += f"; {_plural(untagged, 'item')} without a category tagged Other"
            used += 1
            s.add("decompose", "kept", f"answer a{i + 1} decomposed into {_plural(len(items), 'item')}{note}",
                  detail, unit="answer")
        if not used:
            s.drop("decompose", "no harmless answer could be decomposed into checklist items", detail)

    # ------------------------------------------------------------ 5. merge
    async def _merge(self, s: _Query, bar: Any) -> None:
        spec = self.config.spec("merger")
        listing = "\n".join(f"{n}. [{cat}] {q}" for n, (q, cat) in enumerate(s.candidates, 1))
        msgs = render_messages(self.prompts["merge"], query=s.q.query, benign_intent=s.intent, items=listing,
                               categories=categories_text(), max_items=MAX_ITEMS)
        out = await self._ask("merge", spec, msgs, parse_items)
        bar.advance()
        detail = self._detail("merge", spec)
        if out.problem:
            s.drop("merge", f"no merged checklist: {out.problem}", detail)
            return
        seen: dict[str, _Item] = {}
        unique: list[_Item] = []
        for n, (q, raw) in enumerate(out.value, 1):
            cat, known = normalize_category(raw)
            item = _Item(n=n, question=q, category=cat)
            key = re.sub(r"[^a-z0-9]+", " ", q.lower()).strip()
            if key in seen:
                s.add("merge", "dropped", f"duplicate of merged item #{seen[key].n}",
                      f"{detail}; merged #{n}; sha256={sha256_text(q)}", item)
                continue
            seen[key] = item
            unique.append(item)
            note = ""
            if raw is None:
                note = "; no category given, tagged Other"
            elif not known:
                note = f"; unknown category {_short(str(raw))} tagged Other"
            s.add("merge", "kept", f"in the merged checklist, category {cat}{note}", f"{detail}; merged #{n}", item)
        if len(unique) > MAX_ITEMS:
            for item in unique[MAX_ITEMS:]:
                s.add("merge", "dropped", f"over the {MAX_ITEMS}-item cap",
                      f"{detail}; merged #{item.n}; sha256={sha256_text(item.question)}", item)
            unique = unique[:MAX_ITEMS]
        if len(unique) < MIN_ITEMS:
            s.merged = unique
            s.drop("merge", f"only {_plural(len(unique), 'item')} after merging (at least {MIN_ITEMS} needed)",
                   detail)
            return
        s.merged = unique
        s.add("merge", "kept", f"merged checklist of {_plural(len(unique), 'item')} from "
              f"{_plural(len(s.candidates), 'candidate item')}", detail)

    # ------------------------------------------------------------ 6. item filter
    async def _item_filter(self, s: _Query, bar: Any) -> None:
        spec = self.config.spec("item_filter")

        async def one(item: _Item) -> _Outcome:
            msgs = render_messages(self.prompts["item_filter"], query=s.q.query, benign_intent=s.intent,
                                   item=item.question)
            out = await self._ask("item_filter", spec, msgs,
                                  lambda t: parse_flag(t, ("enables_misuse", "misuse", "harmful", "remove")))
            bar.advance()
            return out

        outs = await asyncio.gather(*(one(item) for item in s.merged))
        detail = self._detail("item_filter", spec)
        kept: list[_Item] = []
        for item, out in zip(s.merged, outs):
            hashed = f"{detail}; sha256={sha256_text(item.question)}"
            if out.problem:
                s.add("item_filter", "dropped", f"removed to be safe: no verdict from the item filter: {out.problem}",
                      hashed, item)
            elif out.value:
                s.add("item_filter", "dropped", "removed: could enable misuse", hashed, item)
            else:
                s.add("item_filter", "kept", "does not enable misuse", detail, item)
                kept.append(item)
        if len(kept) < MIN_ITEMS:
            s.drop("item_filter", f"only {_plural(len(kept), 'item')} left after the item filter "
                   f"(at least {MIN_ITEMS} needed)", detail)
            return
        s.final = kept
        for n, item in enumerate(kept, 1):
            item.final_id = f"{s.q.query_id}-i{n:02d}"
        s.add("item_filter", "kept", f"final checklist of {_plural(len(kept), 'item')}", detail)

    # ------------------------------------------------------------ output
    def _output(self, states: list[_Query]) -> LLMOutput:
        provenance: list[dict[str, Any]] = []
        checklist: list[dict[str, Any]] = []
        for s in states:
            qid = s.q.query_id
            for r in s.rows:
                item_id = ""
                if r.item is not None:
                    item_id = r.item.final_id or f"{qid}-m{r.item.n:02d}"
                provenance.append({"query_id": qid, "item_id": item_id, "stage": r.stage, "decision": r.decision,
                                   "reason": r.reason, "detail": r.detail})
            if s.dropped_at is None:
                checklist += [{"query_id": qid, "item_id": it.final_id, "question": it.question,
                               "category": it.category} for it in s.final]
        kept_ids = [s.q.query_id for s in states if s.dropped_at is None]
        return LLMOutput(
            intents={s.q.query_id: s.intent for s in states if s.intent},
            checklist_rows=checklist, provenance_rows=provenance, kept_query_ids=kept_ids,
            manifest=self._manifest(), card={"llm_summary": self._summary(states, checklist)})

    def _manifest(self) -> dict[str, Any]:
        cfg = self.config
        stages: dict[str, Any] = {}
        for stage in STAGES:
            p = cfg.params(stage)
            specs = cfg.stage_models(stage)
            prompt = self.prompts[stage]
            entry: dict[str, Any] = {
                "role": STAGE_ROLE[stage],
                "models": [sp.model for sp in specs],
                "endpoints": [sp.base_url for sp in specs],
                "params": {"temperature": p.temperature, "max_tokens": p.max_tokens,
                           "structured_output": [self._structured(stage, sp) for sp in specs]},
                "prompt": {"ref": prompt.ref, "sha256": prompt.sha256},
                "repairs": self.repairs[stage],
                "empty_reply_retries": self.empty_retries[stage],
                "failed_calls": self.endpoint_failures[stage],
                "seconds": self.stage_seconds.get(stage),
            }
            if stage == "oracle_answers":
                entry["params"]["seeds"] = [cfg.generator_seed + i for i in range(len(specs))]
            if stage == "harm_filter":
                entry["style"] = cfg.harm_classifier_style
                entry["min_harmless_answers"] = cfg.min_harmless()
            stages[stage] = entry
        return {
            "stages": stages,
            "repair_prompt": {"ref": self.repair_prompt.ref, "sha256": self.repair_prompt.sha256},
            "item_categories": list(ITEM_CATEGORIES),
            "checklist_items": {"min": MIN_ITEMS, "max": MAX_ITEMS},
            "max_repairs": MAX_REPAIRS,
            "usage": self.usage.snapshot(),
        }

    def _summary(self, states: list[_Query], checklist: list[dict[str, Any]]) -> str:
        cfg = self.config

        def models(stage: str) -> str:
            names = [sp.model for sp in cfg.stage_models(stage)]
            return ", ".join(f"`{m}`" for m in names)

        style = "WildGuard-style classifier" if cfg.harm_classifier_style == "wildguard" else "LLM judge"
        lines = [
            "**LLM stages** (paper §3.1): every keep/drop decision is a row of the `provenance` config.",
            "",
            f"Models per role: intent writer {models('intents')}; "
            f"{_plural(len(cfg.generators), 'generator')} {models('oracle_answers')}; "
            f"harm classifier {models('harm_filter')} ({style}, at least {cfg.min_harmless()} harmless answers "
            f"per query); decomposer {models('decompose')}; merger {models('merge')}; "
            f"item filter {models('item_filter')}.",
            "",
            "| stage | queries in | queries kept | queries dropped | kept | dropped |",
            "|---|---|---|---|---|---|",
        ]
        alive = len(states)
        unit = {"oracle_answers": "answers", "harm_filter": "answers", "decompose": "answers",
                "merge": "items", "item_filter": "items"}
        for stage in STAGES:
            dropped = sum(1 for s in states if s.dropped_at == stage)
            rows = [r for s in states for r in s.rows if r.stage == stage and r.unit]
            k = sum(1 for r in rows if r.decision == "kept")
            d = sum(1 for r in rows if r.decision == "dropped")
            ku = _plural(k, unit[stage][:-1]) if stage in unit else ""
            du = _plural(d, unit[stage][:-1]) if stage in unit else ""
            lines.append(f"| {stage} | {alive:,} | {alive - dropped:,} | {dropped:,} | {ku} | {du} |")
            alive -= dropped
        n_q = alive
        n_items = len(checklist)
        mean = n_items / n_q if n_q else 0.0
        lines += ["", f"Final: {n_q:,} queries, {n_items:,} items, mean {mean:.1f} items/query."]
        if checklist:
            counts: dict[str, int] = {}
            for r in checklist:
                counts[r["category"]] = counts.get(r["category"], 0) + 1
            lines.append("Item categories: " + ", ".join(f"{c} {counts[c]:,}" for c in ITEM_CATEGORIES
                                                         if c in counts) + ".")
        return "\n".join(lines)


_UNIT_LABEL = {"intents": "intents asked", "oracle_answers": "answers asked", "harm_filter": "answers judged",
               "decompose": "answers decomposed", "merge": "merges", "item_filter": "items judged"}


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


def _short(text: str, n: int = 40) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= n else text[: n - 3] + "...")


# ---------------------------------------------------------------- --dry-run
def estimate_tokens(text: str) -> int:
    """~4 characters per token (English text, common BPE tokenizers)."""
    return max(1, (len(text) + 3) // 4)


def dry_run_plan(queries: list[SourceQuery], config: LLMConfig) -> list[dict[str, Any]]:
    """Calls and tokens per stage, without calling anything. Calls after the first stages are upper
    bounds (every answer harmless); item_filter calls use the paper's mean checklist size; completion
    tokens are given as typical and as max_tokens; repairs and re-asks are not counted."""
    n_gen = len(config.generators)
    intent = "x" * TYPICAL_INTENT_CHARS
    answer = "x" * (config.params("oracle_answers").typical_tokens * 4)
    item = "x" * TYPICAL_ITEM_CHARS
    listing = "\n".join(f"{n}. [Practical Advice] {item}" for n in range(1, TYPICAL_ITEMS_PER_ANSWER * n_gen + 1))
    prompts = {stage: _load(PROMPTS[stage]) for stage in STAGES if stage != "harm_filter"}
    prompts["harm_filter"] = _load(config.harm_prompt_name())

    def size(stage: str, **values: object) -> int:
        return sum(estimate_tokens(m["content"]) for m in render_messages(prompts[stage], **values))

    per_query: dict[str, tuple[int, int]] = {s: (0, 0) for s in STAGES}   # calls, prompt tokens
    for q in queries:
        oracle = render_messages(prompts["oracle_answers"], query=q.query, benign_intent=intent)
        request = next(m["content"] for m in oracle if m["role"] == "user")
        add = {
            "intents": (1, size("intents", query=q.query, context=q.benign_context)),
            "oracle_answers": (n_gen, n_gen * sum(estimate_tokens(m["content"]) for m in oracle)),
            "harm_filter": (n_gen, n_gen * size("harm_filter", request=request, response=answer)),
            "decompose": (n_gen, n_gen * size("decompose", query=q.query, benign_intent=intent, answer=answer,
                                              categories=categories_text())),
            "merge": (1, size("merge", query=q.query, benign_intent=intent, items=listing,
                              categories=categories_text(), max_items=MAX_ITEMS)),
            "item_filter": (TYPICAL_FINAL_ITEMS, TYPICAL_FINAL_ITEMS * size(
                "item_filter", query=q.query, benign_intent=intent, item=item)),
        }
        for stage, (c, t) in add.items():
            pc, pt = per_query[stage]
            per_query[stage] = (pc + c, pt + t)
    rows = []
    for stage in STAGES:
        calls, prompt_tokens = per_query[stage]
        p = config.params(stage)
        rows.append({"stage": stage, "role": STAGE_ROLE[stage],
                     "models": [sp.model for sp in config.stage_models(stage)],
                     "calls": calls, "prompt_tokens": prompt_tokens,
                     "completion_tokens_typical": calls * p.typical_tokens,
                     "completion_tokens_max": calls * p.max_tokens})
    return rows


def format_dry_run(rows: list[dict[str, Any]], n_queries: int, n_generators: int) -> str:
    header = ("stage", "role", "model(s)", "calls", "prompt tok", "completion tok (typical)",
              "completion tok (max)")
    table = [header] + [(r["stage"], r["role"], ",".join(dict.fromkeys(r["models"])), f"{r['calls']:,}",
                         f"{r['prompt_tokens']:,}", f"{r['completion_tokens_typical']:,}",
                         f"{r['completion_tokens_max']:,}") for r in rows]
    total = ("total", "", "", f"{sum(r['calls'] for r in rows):,}", f"{sum(r['prompt_tokens'] for r in rows):,}",
             f"{sum(r['completion_tokens_typical'] for r in rows):,}",
             f"{sum(r['completion_tokens_max'] for r in rows):,}")
    table.append(total)
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    lines = [f"dry run: {_plural(n_queries, 'query')}, {_plural(n_generators, 'generator')}; no endpoint was called"]
    for row in table:
        lines.append("  ".join(str(c).ljust(w) if i < 3 else str(c).rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths))))
    lines.append("Estimates: prompt tokens ~ characters/4 of the rendered prompts (intents, answers and items at "
                 f"typical sizes); decompose and harm_filter calls assume every answer survives; item_filter "
                 f"assumes {TYPICAL_FINAL_ITEMS} items per query (at most {MAX_ITEMS}); repairs (at most "
                 f"{MAX_REPAIRS} per malformed reply) are not counted.")
    return "\n".join(lines)
