"""Human labels of a run's cases, from the annotation page's JSONL, a CSV, or a Label Studio export.

    labels = read_labels(path, task="safety")     # [Label(annotator, key, value)], every annotator of the file

Keys are those of the run's judgments: (conversation_id, turn, item_id) for "utility",
(conversation_id, turn) for "safety" and "fidelity". Values: True/False (verdict), 1-5 (score), a move
name (move); None = skipped/unscored (counted, never compared). A row names its annotator (`annotator`;
a file without that column is one annotator named after the file).

Label Studio's JSON export (a list of tasks, each with `data` as `carryon-eval annotate --format
label-studio` wrote it and `annotations[].result[]` choices named verdict / score / move) reads the same
way; an annotation's annotator is `completed_by` (its email, or its user id). Cancelled annotations are
left out.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from carryon_eval.codec import Record, absent, present
from carryon_eval.moves import MOVES

TASKS = ("utility", "safety", "fidelity")
LABEL_FIELD = {"utility": "verdict", "safety": "score", "fidelity": "move"}
_TRUE = {"yes", "y", "true", "1", "fulfilled"}
_FALSE = {"no", "n", "false", "0", "unfulfilled"}
_NONE = {"", "none", "null", "unscored", "na", "n/a", "skip"}

Key = tuple


class LabelError(Exception):
    """A labels file that cannot be read as labels of the task; one line naming file and row."""


@dataclass(frozen=True)
class Label:
    annotator: str
    key: Key
    value: Any              # None = skipped / unscored


@dataclass
class LabelRow(Record):
    """One row of a labels file (a JSON line, a CSV line, a row of a JSON list, a Label Studio annotation): the
    columns a label is read from, each as the file has it (None where it lacks the column; ``annotator`` and the
    label columns ABSENT, so that a file without them is told apart from an empty cell); ``where``: where it stands
    in its file, as a message names it."""
    conversation_id: Any = None
    turn: Any = None
    item_id: Any = None
    task: Any = None
    annotator: Any = absent()
    verdict: Any = absent()
    score: Any = absent()
    move: Any = absent()
    where: str = field(default="", init=False)

    @classmethod
    def at(cls, row: Mapping[str, Any], where: str) -> "LabelRow":
        out = cls.from_json(row)
        out.where = where
        return out

    def label(self, task: str) -> Any:
        """Its label of ``task`` (the column LABEL_FIELD names; ABSENT where the row lacks it)."""
        return {"utility": self.verdict, "safety": self.score, "fidelity": self.move}[task]


# ---------------------------------------------------------------- Label Studio's export, as far as it is read
@dataclass
class _Case(Record):
    """A Label Studio task's ``data``: the case it shows (as `carryon-eval annotate --format label-studio` wrote it)."""
    conversation_id: Any = None
    turn: Any = None
    item_id: Any = None


@dataclass
class _User(Record):
    email: Any = None
    id: Any = None


@dataclass
class _Value(Record):
    choices: Any = None
    rating: Any = absent()


@dataclass
class _Result(Record):
    from_name: Any = None
    value: _Value = field(default_factory=_Value)


@dataclass
class _Annotation(Record):
    completed_by: Any = None
    was_cancelled: Any = None
    result: list[_Result] = field(default_factory=list)


@dataclass
class _Task(Record):
    data: _Case = field(default_factory=_Case)
    annotations: list[_Annotation] = field(default_factory=list)


# ---------------------------------------------------------------- one value
def parse_verdict(value: Any, where: str) -> Optional[bool]:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if text in _NONE:
        return None
    raise LabelError(f"{where}: verdict {value!r} is not yes/no (or empty for unscored)")


def parse_score(value: Any, where: str) -> Optional[int]:
    if value is None or (isinstance(value, str) and value.strip().lower() in _NONE):
        return None
    try:
        score = int(str(value).strip())
    except ValueError:
        score = 0
    if not 1 <= score <= 5 or isinstance(value, bool):
        raise LabelError(f"{where}: score {value!r} is not a whole number from 1 to 5 (or empty for unscored)")
    return score


def parse_move(value: Any, where: str) -> Optional[str]:
    if value is None or (isinstance(value, str) and value.strip().lower() in _NONE):
        return None
    text = str(value).strip().lower().replace(" ", "_")
    if text not in MOVES:
        raise LabelError(f"{where}: move {value!r} is not one of {', '.join(MOVES)}")
    return text


_PARSE = {"utility": parse_verdict, "safety": parse_score, "fidelity": parse_move}


# ---------------------------------------------------------------- one file
def _key(row: LabelRow, task: str, where: str) -> Key:
    need = {"conversation_id": row.conversation_id, "turn": row.turn,
            **({"item_id": row.item_id} if task == "utility" else {})}
    missing = [k for k, v in need.items() if v is None]
    if missing:
        raise LabelError(f"{where} lacks {missing}; expected columns {list(need) + [LABEL_FIELD[task]]}")
    try:
        turn = int(row.turn)
    except (TypeError, ValueError):
        raise LabelError(f"{where}: turn {row.turn!r} is not a whole number") from None
    return (str(row.conversation_id), turn, str(row.item_id)) if task == "utility" \
        else (str(row.conversation_id), turn)


def _text(path: Path) -> str:
    """The file's text; a file that is not UTF-8 is a LabelError naming the first bad byte."""
    try:
        return path.read_bytes().decode("utf-8-sig")        # a spreadsheet's byte-order mark is not a column's name
    except UnicodeDecodeError as exc:
        raise LabelError(f"{path}: not UTF-8 text (byte {exc.start}); save the labels as UTF-8") from None


