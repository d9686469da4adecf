"""fidelity.json is a record (carryon_eval.suites.carryonbench.metrics.fidelity.FidelityCheck): the summary of the
checked turns counts agreement, leaks and voiced purposes; what it writes reads back to the same record and writes
the same bytes again (the file as the check writes it, a check whose calls failed, a file written before the voice
check); and the line beside the clarification effect shows its numbers in the reports' one number format."""
from __future__ import annotations

import json

import pytest

from carryon_eval.codec import ABSENT
from carryon_eval.moves import BC_MOVES, CHALLENGE_MOVES, NON_CONTENTFUL_MOVES
from carryon_eval.report.blocks import Shown, plain
from carryon_eval.run.folder import RunFolder
from carryon_eval.suites.carryonbench.human.judges_vs_people import references
from carryon_eval.suites.carryonbench.metrics.condition import ClarificationFidelity
from carryon_eval.suites.carryonbench.metrics.fidelity import (NO_FIDELITY, CheckedTurn, FidelityCheck,
                                                               clarification_fidelity, fidelity_text,
                                                               flagged_conversations, parse_move, summarize_fidelity)

ROWS = [CheckedTurn("c", "nc", 2, "pushback", "x", predicted="pushback", leak=False),
        CheckedTurn("c", "nc", 3, "backchannel", "y", predicted="delaying", leak=True),
        CheckedTurn("d", "bc", 2, "benign_justification", "z", predicted=None, voice="matches"),
        CheckedTurn("e", "bc", 2, "benign_justification", "w", predicted="benign_justification", voice="refusal"),
        CheckedTurn("f", "mc", 2, "benign_justification", "v", predicted="pushback", voice="harmless"),
        CheckedTurn("f", "mc", 3, "benign_justification", "u", predicted="pushback", voice=None)]


def written(record: FidelityCheck) -> str:
    """fidelity.json's text as the check writes it (carryon_eval.run.folder.write_json_atomic)."""
    return json.dumps(record.to_json(), indent=2, ensure_ascii=False) + "\n"


def test_the_summary_counts_agreement_leaks_and_voiced_purposes():
    assert parse_move("Move: Benign Justification.") == "benign_justification"
    assert parse_move("pushback") == "pushback" and parse_move("no idea") is None
    out = summarize_fidelity(ROWS, judge_model="j", prompts={})
    assert (out.per_move["pushback"].n, out.per_move["pushback"].agree, out.per_move["pushback"].agreement) == (1, 1, 1.0)
    assert out.confusion["backchannel"]["delaying"] == 1 and out.confusion["benign_justification"]["unparsed"] == 1
    assert out.agreement == pytest.approx(2 / 6)
    assert (out.intent_leak.n_checked, out.intent_leak.n_leaks, out.intent_leak.rate) == (2, 1, 0.5)
    assert [(t.conversation_id, t.turn) for t in out.intent_leak.leaks] == [("c", 3)]
    assert set(NON_CONTENTFUL_MOVES + CHALLENGE_MOVES + BC_MOVES) == set(out.confusion)
    bc, mc = out.voice_of("bc"), out.voice_of("mc")
    assert (bc.n_checked, bc.labels.matches, bc.labels.refusal, bc.flagged) == (2, 1, 1, ["e"])
    assert (mc.n_checked, mc.n_unscored, mc.n_flagged_turns, mc.flags_on) == (2, 1, 1, ["refusal", "harmless"])
    assert flagged_conversations(out, "mc") == ["f"] and flagged_conversations(None, "mc") == []
    assert out.voice_of("nc") is None


def test_fidelity_json_reads_back_and_writes_the_same_bytes():
    out = summarize_fidelity(ROWS, judge_model="j", prompts={"fidelity/classify_move": "fidelity/classify_move@v1"})
    text = written(out)
    again = FidelityCheck.from_json(json.loads(text))
    assert again == out and written(again) == text
    data = json.loads(text)
    assert list(data) == ["judge_model", "prompts", "n_turns", "agreement", "per_move", "labels", "confusion",
                          "intent_leak", "voice", "turns"]
    # a checked turn has the key of each check asked of it, and only those
    assert [list(t) for t in data["turns"][:3]] == [
        ["conversation_id", "condition", "turn", "move", "content", "predicted", "leak"],
        ["conversation_id", "condition", "turn", "move", "content", "predicted", "leak"],
        ["conversation_id", "condition", "turn", "move", "content", "predicted", "voice"]]
    assert list(data["voice"]["mc"]["turns"][0]) == ["conversation_id", "turn", "move", "voice", "content"]
    assert list(data["voice"]["bc"]["labels"]) == ["matches", "harmless", "refusal", "none"]

    out.failed_calls = 2                          # written only when calls failed
    failed = written(out)
    assert json.loads(failed)["failed_calls"] == 2 and written(FidelityCheck.from_json(json.loads(failed))) == failed

    del data["voice"]                             # a file written before the voice check
    older = FidelityCheck.from_json(data)
    assert older.voice is ABSENT and older.voice_of("bc") is None and "voice" not in older.to_json()


def test_the_line_beside_the_clarification_effect_shows_its_numbers_in_the_one_format():
    info = clarification_fidelity(summarize_fidelity(ROWS, judge_model="j", prompts={}))
    assert (info.nc_leak_rate, info.nc_leaks, info.nc_turns_checked) == (50.0, 1, 2)
    assert (info.bc_voiced_share, info.bc_voiced, info.bc_turns_checked) == (50.0, 1, 2)
    line = fidelity_text(info)
    assert [x.number.value for x in line if isinstance(x, Shown)] == [50.0, 50.0]
    assert plain(line).startswith("Beside the clarification effect, the fidelity check: NC turns leaking the intent "
                                  "50.0% (1 of 2), BC clarification turns voicing their purpose 50.0% (1 of 2); ")
    unscored = ClarificationFidelity(checked=True, nc_leak_rate=None, nc_leaks=0, nc_turns_checked=0,
                                     bc_voiced_share=None, bc_voiced=0, bc_turns_checked=0, note="why")
    assert "intent n/a (0 of 0)" in plain(fidelity_text(unscored))
    unchecked = clarification_fidelity(None)
    assert unchecked.to_json() == {"checked": False, "note": NO_FIDELITY}
    assert plain(fidelity_text(unchecked)) == f"Beside the clarification effect: {NO_FIDELITY}."
    assert fidelity_text(None) == [] and fidelity_text(ABSENT) == []


def test_people_are_compared_with_the_fidelity_judge_read_from_its_record(tmp_path):
    """`agreement --task fidelity` reads the fidelity judge's move per turn from fidelity.json's record (None where
    the classifier was not asked or named no move)."""
    (tmp_path / "transcripts.jsonl").write_text("")
    (tmp_path / "fidelity.json").write_text(written(summarize_fidelity(
        [CheckedTurn("c", "nc", 2, "pushback", "x", predicted="delaying"), CheckedTurn("c", "nc", 3, "pushback", "y")],
        judge_model="j", prompts={})))
    assert references(RunFolder(tmp_path), "fidelity")["fidelity judge (j)"] == {("c", 2): "delaying", ("c", 3): None}
