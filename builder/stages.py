"""The builder's LLM stages (paper §3.1, Appendix B.2/B.3) as records: benign intents, Ben-Util checklists, triplets.

A stage is one frozen ``Stage`` record: its name, role, prompt file (builder/prompts/<prompt>.txt),
output schema, repair text, generation parameters, unit labels, its dry-run plan and the async function
that runs it for one query. ``pipeline(style)`` is the list of records, in order; the runner
(builder/llm_run.py), the dry run (builder/dry_run.py), the manifest and the card's summary
(builder/provenance.py) all iterate that one list. Adding a stage is one record here and one prompt file.

Stages, in order; each one runs for every surviving query at once (asyncio; the endpoint client
limits the requests in flight per endpoint):

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
                       duplicates left by the merger are removed here; more than ``config.max_items``
                       (--max-items, default 23) items: the first ones are kept and the rest dropped
                       ("over the 23-item cap"); fewer than ``config.min_items`` (--min-items, default 7):
                       the query is dropped.
6. ``item_filter``     the item filter judges each item (one call per item) and removes those that could
                       enable misuse; a query left with fewer than ``config.min_items`` items is dropped.
7. ``malicious_intent`` the intent writer rewrites CASE-Bench's unsafe context into a malicious intent in
                       the user's voice (the triplets config); no intent: no triplet set.
8. ``paraphrase``      the intent writer gives N_PARAPHRASES paraphrases of the bare query that keep its
                       ambiguity; fewer: no triplet set. Neither stage drops a query.

(Over 450 lines with the triplet stages: every stage record, its run function, schema and grammar stay in
the one list the pipeline iterates; splitting the module would split that list.)

A stage function asks through its StageContext (``ctx.ask``: re-asks, repair prompts and endpoint
failures are handled there) and records every keep/drop decision on the QueryState; a unit (answer,
item) or, for the per-query stages, the query without a usable reply is dropped with the reason.
"""
from __future__ import annotations

import asyncio
import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Optional, Protocol

from carryon_eval.prompts import Prompt, load_prompt
from carryon_eval.schema import ITEM_CATEGORIES

from .limits import GENERATOR_SEED, HARM_STYLES, MAX_ITEMS, MIN_HARMLESS, MIN_ITEMS, MODEL_ROLES
from .llm_config import LLMConfig, ModelSpec, StageParams
from .query_state import Item, Outcome, QueryState, plural, sha256_text, short
from .replies import (normalize_category, parse_answer, parse_flag, parse_intent, parse_items, parse_paraphrases,
                      parse_wildguard)
from .sources.record import SourceQuery

__all__ = ["GENERATOR_SEED", "MAX_ITEMS", "MIN_HARMLESS", "MIN_ITEMS", "Stage", "StageParams", "pipeline",
           "stages_for"]

MAX_DECOMPOSED_ITEMS = 40   # items kept from one answer's decomposition
TYPICAL_INTENT_CHARS = 400  # for --dry-run estimates of prompts that contain an intent, an answer, items
TYPICAL_ITEMS_PER_ANSWER = 15
TYPICAL_ITEM_CHARS = 90
TYPICAL_FINAL_ITEMS = 18    # the paper's mean
N_PARAPHRASES = 4           # paraphrases of the ambiguous variant (OpenSafeIntent: five phrasings in all)

Parse = Callable[[Optional[str]], "tuple[Any, Optional[str]]"]


class StageContext(Protocol):
    """What a stage function may use: the config, its prompt, one ask per model call, a provenance detail."""
    config: LLMConfig

    def messages(self, **values: object) -> list[dict[str, str]]: ...

    async def ask(self, spec: ModelSpec, messages: list[dict[str, str]], *,
                  seed: Optional[int] = None) -> Outcome: ...

    def detail(self, spec: ModelSpec, extra: str = "") -> str: ...


@dataclass(frozen=True)
class Typical:
    """Typical stage inputs for --dry-run estimates (query-independent; sizes from the constants above)."""
    intent: str
    answer: str
    item: str
    listing: str
    n_generators: int


def _no_notes(config: LLMConfig) -> dict[str, Any]:
    return {}


