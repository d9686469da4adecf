"""`carryon-eval --utility rubric`: CarryOnBench's utility measured by OpenSafeIntent's 1-4 helpfulness rubric on a
dataset without checklists (the --no-llm OpenSafeIntent build), against a scripted server over real HTTP.

The rubric is the release's own prompt file, read at run time from ../shared/data/opensafeintent (nothing of it
is in this repository: the test recognizes a rubric request by the file's text up to ``{prompt}``, read here).
Skips, saying why, where the release is absent."""
from __future__ import annotations

import hashlib
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.scripted_server import last_user_text

from carryon_eval.suites.carryonbench.judging.rubric import RUBRIC_ITEMS
from carryon_eval.suites.carryonbench.metrics.conversations import turn_utility, Turn
from support.eval_cli import invoke, one_error_line, remote
from support.rollout_data import evaluator_handler, make_dataset, rollout_handler
from support.shared_data import OPENSAFEINTENT

DATASET = OPENSAFEINTENT / "dataset.json"
RUBRIC_FILE = OPENSAFEINTENT / "prompts" / "metrics" / "helpfulness.txt"
pytestmark = pytest.mark.skipif(not DATASET.is_file() or not RUBRIC_FILE.is_file(),
                                reason=f"the OpenSafeIntent release is not at {OPENSAFEINTENT} "
                                       "(CI has ../shared/data/opensafeintent beside the clone)")
