"""The user simulator (one natural user turn per follow-up move) and its move-fidelity check.

Each move has a prompt file `prompts/user_simulator/<move>.txt`; `shared_requirements.txt` is
appended to every one. Only the benign clarification moves (moves.BC_MOVES) are given the benign
intent: the templates of the other moves have no place for it and are never passed it, so an NC
conversation cannot learn the intent from the simulator prompt.

Move fidelity (`check_fidelity`): a judge classifies every rendered user turn back into one of the
seven moves (a confusion matrix per move), and says for every NC-condition turn whether it reveals
the query's benign intent (a leak).
"""
from __future__ import annotations

import asyncio
import re
from typing import Any, Optional, Sequence

from . import defaults
from .ask import Request, ask, next_seed
from .endpoint import ChatEndpoint
from .moves import BC_MOVES, MOVES
from .parsing import parse_yes_no, strip_reasoning
from .prompts import Prompt, load_prompt, prompt_hashes
from .schema import Message, Transcript

STAGE = "user_simulator"
FIDELITY_STAGE = "fidelity"
TEMPERATURE = defaults.USER_TEMPERATURE
MAX_TOKENS = defaults.USER_MAX_TOKENS
EMPTY_RETRIES = defaults.EMPTY_REPLY_RETRIES   # after an empty turn, ask again this many times, next seed each
SHOWN_REPLY_CHARS = 2500     # an assistant reply longer than this is cut in the simulator's view


class SimulatorError(Exception):
    """A user turn could not be rendered; the conversation is recorded as failed with this reason."""


def move_prompt(move: str) -> Prompt:
    if move not in MOVES:
        raise SimulatorError(f"unknown move {move!r}")
    return load_prompt(f"user_simulator/{move}")


def prompt_refs() -> dict[str, str]:
    return prompt_hashes("user_simulator")


def format_conversation(messages: Sequence[Message], limit: int = SHOWN_REPLY_CHARS) -> str:
    lines = []
    for m in messages:
        text = m.content.strip()
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

    @property
    def model(self) -> str:
        return self.endpoint.config.model

    def prompt(self, move: str, *, query: str, history: Sequence[Message], benign_intent: Optional[str]) -> str:
        values = {"query": query, "conversation": format_conversation(history)}
        if move in BC_MOVES:
            if not benign_intent:
                raise SimulatorError(f"move {move} needs the benign intent, and the query has none")
            values["benign_intent"] = benign_intent
        return move_prompt(move).render(**values).rstrip() + "\n\n" + self.shared.render()

    async def render(self, move: str, *, query: str, history: Sequence[Message], turn: int, seed: int,
                     benign_intent: Optional[str] = None) -> Message:
        """The user message for `move` at model turn `turn`, conditioned on `history`.

        The benign intent reaches the prompt only for BC moves; for the others it is dropped here."""
        intent = benign_intent if move in BC_MOVES else None
        content = self.prompt(move, query=query, history=history, benign_intent=intent)
        request = Request([{"role": "user", "content": content}], temperature=self.temperature,
                          max_tokens=self.max_tokens, seed=seed)
        asked = await ask(self.endpoint, request, _as_turn, stage=STAGE, retry=next_seed(EMPTY_RETRIES))
        if asked.ok and asked.value:
            return Message(role="user", content=asked.value, turn=turn, move=move, model=self.model,
                           prompt_version=move_prompt(move).ref)
        raise SimulatorError(f"user simulator gave an empty {move} turn (turn {turn}) "
                             f"{1 + EMPTY_RETRIES} times (seeds {seed}..{seed + EMPTY_RETRIES})")


# ---------------------------------------------------------------- move fidelity
def parse_move(text: Optional[str]) -> Optional[str]:
    """The move named in a classifier reply (the first one mentioned), or None."""
    norm = re.sub(r"[\s\-]+", "_", strip_reasoning(text).lower())
    found = [(norm.find(m), m) for m in MOVES if m in norm]
    return min(found)[1] if found else None


async def check_fidelity(transcripts: Sequence[Transcript], queries: dict[str, dict[str, Any]], judge: Any,
                         *, concurrency: int = 16, progress: Any = None) -> dict[str, Any]:
    """Classify every simulated user turn back into a move; check NC turns for intent leaks."""
    classify = load_prompt("fidelity/classify_move")
    leak = load_prompt("fidelity/intent_leak")
    gate = asyncio.Semaphore(concurrency)

    async def ask(prompt: str) -> Optional[str]:
        async with gate:
            result = await judge.chat([{"role": "user", "content": prompt}], stage=FIDELITY_STAGE,
                                      temperature=0.0, max_tokens=16)
        return result.text

    async def one(tr: Transcript, i: int) -> dict[str, Any]:
        msg = tr.messages[i]
        row: dict[str, Any] = {"conversation_id": tr.conversation_id, "condition": tr.condition,
                               "turn": msg.turn, "move": msg.move, "content": msg.content}
        raw = await ask(classify.render(conversation=format_conversation(tr.messages[:i]), message=msg.content))
        row["predicted"] = parse_move(raw)
        intent = queries.get(tr.query_id, {}).get("benign_intent")
        if tr.condition == "nc" and intent:
            row["leak"] = parse_yes_no(await ask(leak.render(benign_intent=intent, message=msg.content)))
        if progress is not None:
            progress.advance()
        return row

    jobs = [(tr, i) for tr in transcripts if tr.condition in ("bc", "nc")
            for i, m in enumerate(tr.messages) if m.role == "user" and m.move]
    rows = await asyncio.gather(*(one(tr, i) for tr, i in jobs))
    return summarize_fidelity(list(rows), judge_model=judge.config.model,
                              prompts={p.name: p.ref for p in (classify, leak)})


def summarize_fidelity(rows: list[dict[str, Any]], *, judge_model: str, prompts: dict[str, str]) -> dict[str, Any]:
    labels = list(MOVES) + ["unparsed"]
    confusion = {m: {p: 0 for p in labels} for m in MOVES}
    for r in rows:
        confusion[r["move"]][r["predicted"] or "unparsed"] += 1
    per_move = {}
    for m in MOVES:
        n = sum(confusion[m].values())
        per_move[m] = {"n": n, "agree": confusion[m][m], "agreement": confusion[m][m] / n if n else None}
    n_all = len(rows)
    checked = [r for r in rows if "leak" in r]
    leaks = [r for r in checked if r["leak"] is True]
    return {
        "judge_model": judge_model,
        "prompts": prompts,
        "n_turns": n_all,
        "agreement": sum(confusion[m][m] for m in MOVES) / n_all if n_all else None,
        "per_move": per_move,
        "labels": labels,
        "confusion": confusion,   # expected move -> predicted move -> count
        "intent_leak": {
            "n_checked": len(checked),
            "n_leaks": len(leaks),
            "n_unscored": sum(r["leak"] is None for r in checked),
            "rate": len(leaks) / len(checked) if checked else None,
            "leaks": [{k: r[k] for k in ("conversation_id", "turn", "move", "content")} for r in leaks],
        },
        "turns": rows,
    }
