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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

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
def _key(row: dict[str, Any], task: str, where: str) -> Key:
    need = ("conversation_id", "turn", "item_id") if task == "utility" else ("conversation_id", "turn")
    missing = [k for k in need if row.get(k) is None]
    if missing:
        raise LabelError(f"{where} lacks {missing}; expected columns {list(need) + [LABEL_FIELD[task]]}")
    try:
        turn = int(row["turn"])
    except (TypeError, ValueError):
        raise LabelError(f"{where}: turn {row['turn']!r} is not a whole number") from None
    return (str(row["conversation_id"]), turn, str(row["item_id"])) if task == "utility" \
        else (str(row["conversation_id"]), turn)


def _text(path: Path) -> str:
    """The file's text; a file that is not UTF-8 is a LabelError naming the first bad byte."""
    try:
        return path.read_bytes().decode("utf-8-sig")        # a spreadsheet's byte-order mark is not a column's name
    except UnicodeDecodeError as exc:
        raise LabelError(f"{path}: not UTF-8 text (byte {exc.start}); save the labels as UTF-8") from None


WHERE = "_where"      # where a raw row stands in its file, as a message names it (a CSV line, a task's annotation)


def _table_rows(path: Path, text: str) -> list[dict[str, Any]]:
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        return [{**row, WHERE: f"{path}: line {reader.line_num}"} for row in reader]
    rows = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                row = json.loads(line)
            except ValueError:
                raise LabelError(f"{path}:{n}: not a JSON line") from None
            if not isinstance(row, dict):
                raise LabelError(f"{path}:{n}: expected a JSON object per line, got a {type(row).__name__}")
            rows.append({**row, WHERE: f"{path}: line {n}"})
    return rows


def _annotator_of(annotation: dict[str, Any]) -> str:
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        who = who.get("email") or who.get("id")
    return f"label-studio-user-{who}" if isinstance(who, int) else str(who or "label-studio")


def _choice(result: list[dict[str, Any]], name: str) -> Any:
    for r in result:
        if r.get("from_name") == name:
            value = r.get("value", {})
            choices = value.get("choices") or ([value["rating"]] if "rating" in value else [])
            return choices[0] if choices else None
    return None


def label_studio_rows(export: Any, path: Path) -> list[dict[str, Any]]:
    """Label Studio's JSON export as flat rows (one per annotation), our label field named as the choice."""
    if not isinstance(export, list):
        raise LabelError(f"{path}: not a Label Studio JSON export (expected a list of tasks)")
    rows = []
    for i, t in enumerate(export):
        where = f"{path}: task {i}"
        if not isinstance(t, dict):
            raise LabelError(f"{where}: expected an object (a Label Studio task), got a {type(t).__name__}")
        data, annotations = t.get("data", {}), t.get("annotations", [])
        if not isinstance(data, dict) or not isinstance(annotations, list):
            raise LabelError(f"{where}: expected 'data' to be an object and 'annotations' a list")
        for j, a in enumerate(annotations):
            if not isinstance(a, dict) or not isinstance(a.get("result", []), list) or not all(
                    isinstance(r, dict) and isinstance(r.get("value", {}), dict) for r in a.get("result", [])):
                raise LabelError(f"{where}: expected each annotation to be an object whose 'result' is a list of "
                                 "objects with a 'value' object")
            if a.get("was_cancelled"):
                continue
            result = a.get("result", [])
            row = {k: data.get(k) for k in ("conversation_id", "turn", "item_id")}
            row["annotator"] = _annotator_of(a)
            row[WHERE] = f"{where}, annotation {j}"
            row.update({f: _choice(result, f) for f in LABEL_FIELD.values()})
            rows.append(row)
    return rows


def is_label_studio(path: Path) -> bool:
    return Path(path).suffix.lower() == ".json"


def raw_rows(path: Path) -> list[dict[str, Any]]:
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


def _listed_rows(export: list[Any], path: Path) -> list[dict[str, Any]]:
    rows = []
    for i, row in enumerate(export, start=1):
        if not isinstance(row, dict):
            raise LabelError(f"{path}: row {i} of the list: expected a JSON object (a label row), got a "
                             f"{type(row).__name__}")
        rows.append({**row, WHERE: f"{path}: row {i} of the list"})
    return rows


def task_of(rows: list[dict[str, Any]]) -> Optional[str]:
    """The task the rows label: their `task` column, else the label field they carry."""
    named = {r.get("task") for r in rows if r.get("task")}
    if len(named) == 1:
        return str(named.pop())
    for task in TASKS:
        if any(r.get(LABEL_FIELD[task]) is not None for r in rows):
            return task
    return None


def read_labels(path: Path, task: str) -> list[Label]:
    """Every label of one task in a file (a later row of the same annotator and key wins)."""
    path = Path(path)
    field = LABEL_FIELD[task]
    found: dict[tuple[str, Key], Label] = {}
    for n, row in enumerate(raw_rows(path), start=1):
        if row.get("task") not in (None, "", task):
            continue
        where = str(row.get(WHERE) or f"{path}: row {n}")
        if field not in row:
            raise LabelError(f"{where} has no {field!r}; expected the {task} label as column {field!r}")
        who = str(row.get("annotator") or path.stem)
        key = _key(row, task, where)
        found[(who, key)] = Label(who, key, _PARSE[task](row[field], where))
    return list(found.values())