UNREADABLE = "I would rather not grade this."
CALLS = itertools.count()


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("osi") / "ds"
    r = subprocess.run([sys.executable, "-m", "carryonbench_builder.cli", "build", "--source-format", "opensafeintent",
                        "--source", str(OPENSAFEINTENT), "--out", str(out), "--no-llm"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return out


def rubric_head() -> str:
    return RUBRIC_FILE.read_text(encoding="utf-8").split("{prompt}")[0]


def score_of(reply: str) -> str:
    """The scripted judge's rubric answer for a reply: 1-4 from its digest, unreadable for one in 16."""
    n = int(hashlib.sha256(reply.encode()).hexdigest(), 16) % 16
    return UNREADABLE if n == 0 else str(1 + n % 4)


def handler(body: dict) -> str:
    text = last_user_text(body)
    if body["model"] == "tgt":          # a distinct reply to every call: no two replies are judged as one
        return "Reply " + hashlib.sha256(f"{next(CALLS)} {json.dumps(body['messages'])}".encode()).hexdigest()[:16]
    if body["model"] != "jdg":
        return rollout_handler(body)
    if text.startswith(rubric_head()):
        reply = re.search(r"Reply [0-9a-f]{16}", text)
        assert reply, text[-200:]
        return score_of(reply.group(0))
    if "rating how harmful" in text:
        return "1"
    raise AssertionError(f"unexpected judge prompt: {text[:80]}")


def is_rubric(body: dict) -> bool:
    return body["model"] == "jdg" and last_user_text(body).startswith(rubric_head())


@pytest.fixture(scope="module")
def rubric_run(built, tmp_path_factory):
    from support.scripted_server import ScriptedServer as Server      # module-scoped: the fixture is per test

    out = tmp_path_factory.mktemp("runs")
    with Server(handler, models=("tgt", "sim", "jdg")) as srv:
        args = [*remote(srv), "--dataset", built, "--utility", "rubric", "--opensafeintent", OPENSAFEINTENT,
                "--limit", 5, "--judge-format", "text"]
        dry = invoke(*args, "--out", out / "rubric", "--dry-run", "--json")
        assert dry.exit_code == 0, dry.output
        assert srv.count() == 0
        result = invoke(*args, "--out", out / "rubric")
        assert result.exit_code == 0, result.output
        rubric_calls = srv.count(is_rubric)
    return {"dry": json.loads(dry.stdout.strip().splitlines()[-1]), "rundir": out / "rubric",
            "rubric_calls": rubric_calls, "out": out}


def test_every_condition_runs_with_rubric_utility(rubric_run):
    rundir = rubric_run["rundir"]
    results = json.loads((rundir / "results.json").read_text())
    assert results["utility_measure"] == "rubric"
    for cond in ("turn1", "oracle", "bc", "nc"):
        assert results["conditions"][cond]["n_conversations"] > 0, cond
        assert results["conditions"][cond]["utility"] is not None, cond
    assert "rubric_utility" in results["judge_context"]["utility"] or "rubric" in results["judge_context"]["utility"]
    assert not (rundir / "utility_judgments.jsonl").exists()        # Ben-Util never ran
    run = json.loads((rundir / "run.json").read_text())
    assert run["judge"]["utility"] == "rubric"
    assert run["suites"]["opensafeintent"]["sha256"]["prompts/metrics/helpfulness.txt"] == \
        hashlib.sha256(RUBRIC_FILE.read_bytes()).hexdigest()


def test_a_score_is_three_items_and_an_unreadable_answer_is_unscored(rubric_run):
    rows = [json.loads(line) for line in (rubric_run["rundir"] / "rubric_utility_judgments.jsonl").open()]
    by_reply: dict[tuple, dict[str, object]] = {}
    for r in rows:
        by_reply.setdefault((r["conversation_id"], r["turn"]), {})[r["item_id"]] = r
    assert by_reply and all(set(items) == set(RUBRIC_ITEMS) for items in by_reply.values())
    seen_unscored = seen_scored = False
    for items in by_reply.values():
        raw = next(iter(items.values()))["raw"]
        verdicts = {i: r["verdict"] for i, r in items.items()}
        if raw == UNREADABLE:
            seen_unscored = True
            assert set(verdicts.values()) == {None}          # unscored, never a 1
            assert turn_utility(Turn(1, None, verdicts, None)) is None
        else:
            seen_scored = True
            score = int(raw)
            assert verdicts == {"rubric>=2": score >= 2, "rubric>=3": score >= 3, "rubric>=4": score >= 4}
            assert turn_utility(Turn(1, None, verdicts, None)) == pytest.approx(100 * (score - 1) / 3)
    assert seen_scored and seen_unscored


def test_conversation_utility_is_the_best_turn(rubric_run):
    scores = [json.loads(line) for line in (rubric_run["rundir"] / "conversation_scores.jsonl").open()]
    rows = [json.loads(line) for line in (rubric_run["rundir"] / "rubric_utility_judgments.jsonl").open()]
    raw = {(r["conversation_id"], r["turn"]): r["raw"] for r in rows}
    checked = 0
    for s in scores:
        if s["condition"] not in ("bc", "nc"):
            continue
        answers = [raw.get((s["conversation_id"], t)) for t in range(1, s["n_model_turns"] + 1)]
        if s.get("utility") is None or any(a is None for a in answers):
            continue
        if any(a == UNREADABLE for a in answers):
            continue
        assert s["utility"] == pytest.approx(100 * (max(int(a) for a in answers) - 1) / 3)
        checked += 1
    assert checked > 0


def test_the_dry_run_predicts_the_rubric_calls(rubric_run):
    assert rubric_run["dry"]["judge_by_scorer"]["rubric_utility"] == rubric_run["rubric_calls"] > 0
    assert "utility" not in rubric_run["dry"]["judge_by_scorer"]


def test_the_report_names_it_rubric_utility(rubric_run):
    rundir = rubric_run["rundir"]
    table = (rundir / "table.md").read_text()
    html = (rundir / "report.html").read_text()
    assert "rubric utility" in table and "rubric utility" in html
    assert "Ben-Util judge" not in html and "Ben-Util 1" not in html
    results = json.loads((rundir / "results.json").read_text())
    assert "Unscored rubric utility item verdicts" in " ".join(results["notes"])
    # rubric level 1 is an unhelpful reply, not a refusal: its turn-1 bin is never called a hard refusal
    assert results["turn1_bins"]["labels"]["hard_refusal"].startswith("rubric level 1 (unhelpful")
    assert "rubric level 1 (unhelpful" in html and "hard refusal" not in html.lower() + table.lower()


def test_compare_refuses_rubric_and_ben_util_in_one_column(rubric_run, scripted_server, tmp_path):
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))     # a Ben-Util run of a made-up dataset
    other = tmp_path / "benutil"
    assert invoke(*remote(srv), "--dataset", make_dataset(tmp_path / "ds"), "--out", other).exit_code == 0
    assert json.loads((other / "results.json").read_text())["utility_measure"] == "benutil"
    line = one_error_line(invoke("compare", rubric_run["rundir"], other))
    assert "utility" in line and "Ben-Util" in line and "rubric utility" in line


def test_rubric_without_the_release_is_one_line(built, scripted_server, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    line = one_error_line(invoke(*remote(srv), "--dataset", built, "--utility", "rubric", "--limit", 1,
                                 "--out", tmp_path / "r", "--dry-run"))
    assert "--opensafeintent" in line
    assert srv.count() == 0


def test_report_again_and_the_leaderboard_keep_the_name(rubric_run, tmp_path):
    rundir = rubric_run["rundir"]
    assert invoke("report", rundir).exit_code == 0
    assert json.loads((rundir / "results.json").read_text())["utility_measure"] == "rubric"
    result = invoke("compare", rundir, "--out", tmp_path / "cmp")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "cmp" / "compare.json").read_text())["utility_measure"] == "rubric"
    board = (tmp_path / "cmp" / "leaderboard.html").read_text()
    assert "Rubric util. %" in board and ">Util. %<" not in board
