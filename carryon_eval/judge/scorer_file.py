"""One scorer's judgment file during a judge pass: what it keeps, what it appends, and the file it ends with.

    RUNDIR/<scorer>_judgments.jsonl   one record per target (conversation_id, turn[, item_id]) and judge model
    RUNDIR/<scorer>_answers.jsonl     a scorer whose one answer gives several records (``answers_once``: grouped
                                      Ben-Util): each raw answer once, {"answer": id, "raw": text}; its records
                                      carry ``answer`` (the id: a digest of the text) instead of ``raw``

A pass keeps the scored records of its judge model and prompt, rewrites the file with the other judges' records
and those (its stale ones left out), appends records as calls finish (each line flushed at once, fsynced every
FSYNC_EVERY lines; an answer is appended before the records that name it) and at its end rewrites the file
atomically: judge by judge (in order of first appearance), each judge's last record per target, this judge's in
transcript order. None of this holds the records in memory: the file is read a line at a time, every line written
is indexed by where it is (its target, offset and length, and a code for what the pass's tally counts), and the
end copies the lines in their final order. The answers file is rewritten at the end with the answers the final
records name, in the order of their ids.
"""
from __future__ import annotations

import hashlib
import logging
import os
import sys
from array import array
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from carryon_eval.judge.scorers import Judgment, ReplyScorer, ReplyShape, reply_shape
from carryon_eval.schema import JudgeAnswer
from carryon_eval.run.folder import (RunFolder, answers_file, atomic_writer, json_line, judgment_file, read_jsonl,
                                     scan_jsonl, write_jsonl_atomic)

log = logging.getLogger("carryon.judge")

FSYNC_EVERY = 200            # records appended between fsyncs (each record is flushed at once)


def answer_id(raw: str) -> str:
    """The id of a raw answer stored once: a digest of its text (the same text, the same id, in any run)."""
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def record_row(shape: ReplyShape, target: tuple, judgment: Judgment, judge_model: str,
               answer: Optional[str] = None) -> dict[str, Any]:
    """One stored record: the target's fields, the value, who judged with which prompt, then how. ``answer``: the
    id of its raw answer stored once (the record then carries it instead of ``raw``)."""
    row: dict[str, Any] = dict(zip(shape.target_fields, target))
    row[shape.value_field] = judgment.value if shape.value_of is None else shape.value_of(target, judgment.value)
    row["judge_model"] = judge_model
    row["prompt_version"] = shape.prompt_version
    for name in shape.record_fields:
        row[name] = getattr(judgment, name)
    if answer is None:
        row["raw"] = judgment.raw
    else:
        row["answer"] = answer
    row.update(attempts=judgment.attempts, via=judgment.via)
    row.update(shape.constants)
    return row


def parts(scorer: Any, targets: Sequence[tuple], judgment: Judgment) -> list[tuple[tuple, Judgment]]:
    """Each target's judgment: the one judgment for all, or a scorer's own ``split`` of one answer into its
    targets' judgments (one answer giving a verdict per item)."""
    split = getattr(scorer, "split", None)
    return split(targets, judgment) if split is not None else [(t, judgment) for t in targets]


class Appender:
    """Appends records as they come; each line is flushed at once, fsynced every FSYNC_EVERY lines."""

    def __init__(self, path: Path) -> None:
        self.fh = open(path, "ab")
        self.pending = 0

    def write(self, records: Iterable[dict[str, Any]]) -> list[int]:
        """Append the records; returns each one's line length in bytes."""
        lines = [json_line(r) for r in records]
        self.fh.write(b"".join(lines))
        self.fh.flush()
        self.pending += len(lines)
        if self.pending >= FSYNC_EVERY:
            self.sync()
        return [len(line) for line in lines]

    def sync(self) -> None:
        os.fsync(self.fh.fileno())
        self.pending = 0

    def close(self) -> None:
        self.sync()
        self.fh.close()


