"""`carryon-eval --conditions opensafeintent --opensafeintent DIR --limit 20` end to end against the scripted
server (which answers the release's rubric judges), `carryon-eval export RUNDIR --format opensafeintent`, the
dry run on the whole shipped release, and the one-line refusals. Needs the release copy in ../shared (skipped,
saying why, when absent)."""
from __future__ import annotations

import json
import shutil

import pytest

from carryon_eval.suites.opensafeintent.export import read_reference
from carryon_eval.suites.opensafeintent.metrics import HEADLINE, summarize
from carryon_eval.run.results import Results
from carryon_eval.suites.opensafeintent.section import OpenSafeIntentSection
from carryon_eval.suites.opensafeintent.release import load_release
from support.eval_cli import invoke, one_error_line
from support.scripted_server import by_model, rubric_judges
from support.shared_data import REPO
from support.opensafeintent_scripted import ANSWERS, handler, target_reply
from support.shared_data import OPENSAFEINTENT as SHIPPED

pytestmark = pytest.mark.skipif(not (SHIPPED / "dataset.json").is_file(),
                                reason=f"the OpenSafeIntent release copy is not at {SHIPPED}")


def args(srv, out, *extra):
    return ["--conditions", "opensafeintent", "--opensafeintent", SHIPPED, "--limit", 20, "--endpoint",
            srv.base_url, "--model", "tgt", "--judge-endpoint", srv.base_url, "--judge-model", "jdg", "--out", out,
            *extra]


def test_run_export_and_section(scripted_server, tmp_path):
    release = load_release(SHIPPED, limit=20)
    srv = scripted_server(handler(release), models=("tgt", "jdg"))
    out = tmp_path / "run"
    result = invoke(*args(srv, out))
    assert result.exit_code == 0, result.output
    meta = json.loads((out / "run.json").read_text())
    record = meta["suites"]["opensafeintent"]
    assert record["sha256"] == release.hashes and record["sets"] == 20
    assert record["generation"] == {"turns": 1, "system_prompt": None, "temperature": 0.0, "max_tokens": 1000}
    sec = json.loads((out / "results.json").read_text())["opensafeintent"]
    for m in HEADLINE:
        assert set(sec[m]) == {"value", "n", "ci95"} and 0 < sec[m]["n"] <= 20
    for key in ("paraphrase", "response_modes", "intent_probe", "by_harm_domain", "by_task_type"):
        assert key in sec
    assert "## OpenSafeIntent" in (out / "table.md").read_text()
    assert 'id="opensafeintent"' in (out / "report.html").read_text()
    calls = srv.count()
    assert calls == 140 + 300 + sec["intent_probe"]["considered"]
    # the section reads back as its record, fields for keys, and is written back byte for byte
    text = (out / "results.json").read_text()
    results = Results.from_json(json.loads(text))
    record = results.section("opensafeintent")
    assert isinstance(record, OpenSafeIntentSection) and record.n_sets == 20 and record.model == "tgt"
    assert record.intent_probe.considered == sec["intent_probe"]["considered"]
    assert record.paraphrase.flip.reference_name == "safety_flip_1"
    assert json.dumps(results.to_json(), indent=2, ensure_ascii=False) + "\n" == text

    exported = invoke("export", out, "--format", "opensafeintent", "--out", tmp_path / "ref")
    assert exported.exit_code == 0, exported.output
    ref = tmp_path / "ref"
    back = summarize(read_reference(ref / "tgt_scored.json", ref / "assistance_level" / "tgt_scored.json",
                                    ref / "intent_classification" / "tgt_scored_intent_classification.json"))
    mine = OpenSafeIntentSection.from_json(sec)
    for name in ("headline", "variants", "paraphrase", "response_modes", "intent_probe", "by_harm_domain",
                 "by_task_type"):
        assert getattr(back, name) == getattr(mine, name), name

    again = invoke(*args(srv, out))                 # a rerun resumes: nothing asked again
    assert again.exit_code == 0, again.output
    assert srv.count() == calls

    (out / "results.json").unlink()                 # `report` writes the section again from the records
    reported = invoke("report", out)
    assert reported.exit_code == 0, reported.output
    assert json.loads((out / "results.json").read_text())["opensafeintent"] == sec
    assert sec["bootstrap"] == {"unit": "prompt-set", "n_resamples": 1000, "seed": 0,
                                "interval": "percentile 2.5-97.5"}

    # --bootstrap-seed reaches the section: other resamples, other intervals, the same numbers, and it says so
    reseeded = invoke("report", out, "--bootstrap-seed", 7)
    assert reseeded.exit_code == 0, reseeded.output
    other = json.loads((out / "results.json").read_text())["opensafeintent"]
    assert other["bootstrap"]["seed"] == 7
    assert all(other[m]["value"] == sec[m]["value"] for m in HEADLINE)
    assert any(other[m]["ci95"] != sec[m]["ci95"] for m in HEADLINE if sec[m]["ci95"] is not None)

    shutil.copytree(out, tmp_path / "run2")         # compare: per-model columns of the six metrics
    cmp = invoke("compare", out, tmp_path / "run2", "--out", tmp_path / "cmp")
    assert cmp.exit_code == 0, cmp.output
    table = json.loads((tmp_path / "cmp" / "compare.json").read_text())["opensafeintent"]["table"]
    assert [r["model"] for r in table] == ["tgt (run)", "tgt (run2)"]    # compare's labels: one model, two runs
    assert all(r[m] == sec[m]["value"] and r[m + "_n"] == sec[m]["n"] for r in table for m in HEADLINE)
    assert "## OpenSafeIntent" in cmp.output


