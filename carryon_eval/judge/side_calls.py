"""Side calls: the calls a probe makes beside the judge phase, all through one runner.

    MOVES = SideCalls("fidelity", stage="fidelity", role="judge", file="fidelity_calls.jsonl",
                      key_fields=("conversation_id", "turn", "check"))
    done = await run_side_calls(run, MOVES, [SideCall(("c1", 2, "move"), text, 16, prompt.sha256, parse_move)],
                                endpoint, concurrency)
    done.records            # this model's records, in the order of the calls

A wing builds its requests (``SideCall``: the key that names what it asks about, one user message, the token
cap, the sha256 of the prompt it filled, how its answer reads) and reads the records back; this module asks
them: the fidelity check (the judge, on each simulated user turn), and the intent probe of OpenSafeIntent and
of the triplets (the target, on each dual-use reply judged harmful). Each call is one user message, no system
prompt, temperature 0, asked once (no retry prompt), up to ``concurrency`` calls in flight. Its calls are
counted under the usage ledger's ``stage``, which ``SideCalls`` files under the role whose model answers
(run.json's usage, the progress lines).

One record type, one file per probe (``SideCalls.file``): a JSON object per call and model, the key's fields
first, then ``raw`` (the answer as it came; None when the call failed), ``model``, ``prompt_sha256`` and
``error`` (why the call failed, else None). Records are appended as calls finish, so a process killed
mid-probe keeps every answered call; at the end the file is rewritten atomically: the other models' records
as they were, then this model's in the order of the calls (a key no longer asked is dropped).

One resume rule, the judge phase's: a call whose key already has a record of the same model and prompt with
an answer that reads (its ``read`` gives a value, not None) is not asked again. A failed call, or an answer
that does not read, is asked again on the next run, once, like an unscored judgment; through the run
folder's response cache an answer already paid for comes back free and the same (so an unreadable answer stays
unreadable, counted as such), and only a call that never got an answer reaches the model again.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from pydantic import BaseModel, ConfigDict

from carryon_eval import defaults
from carryon_eval.judge.scorer_file import Appender
from carryon_eval.codec import Record
from carryon_eval.model.ask import Request, ask
from carryon_eval.model.budget import CallBudgetSpent
from carryon_eval.model.endpoint import ChatEndpoint, EndpointError, ModelRejected, ParameterRefused
from carryon_eval.model.pool import EndpointGone
from carryon_eval.progress import Progress, register_stage
from carryon_eval.run.folder import RunFolder, read_jsonl, register_record, write_jsonl_atomic
from carryon_eval.run.heap import many_calls

log = logging.getLogger("carryon.judge")

#: The fields every record has after its key's.
RECORD_FIELDS = ("raw", "model", "prompt_sha256", "error")


class _Line(BaseModel):
    """What ``read_jsonl`` checks a line of a side-call file against (the key's fields are the probe's own)."""
    model_config = ConfigDict(extra="allow")
    raw: Optional[str]
    model: str
    prompt_sha256: str
    error: Optional[str] = None


@dataclass(frozen=True)
class SideCalls:
    """A probe's calls: ``name`` (its progress line), the usage ledger's ``stage`` its calls are counted under
    and the ``role`` whose model answers them ("target" or "judge"), the run folder's ``file`` of its records
    and the ``key_fields`` that name what a call asks about. Making one registers its stage's role and its
    file's record type."""
    name: str
    stage: str
    role: str
    file: str
    key_fields: tuple[str, ...]

    def __post_init__(self) -> None:
        register_stage(self.stage, self.role)
        fields = self.key_fields
        register_record(self.file, _Line,
                        lambda line: next((f"no {f!r} field" for f in fields if f not in (line.model_extra or {})),
                                          None))


@dataclass(frozen=True)
class SideCall:
    """One request: ``key`` (values of the probe's ``key_fields``, in order), the user message ``text``, the
    token cap, the sha256 of the prompt file it filled, and ``read``: the answer's value, None when it does
    not read."""
    key: tuple[Any, ...]
    text: str
    max_tokens: int
    prompt_sha256: str
    read: Callable[[Optional[str]], Any] = field(compare=False)


@dataclass(frozen=True)
class SideCallRecord:
    """One stored call: the key's fields by name, the raw answer (None: the call failed, ``error`` says why),
    the model asked and the sha256 of the prompt it filled."""
    fields: dict[str, Any]
    raw: Optional[str]
    model: str
    prompt_sha256: str
    error: Optional[str] = None

    @property
    def key(self) -> tuple[Any, ...]:
        return tuple(self.fields.values())

    def to_json(self) -> dict[str, Any]:
        return {**self.fields, "raw": self.raw, "model": self.model, "prompt_sha256": self.prompt_sha256,
                "error": self.error}

    @classmethod
    def from_json(cls, row: dict[str, Any], key_fields: Sequence[str]) -> "SideCallRecord":
        answer = _Answer.from_json(row)
        return cls({f: row.get(f) for f in key_fields}, answer.raw, str(answer.model), str(answer.prompt_sha256),
                   answer.error)