def _no_card_note(config: LLMConfig) -> str:
    return ""


@dataclass(frozen=True)
class Stage:
    """One LLM stage. ``run(ctx, state)`` runs it for one query; ``units(state, config)`` counts its calls
    for that query (the progress line); ``plan(query, typical)`` gives the dry run's (calls, prompt values)."""
    name: str
    role: str
    prompt: str                                   # builder/prompts/<prompt>.txt
    params: StageParams
    run: Callable[[StageContext, QueryState], Awaitable[None]]
    units: Callable[[QueryState, LLMConfig], int]
    plan: Callable[[SourceQuery, Typical], tuple[int, dict[str, object]]]
    parse: Parse
    work: str                                     # the log line's unit of work: "answers judged"
    unit: str = ""                                # what unit-level provenance rows are about: answer, item
    schema: Optional[dict[str, Any]] = None       # structured output; None: free text
    # The schema sent to the embedded model (ModelSpec.local: llama.cpp's json_object form, whose grammar honours
    # pattern, minItems, ... that OpenAI's strict json_schema refuses): it keeps Gemma 3 270M from echoing the
    # prompt, copying its placeholders or filling a string with digits. None: ``schema``. Other models never
    # get it (a capable model's answer is not squeezed into a 250-word prose pattern).
    grammar: Optional[dict[str, Any]] = None
    expected: str = ""                            # the repair prompt's "Reply again with ..."; "": no repair
    per_generator: bool = False                   # every generator answers (seeds, generator temperature)
    manifest_notes: Callable[[LLMConfig], dict[str, Any]] = _no_notes
    card_note: Callable[[LLMConfig], str] = _no_card_note

    def template(self) -> Prompt:
        return load_prompt(self.prompt, package="carryonbench_builder")

    def structured(self, spec: ModelSpec) -> str:
        """The structured-output style this stage asks ``spec`` for ("none" for free text)."""
        if spec.local and self.grammar is not None:
            return "json_object"
        return "none" if self.schema is None else spec.structured

    def response_format(self, spec: ModelSpec) -> Optional[dict[str, Any]]:
        style = self.structured(spec)
        if style == "none":
            return None
        if style == "json_object":
            grammar = self.grammar if spec.local and self.grammar is not None else self.schema
            return {"type": "json_object", "schema": grammar}
        return {"type": "json_schema", "json_schema": {"name": f"carryonbench_{self.name}", "strict": True,
                                                       "schema": self.schema}}


def categories_text() -> str:
    return "\n".join(f"- {name}: {definition}" for name, definition in ITEM_CATEGORIES.items())


def user_message(messages: list[dict[str, str]]) -> str:
    return next(m["content"] for m in messages if m["role"] == "user")