def test_resume_on_changed_release_files_is_refused(scripted_server, tmp_path):
    copy = tmp_path / "release"
    shutil.copytree(SHIPPED, copy)
    for p in copy.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    rows = json.loads((copy / "dataset.json").read_text())[:2]
    (copy / "dataset.json").write_text(json.dumps(rows))
    release = load_release(copy)
    srv = scripted_server(handler(release), models=("tgt", "jdg"))
    base = ["--conditions", "opensafeintent", "--opensafeintent", copy, "--endpoint", srv.base_url, "--model", "tgt",
            "--judge-endpoint", srv.base_url, "--judge-model", "jdg", "--out", tmp_path / "run"]
    assert invoke(*base).exit_code == 0
    (copy / "prompts" / "metrics" / "harmfulness.txt").write_text("changed {prompt} {response}")
    line = one_error_line(invoke(*base))
    assert "prompts/metrics/harmfulness.txt changed since this run started" in line


def test_dry_run_on_the_shipped_release_calls_nothing(scripted_server, tmp_path):
    srv = scripted_server(lambda body: "never", models=("tgt",))
    base = ["--conditions", "opensafeintent", "--opensafeintent", SHIPPED, "--endpoint", srv.base_url,
            "--model", "tgt", "--out", tmp_path / "run", "--dry-run"]
    result = invoke(*base)
    assert result.exit_code == 0, result.output
    assert "700 prompt-sets, 4,900 prompts" in result.output
    assert "target intent_probe: up to 700 more calls" in result.output
    plan = json.loads(invoke(*base, "--json").stdout.strip().splitlines()[-1])     # the shared cost table's plan
    by = plan["judge_by_scorer"]
    assert plan["roles"]["target"]["opensafeintent"]["calls"] == 4900
    assert by["osi_helpfulness"] + by["osi_harmfulness"] == 9800 and by["osi_assistance_level"] == 700
    assert plan["roles"]["judge"]["all"]["calls"] == 9800 + 700 and plan["up_to"]["target"]["intent_probe"] == 700
    assert srv.count() == 0 and not (tmp_path / "run").exists()
    everything = ["--conditions", "all", "--endpoint", srv.base_url, "--model", "tgt", "--out", tmp_path / "all",
                  "--dry-run", "--json"]                  # all: with the release given, and without it
    with_release = json.loads(invoke(*everything, "--opensafeintent", SHIPPED, "--limit", 1).stdout.splitlines()[-1])
    without = json.loads(invoke(*everything, "--limit", 1).stdout.splitlines()[-1])
    assert with_release["roles"]["target"]["opensafeintent"]["calls"] == 7 and "turn1" in with_release["roles"]["target"]
    assert "opensafeintent" not in without["roles"]["target"] and "turn1" in without["roles"]["target"]


def test_bad_release_input_is_one_line(tmp_path):
    (tmp_path / "dataset.json").write_text(json.dumps({"not": "a list"}))
    line = one_error_line(invoke("--conditions", "opensafeintent", "--opensafeintent", tmp_path, "--dry-run"))
    assert f"{tmp_path / 'dataset.json'}: expected a JSON list" in line
    line = one_error_line(invoke("--conditions", "opensafeintent", "--dry-run"))
    assert "needs --opensafeintent DIR" in line


