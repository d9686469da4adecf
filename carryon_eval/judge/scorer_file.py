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
from array import array
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from carryon_eval.judge.scorers import Judgment, ReplyScorer, ReplyShape, reply_shape
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
        self.ids: dict[str, str] = {r["raw"]: r["answer"] for r in read_jsonl(path, on_bad=_redo)}
        self.appender: Optional[Appender] = None

    def open(self) -> None:
        write_jsonl_atomic(self.path, [{"answer": i, "raw": raw} for raw, i in self.ids.items()])
        self.appender = Appender(self.path)

    def id_of(self, raw: Optional[str]) -> Optional[str]:
        """The id of ``raw`` (None for no answer), its text appended to the file the first time."""
        if raw is None:
            return None
        found = self.ids.get(raw)
        if found is None:
            found = self.ids[raw] = answer_id(raw)
            if self.appender is not None:
                self.appender.write([{"answer": found, "raw": raw}])
        return found

    def close(self) -> None:
        if self.appender is not None:
            self.appender.close()
            self.appender = None

    def finish(self, named: set[str]) -> None:
        """The final file: the answers some record names, by id."""
        self.close()
        texts = {i: raw for raw, i in self.ids.items() if i in named}
        write_jsonl_atomic(self.path, [{"answer": i, "raw": texts[i]} for i in sorted(texts)])


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
        self._old: list[tuple[dict[str, Any], int, int]] = []      # (record's what-and-who, offset, length)
        for r, offset, length in scan_jsonl(self.path, on_bad=_redo):
            key, judge = self.key(r), str(r.get("judge_model"))
            self._old.append(({"key": key, "judge": judge, "value": self.value(r), "via": r.get("via"),
                               "answer": r.get("answer"), "prompt": r.get("prompt_version")}, offset, length))
            if judge != judge_model:
                continue
            if r.get("prompt_version") == self.shape.prompt_version and self.value(r) is not None:
                self.kept.add(key)
            else:
                self.kept.discard(key)             # a later record of the target wins
        self.lines = _Lines(judge_model)
        self.appender: Optional[Appender] = None

    def key(self, record: dict[str, Any]) -> tuple:
        return tuple(record.get(f) for f in self.shape.target_fields)

    def value(self, record: dict[str, Any]) -> Any:
        return record.get(self.shape.value_field)

    def open(self) -> None:
        """Rewrite the file with the other judges' records, then this judge's kept ones (its stale ones left out);
        then append as calls finish."""
        me = self.judge_model
        others = [line for line in self._old if line[0]["judge"] != me]
        mine = [line for line in self._old if line[0]["judge"] == me and line[0]["key"] in self.kept
                and line[0]["value"] is not None and line[0]["prompt"] == self.shape.prompt_version]
        self.lines.judges = list(dict.fromkeys(line[0]["judge"] for line in self._old))
        with (open(self.path, "rb") if self._old else open(os.devnull, "rb")) as src, \
                atomic_writer(self.path) as out:
            for what, offset, length in [*others, *mine]:
                src.seek(offset)
                out.write(src.read(length).decode("utf-8"))
                self.lines.add(what, length)
        self._old = []
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
            self.lines.add({"key": target, "judge": self.judge_model, "value": self.value(r), "via": r.get("via"),
                            "answer": r.get("answer")}, length)

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


class _Lines:
    """Where each line of the file this pass writes is (without holding the lines): per line its target, offset,
    length, judge and a code for what the tally counts (unscored, via, the stored answer it names)."""

    def __init__(self, judge: str) -> None:
        self.judge = judge
        self.judges: list[str] = []                          # in order of first appearance in the file
        self.size = 0                                        # the file's length so far
        self.keys: list[tuple] = []
        self.offsets, self.lengths = array("q"), array("q")
        self.who, self.unscored, self.via, self.answer = array("q"), bytearray(), array("q"), array("q")
        self.codes: dict[Any, int] = {}

    def _code(self, kind: str, value: Any) -> int:
        return self.codes.setdefault((kind, value), len(self.codes))

    def add(self, what: dict[str, Any], length: int) -> None:
        if what["judge"] not in self.judges:
            self.judges.append(what["judge"])
        self.keys.append(what["key"])
        self.offsets.append(self.size)
        self.lengths.append(length)
        self.who.append(self._code("judge", what["judge"]))
        self.unscored.append(what["value"] is None)
        self.via.append(self._code("via", what["via"]))
        self.answer.append(self._code("answer", what.get("answer")))
        self.size += length

    def present(self) -> list[str]:
        """The judges of the final file, in order (this judge keeps its place, or comes last)."""
        return [*self.judges, *([] if self.judge in self.judges else [self.judge])]

    def final(self, order: list[tuple], *, keep_others: bool) -> tuple[np.ndarray, np.ndarray, Written]:
        """Offsets and lengths of the final file's lines, in its order, and what this judge's hold: each judge in
        ``present()`` order, the other judges' last line per target in first-appearance order, this judge's last
        line of each target of ``order`` (its transcript order), with ``keep_others`` then its lines of targets
        outside ``order`` (last of each, in first-appearance order)."""
        me = self._code("judge", self.judge)
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
        chosen = [np.fromiter(last.get(self._code("judge", judge), {}).values(), dtype=np.int64)
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
