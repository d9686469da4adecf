"""Loading an OpenSafeIntent release folder: the shipped copy (skipped when absent) and bad input, which ends in
one line naming the file, row and field (exit 2 through the CLI's error class)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from carryon_eval.dataset.load import DatasetError
from carryon_eval.suites.opensafeintent.prompts import fill
from carryon_eval.suites.opensafeintent.release import (PROMPT_NAMES, ReleaseError, check_resume, load_release,
                                                 release_hashes)

from support.shared_data import OPENSAFEINTENT as SHIPPED
needs_release = pytest.mark.skipif(not (SHIPPED / "dataset.json").is_file(),
                                   reason=f"the OpenSafeIntent release copy is not at {SHIPPED}")
FLAT = {"harm_domain": "D", "task_type": "T", "underlying_task": "u", "prompt_benign": "b", "prompt_dual_use": "d",
        "prompt_malicious": "m", **{f"prompt_dual_use_{k}": f"p{k}" for k in range(2, 6)}}
TEMPLATES = {"helpfulness.txt": "H {prompt} / {response}", "harmfulness.txt": "X {prompt} / {response}",
             "assistance_level_classification.txt": 'A {{prompt}} / {{response}} {"a_level": "A0"}',
             "intent_classification.txt": 'I {{prompt}} {"strategy": "FULL"}'}


def make_release(tmp_path: Path, rows, templates=TEMPLATES) -> Path:
    (tmp_path / "prompts" / "metrics").mkdir(parents=True)
    (tmp_path / "dataset.json").write_text(json.dumps(rows))
    for name, text in templates.items():
        (tmp_path / "prompts" / "metrics" / name).write_text(text)
    return tmp_path


@needs_release
def test_the_shipped_release_loads():
    r = load_release(SHIPPED)
    assert (r.layout, len(r.sets), r.n_prompts) == ("flat", 700, 4900)
    assert (r.sets[0].set_id, r.sets[699].set_id) == ("osi-000", "osi-699")
    assert r.hashes["dataset.json"] == "ad9ed2e8f190638b03afd81b69a1350f866706db08bb837b84332c54d29fe7ff"
    assert len(r.hashes) == 5
    assert len({s.harm_domain for s in r.sets}) == 7 and len({s.task_type for s in r.sets}) == 6
    assert len(load_release(SHIPPED, limit=20).sets) == 20
    # the rubrics are formatted, the assistance-level and probe prompts replaced, exactly as the reference does
    s = r.sets[0]
    sent = fill("helpfulness", r.templates["helpfulness"], s.prompt("dual_use_prompt"), "REPLY")
    assert sent == r.templates["helpfulness"].format(prompt=s.prompt("dual_use_prompt"), response="REPLY")
    probe = fill("intent_classification", r.templates["intent_classification"], "PROMPT-X")
    assert "PROMPT-X" in probe and "{{prompt}}" not in probe


def test_both_layouts_give_the_same_sets(tmp_path):
    nested = {"harm_domain": "D", "task_type": "T", "underlying_task": "u",
              "generated_prompts": {"benign_prompt": "b", "dual_use_prompt": "d", "malicious_prompt": "m"},
              "dual_use_paraphrases": ["p2", "p3", "p4", "p5"]}
    nested2 = {**nested, "generated_prompts": {**nested["generated_prompts"], "benign_prompt": "b2"}}
    a = load_release(make_release(tmp_path / "a", [FLAT, {**FLAT, "prompt_benign": "b2"}]))
    b = load_release(make_release(tmp_path / "b", [nested, nested2]))
    assert (a.layout, b.layout) == ("flat", "nested")
    assert a.sets == b.sets
    assert [n for n, _ in a.sets[1].prompts] == list(PROMPT_NAMES)


@pytest.mark.parametrize("rows, message", [
    ({"a": 1}, "expected a JSON list of prompt-set rows, got a dict"),
    ([FLAT, {**FLAT, "prompt_benign": "b2"}, FLAT], "row 2: the same prompt-set as row 0 (a duplicated row)"),
    ([FLAT, {k: v for k, v in FLAT.items() if k != "prompt_malicious"}],
     "row 1: field prompt_malicious: expected a non-empty string, got nothing"),
    ([{**FLAT, "prompt_dual_use_4": ""}], "row 0: field prompt_dual_use_4: expected a non-empty string"),
    ([{"generated_prompts": {"benign_prompt": "b", "dual_use_prompt": "d", "malicious_prompt": "m"},
       "dual_use_paraphrases": ["p2", "p3", "p4"]}],
     "row 0: field dual_use_paraphrases: expected a list of 4 paraphrases, got 3 items"),
])
def test_bad_rows_name_the_file_row_and_field(tmp_path, rows, message):
    folder = make_release(tmp_path, rows)
    with pytest.raises(ReleaseError) as err:
        load_release(folder)
    assert str(err.value) == f"{folder / 'dataset.json'}: {message}" or message in str(err.value)
    assert str(err.value).startswith(str(folder / "dataset.json"))
    assert isinstance(err.value, DatasetError) and "\n" not in str(err.value)


def test_prompt_files_absent_or_without_placeholders(tmp_path):
    missing = dict(TEMPLATES)
    del missing["harmfulness.txt"]
    folder = make_release(tmp_path / "a", [FLAT], missing)
    with pytest.raises(ReleaseError, match=r"harmfulness.txt: no such file"):
        load_release(folder)
    folder = make_release(tmp_path / "b", [FLAT], {**TEMPLATES, "helpfulness.txt": "H {prompt} only"})
    with pytest.raises(ReleaseError, match=r"helpfulness.txt: the helpfulness prompt has not its placeholders"):
        load_release(folder)
    folder = make_release(tmp_path / "c", [FLAT], {**TEMPLATES, "intent_classification.txt": "no slot"})
    with pytest.raises(ReleaseError, match=r"intent_classification.txt: the intent_classification prompt"):
        load_release(folder)


def test_a_resume_on_changed_files_is_refused(tmp_path):
    folder = make_release(tmp_path, [FLAT])
    recorded = release_hashes(folder)
    check_resume(recorded, folder)                 # unchanged: fine
    (folder / "prompts" / "metrics" / "harmfulness.txt").write_text("X2 {prompt} {response}")
    with pytest.raises(ReleaseError, match=r"prompts/metrics/harmfulness.txt changed since this run started"):
        check_resume(recorded, folder)
