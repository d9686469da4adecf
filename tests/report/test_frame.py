"""report/ owns the frame of every output: an OpenSafeIntent-only run (`--conditions opensafeintent`, against the
scripted server that answers the release's rubric judges) writes results.json, table.md, report.html and
conversation_scores.jsonl through it with OpenSafeIntent's section and no block of CarryOnBench's conditions (their
section's keys, which a CarryOnBench run holds at results.json's top level, are absent). Needs the release copy in
../shared (skipped, saying why, when absent)."""
from __future__ import annotations

import json

import pytest

from carryon_eval.run.results import TOP_LEVEL_KEYS, Results
from carryon_eval.suites.carryonbench.metrics.condition import ConditionBlock
from carryon_eval.suites.carryonbench.section import CarryOnBenchSection
from carryon_eval.suites.opensafeintent.release import load_release
from support.eval_cli import invoke
from support.opensafeintent_scripted import handler
from support.shared_data import OPENSAFEINTENT as SHIPPED

pytestmark = pytest.mark.skipif(not (SHIPPED / "dataset.json").is_file(),
                                reason=f"the OpenSafeIntent release copy is not at {SHIPPED}")

FRAME = ["schema_version", "model", "judges", "dataset", "run", "notes", "generated", "plots"]


@pytest.fixture(scope="module")
def osi_run(tmp_path_factory):
    from support.scripted_server import ScriptedServer

    release = load_release(SHIPPED, limit=3)
    out = tmp_path_factory.mktemp("frame") / "run"
    with ScriptedServer(handler(release), models=("tgt", "jdg")) as srv:
        result = invoke("--conditions", "opensafeintent", "--opensafeintent", SHIPPED, "--limit", 3, "--endpoint",
                        srv.base_url, "--model", "tgt", "--judge-endpoint", srv.base_url, "--judge-model", "jdg",
                        "--out", out)
    assert result.exit_code == 0, result.output
    return out


def test_results_json_has_the_frame_and_its_section_only(osi_run):
    results = json.loads((osi_run / "results.json").read_text())
    assert list(results) == [*FRAME, "opensafeintent"]
    assert not set(TOP_LEVEL_KEYS) & set(results)          # no n, conditions, recovery, unscored, utility_measure...
    assert not {"mc", "rubric_helpful"} & set(results)     # nor the conditions' own further sections
    assert results["model"] == "tgt" and results["opensafeintent"]["n_sets"] == 3
    assert not {"utility", "safety"} & set(results["judges"])   # the conditions' judges: written with their section
    assert results["judges"]["selected"] == "jdg" and results["judges"]["present"] == ["jdg"]
    assert results["run"]["status"] == [] and results["run"]["empty_replies"] == 0
    assert not any("Ben-Util" in n or "Recovery%" in n or "Condition turn1" in n for n in results["notes"])
    back = Results.from_json(results)
    assert back.section("carryonbench") is None and list(back.sections) == ["opensafeintent"]
    assert back.to_json() == results                      # read back, written again: the same keys


def test_table_md_and_report_html_have_its_section_only(osi_run):
    table = (osi_run / "table.md").read_text()
    assert table.startswith("# CarryOnBench: tgt\n\n## OpenSafeIntent")
    assert "T1 Util." not in table and "Recovery%" not in table and "Ben-Util" not in table
    page = (osi_run / "report.html").read_text()
    assert 'id="opensafeintent"' in page and "<h2>Notes</h2>" in page and "<h2>Plots</h2>" in page
    assert "Table 2 layout" not in page and "<h2>Transcripts</h2>" not in page and "By turn" not in page
    assert (osi_run / "conversation_scores.jsonl").read_text() == ""     # no suite of the run gives rows



def test_the_serializer_alone_places_a_top_level_section():
    """Results.put_section: a top-level section's keys take their places among the frame's (results.json's order
    since before sections), its further keys become sections of their own before the later suites', its judges fill
    the frame's record; without one, results.json has none of its keys."""
    frame = Results(model="m")
    frame.put_section("short", {"share": 1.0})
    assert list(frame.to_json()) == [*FRAME[:-1], "short"]           # no plots recorded: no "plots" key
    both = Results(model="m")
    both.put_section("carryonbench", CarryOnBenchSection.from_json(
        {"conditions": {"bc": {}}, "utility_measure": "benutil", "mc": {"x": 1},
         "judges": {"utility": {"models": ["j"]}, "complete": False}}))
    both.put_section("short", {"share": 1.0})
    out = both.to_json()
    assert list(out) == ["schema_version", "model", *TOP_LEVEL_KEYS[:-2], "judges", "judge_context", *FRAME[3:-1],
                         "utility_measure", "mc", "short"]
    assert out["judges"]["utility"] == {"models": ["j"]} and out["judges"]["complete"] is False
    assert both.section("carryonbench").conditions == {"bc": ConditionBlock()}           # typed, read back
    assert both.conditions == {"bc": {}}                                    # the old field: a view, its JSON
    assert both.section("short") == {"share": 1.0}
    assert Results.from_json(out).to_json() == out