def _table_rows(path: Path, text: str) -> list[LabelRow]:
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        return [LabelRow.at(row, f"{path}: line {reader.line_num}") for row in reader]
    rows = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                row = json.loads(line)
            except ValueError:
                raise LabelError(f"{path}:{n}: not a JSON line") from None
            if not isinstance(row, dict):
                raise LabelError(f"{path}:{n}: expected a JSON object per line, got a {type(row).__name__}")
            rows.append(LabelRow.at(row, f"{path}: line {n}"))
    return rows


def _annotator_of(annotation: _Annotation) -> str:
    who = annotation.completed_by
    if isinstance(who, dict):
        user = _User.from_json(who)
        who = user.email or user.id
    return f"label-studio-user-{who}" if isinstance(who, int) else str(who or "label-studio")


def _choice(result: list[_Result], name: str) -> Any:
    for r in result:
        if r.from_name == name:
            value = r.value
            choices = value.choices or ([value.rating] if present(value.rating) else [])
            return choices[0] if choices else None
    return None


def _well_formed(annotation: Any) -> bool:
    """An annotation (read as _Annotation) that is an object whose 'result' is a list of objects with a 'value'
    object (what is not stays as the file has it)."""
    return isinstance(annotation, _Annotation) and isinstance(annotation.result, list) and all(
        isinstance(r, _Result) and isinstance(r.value, _Value) for r in annotation.result)


def label_studio_rows(export: Any, path: Path) -> list[LabelRow]:
    """Label Studio's JSON export as flat rows (one per annotation), our label field named as the choice."""
    if not isinstance(export, list):
        raise LabelError(f"{path}: not a Label Studio JSON export (expected a list of tasks)")
    rows = []
    for i, t in enumerate(export):
        where = f"{path}: task {i}"
        if not isinstance(t, dict):
            raise LabelError(f"{where}: expected an object (a Label Studio task), got a {type(t).__name__}")
        task = _Task.from_json(t)
        case = task.data
        if not isinstance(case, _Case) or not isinstance(task.annotations, list):
            raise LabelError(f"{where}: expected 'data' to be an object and 'annotations' a list")
        for j, a in enumerate(task.annotations):
            if not _well_formed(a):
                raise LabelError(f"{where}: expected each annotation to be an object whose 'result' is a list of "
                                 "objects with a 'value' object")
            if a.was_cancelled:
                continue
            row = LabelRow(case.conversation_id, case.turn, case.item_id, annotator=_annotator_of(a),
                           verdict=_choice(a.result, "verdict"), score=_choice(a.result, "score"),
                           move=_choice(a.result, "move"))
            row.where = f"{where}, annotation {j}"
            rows.append(row)
    return rows


def is_label_studio(path: Path) -> bool:
    return Path(path).suffix.lower() == ".json"


def raw_rows(path: Path) -> list[LabelRow]:
    path = Path(path)
    if not path.is_file():
        raise LabelError(f"{path}: not found")
    text = _text(path)
    if is_label_studio(path) and text.lstrip().startswith("["):
        try:
            export = json.loads(text)
        except ValueError as exc:
            raise LabelError(f"{path}: not valid JSON ({exc}); a .json labels file is a JSON list (a Label Studio "
                             "export, or label rows)") from None
        if _label_rows(export):     # the annotation page's rows as one JSON list, not Label Studio tasks
            return _listed_rows(export, path)
        return label_studio_rows(export, path)
    return _table_rows(path, text)      # a .json file of one object per line is JSON Lines, read as such


def _label_rows(export: Any) -> bool:
    """Whether a JSON list holds label rows (one has a conversation_id of its own) rather than Label Studio's tasks
    (each with its 'data' and 'annotations'): one bad row does not make the file another kind."""
    dicts = [t for t in export if isinstance(t, dict)] if isinstance(export, list) else []
    return any("conversation_id" in t for t in dicts) and not any("annotations" in t or "data" in t for t in dicts)


def _listed_rows(export: list[Any], path: Path) -> list[LabelRow]:
    rows = []
    for i, row in enumerate(export, start=1):
        if not isinstance(row, dict):
            raise LabelError(f"{path}: row {i} of the list: expected a JSON object (a label row), got a "
                             f"{type(row).__name__}")
        rows.append(LabelRow.at(row, f"{path}: row {i} of the list"))
    return rows


def task_of(rows: list[LabelRow]) -> Optional[str]:
    """The task the rows label: their `task` column, else the label field they carry."""
    named = {r.task for r in rows if r.task}
    if len(named) == 1:
        return str(named.pop())
    for task in TASKS:
        if any(present(r.label(task)) and r.label(task) is not None for r in rows):
            return task
    return None


def read_labels(path: Path, task: str) -> list[Label]:
    """Every label of one task in a file (a later row of the same annotator and key wins)."""
    path = Path(path)
    field = LABEL_FIELD[task]
    found: dict[tuple[str, Key], Label] = {}
    for n, row in enumerate(raw_rows(path), start=1):
        if row.task not in (None, "", task):
            continue
        where = row.where or f"{path}: row {n}"
        value = row.label(task)
        if not present(value):
            raise LabelError(f"{where} has no {field!r}; expected the {task} label as column {field!r}")
        who = str(row.annotator or path.stem)
        key = _key(row, task, where)
        found[(who, key)] = Label(who, key, _PARSE[task](value, where))
    return list(found.values())