@dataclass(frozen=True)
class _Answer(Record):
    """The fields of a stored call after its key's (``RECORD_FIELDS``)."""
    raw: Optional[str] = None
    model: Optional[str] = None
    prompt_sha256: Optional[str] = None
    error: Optional[str] = None


def read_side_calls(run: RunFolder, calls: SideCalls, model: Optional[str] = None) -> list[SideCallRecord]:
    """The records of a probe's file, in file order (of ``model`` only, when given)."""
    rows = (SideCallRecord.from_json(r, calls.key_fields) for r in read_jsonl(run.path / calls.file))
    return [r for r in rows if model is None or r.model == model]


@dataclass
class SideCallPass:
    """What one run of a probe's calls did: this model's records in the order of the calls, and the counts."""
    records: list[SideCallRecord]
    kept: int = 0                     # answered before (the resume rule), not asked again
    asked: int = 0
    failed: int = 0                   # asked, no answer (recorded with its error; asked again next time)


def answered(record: Optional[SideCallRecord], call: SideCall) -> bool:
    """The resume rule: a record of the call's key and prompt whose answer reads."""
    return (record is not None and record.error is None and record.raw is not None
            and record.prompt_sha256 == call.prompt_sha256 and call.read(record.raw) is not None)


async def _ask(endpoint: ChatEndpoint, calls: SideCalls, call: SideCall) -> SideCallRecord:
    """One call, asked once; a failed call is a record with its error."""
    fields = dict(zip(calls.key_fields, call.key))
    request = Request([{"role": "user", "content": call.text}], temperature=0.0, max_tokens=call.max_tokens)
    model = endpoint.config.model
    try:
        asked = await ask(endpoint, request, lambda text: (text, None), stage=calls.stage)
    except (CallBudgetSpent, EndpointGone, ParameterRefused, ModelRejected):
        raise                       # --max-calls, a role gone, a refused parameter, key or model: stop the probe
    except EndpointError as exc:
        log.warning("%s call failed: %s", calls.name, exc)
        return SideCallRecord(fields, None, model, call.prompt_sha256, f"{type(exc).__name__}: {exc}")
    return SideCallRecord(fields, asked.raw if asked.raw is not None else "", model, call.prompt_sha256)


async def run_side_calls(run: RunFolder, calls: SideCalls, requests: Sequence[SideCall], endpoint: ChatEndpoint,
                         concurrency: int = defaults.JUDGE_CONCURRENCY, *,
                         show_progress: Optional[bool] = None) -> SideCallPass:
    """Ask ``requests`` of ``endpoint`` (up to ``concurrency`` in flight), except those the resume rule keeps;
    append each record to the probe's file as it comes, then rewrite the file (see the module docstring)."""
    path = run.path / calls.file
    model = endpoint.config.model
    others: list[dict[str, Any]] = []
    mine: dict[tuple[Any, ...], SideCallRecord] = {}
    for row in read_jsonl(path, on_bad=lambda e: log.warning("%s; left out, asked again", str(e).split("; this")[0])):
        record = SideCallRecord.from_json(row, calls.key_fields)
        if record.model != model:
            others.append(row)
        else:
            mine[record.key] = record                   # the last record of a key wins
    kept = {c.key: mine[c.key] for c in requests if answered(mine.get(c.key), c)}
    todo = [c for c in requests if c.key not in kept]
    write_jsonl_atomic(path, [*others, *(r.to_json() for r in kept.values())])
    done = SideCallPass([], kept=len(kept))
    new: dict[tuple[Any, ...], SideCallRecord] = {}
    queue: "asyncio.Queue[SideCall]" = asyncio.Queue()
    for c in todo:
        queue.put_nowait(c)
    appender = Appender(path)
    bar = Progress(len(todo), calls.name, usage=endpoint.usage, unit="call",
                   disable=None if show_progress is None else not show_progress)

    async def worker() -> None:
        while not queue.empty():
            call = queue.get_nowait()
            record = await _ask(endpoint, calls, call)
            new[call.key] = record
            appender.write([record.to_json()])
            done.asked += 1
            done.failed += record.error is not None
            bar.advance()

    workers = [asyncio.ensure_future(worker()) for _ in range(max(1, min(concurrency, len(todo))))]
    try:
        with many_calls():
            await asyncio.gather(*workers)
    finally:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        bar.close()
        appender.close()
    records = {**kept, **new}
    done.records = [records[c.key] for c in requests]
    write_jsonl_atomic(path, [*others, *(r.to_json() for r in done.records)])
    return done


__all__ = ["RECORD_FIELDS", "SideCall", "SideCallPass", "SideCallRecord", "SideCalls", "answered", "read_side_calls",
           "run_side_calls"]
