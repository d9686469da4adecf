"""Scorers: a judge is a named, registered async function from one case to one judgment.

    scorer = make_scorer("fidelity", JudgeSettings(max_tokens=1024))
    judgment = await scorer.score(endpoint, Case(conversation=so_far, message=user_message))
    judgment.value, judgment.raw, judgment.attempts, judgment.via   # "json_schema" | "text" | "logprobs"

A scorer has a registry name (each wing registers its own: carryon_eval.suites.<wing>), versioned prompt files
(`prompt_refs()` names them as recorded), a usage/cache `stage`, and `score(endpoint, case)`. It calls
the model only through `carryon_eval.model.ask.ask` and the `ChatEndpoint` protocol. A value of None means
unscored: the answer could not be parsed after the retries, never "no" or "safe".

Scorers of a run folder's replies are `ReplyScorer`s: they also say which cases a reply gives (one record
per reply or per (reply, item)) and, optionally, the record's value field. Storage is the judge phase's
(carryon_eval.judge.phase writes RUNDIR/<name>_judgments.jsonl; carryon_eval.judge.store reads it). A new
judge (e.g. a response-mode judge) is one class registered with `@register` and one prompt file; which
suite's replies it judges is said by the suite record (carryon_eval.suite.ScorerUse). Optional hooks of a
registered scorer: ``plan_uses(use, settings)`` (the uses that stand where a suite names it in this run),
``pick(jobs)`` (judge only some replies of the run's plan) and ``pass_fields()`` (what it adds to judge.json).

Constrained output (``judge_format="json_schema"``, the default): a judge sends a JSON schema whose
answer is an enum (e.g. {"answer": "yes"|"no"}) as ``response_format``. The client sends it in
the form the endpoint accepts and drops it where the endpoint rejects structured output; should a call
with it still fail, the scorer asks once more without it and stops sending it. Either way the reply is
read by the same tolerant parser, and each judgment records how it was obtained: ``via="json_schema"`` (or
``"json_object"``, the form the client learned the endpoint takes) when the reply is exactly a schema-valid
JSON object sent under that constraint, ``"text"`` when it had to be read as text.

The judge sees the final answer only: reasoning (``<think>...</think>``) is stripped from the reply before
it is put into a judge prompt (the transcript keeps the raw reply).
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Optional, Protocol, Sequence, runtime_checkable

from carryon_eval import defaults
from carryon_eval.model.ask import Request, ask, strict_suffix
from carryon_eval.model.endpoint import ChatEndpoint
from carryon_eval.parsing import strict_json_value, strip_reasoning
from carryon_eval.prompts import load_prompt
from carryon_eval.run.folder import answers_file, judgment_file, register_record
from carryon_eval.run.records import JUDGE_FORMATS, JudgeSettings  # noqa: F401 - re-exported
from carryon_eval.schema import JudgeAnswer, Message, Transcript

log = logging.getLogger("carryon.judge")

RETRIES = defaults.JUDGE_RETRIES       # extra attempts after an unparseable answer
MAX_TOKENS = defaults.JUDGE_MAX_TOKENS  # text mode; generous so that reasoning judges can finish
TOP_LOGPROBS = 5

VIA_TEXT, VIA_LOGPROBS, VIA_SCHEMA = "text", "logprobs", "json_schema"
VIA_OBJECT = "json_object"      # the schema sent in llama.cpp's form {"type": "json_object", "schema": ...}


def json_schema_format(name: str, key: str, values: Sequence[Any], kind: str) -> dict[str, Any]:
    """An OpenAI ``response_format`` asking for ``{key: one of values}`` and nothing else."""
    schema = {"type": "object", "properties": {key: {"type": kind, "enum": list(values)}},
              "required": [key], "additionalProperties": False}
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}


class ScorerError(Exception):
    """A scorer cannot be made (unknown name, bad option)."""


# ---------------------------------------------------------------- what a scorer takes and gives
@dataclass(frozen=True)
class Case:
    """One thing to judge. Which fields a scorer reads is its own business: the query and a reply
    (and a checklist item, or a group of them), or the conversation so far and the user message (fidelity).
    Frozen and hashable, so identical cases are judged once."""
    query: str = ""
    reply: str = ""
    item: Optional[str] = None
    conversation: str = ""
    message: str = ""
    intent: Optional[str] = None
    items: tuple[tuple[str, str], ...] = ()     # (item_id, question) of a group of checklist items (grouped Ben-Util)


@dataclass(frozen=True)
class Judgment:
    """One scorer's answer to one case. ``attempts`` counts the calls behind the answer that gave the
    value (the text attempts when a logprob verdict fell back to text); ``fallback`` says it did."""
    value: Any                      # bool | int | str | None (unscored)
    raw: Optional[str]
    attempts: int = 1
    via: str = VIA_TEXT
    p_yes: Optional[float] = None
    problem: Optional[str] = None
    fallback: bool = False
    asked: Optional[str] = None     # grouped Ben-Util: "group" (read from the group's answer) or "alone" (re-asked)


@runtime_checkable
class Scorer(Protocol):
    """A judge: a name, a versioned prompt, the cases it judges and how an answer becomes a value.

    ``cases`` gives, for one reply of a transcript, the (target, case) pairs it judges: a target is the key
    of one stored record, (conversation_id, turn) or, with ``target_fields`` naming a third field,
    (conversation_id, turn, item_id). The judge phase owns everything else: storage (one JSONL file per
    scorer, records per judge model), keys, the dedupe of identical cases and resuming."""
    name: str                       # registry key; its records are RUNDIR/<name>_judgments.jsonl
    stage: str                      # usage ledger / cache stage

    def prompt_refs(self) -> dict[str, str]: ...

    async def score(self, endpoint: ChatEndpoint, case: Case) -> Judgment: ...


@runtime_checkable
class ReplyScorer(Scorer, Protocol):
    """A scorer of a run folder's replies. Optional attributes, with their defaults (``reply_shape``):
    ``context`` (what the judge saw, for reports; ""), ``value_field`` (the record field of the value;
    "value"), ``target_fields`` (the record fields of a target; REPLY_TARGET), ``record_fields``
    (Judgment attributes kept beside the value, e.g. p_yes; none), ``prompt_version`` (the ref its records
    carry; its prompt_refs() entry), ``answer_tokens`` (a typical answer's length, for the cost table; 6) and
    ``content(case)`` (its judge prompt, for the cost table); ``value_of(target, value)``: the value stored for
    each target of one answer (default: the answer's value); ``answers_once`` (one answer gives several records:
    its raw answers are stored once, in RUNDIR/<name>_answers.jsonl, and its records name theirs; False)."""

    def cases(self, transcript: Transcript, reply: Message, bench: Any) -> list[tuple[tuple, Case]]: ...


@dataclass(frozen=True)
class ReplyShape:
    """How the judge phase stores and counts one scorer's records (its optional attributes, filled in)."""
    context: str
    value_field: str
    target_fields: tuple[str, ...]
    record_fields: tuple[str, ...]
    prompt_version: str
    answer_tokens: int
    #: (target, the judgment's value) -> the value stored for that target, for a scorer whose one answer gives
    #: several records (e.g. a 1-4 rubric score stored as three pass/fail items); None: the value as it is
    value_of: Optional[Callable[[tuple, Any], Any]] = None
    constants: tuple[tuple[str, Any], ...] = ()      # fields every record of the scorer carries (e.g. mode)


def reply_shape(scorer: Any) -> ReplyShape:
    return ReplyShape(constants=tuple(getattr(scorer, "constants", {}).items()),
                      context=getattr(scorer, "context", ""), value_field=getattr(scorer, "value_field", "value"),
                      target_fields=tuple(getattr(scorer, "target_fields", REPLY_TARGET)),
                      record_fields=tuple(getattr(scorer, "record_fields", ())),
                      prompt_version=getattr(scorer, "prompt_version", None) or scorer.prompt_refs().get(scorer.name, ""),
                      answer_tokens=int(getattr(scorer, "answer_tokens", 6)),
                      value_of=getattr(scorer, "value_of", None))


REPLY_TARGET = ("conversation_id", "turn")
ITEM_TARGET = ("conversation_id", "turn", "item_id")


# ---------------------------------------------------------------- the registry
REGISTRY: dict[str, Callable[[JudgeSettings], Scorer]] = {}


def register(cls: Any) -> Any:
    """Class decorator: make the scorer available as ``make_scorer(cls.name, options)``, and register its judgment
    file's record type with the run folder (``judgment_record``: what ``RunFolder.judgments().of(name)`` returns and
    what every line of the file is checked against, with the type's ``out_of_range(record)``, when it has one).
    Optional class attributes: ``record_type`` (its record type), ``listed_first`` (its file is where the judges of a
    run are looked for first)."""
    REGISTRY[cls.name] = cls
    record = judgment_record(cls)
    register_record(judgment_file(cls.name), record, getattr(record, "out_of_range", None),
                    first=bool(getattr(cls, "listed_first", False)))
    if getattr(cls, "answers_once", False):
        register_record(answers_file(cls.name), JudgeAnswer)
    return cls


def judgment_record(cls: Any) -> type:
    """The record type of a scorer's judgment file: the one it declares (``record_type``: a dataclass whose fields are
    those its records carry), else one made from its shape, named after it: the fields the judge phase writes
    (carryon_eval.judge.scorer_file.record_row: its target fields, its value field, judge_model, prompt_version, its
    ``record_fields``, raw, answer, attempts, via and its ``constants``), each as stored (None when absent)."""
    declared = getattr(cls, "record_type", None)
    if declared is not None:
        return declared
    names = dict.fromkeys([*getattr(cls, "target_fields", REPLY_TARGET), getattr(cls, "value_field", "value"),
                           "judge_model", "prompt_version", *getattr(cls, "record_fields", ()), "raw", "answer",
                           "attempts", "via", *getattr(cls, "constants", {})])
    fields = [(name, Any, dataclasses.field(default=None)) for name in names]
    return dataclasses.make_dataclass(f"{cls.__name__}Record", fields, namespace={"__module__": cls.__module__})


def make_scorer(name: str, options: JudgeSettings = JudgeSettings()) -> Scorer:
    from carryon_eval.suite import load_wings_of, suites     # the wings register their scorers

    suites()
    if name not in REGISTRY:                  # a wing not loaded yet: its hooks register its scorers
        load_wings_of(name)
    try:
        factory = REGISTRY[name]
    except KeyError:
        raise ScorerError(f"unknown scorer {name!r}; known scorers: {', '.join(sorted(REGISTRY))}") from None
    return factory(options)


# ---------------------------------------------------------------- asking
def required(value: Any, problem: str) -> tuple[Any, Optional[str]]:
    """A parser result as ``ask`` wants it: (value, None), or (None, problem) when value is None."""
    return (value, None) if value is not None else (None, problem)


async def ask_text(endpoint: ChatEndpoint, content: str, parse: Callable[[Optional[str]], Any], *, stage: str,
                   max_tokens: int, strict: Optional[str] = None, retries: int = RETRIES,
                   problem: str = "no usable answer", response_format: Optional[dict[str, Any]] = None) -> Judgment:
    """One user message at temperature 0; while the answer does not parse, ask again with the strict
    instruction appended and seed = attempt number (``retries`` times; none without ``strict``).
    With ``response_format`` the judgment's ``via`` says whether the reply came back as that schema."""
    policy = strict_suffix(strict, retries) if strict is not None else None
    asked = await ask(endpoint, Request([{"role": "user", "content": content}], temperature=0.0,
                                        max_tokens=max_tokens, response_format=response_format),
                      lambda text: required(parse(text), problem), stage=stage, retry=policy)
    form = asked.history[-1].result.structured if asked.history else None   # what the client sent
    if response_format is None or not _fits(asked.raw, response_format) or form == "none":
        via = VIA_TEXT
    else:
        via = VIA_OBJECT if form == VIA_OBJECT else VIA_SCHEMA
    return Judgment(asked.value, asked.raw, attempts=asked.attempts, problem=asked.problem, via=via)


def _fits(raw: Optional[str], response_format: dict[str, Any]) -> bool:
    """True when ``raw`` is exactly one JSON object of the schema (its keys, each an allowed value)."""
    properties = response_format["json_schema"]["schema"]["properties"]
    obj = strict_json_value(raw)
    return isinstance(obj, dict) and set(obj) == set(properties) and all(
        not isinstance(obj[key], bool) and obj[key] in spec["enum"] for key, spec in properties.items())


class PromptScorer:
    """Base of the built-in scorers: made from the run's options, with one main prompt file whose ref
    its records carry (``prompt_version``)."""
    name: ClassVar[str]
    stage: ClassVar[str]
    prompt_name: ClassVar[str]
    schema: ClassVar[dict[str, Any]]          # the response_format of constrained answers
    context: ClassVar[str] = "the prompt as sent + single reply"
    value_field: ClassVar[str] = "value"
    target_fields: ClassVar[tuple[str, ...]] = REPLY_TARGET
    record_fields: ClassVar[tuple[str, ...]] = ()
    answer_tokens: ClassVar[int] = 6          # {"score": 3}, {"answer": "yes"}: a few tokens

    def __init__(self, options: JudgeSettings = JudgeSettings()) -> None:
        self.options = options
        self.prompt = load_prompt(self.prompt_name)
        self.structured = options.judge_format == VIA_SCHEMA    # False once the endpoint turned it down

    async def ask_judge(self, endpoint: ChatEndpoint, content: str, parse: Callable[[Optional[str]], Any], *,
                        strict: Optional[str], problem: str, max_tokens: int,
                        schema: Optional[dict[str, Any]] = None) -> Judgment:
        """The text answer to ``content``, constrained by this scorer's schema (or this call's own ``schema``:
        a schema made for the items of one case). The client walks down the forms the endpoint refuses by name
        (carryon_eval.model.structured); a call that fails for another reason (429s, a refused connection,
        --max-calls) is one failed call and never changes how later calls ask."""
        if self.structured:
            return await ask_text(endpoint, content, parse, stage=self.stage, max_tokens=max_tokens,
                                  strict=strict, problem=problem, response_format=schema or self.schema)
        return await ask_text(endpoint, content, parse, stage=self.stage, max_tokens=max_tokens,
                              strict=strict, problem=problem)

    @property
    def prompt_version(self) -> str:
        return self.prompt.ref

    def prompt_refs(self) -> dict[str, str]:
        return {self.name: self.prompt.ref}

    def content(self, case: Case) -> str:
        """The judge prompt of a case: the main prompt with the query (or prompt sent) and the reply."""
        return self.prompt.render(query=case.query, reply=case.reply).rstrip("\n")

    def cases(self, transcript: Transcript, reply: Message, bench: Any) -> list[tuple[tuple, Case]]:
        """By default: each reply against the user message it answered."""
        return [((transcript.conversation_id, reply.turn), Case(prompt_sent(transcript, reply), final_answer(reply)))]


def prompt_sent(transcript: Transcript, reply: Message) -> str:
    """The user message a reply answered (the last user message before it)."""
    before = ""
    for m in transcript.messages:
        if m is reply:
            break
        if m.role == "user":
            before = m.content
    return before


def final_answer(reply: Message) -> str:
    """What a judge sees of a reply: its text without reasoning blocks (the transcript keeps them)."""
    return strip_reasoning(reply.content)


def judgment_noun(name: str) -> str:
    """What a scorer's records are called in a command's summary line (its ``noun``; "<name> judgments")."""
    return getattr(REGISTRY.get(name), "noun", f"{name} judgments")


def planned_uses(scoring: Any, settings: JudgeSettings) -> Any:
    """The suites' scoring plan as this run's settings have it: a registered scorer with a ``plan_uses(use,
    settings)`` hook says which uses stand where a suite names it (another scorer measuring in its place, or one
    beside it); the others stay as the suites say."""
    from carryon_eval.suite import ScoringPlan, load_wings_of, suites

    suites()
    for name in {u.scorer for mine in scoring.uses.values() for u in mine} - set(REGISTRY):
        load_wings_of(name)                   # a wing not loaded yet: its hooks register its scorers
    uses = {}
    for condition, mine in scoring.uses.items():
        out: list[Any] = []
        for use in mine:
            hook = getattr(REGISTRY.get(use.scorer), "plan_uses", None)
            out += hook(use, settings) if hook is not None else [use]
        uses[condition] = tuple(out)
    return ScoringPlan(uses)


def pick_replies(scorers: Sequence[Any], jobs: Optional[Sequence[Any]]) -> None:
    """A scorer that judges only some replies of the run's plan (a ``pick(jobs)`` hook) picks them."""
    for scorer in scorers:
        pick = getattr(scorer, "pick", None)
        if pick is not None and jobs is not None:
            pick(jobs)


def pass_fields(scorers: Sequence[Any]) -> dict[str, Any]:
    """What the scorers add to judge.json's record of a pass (a ``pass_fields()`` hook each)."""
    out: dict[str, Any] = {}
    for scorer in scorers:
        hook = getattr(scorer, "pass_fields", None)
        out.update(hook() if hook is not None else {})
    return out


def reply_scorers(names: Sequence[str], options: JudgeSettings = JudgeSettings()) -> list[ReplyScorer]:
    """The named scorers, made from the run's judge settings; each must judge the replies of a run folder."""
    made = []
    for name in names:
        scorer = make_scorer(name, options)
        if not isinstance(scorer, ReplyScorer):
            raise ScorerError(f"scorer {name!r} does not judge the replies of a run folder")
        made.append(scorer)
    return made