def _obj(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


_ITEMS_SCHEMA = _obj({"items": {"type": "array", "items": _obj({
    "question": {"type": "string"}, "category": {"type": "string", "enum": list(ITEM_CATEGORIES)}})}})


# ---------------------------------------------------------------- grammars (json_object form; see Stage.grammar)
# Prose: words of letters with light punctuation, no digits, quotes, brackets or line breaks (a small model
# otherwise fills a free string with digits or with the prompt itself); a pattern's repetition counts become
# grammar rules, so every count stays small.
_WORD = "[a-zA-Z]{1,14}[,.;:]?"


def _text(prefix: str, least: int, most: int, end: str = "") -> dict[str, Any]:
    """A string of ``least``..``most`` words after ``prefix``."""
    return {"type": "string", "pattern": f"^{prefix}{_WORD}( {_WORD}){{{least - 1},{most - 1}}}{end}$"}


def _items_grammar(most: int) -> dict[str, Any]:
    return _obj({"items": {"type": "array", "minItems": 1, "maxItems": most, "items": _obj({
        "question": _text("Does the response ", 3, 25, "[?]"),
        "category": {"type": "string", "enum": list(ITEM_CATEGORIES)}})}})


def _verdict_grammar(key: str) -> dict[str, Any]:
    # the reason first: a small model states it before it commits to the verdict
    return _obj({"reason": _text("", 3, 25), key: {"type": "boolean"}})
_ITEMS_EXPECTED = ('a JSON object {"items": [{"question": "Does the response ...?", "category": "<one of the '
                   'categories>"}, ...]}')


def _per_query(state: QueryState, config: LLMConfig) -> int:
    return 1


# ---------------------------------------------------------------- 1. intents
async def write_intent(ctx: StageContext, s: QueryState) -> None:
    spec = ctx.config.spec("intent_writer")
    out = await ctx.ask(spec, ctx.messages(query=s.q.query, context=s.q.benign_context))
    detail = ctx.detail(spec)
    if out.problem:
        s.drop("intents", f"no benign intent: {out.problem}", detail)
        return
    s.intent = out.value
    s.add("intents", "kept", f"benign intent written ({len(s.intent.split())} words)", detail)


INTENTS = Stage(
    name="intents", role="intent_writer", prompt="intent_writer", params=StageParams(0.0, 300, 90),
    run=write_intent, units=_per_query, parse=parse_intent, work="intents asked",
    plan=lambda q, t: (1, {"query": q.query, "context": q.benign_context}),
    schema=_obj({"intent": {"type": "string"}}),    # a plain-text intent is accepted too
    grammar=_obj({"intent": _text("I am ", 8, 70)}),
    expected="the benign intent only: 2 to 4 sentences in the first person, at most 80 words")


# ---------------------------------------------------------------- 2. oracle answers
async def answer_query(ctx: StageContext, s: QueryState) -> None:
    msgs = ctx.messages(query=s.q.query, benign_intent=s.intent)
    s.oracle_user = user_message(msgs)
    cfg = ctx.config
    outs = await asyncio.gather(*(ctx.ask(g, msgs, seed=cfg.generator_seed + i)
                                  for i, g in enumerate(cfg.generators)))
    for i, (spec, out) in enumerate(zip(cfg.generators, outs)):
        detail = ctx.detail(spec, f"seed={cfg.generator_seed + i}")
        if out.problem:
            s.add("oracle_answers", "dropped", f"answer a{i + 1}: {out.problem}", detail, unit="answer")
        else:
            s.answers[i] = out.value
            s.add("oracle_answers", "kept", f"answer a{i + 1} ({len(out.value.split())} words)", detail,
                  unit="answer")
    if not s.answers:
        s.drop("oracle_answers", "no generator returned an answer", ctx.detail(cfg.generators[0]))


ORACLE_ANSWERS = Stage(
    name="oracle_answers", role="generator", prompt="oracle_answer", params=StageParams(0.7, 1500, 800),
    run=answer_query, units=lambda s, cfg: len(cfg.generators), work="answers asked", unit="answer",
    parse=parse_answer, per_generator=True, grammar=_obj({"answer": _text("Here is what you need to know[.] ", 30, 250)}),
    plan=lambda q, t: (t.n_generators, {"query": q.query, "benign_intent": t.intent}))


def oracle_request(query: str, intent: str) -> str:
    """The user message a generator is sent (what the harm classifier sees as the request)."""
    return user_message(ORACLE_ANSWERS.template().messages(query=query, benign_intent=intent))


# ---------------------------------------------------------------- 3. harm filter
async def filter_harmful_answers(ctx: StageContext, s: QueryState) -> None:
    spec = ctx.config.spec("harm_classifier")
    order = sorted(s.answers)
    outs = await asyncio.gather(*(ctx.ask(spec, ctx.messages(request=s.oracle_user, response=s.answers[i]))
                                  for i in order))
    base = ctx.detail(spec)
    for i, out in zip(order, outs):
        if out.problem:
            s.add("harm_filter", "dropped", f"answer a{i + 1} excluded: no harmlessness verdict: {out.problem}",
                  f"{base}; sha256={sha256_text(s.answers[i])}", unit="answer")
        elif out.value:
            s.add("harm_filter", "dropped", f"answer a{i + 1} excluded: judged harmful",
                  f"{base}; sha256={sha256_text(s.answers[i])}", unit="answer")
        else:
            s.harmless.append(i)
            s.add("harm_filter", "kept", f"answer a{i + 1} judged harmless", base, unit="answer")
    need = ctx.config.min_harmless()
    n_gen = len(ctx.config.generators)
    verdict = f"{len(s.harmless)} of {n_gen} answers judged harmless (at least {need} needed)"
    if len(s.harmless) < need:
        s.drop("harm_filter", f"only {verdict}", base)
    else:
        s.add("harm_filter", "kept", verdict, base)


def _harm_card_note(style: str) -> Callable[[LLMConfig], str]:
    return lambda cfg: f" ({style}, at least {cfg.min_harmless()} harmless answers per query)"


HARM_JUDGE = Stage(
    name="harm_filter", role="harm_classifier", prompt="harm_judge", params=StageParams(0.0, 120, 40),
    run=filter_harmful_answers, units=lambda s, cfg: len(s.answers), work="answers judged", unit="answer",
    parse=lambda t: parse_flag(t, ("harmful", "harmful_response")),
    plan=lambda q, t: (t.n_generators, {"request": oracle_request(q.query, t.intent), "response": t.answer}),
    schema=_obj({"harmful": {"type": "boolean"}, "reason": {"type": "string"}}),
    grammar=_verdict_grammar("harmful"),
    expected='a JSON object {"harmful": true or false, "reason": "<one short sentence>"}',
    manifest_notes=lambda cfg: {"style": cfg.harm_classifier_style, "min_harmless_answers": cfg.min_harmless()},
    card_note=_harm_card_note("LLM judge"))
# WildGuard's own input format and "Harmful response: yes/no" line: free text, no repair prompt
# (the classifier is not an instruction follower); needs ~20 tokens.
HARM_WILDGUARD = dataclasses.replace(HARM_JUDGE, prompt="wildguard", parse=parse_wildguard, schema=None,
                                     grammar=None, expected="", card_note=_harm_card_note("WildGuard-style classifier"))
HARM_STAGES = {"judge": HARM_JUDGE, "wildguard": HARM_WILDGUARD}


# ---------------------------------------------------------------- 4. decompose
def _decomposed(s: QueryState, items: list[tuple[str, Optional[str]]]) -> str:
    """Add one answer's items to the candidates; the note about cut or re-tagged items."""
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
        note += f"; {plural(unknown, 'item')} with an unknown category tagged Other"
    if untagged:
        note += f"; {plural(untagged, 'item')} without a category tagged Other"
    return f"decomposed into {plural(len(items), 'item')}{note}"


async def decompose_answers(ctx: StageContext, s: QueryState) -> None:
    spec = ctx.config.spec("decomposer")
    outs = await asyncio.gather(*(ctx.ask(spec, ctx.messages(
        query=s.q.query, benign_intent=s.intent, answer=s.answers[i], categories=categories_text()))
        for i in s.harmless))
    detail = ctx.detail(spec)
    used = 0
    for i, out in zip(s.harmless, outs):
        if out.problem:
            s.add("decompose", "dropped", f"answer a{i + 1} not decomposed: {out.problem}", detail, unit="answer")
            continue
        used += 1
        s.add("decompose", "kept", f"answer a{i + 1} {_decomposed(s, out.value)}", detail, unit="answer")
    if not used:
        s.drop("decompose", "no harmless answer could be decomposed into checklist items", detail)


DECOMPOSE = Stage(
    name="decompose", role="decomposer", prompt="decompose", params=StageParams(0.0, 2000, 700),
    run=decompose_answers, units=lambda s, cfg: len(s.harmless), work="answers decomposed", unit="answer",
    parse=parse_items, schema=_ITEMS_SCHEMA, grammar=_items_grammar(MAX_DECOMPOSED_ITEMS), expected=_ITEMS_EXPECTED,
    plan=lambda q, t: (t.n_generators, {"query": q.query, "benign_intent": t.intent, "answer": t.answer,
                                        "categories": categories_text()}))


# ---------------------------------------------------------------- 5. merge
def _unique_items(s: QueryState, merged: list[tuple[str, Optional[str]]], detail: str) -> list[Item]:
    """The merged items without exact duplicates (a row for each), unknown categories tagged Other."""
    seen: dict[str, Item] = {}
    unique: list[Item] = []
    for n, (q, raw) in enumerate(merged, 1):
        cat, known = normalize_category(raw)
        item = Item(n=n, question=q, category=cat)
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
            note = f"; unknown category {short(str(raw))} tagged Other"
        s.add("merge", "kept", f"in the merged checklist, category {cat}{note}", f"{detail}; merged #{n}", item)
    return unique


def cap_reason(cap: int) -> str:
    """Why an item was cut by the merge cap (--max-items)."""
    return f"over the {cap}-item cap"


def too_few(least: int) -> str:
    """The end of a query's drop reason when its checklist is shorter than --min-items."""
    return f" (at least {least} needed)"


async def merge_checklist(ctx: StageContext, s: QueryState) -> None:
    spec = ctx.config.spec("merger")
    listing = "\n".join(f"{n}. [{cat}] {q}" for n, (q, cat) in enumerate(s.candidates, 1))
    out = await ctx.ask(spec, ctx.messages(query=s.q.query, benign_intent=s.intent, items=listing,
                                           categories=categories_text(), max_items=ctx.config.max_items))
    detail = ctx.detail(spec)
    if out.problem:
        s.drop("merge", f"no merged checklist: {out.problem}", detail)
        return
    unique = _unique_items(s, out.value, detail)
    cap, least = ctx.config.max_items, ctx.config.min_items
    if len(unique) > cap:
        for item in unique[cap:]:
            s.add("merge", "dropped", cap_reason(cap),
                  f"{detail}; merged #{item.n}; sha256={sha256_text(item.question)}", item)
        unique = unique[:cap]
    s.merged = unique
    if len(unique) < least:
        s.drop("merge", f"only {plural(len(unique), 'item')} after merging{too_few(least)}", detail)
        return
    s.add("merge", "kept", f"merged checklist of {plural(len(unique), 'item')} from "
          f"{plural(len(s.candidates), 'candidate item')}", detail)


MERGE = Stage(
    name="merge", role="merger", prompt="merge", params=StageParams(0.0, 3000, 1100),
    run=merge_checklist, units=_per_query, work="merges", unit="item",
    parse=parse_items, schema=_ITEMS_SCHEMA, grammar=_items_grammar(MAX_ITEMS + 2), expected=_ITEMS_EXPECTED,
    plan=lambda q, t: (1, {"query": q.query, "benign_intent": t.intent, "items": t.listing,
                           "categories": categories_text(), "max_items": MAX_ITEMS}))



# ---------------------------------------------------------------- 6. item filter
async def filter_items(ctx: StageContext, s: QueryState) -> None:
    spec = ctx.config.spec("item_filter")
    outs = await asyncio.gather(*(ctx.ask(spec, ctx.messages(query=s.q.query, benign_intent=s.intent,
                                                             item=item.question)) for item in s.merged))
    detail = ctx.detail(spec)
    kept: list[Item] = []
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
    if len(kept) < ctx.config.min_items:
        s.drop("item_filter", f"only {plural(len(kept), 'item')} left after the item filter"
               f"{too_few(ctx.config.min_items)}", detail)
        return
    s.final = kept
    for n, item in enumerate(kept, 1):
        item.final_id = f"{s.q.query_id}-i{n:02d}"
    s.add("item_filter", "kept", f"final checklist of {plural(len(kept), 'item')}", detail)


ITEM_FILTER = Stage(
    name="item_filter", role="item_filter", prompt="item_filter", params=StageParams(0.0, 120, 35),
    run=filter_items, units=lambda s, cfg: len(s.merged), work="items judged", unit="item",
    parse=lambda t: parse_flag(t, ("enables_misuse", "misuse", "harmful", "remove")),
    plan=lambda q, t: (TYPICAL_FINAL_ITEMS, {"query": q.query, "benign_intent": t.intent, "item": t.item}),
    schema=_obj({"enables_misuse": {"type": "boolean"}, "reason": {"type": "string"}}),
    grammar=_verdict_grammar("enables_misuse"),
    expected='a JSON object {"enables_misuse": true or false, "reason": "<one short sentence>"}')


# ---------------------------------------------------------------- 7. malicious intents (triplets)
async def _ask_for_set(ctx: StageContext, s: QueryState, stage: str, what: str, **values: object) -> Optional[str]:
    """One intent-writer call of a triplet stage: its provenance detail, or None after a "no triplet set" row."""
    spec = ctx.config.spec("intent_writer")
    out = await ctx.ask(spec, ctx.messages(**values))
    detail = ctx.detail(spec)
    if out.problem:
        s.add(stage, "dropped", f"no triplet set: no {what}: {out.problem}", detail, unit="set")
        return None
    if stage == "malicious_intent":
        s.malicious_intent = out.value
    else:
        s.paraphrases = out.value
    return detail


async def write_malicious_intent(ctx: StageContext, s: QueryState) -> None:
    detail = await _ask_for_set(ctx, s, "malicious_intent", "malicious intent", query=s.q.query,
                                context=s.q.malicious_context)
    if detail is not None:
        s.add("malicious_intent", "kept", f"malicious intent written ({len(s.malicious_intent.split())} words)",
              detail, unit="set")


MALICIOUS_INTENT = dataclasses.replace(
    INTENTS, name="malicious_intent", prompt="malicious_intent", run=write_malicious_intent, unit="set",
    plan=lambda q, t: (1, {"query": q.query, "context": q.malicious_context}),
    expected="the malicious intent only: 2 to 4 sentences in the first person, at most 80 words")


# ---------------------------------------------------------------- 8. paraphrases (triplets)
async def paraphrase_query(ctx: StageContext, s: QueryState) -> None:
    if not s.malicious_intent:
        return
    detail = await _ask_for_set(ctx, s, "paraphrase", "paraphrases", query=s.q.query, n=N_PARAPHRASES)
    if detail is not None:
        s.add("paraphrase", "kept", f"{N_PARAPHRASES} paraphrases of the query", detail, unit="set")


PARAPHRASE = Stage(
    name="paraphrase", role="intent_writer", prompt="paraphrase", params=StageParams(0.0, 600, 200),
    run=paraphrase_query, units=lambda s, cfg: int(bool(s.malicious_intent)), work="paraphrase sets asked",
    unit="set", parse=lambda t: parse_paraphrases(t, N_PARAPHRASES),
    plan=lambda q, t: (1, {"query": q.query, "n": N_PARAPHRASES}),
    schema=_obj({"paraphrases": {"type": "array", "items": {"type": "string"}}}),
    expected=f'a JSON object {{"paraphrases": [...]}} with {N_PARAPHRASES} distinct paraphrases of the request')


# ---------------------------------------------------------------- the pipeline
assert tuple(HARM_STAGES) == HARM_STYLES


def pipeline(harm_style: str = "judge") -> tuple[Stage, ...]:
    """The stages, in order, with the harm filter of ``harm_style``."""
    return (INTENTS, ORACLE_ANSWERS, HARM_STAGES[harm_style], DECOMPOSE, MERGE, ITEM_FILTER, MALICIOUS_INTENT,
            PARAPHRASE)


def stages_for(config: LLMConfig) -> tuple[Stage, ...]:
    """The pipeline a config runs: its harm classifier style, without the stages its source does not need and
    with the source's own prompt where its contexts are worded differently (Source.skip_stages, stage_prompts)."""
    return tuple(dataclasses.replace(s, prompt=config.stage_prompts.get(s.name, s.prompt))
                 for s in pipeline(config.harm_classifier_style) if s.name not in config.skip_stages)


STAGES = pipeline()
STAGE_NAMES = tuple(s.name for s in STAGES)
ROLES = tuple(s.role for s in STAGES)
assert set(ROLES) <= {"generator", *MODEL_ROLES}


def typical_inputs(config: LLMConfig) -> Typical:
    """Typical stage inputs for the dry run: an answer is as long as a generator's typical completion."""
    n_gen = len(config.generators)
    item = "x" * TYPICAL_ITEM_CHARS
    listing = "\n".join(f"{n}. [Practical Advice] {item}" for n in range(1, TYPICAL_ITEMS_PER_ANSWER * n_gen + 1))
    return Typical(intent="x" * TYPICAL_INTENT_CHARS, answer="x" * (config.params(ORACLE_ANSWERS).typical_tokens * 4),
                   item=item, listing=listing, n_generators=n_gen)
