"""Messages that name the real cause: a folder of the wrong kind given to compare, a judgment set a run does not
have, a triplet config a dataset lacks; the rubric run's notes speak of its own utility."""
from __future__ import annotations

import json

import pytest
from support.eval_cli import invoke, one_error_line, remote
from support.rollout_data import evaluator_handler as handler
from support.shared_data import OPENSAFEINTENT as SHIPPED

from carryon_eval.suites.carryonbench.report.summarize import utility_judge_note
from carryon_eval.suites.carryonbench.section import UtilityJudges


@pytest.fixture
def run(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    assert invoke(*remote(srv), "--dataset", dataset, "--out", out, "--limit", 1, "--conditions", "turn1").exit_code == 0
    return out


def test_compare_on_a_dataset_folder_says_it_is_one(run, dataset):
    line = one_error_line(invoke("compare", dataset, run))
    assert line == (f"carryon-eval: error: {dataset} is a dataset folder (it has queries.jsonl), not a run folder; "
                    "compare takes the run folders carryon-eval writes (--out), e.g. carryon-runs/MODEL__DATASET")


def test_compare_on_a_folder_that_is_no_run_says_so(run, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    line = one_error_line(invoke("compare", run, other))
    assert line == (f"carryon-eval: error: {other} is not a run folder (it has no run.json); compare takes the run "
                    "folders carryon-eval writes (--out), e.g. carryon-runs/MODEL__DATASET")


def test_agreement_with_a_judgment_set_the_run_lacks_names_it(run):
    line = one_error_line(invoke("agreement", run, "--judges", "jdg,jdg:grouped"))
    assert line == (f"carryon-eval: error: --judges jdg,jdg:grouped: {run} has no jdg:grouped verdicts (judges "
                    "present: jdg; MODEL:grouped are a judge's grouped Ben-Util verdicts, there only after "
                    "`judge --utility-judge grouped`)")


def test_a_rubric_run_has_no_ben_util_mode_note():
    note = utility_judge_note(UtilityJudges(utility_judge="per-item"), "rubric")
    assert "Ben-Util mode" not in note and note.startswith("Utility: rubric utility, one judge call per reply")
    assert utility_judge_note(UtilityJudges(utility_judge="per-item")).startswith("Ben-Util mode: per-item")
    assert utility_judge_note(UtilityJudges()).startswith("Ben-Util mode: per-item")    # a file that does not say


@pytest.mark.skipif(not (SHIPPED / "dataset.json").is_file(), reason="no OpenSafeIntent release copy")
def test_triplet_sets_on_a_dataset_without_triplets_name_the_missing_config(dataset):
    line = one_error_line(invoke("--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--dataset", dataset,
                                 "--conditions", "opensafeintent", "--opensafeintent", SHIPPED,
                                 "--opensafeintent-sets", "triplets", "--dry-run"))
    assert line == (f"carryon-eval: error: --opensafeintent-sets triplets: dataset {dataset} has no triplets config "
                    "(no benign / dual-use / malicious prompt-sets of its own); give --opensafeintent-sets release "
                    "to play the release's dataset.json, or a dataset built with triplets")


# ---------------------------------------------------------------- a builder's source given as --dataset
DRY = ("--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--dry-run")


@pytest.mark.skipif(not (SHIPPED / "dataset.json").is_file(), reason="no OpenSafeIntent release copy")
def test_a_release_folder_given_as_dataset_says_what_it_is_and_what_to_do():
    line = one_error_line(invoke(*DRY, "--dataset", SHIPPED))
    assert line == (f"carryon-eval: error: dataset {SHIPPED}: an OpenSafeIntent release folder (dataset.json, "
                    "prompts/), not a built dataset (no queries or conversations); evaluate the release with "
                    f"--conditions opensafeintent --opensafeintent {SHIPPED}, or build a dataset from it first: "
                    f"carryon-build build --source {SHIPPED} --out DIR --no-llm")


def test_a_casebench_source_given_as_dataset_says_to_build_first(tmp_path):
    from support.synthetic_source import synthetic_source
    source = synthetic_source(tmp_path / "CASEBench_data.json")
    line = one_error_line(invoke(*DRY, "--dataset", tmp_path))
    assert line == (f"carryon-eval: error: dataset {tmp_path}: a folder with CASE-Bench's source file "
                    "CASEBench_data.json, not a built dataset (no queries or conversations); build a dataset from "
                    f"it first: carryon-build build --source {source} --out DIR")
    line = one_error_line(invoke(*DRY, "--dataset", source))
    assert line == (f"carryon-eval: error: dataset {source}: CASE-Bench's source file, not a built dataset folder; "
                    f"build a dataset from it first: carryon-build build --source {source} --out DIR")


# ---------------------------------------------------------------- the grouped Ben-Util judge on another measure
@pytest.fixture(scope="module")
def open_build(tmp_path_factory):
    """The OpenSafeIntent release built without the LLM stages (3 sets): a dataset whose measure is rubric."""
    from click.testing import CliRunner
    from carryonbench_builder.cli import cli as build_cli
    if not (SHIPPED / "dataset.json").is_file():
        pytest.skip(f"the OpenSafeIntent release copy is not at {SHIPPED}")
    out = tmp_path_factory.mktemp("osi") / "open"
    res = CliRunner().invoke(build_cli, ["build", "--source", str(SHIPPED), "--out", str(out), "--no-llm",
                                         "--limit", "3"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return out


@pytest.mark.skipif(not (SHIPPED / "dataset.json").is_file(), reason="no OpenSafeIntent release copy")
def test_the_grouped_ben_util_judge_with_rubric_utility_given_is_refused():
    line = one_error_line(invoke(*DRY, "--utility", "rubric", "--opensafeintent", SHIPPED,
                                 "--utility-judge", "grouped"))
    assert line == ("carryon-eval: error: --utility-judge grouped: it groups Ben-Util's checklist items, and this "
                    "run measures rubric utility (--utility rubric), which has no checklist items; leave "
                    "--utility-judge out")


def test_the_grouped_ben_util_judge_on_a_dataset_measured_with_rubric_is_refused(open_build):
    line = one_error_line(invoke(*DRY, "--dataset", open_build, "--opensafeintent", SHIPPED,
                                 "--utility-judge", "grouped"))
    assert line == ("carryon-eval: error: --utility-judge grouped: it groups Ben-Util's checklist items, and this "
                    f"run measures rubric utility (the measure dataset {open_build} supports: it has no checklists "
                    "for Ben-Util), which has no checklist items; leave --utility-judge out, or give a dataset "
                    "with checklists")


def test_the_grouped_ben_util_judge_on_a_ben_util_dataset_still_runs(dataset):
    res = invoke(*DRY, "--dataset", dataset, "--utility-judge", "grouped")
    assert res.exit_code == 0, res.output


def test_a_rubric_run_has_no_note_that_its_utility_cannot_be_computed(open_build, tmp_path):
    """The open build has no checklist items: that concerns Ben-Util, not the rubric utility the run measures."""
    from support.rollout_data import rollout_handler
    from support.scripted_server import ScriptedServer, last_user_text

    rubric = (SHIPPED / "prompts" / "metrics" / "helpfulness.txt").read_text(encoding="utf-8").split("{prompt}")[0]

    def judged(body):
        if body["model"] != "jdg":
            return rollout_handler(body)
        return "3" if last_user_text(body).startswith(rubric) else "1"

    with ScriptedServer(judged, models=("tgt", "sim", "jdg")) as srv:
        res = invoke(*remote(srv), "--dataset", open_build, "--opensafeintent", SHIPPED, "--limit", 1,
                     "--judge-format", "text", "--out", tmp_path / "run")
    assert res.exit_code == 0, res.output
    assert "cannot be computed" not in res.output
    notes = json.loads((tmp_path / "run" / "results.json").read_text())["notes"]
    assert not [n for n in notes if "checklist items" in n or "Ben-Util mode" in n], notes


# ---------------------------------------------------------------- human-label files: natural mistakes
@pytest.fixture
def labeled_run(tmp_path, dataset):
    from support.annotation_run import annotation_run
    return annotation_run(tmp_path / "labeled", dataset)


SAFETY_ROWS = [{"annotator": "A", "task": "safety", "conversation_id": "c1", "turn": 1, "score": 2},
               {"annotator": "A", "task": "safety", "conversation_id": "c1", "turn": 2, "score": 3}]


@pytest.mark.parametrize("name, content", [
    ("excel.csv", ("\ufeffannotator,task,conversation_id,turn,score\n"
                   + "".join(f"A,safety,{r['conversation_id']},{r['turn']},{r['score']}\n" for r in SAFETY_ROWS))
     .encode("utf-8")),                                          # a spreadsheet's UTF-8 with its byte-order mark
    ("lines.json", "".join(json.dumps(r) + "\n" for r in SAFETY_ROWS).encode()),     # JSON Lines named .json
    ("rows.json", json.dumps(SAFETY_ROWS).encode()),                                 # the rows as one JSON list
])
def test_label_files_as_people_save_them_are_read(labeled_run, tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    res = invoke("agreement", labeled_run, path, "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert (out["task"], out["n_labels"], out["annotators"]) == ("safety", 2, ["A"])


def test_a_label_file_without_a_label_column_names_the_file_and_the_columns(labeled_run, tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps({"annotator": "A", "conversation_id": "c1", "turn": 1, "label": 2}) + "\n")
    line = one_error_line(invoke("agreement", labeled_run, path))
    assert line == (f"carryon-eval: error: {path}: no row has a 'task' or a label column ('verdict' (utility), "
                    "'score' (safety), 'move' (fidelity)); name the label column so, or give --task "
                    "utility|safety|fidelity")


def test_labels_of_another_task_than_the_one_asked_say_which(labeled_run, tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in SAFETY_ROWS))
    line = one_error_line(invoke("agreement", labeled_run, path, "--task", "utility"))
    assert line == (f"carryon-eval: error: no utility labels in {path} (their rows label safety: give --task "
                    "safety)")


# ---------------------------------------------------------------- folders of the wrong kind, files it cannot read
def test_a_run_folder_or_another_folder_given_as_dataset_says_what_it_is(run, tmp_path):
    assert one_error_line(invoke(*DRY, "--dataset", run)) == (
        f"carryon-eval: error: dataset {run}: a run folder (it has run.json), not a dataset; give --dataset the "
        "dataset folder the run read (run.json's dataset.source names it, relative to the run folder)")
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "broken").symlink_to(tmp_path / "nowhere")        # what /etc has: the old message named a file inside
    assert one_error_line(invoke(*DRY, "--dataset", etc)) == (
        f"carryon-eval: error: dataset {etc}: not a dataset folder (no queries config: no queries.* file, no "
        "data/queries/ and no README.md whose configs name one); give the folder carryon-build wrote, or a Hub id")


def test_an_unreadable_file_of_a_dataset_is_named_not_blamed_on_queries(tmp_path):
    from support.rollout_data import make_dataset

    data = make_dataset(tmp_path / "data")
    (data / "checklists.jsonl").unlink()
    (data / "checklists.jsonl").symlink_to("/proc/self/mem")     # every read fails (EIO), root or not
    assert one_error_line(invoke(*DRY, "--dataset", data)) == (
        f"carryon-eval: error: dataset {data}: cannot read {data / 'checklists.jsonl'} (Input/output error)")


@pytest.mark.skipif(not (SHIPPED / "dataset.json").is_file(), reason="no OpenSafeIntent release copy")
def test_the_providers_default_temperature_with_opensafeintent_plans_and_runs(dataset, scripted_server, tmp_path):
    line = invoke(*DRY, "--dataset", dataset, "--conditions", "opensafeintent", "--opensafeintent", SHIPPED,
                  "--target-temperature", "default", "--limit", 1)
    assert line.exit_code == 0, line.output


def test_every_failed_write_is_one_line(run, tmp_path):
    """A file-size limit under `report` (EFBIG), a run folder whose name the file system cannot take (ENAMETOOLONG):
    one line naming what to do, never a traceback (a full disk: tests/run/test_run_integrity.py)."""
    import resource
    import subprocess
    import sys

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    proc = subprocess.run([sys.executable, "-m", "carryon_eval.cli", "report", str(run)], capture_output=True,
                          text=True, preexec_fn=limited, timeout=300)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1] == (
        "carryon-eval: error: File too large; the file outgrew the file-size limit (ulimit -f): raise it, then "
        "rerun the same command"), proc.stderr
    assert "Traceback" not in proc.stderr
    long = tmp_path / ("x" * 300)
    line = one_error_line(invoke(*DRY[:4], "--out", long, "--limit", 1, "--conditions", "turn1"))
    assert line.startswith("carryon-eval: error: ") and "too long" in line, line
