"""A dataset says how it is scored (MANIFEST.json's ``scoring``, or its rows for builds without the record), and
`carryon-eval` follows it: with no --utility it measures what the dataset supports and says so (first lines and
run.json); a measure or condition the dataset cannot support is refused in one line naming the flag or build step
that fixes it (exit 2), or, for a condition of the default set, left out with one line. No path ends in exit 0
with every headline n/a.

Real builds (the OpenSafeIntent release and the CASE-Bench source from ../shared, `--no-llm`), a scripted server
over real HTTP. Skips, saying why, where the shared data is absent."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.eval_cli import invoke, one_error_line, remote
from support.rollout_data import rollout_handler
from support.scripted_server import ScriptedServer, last_user_text
from support.shared_data import CASEBENCH, OPENSAFEINTENT

from carryon_eval.dataset.load import load_benchmark
from carryon_eval.suites.carryonbench.dataset_support import dataset_scoring, read_scoring

RUBRIC_FILE = OPENSAFEINTENT / "prompts" / "metrics" / "helpfulness.txt"
needs_osi = pytest.mark.skipif(not RUBRIC_FILE.is_file(), reason=f"the OpenSafeIntent release is not at "
                               f"{OPENSAFEINTENT} (CI has ../shared/data/opensafeintent beside the clone)")
needs_cb = pytest.mark.skipif(not CASEBENCH.is_file(), reason=f"the CASE-Bench source is not at {CASEBENCH} "
                              "(CI has ../shared/data/casebench beside the clone)")
HEADLINES = ("utility", "harm")


def build(out: Path, *args: str) -> Path:
    r = subprocess.run([sys.executable, "-m", "carryonbench_builder.cli", "build", "--out", str(out), "--no-llm",
                        "--limit", "3", *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def open_build(tmp_path_factory) -> Path:
    if not RUBRIC_FILE.is_file():
        pytest.skip(f"the OpenSafeIntent release is not at {OPENSAFEINTENT}")
    return build(tmp_path_factory.mktemp("osi") / "open", "--source-format", "opensafeintent",
                 "--source", str(OPENSAFEINTENT))


@pytest.fixture(scope="module")
def casebench_build(tmp_path_factory) -> Path:
    if not CASEBENCH.is_file():
        pytest.skip(f"the CASE-Bench source is not at {CASEBENCH}")
    return build(tmp_path_factory.mktemp("cb") / "casebench", "--source", str(CASEBENCH))


def handler(body: dict) -> str:
    """tgt / sim as in rollout_handler; the judge grades 3 on the rubric and 1 on harm."""
    if body["model"] != "jdg":
        return rollout_handler(body)
    text = last_user_text(body)
    if RUBRIC_FILE.is_file() and text.startswith(RUBRIC_FILE.read_text(encoding="utf-8").split("{prompt}")[0]):
        return "3"
    if "rating how harmful" in text:
        return "1"
    raise AssertionError(f"unexpected judge prompt: {text[:80]}")


def evaluate(srv: ScriptedServer, dataset: Path, out: Path, *extra: object):
    return invoke(*remote(srv), "--dataset", dataset, "--out", out, "--limit", 1, "--judge-format", "text", *extra)


def headlines(rundir: Path) -> dict[str, dict[str, object]]:
    """The headline numbers of every condition that ran (results.json keeps a block for each of the suite's four)."""
    results = json.loads((rundir / "results.json").read_text())
    return {c: {k: b.get(k) for k in HEADLINES} for c, b in results["conditions"].items() if b["n_conversations"]}


@needs_osi
def test_the_open_build_records_rubric_utility_and_the_conditions_it_plays(open_build):
    manifest = json.loads((open_build / "MANIFEST.json").read_text())
    assert manifest["scoring"] == {"utility": ["rubric"], "conditions": ["turn1", "oracle", "bc", "nc"]}
    scoring = dataset_scoring(load_benchmark(open_build))
    assert scoring.recorded and scoring.utility == ("rubric",)
    assert scoring == read_scoring(manifest, {"utility": [], "conditions": []})     # the record wins over rows


@needs_osi
def test_a_build_without_the_record_is_read_from_its_rows_the_same_way(open_build, tmp_path):
    old = tmp_path / "old-open"
    shutil.copytree(open_build, old)
    manifest = json.loads((old / "MANIFEST.json").read_text())
    recorded = manifest.pop("scoring")
    (old / "MANIFEST.json").write_text(json.dumps(manifest))
    scoring = dataset_scoring(load_benchmark(old))
    assert not scoring.recorded
    assert {"utility": list(scoring.utility), "conditions": list(scoring.conditions)} == recorded


@needs_osi
def test_the_open_build_with_no_utility_runs_rubric_utility_and_says_so(open_build, tmp_path):
    with ScriptedServer(handler, models=("tgt", "sim", "jdg")) as srv:
        result = evaluate(srv, open_build, tmp_path / "run", "--opensafeintent", OPENSAFEINTENT)
        calls = srv.count()
        again = evaluate(srv, open_build, tmp_path / "run", "--opensafeintent", OPENSAFEINTENT)   # resumes
        assert again.exit_code == 0, again.output
        assert srv.count() == calls                 # the same measure again: nothing to pay twice
    assert result.exit_code == 0, result.output
    first = result.stdout.splitlines()[:3]
    assert any(line.startswith("utility: rubric utility (--utility rubric)") and "no checklists" in line
               for line in first), first
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["judge"]["utility"] == "rubric"
    assert run["utility_choice"]["measure"] == "rubric" and run["utility_choice"]["chosen_by"] == "dataset"
    numbers = headlines(tmp_path / "run")
    assert set(numbers) == {"turn1", "oracle", "bc", "nc"}
    for cond, block in numbers.items():
        assert all(isinstance(block[k], (int, float)) for k in HEADLINES), (cond, block)
    assert numbers["turn1"]["utility"] == pytest.approx(100 * (3 - 1) / 3)


@needs_osi
def test_the_open_build_without_the_rubric_folder_is_refused_naming_the_flag(open_build, tmp_path):
    with ScriptedServer(handler, models=("tgt", "sim", "jdg")) as srv:
        line = one_error_line(evaluate(srv, open_build, tmp_path / "run"))
        assert srv.count() == 0
    assert "--opensafeintent DIR" in line and "no checklists" in line, line
    assert not (tmp_path / "run").exists()


@needs_osi
def test_ben_util_asked_of_the_open_build_is_refused_naming_the_llm_build_and_the_rubric(open_build, tmp_path):
    with ScriptedServer(handler, models=("tgt", "sim", "jdg")) as srv:
        line = one_error_line(evaluate(srv, open_build, tmp_path / "run", "--utility", "benutil"))
    assert "--utility benutil" in line and "without --no-llm" in line and "--utility rubric" in line, line


@needs_cb
def test_a_no_llm_casebench_build_with_the_default_conditions_is_refused_naming_the_llm_build(casebench_build,
                                                                                          tmp_path):
    scoring = dataset_scoring(load_benchmark(casebench_build))
    assert not scoring.recorded                       # a v0.1.0 manifest stays as the release froze it
    assert scoring.utility == () and scoring.conditions == ("turn1", "nc")
    with ScriptedServer(handler, models=("tgt", "sim", "jdg")) as srv:
        for extra in ((), ("--utility", "benutil")):
            line = one_error_line(evaluate(srv, casebench_build, tmp_path / "run", *extra))
            assert "no checklists" in line and "carryon-build build` without --no-llm" in line, line
            if not extra:          # one parenthesis, closed once
                assert (f"supports no utility measure (read from its rows, as its build records no scoring): it "
                        "has no checklists") in line, line
        assert srv.count() == 0
    assert not (tmp_path / "run").exists()


@needs_cb
@needs_osi
def test_conditions_the_dataset_cannot_play_are_left_out_of_the_default_set_or_refused(casebench_build, tmp_path):
    with ScriptedServer(handler, models=("tgt", "sim", "jdg")) as srv:
        result = evaluate(srv, casebench_build, tmp_path / "run", "--utility", "rubric",
                          "--opensafeintent", OPENSAFEINTENT)
        asked = evaluate(srv, casebench_build, tmp_path / "asked", "--utility", "rubric",
                         "--opensafeintent", OPENSAFEINTENT, "--conditions", "turn1,bc")
    assert result.exit_code == 0, result.output
    left = [line for line in result.stdout.splitlines() if " left out: " in line]
    assert [line.split()[1] for line in left if line.startswith("condition ")] == ["oracle", "bc"], result.stdout
    assert all("benign intent" in line and "without --no-llm" in line for line in left), left
    numbers = headlines(tmp_path / "run")
    assert set(numbers) == {"turn1", "nc"}
    assert all(isinstance(v, (int, float)) for block in numbers.values() for v in block.values()), numbers
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["conditions"] == ["turn1", "nc"] and "utility_choice" not in run      # the user named the measure
    assert {s["condition"] for s in run["skipped"]} == {"oracle", "bc"}       # their conversations, and why
    line = one_error_line(asked)
    assert "--conditions bc" in line and "benign_intent" in line, line
