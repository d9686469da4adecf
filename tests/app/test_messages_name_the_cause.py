"""Messages that name the real cause: a folder of the wrong kind given to compare, a judgment set a run does not
have, an option of Ben-Util on a rubric run; the rubric run's notes speak of its own utility."""
from __future__ import annotations

import pytest
from support.eval_cli import invoke, one_error_line, remote
from support.rollout_data import evaluator_handler as handler
from support.shared_data import OPENSAFEINTENT as SHIPPED

from carryon_eval.suites.carryonbench.report import utility_judge_note


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


@pytest.mark.skipif(not (SHIPPED / "dataset.json").is_file(), reason="no OpenSafeIntent release copy")
def test_the_grouped_ben_util_judge_on_a_rubric_run_is_refused():
    line = one_error_line(invoke("--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--utility", "rubric",
                                 "--opensafeintent", SHIPPED, "--utility-judge", "grouped", "--dry-run"))
    assert line == ("carryon-eval: error: --utility-judge grouped only means something with --utility benutil "
                    "(here --utility is rubric); add --utility benutil, or leave --utility-judge out")


def test_a_rubric_run_has_no_ben_util_mode_note():
    note = utility_judge_note({"utility_judge": "per-item"}, "rubric")
    assert "Ben-Util mode" not in note and note.startswith("Utility: rubric utility, one judge call per reply")
    assert utility_judge_note({"utility_judge": "per-item"}).startswith("Ben-Util mode: per-item")


@pytest.mark.skipif(not (SHIPPED / "dataset.json").is_file(), reason="no OpenSafeIntent release copy")
def test_triplet_sets_on_a_dataset_without_triplets_name_the_missing_config(dataset):
    line = one_error_line(invoke("--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--dataset", dataset,
                                 "--conditions", "opensafeintent", "--opensafeintent", SHIPPED,
                                 "--opensafeintent-sets", "triplets", "--dry-run"))
    assert line == (f"carryon-eval: error: --opensafeintent-sets triplets: dataset {dataset} has no triplets config "
                    "(no benign / dual-use / malicious prompt-sets of its own); give --opensafeintent-sets release "
                    "to play the release's dataset.json, or a dataset built with triplets")
