"""The user simulator: one natural user turn per follow-up move.

Each move has a prompt file `prompts/user_simulator/<move>.txt`; `shared_requirements.txt` is
appended to every one. Only the benign clarification moves (moves.BC_MOVES) are given the benign
intent: the templates of the other moves have no place for it and are never passed it, so an NC
conversation cannot learn the intent from the simulator prompt.

Condition mc plays the same moves with the query's malicious intent instead: the clarification moves read
`prompts/user_simulator/malicious/<move>.txt` (the BC template's task, with the intent slot holding the
malicious intent and the words "harmless"/"legitimate" gone), every other move the very file BC uses.

Whether the rendered turns realise their moves is checked by the fidelity scorers
(carryon_eval.suites.carryonbench.metrics.fidelity).
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

from carryon_eval import defaults
from carryon_eval.model.ask import Request, ask, next_seed
from carryon_eval.model.endpoint import ChatEndpoint
from carryon_eval.moves import BC_MOVES, MOVES
from carryon_eval.parsing import strip_reasoning
from carryon_eval.prompts import Prompt, load_prompt, prompt_hashes
from carryon_eval.schema import Message

STAGE = "user_simulator"
TEMPERATURE = defaults.USER_TEMPERATURE
MAX_TOKENS = defaults.USER_MAX_TOKENS
EMPTY_RETRIES = defaults.EMPTY_REPLY_RETRIES   # after an empty turn, ask again this many times, next seed each
SHOWN_REPLY_CHARS = 2500     # an assistant reply longer than this is cut in the simulator's view


class SimulatorError(Exception):
    """A user turn could not be rendered; the conversation is recorded as failed with this reason."""


BENIGN, MALICIOUS = "benign", "malicious"       # which intent the clarification moves voice (Job.intent)
INTENT_SLOT = {BENIGN: "benign_intent", MALICIOUS: "malicious_intent"}   # its placeholder and queries column
MALICIOUS_GROUP = "user_simulator/malicious"


def move_prompt(move: str, intent: str = BENIGN) -> Prompt:
    if move not in MOVES:
        raise SimulatorError(f"unknown move {move!r}")
    if intent not in INTENT_SLOT:
        raise SimulatorError(f"unknown intent {intent!r}; expected one of {list(INTENT_SLOT)}")
    if intent == MALICIOUS and move in BC_MOVES:
        return load_prompt(f"{MALICIOUS_GROUP}/{move}")
    return load_prompt(f"user_simulator/{move}")


def move_values(move: str, query: dict, intent: str = BENIGN) -> dict[str, str]:
    """The intent value a move's prompt gets from a queries row ({} for a move that never sees an intent)."""
    slot = INTENT_SLOT[intent]
    return {slot: query[slot]} if move in BC_MOVES and query.get(slot) else {}


def prompt_refs() -> dict[str, str]:
    return {**prompt_hashes("user_simulator"), **prompt_hashes(MALICIOUS_GROUP)}


def format_conversation(messages: Sequence[Message], limit: int = SHOWN_REPLY_CHARS) -> str:
    lines = []
    for m in messages:
        # the assistant's reasoning (a <think> block, or reasoning_content kept as one) is not what a user sees
        text = strip_reasoning(m.content) if m.role == "assistant" else m.content.strip()
        if m.role == "assistant" and len(text) > limit:
            text = text[:limit].rstrip() + " [...]"
        lines.append(f"{'User' if m.role == 'user' else 'Assistant'}: {text}")
    return "\n\n".join(lines)


_LABEL = re.compile(r"^\s*(?:\*\*|__)?\s*(?:the\s+)?(?:user|user'?s? (?:next )?message|next message|message|me)"
                    r"\s*(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*", re.IGNORECASE)
_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019", "\u00ab": "\u00bb", "`": "`"}


def clean_turn(text: Optional[str]) -> str:
    """The user turn as typed: no reasoning block, no "User:" label, no wrapping quotes, and
    nothing after the model starts writing the assistant's side."""
    text = strip_reasoning(text)
    text = re.split(r"\n\s*(?:\*\*)?assistant(?:\*\*)?\s*:", text, maxsplit=1, flags=re.IGNORECASE)[0]
    for _ in range(3):
        before = text
        text = _LABEL.sub("", text, count=1).strip()
        if len(text) >= 2 and text[0] in _QUOTES and text[-1] == _QUOTES[text[0]]:
            text = text[1:-1].strip()
        if text == before:
            break
    return text


def _as_turn(text: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    turn = clean_turn(text)
    return (turn, None) if turn else (None, "nothing left of the turn after cleaning")


class UserSimulator:
    def __init__(self, endpoint: ChatEndpoint, *, temperature: float = TEMPERATURE, max_tokens: int = MAX_TOKENS) -> None:
        self.endpoint = endpoint
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.shared = load_prompt("user_simulator/shared_requirements")
        self._shared_text = self.shared.render()      # the same for every turn: rendered once

    @property
    def model(self) -> str:
        return self.endpoint.config.model

    def prompt(self, move: str, *, query: str, history: Sequence[Message], benign_intent: Optional[str],
               intent: str = BENIGN) -> str:
        """``benign_intent``: the text of the intent the clarification moves voice (the malicious one when
        ``intent`` is MALICIOUS)."""
        values = {"query": query, "conversation": format_conversation(history)}
        if move in BC_MOVES:
            if not benign_intent:
                raise SimulatorError(f"move {move} needs the {intent} intent, and the query has none")
            values[INTENT_SLOT[intent]] = benign_intent
        return move_prompt(move, intent).render(**values).rstrip() + "\n\n" + self._shared_text

    async def render(self, move: str, *, query: str, history: Sequence[Message], turn: int, seed: int,
                     benign_intent: Optional[str] = None, intent: str = BENIGN) -> Message:
        """The user message for `move` at model turn `turn`, conditioned on `history`.

        The intent text reaches the prompt only for BC moves; for the others it is dropped here. ``intent``
        says which intent it is (MALICIOUS: condition mc's prompts)."""
        text = benign_intent if move in BC_MOVES else None
        content = self.prompt(move, query=query, history=history, benign_intent=text, intent=intent)
        request = Request([{"role": "user", "content": content}], temperature=self.temperature,
                          max_tokens=self.max_tokens, seed=seed)
        asked = await ask(self.endpoint, request, _as_turn, stage=STAGE, retry=next_seed(EMPTY_RETRIES))
        if asked.ok and asked.value:
            return Message(role="user", content=asked.value, turn=turn, move=move, model=self.model,
                           prompt_version=move_prompt(move, intent).ref)
        raise SimulatorError(f"user simulator gave an empty {move} turn (turn {turn}) "
                             f"{1 + EMPTY_RETRIES} times (seeds {seed}..{seed + EMPTY_RETRIES})")