class AnswerStore:
    """A scorer's answers file: every raw answer once, appended the first time a record names it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ids: dict[str, str] = {a.raw: a.answer for a in map(JudgeAnswer.from_json, read_jsonl(path, on_bad=_redo))}
        self.appender: Optional[Appender] = None

    def open(self) -> None:
        write_jsonl_atomic(self.path, [JudgeAnswer(i, raw).to_json() for raw, i in self.ids.items()])
        self.appender = Appender(self.path)

    def id_of(self, raw: Optional[str]) -> Optional[str]:
        """The id of ``raw`` (None for no answer), its text appended to the file the first time."""
        if raw is None:
            return None
        found = self.ids.get(raw)
        if found is None:
            found = self.ids[raw] = answer_id(raw)
            if self.appender is not None:
                self.appender.write([JudgeAnswer(found, raw).to_json()])
        return found

    def close(self) -> None:
        if self.appender is not None:
            self.appender.close()
            self.appender = None

    def finish(self, named: set[str]) -> None:
        """The final file: the answers some record names, by id."""
        self.close()
        texts = {i: raw for raw, i in self.ids.items() if i in named}
        write_jsonl_atomic(self.path, [JudgeAnswer(i, texts[i]).to_json() for i in sorted(texts)])


def _redo(error: Exception) -> None:
    """A damaged line of a judgment file: left out of the rewritten file, and its case judged again."""
    log.warning("%s; left out, its case is judged again", str(error).split("; this line")[0])


class ScorerRecords:
    """One scorer's judgment file during a pass (see the module's docstring). ``kept``: the targets this judge's
    stored records already answer (same prompt, scored)."""

    def __init__(self, run: RunFolder, scorer: ReplyScorer, judge_model: str) -> None:
        self.run, self.scorer, self.judge_model = run, scorer, judge_model
        self.shape = reply_shape(scorer)
        self.path = run.path / judgment_file(scorer.name)
        self.answers = AnswerStore(run.path / answers_file(scorer.name)) \
            if getattr(scorer, "answers_once", False) else None
        self.kept: set[tuple] = set()
        self._old = _Lines(judge_model)            # the file's lines as the pass finds them (where, whose, what)
        for r, offset, length in scan_jsonl(self.path, on_bad=_redo):
            key, judge = self.key(r), str(r.get("judge_model"))
            fresh = r.get("prompt_version") == self.shape.prompt_version and self.value(r) is not None
            self._old.add(key, judge, self.value(r) is None, r.get("via"), r.get("answer"), length, offset, fresh)
            if judge != judge_model:
                continue
            if fresh:
                self.kept.add(key)
            else:
                self.kept.discard(key)             # a later record of the target wins
        self.lines = _Lines(judge_model)
        self.appender: Optional[Appender] = None

    def key(self, record: dict[str, Any]) -> tuple:
        """The record's target; its text fields interned (a run's many records of one conversation share them)."""
        return tuple(_interned(record.get(f)) for f in self.shape.target_fields)

    def value(self, record: dict[str, Any]) -> Any:
        return record.get(self.shape.value_field)

    def open(self) -> None:
        """Rewrite the file with the other judges' records, then this judge's kept ones (its stale ones left out);
        then append as calls finish."""
        old, me = self._old, self._old.code("judge", self.judge_model)
        mine = [i for i, who in enumerate(old.who) if who == me and old.fresh[i] and old.keys[i] in self.kept]
        self.lines.judges = list(old.judges)
        with (open(self.path, "rb") if old.keys else open(os.devnull, "rb")) as src, \
                atomic_writer(self.path) as out:
            for i in [*(i for i, who in enumerate(old.who) if who != me), *mine]:
                src.seek(old.offsets[i])
                out.write(src.read(old.lengths[i]).decode("utf-8"))
                self.lines.add(old.keys[i], old.name("judge", old.who[i]), bool(old.unscored[i]),
                               old.name("via", old.via[i]), old.name("answer", old.answer[i]), old.lengths[i])
        self._old = _Lines(self.judge_model)
        if self.answers is not None:
            self.answers.open()
        self.appender = Appender(self.path)

    def add(self, targets: Sequence[tuple], judgment: Judgment) -> None:
        answer = self.answers.id_of if self.answers is not None else (lambda raw: None)
        split = parts(self.scorer, targets, judgment)
        records = [record_row(self.shape, t, j, self.judge_model, answer(j.raw)) for t, j in split]
        if self.appender is None:
            return
        for (target, _), r, length in zip(split, records, self.appender.write(records)):
            self.lines.add(target, self.judge_model, self.value(r) is None, r.get("via"), r.get("answer"), length)

    def close(self) -> None:
        if self.appender is not None:
            self.appender.close()
            self.appender = None
        if self.answers is not None:
            self.answers.close()

    def finish(self, order: list[tuple]) -> "Written":
        """The final file; returns what this judge's records in transcript order hold (for the pass's tally)."""
        self.close()
        only = getattr(self.scorer, "only", None) is not None     # a scorer judging some replies keeps the rest
        offsets, lengths, written = self.lines.final(order, keep_others=only)
        with (open(self.path, "rb") if self.path.is_file() else open(os.devnull, "rb")) as src, \
                atomic_writer(self.path) as out:
            for offset, length in zip(offsets.tolist(), lengths.tolist()):
                src.seek(offset)
                out.write(src.read(length).decode("utf-8"))
        if self.answers is not None:
            self.answers.finish(written.named)
        self.run.judgments().know_judges(self.path.name, self.lines.present())
        return written


class Written:
    """What this judge's final records hold: how many, how many unscored, how each was obtained, which stored
    answers the final file names."""

    def __init__(self) -> None:
        self.records = 0
        self.unscored = 0
        self.via: Counter[str] = Counter()
        self.named: set[str] = set()


def _interned(value: Any) -> Any:
    return sys.intern(value) if isinstance(value, str) else value


class _Lines:
    """Where each line of a judgment file is (without holding the lines): per line its target, offset, length,
    judge and a code for what the tally counts (unscored, via, the stored answer it names), and whether it is
    fresh (of the pass's prompt, scored: kept by a resume). Hundreds of thousands of lines at the paper's scale:
    arrays, and one code per distinct judge, via and answer."""

    def __init__(self, judge: str) -> None:
        self.judge = judge
        self.judges: list[str] = []                          # in order of first appearance in the file
        self.size = 0                                        # the file's length so far
        self.keys: list[tuple] = []
        self.offsets, self.lengths = array("q"), array("q")
        self.who, self.unscored, self.via, self.answer = array("q"), bytearray(), array("q"), array("q")
        self.fresh = bytearray()
        self.codes: dict[Any, int] = {}
        self.names: list[Any] = []                           # code -> its value

    def code(self, kind: str, value: Any) -> int:
        found = self.codes.get((kind, value))
        if found is None:
            found = self.codes[(kind, value)] = len(self.names)
            self.names.append(value)
        return found

    def name(self, kind: str, code: int) -> Any:
        return self.names[code]

    def add(self, key: tuple, judge: str, unscored: bool, via: Any, answer: Any, length: int,
            offset: Optional[int] = None, fresh: bool = True) -> None:
        """One line: by default the next one of the file this pass writes (at its end)."""
        if judge not in self.judges:
            self.judges.append(judge)
        self.keys.append(key)
        self.offsets.append(self.size if offset is None else offset)
        self.lengths.append(length)
        self.who.append(self.code("judge", judge))
        self.unscored.append(unscored)
        self.via.append(self.code("via", via))
        self.answer.append(self.code("answer", answer))
        self.fresh.append(fresh)
        self.size += length

    def present(self) -> list[str]:
        """The judges of the final file, in order (this judge keeps its place, or comes last)."""
        return [*self.judges, *([] if self.judge in self.judges else [self.judge])]

    def final(self, order: list[tuple], *, keep_others: bool) -> tuple[np.ndarray, np.ndarray, Written]:
        """Offsets and lengths of the final file's lines, in its order, and what this judge's hold: each judge in
        ``present()`` order, the other judges' last line per target in first-appearance order, this judge's last
        line of each target of ``order`` (its transcript order), with ``keep_others`` then its lines of targets
        outside ``order`` (last of each, in first-appearance order)."""
        me = self.code("judge", self.judge)
        who = np.frombuffer(self.who, dtype=np.int64)
        where = {key: i for i, key in enumerate(order)}
        at = np.full(len(order), -1, dtype=np.int64)
        last: dict[Any, dict[tuple, int]] = {}                # the other lines, last of each (judge, target)
        for j, (key, judge) in enumerate(zip(self.keys, who.tolist())):
            i = where.get(key) if judge == me else None
            if i is not None:
                at[i] = j
            elif judge != me or keep_others:
                last.setdefault(judge, {})[key] = j
        del where
        chosen = [np.fromiter(last.get(self.code("judge", judge), {}).values(), dtype=np.int64)
                  if judge != self.judge else np.concatenate([at[at >= 0], np.fromiter(
                      last.get(me, {}).values(), dtype=np.int64)]) for judge in self.present()]
        picked = np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)
        mine = picked[who[picked] == me] if len(picked) else picked
        names = {code: value for (_, value), code in self.codes.items()}
        written = Written()
        written.records = len(mine)
        written.unscored = int(np.frombuffer(self.unscored, dtype=np.uint8)[mine].sum())
        for code, n in zip(*np.unique(np.frombuffer(self.via, dtype=np.int64)[mine], return_counts=True)):
            written.via[str(names[int(code)])] = int(n)
        named = np.unique(np.frombuffer(self.answer, dtype=np.int64)[picked])
        written.named = {names[int(c)] for c in named if names[int(c)] is not None}
        offsets, lengths = np.frombuffer(self.offsets, dtype=np.int64), np.frombuffer(self.lengths, dtype=np.int64)
        return offsets[picked], lengths[picked], written
