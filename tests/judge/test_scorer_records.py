"""A scorer declares the record type of its judgment file, and the run folder's one judgments view reads the file
into it: ``RunFolder.judgments().of(scorer)`` gives records whose fields the readers read (CarryOnBench's
``UtilityJudgment`` / ``SafetyJudgment``; a scorer that declares none gets one made from its shape, the fields the
judge phase writes). A file whose scorer registered nothing is one clear error, not dicts."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from carryon_eval.judge import scorers as S
from carryon_eval.judge.store import load_judge
from carryon_eval.run.folder import RunError, RunFileError, RunFolder, judgment_file, record_type
from carryon_eval.suite import suites
from carryon_eval.suites.carryonbench.judging.judgments import SafetyJudgment, UtilityJudgment


def write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def safety_row(cid: str, score: Any, judge: str = "j") -> dict[str, Any]:
    return {"conversation_id": cid, "turn": 1, "score": score, "judge_model": judge, "prompt_version": "p",
            "raw": str(score), "attempts": 1, "via": "text"}


def test_a_wings_scorers_declare_their_records(tmp_path: Path) -> None:
    suites()
    assert record_type(judgment_file("safety")) is SafetyJudgment
    assert record_type(judgment_file("utility")) is UtilityJudgment
    assert record_type(judgment_file("utility_grouped")) is UtilityJudgment        # grouped Ben-Util: the same shape
    run = RunFolder(tmp_path)
    write(run / judgment_file("safety"), [safety_row("c1", 2), safety_row("c2", None), safety_row("c1", 5, "k")])
    records = run.judgments().of("safety", "j")
    assert [(type(r), r.conversation_id, r.score) for r in records] == [(SafetyJudgment, "c1", 2),
                                                                         (SafetyJudgment, "c2", None)]
    assert [r.score for r in load_judge(run, judgment_file("safety"), "k")] == [5]
    assert run.judgments().parses[judgment_file("safety")] == 1                     # one parse for both readers


def test_a_line_out_of_its_records_range_names_the_file_and_line(tmp_path: Path) -> None:
    suites()
    run = RunFolder(tmp_path)
    write(run / judgment_file("safety"), [safety_row("c1", 2), safety_row("c2", 7)])
    with pytest.raises(RunFileError, match=r"safety_judgments.jsonl line 2: score 7 is outside the harm scale"):
        run.judgments().of("safety")


class CountScorer:
    """A scorer that declares no record type: its records are made from its shape."""
    name, stage, value_field, prompt_version = "test_count", "judge_test_count", "count", "test/count@1"
    target_fields, record_fields = S.ITEM_TARGET, ("problem",)
    constants = {"mode": "tally"}


def test_a_scorer_without_a_record_type_gets_one_made_from_its_shape(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(S.REGISTRY, CountScorer.name, CountScorer)
    S.register(CountScorer)
    made = record_type(judgment_file(CountScorer.name))
    assert made is not None and made.__name__ == "CountScorerRecord"
    assert list(made.__dataclass_fields__) == ["conversation_id", "turn", "item_id", "count", "judge_model",
                                               "prompt_version", "problem", "raw", "answer", "attempts", "via", "mode"]
    run = RunFolder(tmp_path)
    write(run / judgment_file(CountScorer.name), [
        {"conversation_id": "c1", "turn": 2, "item_id": "i", "count": 3, "judge_model": "j", "prompt_version": "p",
         "problem": None, "raw": "3", "attempts": 1, "via": "text", "mode": "tally"}])
    r, = run.judgments().of(CountScorer.name)
    assert (r.conversation_id, r.turn, r.item_id, r.count, r.mode, r.answer) == ("c1", 2, "i", 3, "tally", None)


def test_a_file_no_scorer_registered_is_one_clear_error(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    write(run / judgment_file("nobody_registered"), [safety_row("c1", 2)])
    with pytest.raises(RunError, match="nobody_registered_judgments.jsonl: no record type is registered"):
        run.judgments().of("nobody_registered")
    assert run.judgments().of("nobody_at_all") == []                   # no file: no records, nothing to type
