"""An option that only means something beside another (its ``beside`` in the option table) is refused with one
line when given alone, on the command line, in the Python API and on `judge RUNDIR`; so is a role priced twice and
a --calibrate below 0; `report` says a damaged usage.json instead of leaving it."""
from __future__ import annotations

import pytest
from support.eval_cli import invoke, one_error_line, remote
from support.rollout_data import evaluator_handler as handler

from carryon_eval.api import evaluate_config
from carryon_eval.app.config import ConfigError

OFFLINE = ("--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--dry-run")


@pytest.mark.parametrize("flag", ["--calibrate", "--utility-group-size"])
def test_a_grouped_judge_option_without_the_grouped_judge_is_refused(flag):
    line = one_error_line(invoke(*OFFLINE, flag, 5))
    assert line == (f"carryon-eval: error: {flag} 5 only means something with --utility-judge grouped (here "
                    f"--utility-judge is per-item); add --utility-judge grouped, or leave {flag} out")
    assert invoke(*OFFLINE, flag, 5, "--utility-judge", "grouped").exit_code == 0


def test_the_api_refuses_it_too_and_takes_the_defaults_silently():
    with pytest.raises(ConfigError, match=r"^--calibrate 3 only means something with --utility-judge grouped"):
        evaluate_config(endpoint="http://127.0.0.1:9/v1", model="m", calibrate=3)
    assert evaluate_config(endpoint="http://127.0.0.1:9/v1", model="m").calibrate == 0


def test_a_negative_calibrate_is_refused():
    line = one_error_line(invoke(*OFFLINE, "--calibrate", -1, "--utility-judge", "grouped"))
    assert line == ("carryon-eval: error: Invalid value for '--calibrate': expected a number of replies >= 0 "
                    "(0: no calibration), got -1 (see 'carryon-eval --help')")


def test_a_role_priced_twice_is_refused():
    line = one_error_line(invoke(*OFFLINE, "--price", "judge=1/2", "--price", "judge=3/4"))
    assert line == ("carryon-eval: error: --price 'judge=3/4': the judge role is priced twice (also --price "
                    "'judge=1/2'); give one --price per role")


@pytest.fixture
def played(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    assert invoke(*remote(srv), "--dataset", dataset, "--out", out, "--limit", 1, "--conditions", "turn1").exit_code == 0
    return srv, out


def test_calibrate_on_a_per_item_run_is_refused_by_judge(played):
    srv, out = played
    srv.reset()
    line = one_error_line(invoke("judge", out, "--calibrate", 4))
    assert line == ("carryon-eval: error: --calibrate 4 only means something with --utility-judge grouped (here "
                    "--utility-judge is per-item); add --utility-judge grouped, or leave --calibrate out")
    assert srv.count() == 0


def test_report_says_a_garbage_usage_file(played):
    _, out = played
    (out / "usage.json").write_text("not json{")
    line = one_error_line(invoke("report", out))
    assert line.startswith(f"carryon-eval: error: {out / 'usage.json'}: unreadable (JSONDecodeError); ")
