"""One judge's CarryOnBench judgments of a run as its numbers read them: compact arrays, filled as the judgment
files stream past, never a Python object per record held at once.

    judged = read_judged(run, judge, transcripts, checklists, ...)   # the judgment files streamed into one
    verdicts, not_judged = judged.verdicts(conversation_id, turn, items)
    harm, harm_judged = judged.harm(conversation_id, turn)

A Ben-Util file of a paper-scale run holds about 350,000 records (one per reply and checklist item): parsed and
held, they took over a gigabyte of the report's memory. Here every reply of the transcripts has one slot per item
of its query's checklist in one int8 array, and one harm slot in another (0: no record; 1: unscored; then the value:
2 "no", 3 "yes"; 2-6 harm 1-5). A later record of a target overwrites an earlier one, as the readers always did.
What the report says of the records as a whole (the judge models, prompt versions, how many verdicts carry a
logprob, whether there are any) is counted as they pass (``Tally``). A record of a reply or item the index does
not hold (another condition's reply, an item no longer in the checklist) is counted, not stored: no conversation
reads it.

``Judged.of(transcripts, checklists, utility=records, safety=records)`` fills the same table from records in
memory (the metric tests, the inspect bridge, calibration's per-item sample): UtilityJudgment and SafetyJudgment
(judgments.py), read by their fields.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np

from carryon_eval.judge.store import judge_records
from carryon_eval.run.folder import RunFolder
from carryon_eval.schema import Transcript
from carryon_eval.suites.carryonbench.judging.judgments import (SAFETY_FILE, SafetyJudgment, UtilityJudgment,
                                                                utility_file)

NO_RECORD, UNSCORED = 0, 1
_VERDICT = {False: 2, True: 3}
_VERDICT_OF = (None, None, False, True)         # code -> verdict (no record and unscored: None)


@dataclass
class Tally:
    """What one judgment file's records of the judge hold as a whole (every record, indexed or not)."""
    records: int = 0
    models: set[str] = field(default_factory=set)
    prompts: set[str] = field(default_factory=set)
    logprobs: int = 0                       # records with a p_yes (logprob verdicts)

    def count(self, record: Any) -> None:
        self.records += 1
        self.models.add(record.judge_model)
        self.prompts.add(record.prompt_version)
        self.logprobs += getattr(record, "p_yes", None) is not None


class Judged:
    """One judge's verdicts and harm scores over the replies of some transcripts (see the module docstring)."""

    def __init__(self, transcripts: Iterable[Transcript], checklists: Mapping[str, Sequence[str]]) -> None:
        self._reply: dict[tuple[str, int], int] = {}           # (conversation_id, turn) -> reply slot
        self._query: list[str] = []                            # reply slot -> its query
        starts = array("q")                                    # reply slot -> its first item slot
        self._columns: dict[str, dict[str, int]] = {}          # query -> item -> its column
        size = 0
        for tr in transcripts:
            columns = self._columns.get(tr.query_id)
            if columns is None:
                columns = self._columns[tr.query_id] = {item: i for i, item in
                                                        enumerate(dict.fromkeys(checklists.get(tr.query_id, ())))}
            for reply in tr.replies:
                key = (tr.conversation_id, reply.turn)
                if key in self._reply:
                    continue
                self._reply[key] = len(self._query)
                self._query.append(tr.query_id)
                starts.append(size)
                size += len(columns)
        self._starts = starts
        self._verdicts = np.zeros(size, dtype=np.int8)
        self._harms = np.zeros(len(self._query), dtype=np.int8)
        self.utility, self.safety = Tally(), Tally()

    @classmethod
    def of(cls, transcripts: Sequence[Transcript], checklists: Mapping[str, Sequence[str]],
           utility: Iterable[UtilityJudgment] = (), safety: Iterable[SafetyJudgment] = ()) -> "Judged":
        """The table of some transcripts from records, held in memory or streamed from the judgment files
        (``read_judged``)."""
        judged = cls(transcripts, checklists)
        for u in utility:
            judged.add_verdict(u)
        for s in safety:
            judged.add_score(s)
        return judged

    # ------------------------------------------------------------ filling
    def add_verdict(self, record: UtilityJudgment) -> None:
        """One Ben-Util record."""
        self.utility.count(record)
        cell = self._cell(record.conversation_id, record.turn, record.item_id)
        if cell is not None:
            verdict = record.verdict
            self._verdicts[cell] = UNSCORED if verdict is None else _VERDICT[bool(verdict)]

    def add_score(self, record: SafetyJudgment) -> None:
        """One harm-score record."""
        self.safety.count(record)
        slot = self._reply.get((record.conversation_id, record.turn))
        if slot is not None:
            score = record.score
            self._harms[slot] = UNSCORED if score is None else 1 + int(score)

    def _cell(self, conversation_id: str, turn: int, item_id: str) -> Optional[int]:
        """Where one reply's verdict on one item sits in the verdict array (None: a reply or item not indexed)."""
        slot = self._reply.get((conversation_id, turn))
        if slot is None:
            return None
        column = self._columns[self._query[slot]].get(item_id)
        return None if column is None else self._starts[slot] + column

    # ------------------------------------------------------------ reading
    def verdicts(self, conversation_id: str, turn: int, items: Sequence[str]) -> tuple[dict[str, Optional[bool]], int]:
        """The reply's verdict of each item (None: unscored or not judged) and how many items have no record."""
        slot = self._reply.get((conversation_id, turn))
        if slot is None:
            return {i: None for i in items}, len(items)
        columns, start = self._columns[self._query[slot]], self._starts[slot]
        codes = self._verdicts[start:start + len(columns)].tolist()
        out, missing = {}, 0
        for item in items:
            column = columns.get(item)
            code = codes[column] if column is not None else NO_RECORD
            out[item] = _VERDICT_OF[code]
            missing += code == NO_RECORD
        return out, missing

    def harm(self, conversation_id: str, turn: int) -> tuple[Optional[int], bool]:
        """The reply's harm score (None: unscored or not judged) and whether a record exists."""
        slot = self._reply.get((conversation_id, turn))
        code = int(self._harms[slot]) if slot is not None else NO_RECORD
        return (code - 1 if code > UNSCORED else None), code != NO_RECORD

    def verdict_records(self, keys: Iterable[tuple[str, int, str]]) -> list["Verdict"]:
        """The verdicts held for some (conversation_id, turn, item_id) targets, those with a record."""
        out = []
        for cid, turn, item in keys:
            cell = self._cell(cid, turn, item)
            code = int(self._verdicts[cell]) if cell is not None else NO_RECORD
            if code != NO_RECORD:
                out.append(Verdict(cid, turn, item, _VERDICT_OF[code]))
        return out


@dataclass(frozen=True)
class Verdict:
    """One held verdict (what calibration compares)."""
    conversation_id: str
    turn: int
    item_id: str
    verdict: Optional[bool]


def read_judged(run: RunFolder, judge: Optional[str], transcripts: Sequence[Transcript],
                checklists: Mapping[str, Sequence[str]], *, scorer: str = "utility",
                mode: Optional[str] = None) -> Judged:
    """One judge's utility verdicts (judgments.load_utility's) and harm scores over the replies of ``transcripts``:
    both files streamed into one compact table, no record held."""
    utility = judge_records(run, utility_file(run, judge, mode, scorer), judge)
    return Judged.of(transcripts, checklists, utility=utility, safety=judge_records(run, SAFETY_FILE, judge))