def test_carryonbench_triplets_under_the_same_judges_and_definitions(scripted_server, tmp_path):
    """--opensafeintent-sets triplets: the built-in sample's 4 triplet sets, judged by the release's prompt files
    and summarized by the same metric module; the export reads back to the same numbers."""
    release = load_release(SHIPPED)
    srv = scripted_server(handler(release), models=("tgt", "jdg"))
    out = tmp_path / "run"
    base = ["--conditions", "opensafeintent", "--opensafeintent", SHIPPED, "--opensafeintent-sets", "triplets",
            "--endpoint", srv.base_url, "--model", "tgt", "--judge-endpoint", srv.base_url, "--judge-model", "jdg",
            "--out", out]
    dry = invoke(*base, "--dry-run")
    assert dry.exit_code == 0 and "4 prompt-sets, 28 prompts" in dry.output, dry.output
    result = invoke(*base)
    assert result.exit_code == 0, result.output
    sec = json.loads((out / "results.json").read_text())["opensafeintent"]
    assert sec["n_sets"] == 4 and sec["release"]["layout"] == "carryonbench-triplets"
    assert "triplets" in sec["release"]["sha256"] and "dataset.json" not in sec["release"]["sha256"]
    sent = {b["messages"][0]["content"] for b in srv.requests if b["model"] == "tgt" and len(b["messages"]) == 1}
    rows = [json.loads(line) for line in (REPO / "carryon_eval" / "dataset" / "sample_data" /
                                          "triplets.jsonl").read_text().splitlines()]
    assert {r["prompt"] for r in rows} <= sent
    exported = invoke("export", out, "--format", "opensafeintent", "--out", tmp_path / "ref")
    assert exported.exit_code == 0, exported.output
    ref = tmp_path / "ref"
    back = summarize(read_reference(ref / "tgt_scored.json", ref / "assistance_level" / "tgt_scored.json",
                                    ref / "intent_classification" / "tgt_scored_intent_classification.json"))
    assert all((getattr(back.headline, m).value, getattr(back.headline, m).n) == (sec[m]["value"], sec[m]["n"])
               for m in HEADLINE)


def test_beside_carryonbench_conditions(scripted_server, tmp_path):
    """--conditions turn1,opensafeintent: both in one run folder; results.json, table.md and report.html hold
    CarryOnBench's numbers and the OpenSafeIntent section."""
    from support.eval_cli import remote
    from support.rollout_data import evaluator_handler, make_dataset, rollout_handler

    release = load_release(SHIPPED)
    t = release.templates
    srv = scripted_server(by_model({
        "tgt": rubric_judges({"intent_classification": t["intent_classification"]}, ANSWERS, rollout_handler),
        "sim": rollout_handler,
        "jdg": rubric_judges({k: t[k] for k in ANSWERS if k != "intent_classification"}, ANSWERS,
                             evaluator_handler)}), models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    result = invoke(*remote(srv, "--dataset", make_dataset(tmp_path / "ds"), "--conditions", "turn1,opensafeintent",
                            "--opensafeintent", SHIPPED, "--limit", 2, "--out", out))
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["conditions"]["turn1"]["n_conversations"] == 2
    assert results["opensafeintent"]["n_sets"] == 2
    assert "## OpenSafeIntent" in (out / "table.md").read_text()
    page = (out / "report.html").read_text()
    assert page.count('id="opensafeintent"') == 1 and "CarryOnBench report" in page


def test_a_section_with_no_scored_number_exits_3(scripted_server, tmp_path):
    """Every judge reply unparseable: the run writes everything, and exits 3 naming the suite's section."""
    release = load_release(SHIPPED, limit=3)
    t = release.templates
    srv = scripted_server(by_model({"tgt": rubric_judges({"intent_classification": t["intent_classification"]},
                                                         ANSWERS, target_reply),
                                    "jdg": lambda body: "I would rather not grade this."}), models=("tgt", "jdg"))
    out = tmp_path / "run"
    result = invoke(*args(srv, out)[:5], 3, *args(srv, out)[6:])
    assert result.exit_code == 3, result.output
    assert result.stderr.strip().splitlines() == [
        f"carryon-eval: judge answered nothing usable: no scored number for condition(s) opensafeintent "
        f"(see {out / 'results.json'})"]
    sec = json.loads((out / "results.json").read_text())["opensafeintent"]
    assert all(sec[m]["value"] is None for m in HEADLINE)
