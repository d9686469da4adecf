"""Ben-Util grouped: one judge call per reply (or per group of at most N items) for its checklist items.

    scorer = make_scorer("utility_grouped", JudgeSettings(scoring={"utility_judge": "grouped", "utility_group_size": 25}))
    judgment = await scorer.score(endpoint, Case(query, reply, items=(("q1-i1", "Does it ..."), ...)))
    judgment.value      # {item_id: Judgment}: one verdict per item, None where it stayed unscored

The paper judges every (reply, item) pair in its own call (carryon_eval.suites.carryonbench.judging.scorers.UtilityScorer, the
default and the protocol of record). This scorer asks for all the items of a reply at once: the items are
listed with their ids in the checklist's order, and the answer is one JSON object keyed by item id (a JSON
schema with one "yes"/"no" enum per id while the endpoint takes structured output). A text answer is read
strictly: the one JSON object (fenced or not), else one "ID: yes|no" line per item; nothing else is guessed.

An item whose verdict is missing, unparseable (a value that is not "yes"/"no", an id given twice with two
answers) or mislabelled (the answer names ids the checklist does not have; those are ignored) is never
defaulted: it is asked again ALONE, with the per-item prompt and its usual retries (UtilityScorer), and stays
unscored if that fails too. Each record says how its verdict was obtained: ``asked`` "group" or "alone".

Records go to RUNDIR/utility_grouped_judgments.jsonl with ``mode: "grouped"``, beside the per-item records of
utility_judgments.jsonl, so both judgment sets of one judge sit side by side (calibration, `agreement`). A group's
answer is stored once, in RUNDIR/utility_grouped_answers.jsonl: its item records name it by ``answer``.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from typing import Any, ClassVar, Optional, Sequence

from carryon_eval.judge.scorers import ITEM_TARGET, VIA_TEXT, Case, Judgment, PromptScorer, ScorerError, final_answer, register
from carryon_eval.model.endpoint import ChatEndpoint
from carryon_eval.parsing import strip_reasoning
from carryon_eval.run.records import JudgeSettings
from carryon_eval.schema import Message, Transcript
from carryon_eval.suites.carryonbench.judging.judgments import UtilityJudgment
from carryon_eval.suites.carryonbench.judging.scorers import GROUPED_SCORER, UtilityScorer

GROUPED_PROMPT = "judges/ben_util_grouped"
GROUPED_STAGE = "judge_utility_grouped"
GROUPED_CONTEXT = "original query + single reply + its checklist items with ids, in order (one call per group)"
MODES = ("per-item", "grouped")          # --utility-judge
VERDICTS = {"yes": True, "no": False}
ANSWER_TOKENS_PER_ITEM = 8               # '"q12-i3": "yes", ' in a JSON object
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.IGNORECASE)


def grouped_schema(ids: Sequence[str]) -> dict[str, Any]:
    """A ``response_format`` asking for {id: "yes"|"no"} with every id exactly once and nothing else."""
    schema = {"type": "object", "properties": {i: {"type": "string", "enum": ["yes", "no"]} for i in ids},
              "required": list(ids), "additionalProperties": False}
    return {"type": "json_schema", "json_schema": {"name": "ben_util_verdicts", "strict": True, "schema": schema}}


def parse_verdicts(raw: Optional[str], ids: Sequence[str]) -> tuple[dict[str, bool], str]:
    """The verdicts of a grouped answer that can be read strictly, by id, and how they were read ("json" or
    "lines"; "" when nothing could). Ids not in ``ids`` are ignored; an id answered twice differently is left out."""
    text = _FENCE.sub("", strip_reasoning(raw)).strip()
    wanted = set(ids)
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    if isinstance(obj, dict):
        return {k: VERDICTS[v.strip().lower()] for k, v in obj.items()
                if k in wanted and isinstance(v, str) and v.strip().lower() in VERDICTS}, "json"
    found: dict[str, Optional[bool]] = {}
    for line in text.splitlines():
        m = re.fullmatch(r"\s*[-*]?\s*\[?([^\]\s:=]+)\]?\s*[:=]\s*\"?(yes|no)\"?[\s,.]*", line, re.IGNORECASE)
        if m is None or m.group(1) not in wanted:
            continue
        verdict = VERDICTS[m.group(2).lower()]
        found[m.group(1)] = verdict if found.get(m.group(1), verdict) == verdict else None
    kept = {k: v for k, v in found.items() if v is not None}
    return kept, "lines" if kept else ""


@register
class GroupedUtilityScorer(PromptScorer):
    """Ben-Util, every item of one reply (or of one group of at most ``utility_group_size``) in one call."""
    name, stage, prompt_name = GROUPED_SCORER, GROUPED_STAGE, GROUPED_PROMPT
    context, value_field, target_fields, record_fields = GROUPED_CONTEXT, "verdict", ITEM_TARGET, ("asked",)
    schema: ClassVar[dict[str, Any]] = {}           # none of its own: each call sends grouped_schema(its ids)
    constants: ClassVar[dict[str, Any]] = {"mode": "grouped"}     # stored in every record
    record_type: ClassVar[type] = UtilityJudgment
    mode: ClassVar[str] = "grouped"
    answers_once: ClassVar[bool] = True       # its raw answers in utility_grouped_answers.jsonl, each once

    def __init__(self, options: JudgeSettings = JudgeSettings()) -> None:
        if options.get("utility_mode") != "text":
            raise ScorerError("the grouped Ben-Util judge reads text verdicts; use --utility-mode text with "
                              "--utility-judge grouped")
        super().__init__(options)
        self.group_size = max(1, int(options.get("utility_group_size")))
        self.max_tokens = options.max_tokens
        self.alone = UtilityScorer(options)          # an item the group answer leaves unscored, asked alone

    def prompt_refs(self) -> dict[str, str]:
        return {self.name: self.prompt.ref, **self.alone.prompt_refs()}

    def content(self, case: Case) -> str:
        """Instructions, query and reply first, the items (``[id] question``, checklist order) last."""
        items = "\n".join(f"[{item_id}] {question}" for item_id, question in case.items)
        return self.prompt.render(query=case.query, reply=case.reply, items=items).rstrip("\n")

    def answer_tokens_of(self, case: Case) -> int:
        """A typical answer's length for the cost table: one short "id": "yes" pair per item."""
        return 2 + ANSWER_TOKENS_PER_ITEM * len(case.items)

    def groups(self, items: Sequence[tuple[str, str]]) -> list[tuple[tuple[str, str], ...]]:
        n = self.group_size
        return [tuple(items[i:i + n]) for i in range(0, len(items), n)]

    def cases(self, transcript: Transcript, reply: Message, bench: Any) -> list[tuple[tuple, Case]]:
        """One case per group of the query's checklist, answering each of its items' targets."""
        query = bench.queries[transcript.query_id]["query"]
        items = [(str(i["item_id"]), i["question"]) for i in bench.checklists.get(transcript.query_id, [])]
        out = []
        for group in self.groups(items):
            case = Case(query, final_answer(reply), items=group)
            out += [((transcript.conversation_id, reply.turn, item_id), case) for item_id, _ in group]
        return out

    async def score(self, endpoint: ChatEndpoint, case: Case) -> Judgment:
        """{item_id: Judgment} in ``value``: the group's answer, and each item it left unscored asked alone."""
        ids = [item_id for item_id, _ in case.items]
        asked = await self.ask_judge(endpoint, self.content(case), lambda raw: raw, strict=None, problem="",
                                     max_tokens=self.max_tokens, schema=grouped_schema(ids))
        verdicts, how = parse_verdicts(asked.raw, ids)
        via = asked.via if how == "json" and len(verdicts) == len(ids) else VIA_TEXT
        per_item = {item_id: Judgment(verdicts[item_id], asked.raw, 1, via=via, asked="group")
                    for item_id in ids if item_id in verdicts}
        rest = [(item_id, question) for item_id, question in case.items if item_id not in verdicts]
        alone = await asyncio.gather(*(self.alone.score(endpoint, dataclasses.replace(case, item=question, items=()))
                                       for _, question in rest), return_exceptions=True)
        failed = next((a for a in alone if isinstance(a, BaseException)), None)
        if failed is not None:       # every re-ask was sent (or exported) before the failure goes on
            raise failed
        for (item_id, _), one in zip(rest, alone):
            per_item[item_id] = dataclasses.replace(one, attempts=one.attempts + 1, asked="alone")
        return Judgment({item_id: per_item[item_id] for item_id in ids}, asked.raw, 1, via=via)

    def split(self, targets: Sequence[tuple], judgment: Judgment) -> list[tuple[tuple, Judgment]]:
        """Each target's own judgment: its item's verdict out of the group's answer."""
        return [(t, judgment.value[t[-1]]) for t in targets]


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ScorerError(f"unknown utility judge {mode!r}; expected one of {list(MODES)}")
    return mode


