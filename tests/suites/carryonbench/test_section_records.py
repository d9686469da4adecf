"""CarryOnBench's section is a record of records: each part (a condition's block, Recovery%, the clarification
effect, the counts, the breakdowns, the power, the intent contrasts) reads back to the same record from what it
writes, and writes back a real results.json's part byte for byte, key order included (the recorded run folder,
reported again); the old fields of Results stay views of the same JSON, and new code reads numbers by field."""
from __future__ import annotations

import dataclasses
import json
import random
import shutil

import pytest
from support.eval_cli import invoke
from support.shared_data import FIXTURES
from support.synthetic_runs import intent_run

from carryon_eval.codec import encode
from carryon_eval.metrics.number import Number
from carryon_eval.run.results import Results
from carryon_eval.suites.carryonbench.section import CarryOnBenchSection, of
from carryon_eval.suites.carryonbench.metrics.headline import summarize, summarize_records


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """results.json of the recorded run folder, reported again by this version."""
    run = tmp_path_factory.mktemp("records") / "run"
    shutil.copytree(FIXTURES / "run_v0_1_0", run)
    assert invoke("report", run).exit_code == 0
    return json.loads((run / "results.json").read_text())


def parts(section: CarryOnBenchSection) -> list:
    """Every record the section holds, down to the breakdown rows."""
    out = [section.n, section.recovery, section.clarification_effect, section.unscored, section.move_effects,
           section.turn1_bins, section.bootstrap, *section.conditions.values(), *section.by_domain.values(),
           *(r for rows in section.by_turn.values() for r in rows)]
    out += [p for p in (section.power, section.intent, section.rubric_helpful) if p is not None]
    for block in section.conditions.values():
        out += [block.truncated, block.sensitivity, *(block.redundancy_by_turn or ()),
                *(block.redundancy_by_length or ())]
    return [p for p in out if dataclasses.is_dataclass(p)]


def test_a_real_results_json_reads_back_byte_for_byte(reported):
    results = Results.from_json(reported)
    section = of(results)
    assert isinstance(section, CarryOnBenchSection)
    assert json.dumps(results.to_json()) == json.dumps(reported)
    written = section.to_json()
    for key, value in written.items():
        if key != "judges":         # the frame's JudgesInfo holds them beside its own keys
            assert json.dumps(value) == json.dumps(reported[key]), key
    checked = parts(section)
    assert len(checked) > 20
    for record in checked:
        assert type(record).from_json(record.to_json()) == record, type(record).__name__


def test_the_old_fields_are_views_of_the_same_json(reported):
    results = Results.from_json(reported)
    assert results.conditions == reported["conditions"] and results.recovery == reported["recovery"]
    assert results.by_domain == reported["by_domain"] and results.move_effects == reported["move_effects"]
    results.conditions["bc"]["utility"] = -1.0                  # a copy: the record is not changed through it
    assert of(results).conditions["bc"].value("utility") == reported["conditions"]["bc"]["utility"]


def test_numbers_are_read_by_field_with_what_they_stand_on(reported):
    section = of(Results.from_json(reported))
    bc = reported["conditions"]["bc"]
    utility = section.conditions["bc"].number("utility")
    assert utility == Number(bc["utility"], bc["ci95"]["utility"], bc["bounds"]["utility"],
                             bc["scored_share"]["utility"], reason=bc["reasons"].get("utility"))
    assert section.recovery.number.value == reported["recovery"]["value"]
    assert section.recovery.number.scored_share == reported["recovery"]["scored_share"]
    row = section.by_turn["bc"][0]
    assert row.number("harm") == Number(row.harm, bounds=reported["by_turn"]["bc"][0]["bounds"]["harm"], n=row.n)


def test_the_producers_records_write_summarize_s_json():
    convs = intent_run(random.Random(3), 12, 0.3)
    records = summarize_records(convs, n_resamples=30, seed=1)
    assert json.dumps(encode(records)) == json.dumps(summarize(convs, n_resamples=30, seed=1))
    section = CarryOnBenchSection(**records)
    assert CarryOnBenchSection.from_json(json.loads(json.dumps(section.to_json()))) == section
    for record in parts(section):
        assert type(record).from_json(json.loads(json.dumps(record.to_json()))) == record, type(record).__name__


def test_a_part_given_as_json_is_read_into_its_record():
    section = CarryOnBenchSection(conditions={"bc": {"utility": 50.0, "ci95": {"utility": [40.0, 60.0]},
                                                     "reasons": {}, "scored_share": {"utility": 90.0}}},
                                  recovery={"value": None, "reason": "no oracle"}, extra={"power": {"n_queries": 2}})
    assert section.conditions["bc"].number("utility") == Number(50.0, [40.0, 60.0], scored_share=90.0)
    assert section.conditions["bc"].number("utility").under_95
    assert section.recovery.number == Number(reason="no oracle") and section.recovery.to_json() == {
        "value": None, "reason": "no oracle"}
    assert section.power is not None and section.power.n_queries == 2 and "power" not in section.extra


def test_the_intent_sections_fidelity_and_sensitivity_read_back_as_records():
    from carryon_eval.metrics.stats import Bootstrap
    from carryon_eval.suites.carryonbench.metrics.fidelity import VoiceCheck, VoiceLabels, VoicedTurn
    from carryon_eval.suites.carryonbench.metrics.intent import IntentNumber, IntentSection, intent_record

    convs = intent_run(random.Random(5), 8, 0.3)
    voice = {"mc": VoiceCheck(3, ["refusal", "harmless"], VoiceLabels(1, 1, 1, 0), 0, 2, ["mc:q1:2"],
                              [VoicedTurn("mc:q1:2", 2, "benign_justification", "refusal", "no")])}
    made = intent_record(convs, Bootstrap.of((c.query_id for c in convs), n_resamples=20, seed=1), fidelity=voice)
    assert made is not None
    written = json.dumps(made.to_json())
    back = IntentSection.from_json(json.loads(written))
    assert back == made and json.dumps(back.to_json()) == written
    assert back.fidelity == voice and isinstance(back.fidelity["mc"].turns[0], VoicedTurn)
    sens = back.utility_sensitivity()
    assert isinstance(sens, IntentNumber) and sens.n_planned == made.n_pairs > 0
    assert json.loads(written)["sensitivity"]["utility"]["n_planned"] == made.n_pairs
    assert IntentSection.from_json({"question": "older file"}).utility_sensitivity() is None
