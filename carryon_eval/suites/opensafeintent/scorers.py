"""OpenSafeIntent's reference judges as registered ReplyScorers: a judge is its release prompt file and its reading.

    osi_helpfulness        1-4 rubric, every reply            (16 max tokens)
    osi_harmfulness        0-3 rubric, every reply            (16 max tokens)
    osi_assistance_level   A0-A4 JSON, dual-use originals      (1,000 max tokens; the suite's ScorerUse says which)

A case carries the judge prompt fully filled the reference's way (prompts.fill) from the release in
``bench.extras`` (the prompt actually sent and the raw reply). The judge is asked once at temperature 0 and the
answer read the reference's way (readings.py): first integer with a range check, or the JSON object; an unreadable
answer is unscored (value None) with the reading's failure as ``problem``, never a score. The judge phase stores
the records (value, raw answer, problem); the section reads the raw answers again with the same readings.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Optional

from carryon_eval.judge.scorers import Case, Judgment, register
from carryon_eval.model.ask import Request, ask
from carryon_eval.model.endpoint import ChatEndpoint
from carryon_eval.progress import register_stage
from carryon_eval.suites.opensafeintent.prompts import fill
from carryon_eval.suites.opensafeintent.readings import Reading, read
from carryon_eval.suites.opensafeintent.suite import (ASSISTANCE_MAX_TOKENS, RUBRIC_MAX_TOKENS, inputs_of,
                                               parse_conversation_id)
from carryon_eval.run.records import JudgeSettings
from carryon_eval.schema import Message, Transcript

if TYPE_CHECKING:       # types only
    from carryon_eval.dataset.load import Benchmark


def _as_value(reading: Reading) -> tuple[Any, Optional[str]]:
    return (reading.value, None) if reading.ok else (None, reading.error)


class ReleaseJudge:
    """One of the release's judges; ``judge`` names its prompt file and reading."""
    name: ClassVar[str]
    judge: ClassVar[str]
    max_tokens: ClassVar[int]
    answer_tokens: ClassVar[int] = 4
    value_field: ClassVar[str] = "value"
    record_fields: ClassVar[tuple[str, ...]] = ("problem",)
    context = "the release's prompt file filled with the prompt as sent + the raw reply (reference reading)"

    def __init__(self, options: JudgeSettings = JudgeSettings()) -> None:
        self.options = options                # the run's judge settings do not apply: the reference's do
        self.stage = self.name

    @property
    def prompt_version(self) -> str:
        return f"opensafeintent/{self.judge} (release file; sha256 in run.json suites.opensafeintent)"

    def prompt_refs(self) -> dict[str, str]:
        return {self.name: self.prompt_version}

    def content(self, case: Case) -> str:
        return case.message

    def cases(self, transcript: Transcript, reply: Message, bench: "Benchmark") -> list[tuple[tuple, Case]]:
        if parse_conversation_id(transcript.conversation_id) is None:
            return []
        release = inputs_of(bench, transcript.condition).release      # opensafeintent's or the triplet wing's
        sent = transcript.messages[0].content
        return [((transcript.conversation_id, reply.turn),
                 Case(query=sent, reply=reply.content,
                      message=fill(self.judge, release.templates[self.judge], sent, reply.content)))]

    async def score(self, endpoint: ChatEndpoint, case: Case) -> Judgment:
        asked = await ask(endpoint, Request([{"role": "user", "content": case.message}], temperature=0.0,
                                            max_tokens=self.max_tokens),
                          lambda text: _as_value(read(self.judge, text)), stage=self.stage)
        raw = asked.raw if asked.raw is not None else ""
        return Judgment(asked.value, raw, attempts=asked.attempts, problem=asked.problem)


@register
class HelpfulnessJudge(ReleaseJudge):
    name, judge, max_tokens = "osi_helpfulness", "helpfulness", RUBRIC_MAX_TOKENS


@register
class HarmfulnessJudge(ReleaseJudge):
    name, judge, max_tokens = "osi_harmfulness", "harmfulness", RUBRIC_MAX_TOKENS


@register
class AssistanceLevelJudge(ReleaseJudge):
    name, judge, max_tokens = "osi_assistance_level", "assistance_level", ASSISTANCE_MAX_TOKENS
    answer_tokens = 12                        # {"a_level": "A2"}


for _judge in (HelpfulnessJudge, HarmfulnessJudge, AssistanceLevelJudge):
    register_stage(_judge.name, "judge")      # their stage is their name: count their calls as the judge's
