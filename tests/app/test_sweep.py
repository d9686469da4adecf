"""`carryon-eval sweep PLAN.toml`: three targets under one simulator and one judge on a scripted server (real
HTTP): one run folder each and one leaderboard, every simulator call to the simulator model and every judge call
to the judge model, the shared judge never above its concurrency in flight, a dry run equal to the calls the
sweep makes, a rerun that asks nothing, and bad plans refused with one line naming the key."""
from __future__ import annotations

import asyncio
import os
import collections
import json
import re
from pathlib import Path
from typing import Any

import pytest
from support.eval_cli import invoke, one_error_line
from support.rollout_data import unique_replies
from support.scripted_server import Fault, last_user_text

from carryon_eval.sweep import plan_hash, read_plan

TARGETS = ("t1", "t2", "t3")
SIM_PROMPT = "Requirements for the message you write"
JUDGE_PROMPTS = ("checking whether a reply", "rating how harmful", "Classify that next message", "hidden purpose",
                 "the user was meant to state this purpose")
CONCURRENCY = 2


class Counting:
    """The scripted models, answering a little late, with the most requests each model had in flight."""

    def __init__(self) -> None:
        self.now: collections.Counter[str] = collections.Counter()
        self.most: collections.Counter[str] = collections.Counter()

    async def __call__(self, body: dict) -> Any:
        model = body["model"]
        self.now[model] += 1
        self.most[model] = max(self.most[model], self.now[model])
        try:
            await asyncio.sleep(0.01)
            return unique_replies({**body, "model": "tgt" if model in TARGETS else model})
        finally:
            self.now[model] -= 1


def write_plan(path: Path, srv: Any, dataset: Path, *, targets: Any = TARGETS, extra: str = "") -> Path:
    head = (f'dataset = "{dataset}"\nuser-endpoint = "{srv.base_url}"\nuser-model = "sim"\n'
            f'judge-endpoint = "{srv.base_url}"\njudge-model = "jdg"\nconcurrency = {CONCURRENCY}\n{extra}')
    tables = "".join(f'\n[[target]]\nname = "{m}-run"\nendpoint = "{srv.base_url}"\nmodel = "{m}"\n' for m in targets)
    path.write_text(head + tables)
    return path


def plan_calls(stdout: str) -> dict[str, int]:
    """{role: calls} from the dry run's whole-plan lines "ROLE plan N ..."."""
    return {m.group(1): int(m.group(2).replace(",", ""))
            for m in re.finditer(r"^(target|user|judge|all)\s+plan\s+([\d,]+)", stdout, re.M)}


def test_a_sweep_of_three_targets_under_one_simulator_and_judge(scripted_server, dataset, tmp_path):
    handler = Counting()
    srv = scripted_server(handler, models=(*TARGETS, "sim", "jdg"))
    plan, out = write_plan(tmp_path / "plan.toml", srv, dataset), tmp_path / "sweep"

    dry = invoke("sweep", plan, "--out", out, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert srv.count() == 0 and not out.exists()                 # nothing called, nothing written
    expected = plan_calls(dry.stdout)
    assert all(f"== target {m}-run ({m}) ==" in dry.stdout for m in TARGETS)
    assert expected["target"] > 0 and expected["all"] == expected["target"] + expected["user"] + expected["judge"]
    assert dry.stdout.count("power: the smallest difference between two models") == len(TARGETS)
    as_json = invoke("sweep", plan, "--out", out, "--dry-run", "--json")
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout.splitlines()[-1])
    assert set(data["power"]) == {f"{m}-run" for m in TARGETS} and not out.exists()
    assert data["plan"]["roles"]["target"]["calls"] == expected["target"]
    assert all(p["numbers"]["bc.utility"]["detectable"] for p in data["power"].values())

    res = invoke("sweep", plan, "--out", out)
    assert res.exit_code == 0, res.output
    assert "sweep: 3 of 3 runs finished" in res.output
    for m in TARGETS:
        assert (out / f"{m}-run" / "results.json").is_file()
    rows = [json.loads(line) for line in (out / "leaderboard.jsonl").read_text().splitlines()]
    assert sorted(r["target_model"] for r in rows) == list(TARGETS) and (out / "leaderboard.html").is_file()
    assert len({r["comparability_group"] for r in rows}) == 1 and all(r["simulator"]["model"] == "sim" for r in rows)

    bodies = srv.requests
    for body in bodies:
        text = last_user_text(body)
        if SIM_PROMPT in text:
            assert body["model"] == "sim"
        elif any(p in text for p in JUDGE_PROMPTS):
            assert body["model"] == "jdg"
        else:
            assert body["model"] in TARGETS
    by_model = collections.Counter(b["model"] for b in bodies)
    assert sum(by_model[m] for m in TARGETS) == expected["target"]      # the dry run was the sweep's calls
    assert by_model["sim"] == expected["user"] and by_model["jdg"] == expected["judge"]
    assert 1 <= handler.most["jdg"] <= CONCURRENCY                  # one limit over the three runs, not per run
    assert handler.most["sim"] <= CONCURRENCY

    digest = plan_hash(__import__("tomllib").loads(plan.read_text()))
    for i, m in enumerate(TARGETS):
        sweep = json.loads((out / f"{m}-run" / "run.json").read_text())["sweep"]
        assert sweep == {"plan": "plan.toml", "plan_sha256": digest, "targets": 3, "target": f"{m}-run", "index": i}

    before = srv.count()
    again = invoke("sweep", plan, "--out", out)
    assert again.exit_code == 0, again.output
    assert srv.count() == before                                     # resumed: nothing paid twice
    assert plan_calls(invoke("sweep", plan, "--out", out, "--dry-run").stdout)["all"] == 0


def test_a_failing_target_does_not_stop_the_others(scripted_server, dataset, tmp_path):
    srv = scripted_server(Counting(), models=("t1", "t2", "sim", "jdg"))    # t3 is not served
    plan, out = write_plan(tmp_path / "plan.toml", srv, dataset), tmp_path / "sweep"
    res = invoke("sweep", plan, "--out", out)
    assert res.exit_code == 2, res.output
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("sweep: failed: t3-run") and "t1-run" not in last
    assert (out / "t1-run" / "results.json").is_file() and (out / "t2-run" / "results.json").is_file()
    assert len((out / "leaderboard.jsonl").read_text().splitlines()) == 2


def test_a_target_that_stops_answering_exits_4_and_the_others_finish(scripted_server, dataset, tmp_path):
    counting = Counting()

    def handler(body: dict) -> Any:
        return Fault.status(500) if body["model"] == "t3" else counting(body)

    srv = scripted_server(handler, models=(*TARGETS, "sim", "jdg"))
    plan = write_plan(tmp_path / "plan.toml", srv, dataset, extra="give-up-after = 5\n")
    res = invoke("sweep", plan, "--out", tmp_path / "sweep")
    assert res.exit_code == 4, res.output
    assert "sweep: t3-run FAILED (exit 4)" in res.stderr and "sweep: 2 of 3 runs finished: t1-run, t2-run" in res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith("sweep: failed: t3-run")
    rows = [json.loads(line) for line in (tmp_path / "sweep" / "leaderboard.jsonl").read_text().splitlines()]
    assert sorted(r["target_model"] for r in rows) == ["t1", "t2"]


@pytest.mark.parametrize("edit, named", [
    (lambda p: p.replace("concurrency", "concurency"), "unknown key 'concurency'"),
    (lambda p: p.replace('judge-model = "jdg"\n', 'judge-model = "jdg"\ntarget-temperature = 0.5\n'),
     "key 'target-temperature' is a target's own"),
    (lambda p: p.replace('model = "t2"\n', 'model = "t2"\njudge-model = "other"\n'),
     "target 't2-run': key 'judge-model' is shared by every run"),
    (lambda p: p.replace('name = "t2-run"', 'name = "t1-run"'), "key 'name': two targets are named 't1-run'"),
    (lambda p: p.replace('model = "t3"\n', ''), "target 't3-run': key 'model' is missing"),
    (lambda p: p.replace('judge-model = "jdg"\n', '').replace('user-model = "sim"\n', ''),
     "names no user simulator and no judge (user-model, judge-model)"),
    (lambda p: p.replace('judge-model = "jdg"\n', ''), "names no judge (judge-model)"),
    (lambda p: p.replace("concurrency = 2", "concurrency = 0"), "key 'concurrency': expected a whole number >= 1"),
    (lambda p: p + 'out = "elsewhere"\n', "key 'out' is set by the sweep"),
])
def test_a_bad_plan_is_one_line_naming_the_key(edit, named, scripted_server, dataset, tmp_path):
    srv = scripted_server(Counting(), models=(*TARGETS, "sim", "jdg"))
    plan = write_plan(tmp_path / "plan.toml", srv, dataset)
    text = plan.read_text()
    if "out =" in named or "set by the sweep" in named:
        text = 'out = "elsewhere"\n' + text
    else:
        text = edit(text)
    plan.write_text(text)
    line = one_error_line(invoke("sweep", plan, "--out", tmp_path / "sweep"))
    assert str(plan) in line and named in line, line
    assert srv.count() == 0 and not (tmp_path / "sweep").exists()


def test_sweep_help_lists_the_keys():
    res = invoke("sweep", "--help")
    assert res.exit_code == 0
    for key in ("judge-model", "user-model", "utility-judge", "concurrency", "paper-rows", "target-extra-body",
                "target-reasoning-effort", "api-key-env", "name"):
        assert re.search(rf"^\s+{key}\s", res.output, re.M), key


def test_read_plan_gives_each_target_its_folder_and_the_shared_settings(scripted_server, dataset, tmp_path):
    srv = scripted_server(Counting(), models=(*TARGETS, "sim", "jdg"))
    plan = read_plan(write_plan(tmp_path / "plan.toml", srv, dataset,
                                extra='utility-judge = "grouped"\npaper-rows = true\n'), tmp_path / "o")
    assert plan.paper_rows
    assert [t.config.out for t in plan.targets] == [tmp_path / "o" / f"{m}-run" for m in TARGETS]
    assert {t.config.judge.model for t in plan.targets} == {"jdg"}
    assert {t.config.utility_judge for t in plan.targets} == {"grouped"}


def test_the_documented_plan_of_the_paper_is_a_plan(monkeypatch, tmp_path):
    """docs/'s plan of the paper's setup reads as a plan: every key known, each in its place."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "leaderboard-and-sweep.md").read_text(encoding="utf-8")
    text = re.search(r"```toml\n(# paper\.toml.*?)```", page, re.S).group(1)
    for name in ("GEMINI_API_KEY", "OPENROUTER_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.setenv(name, "not-a-key")
    (tmp_path / "paper.toml").write_text(text)
    plan = read_plan(tmp_path / "paper.toml", tmp_path / "runs")
    assert [t.name for t in plan.targets] == ["gpt-oss-120b", "llama-4-maverick", "gpt-5-mini"] and plan.paper_rows
    assert {t.config.user.model for t in plan.targets} == {"gemini-3-flash"}
    assert {t.config.judge.model for t in plan.targets} == {"gemini-2.5-flash"}
    assert {t.config.judges["ben_util_judge"].model for t in plan.targets} == {"gemini-2.5-flash"}   # the paper's
    assert {t.config.judges["safety_judge"].model for t in plan.targets} == {"gpt-5.2"}              # two judges


@pytest.mark.parametrize("edit, named", [
    (lambda p: p.replace('name = "t2-run"', 'name = "plots"'),
     "[[target]] number 2: key 'name' 'plots' is a file the sweep's leaderboard writes beside the run folders"),
    (lambda p: p.replace('name = "t2-run"', 'name = "leaderboard.html"'),
     "[[target]] number 2: key 'name' 'leaderboard.html' is a file the sweep's leaderboard writes"),
    (lambda p: p.replace('name = "t2-run"', f'name = "{"x" * 300}"'),
     "[[target]] number 2: key 'name' is 300 characters long; a run folder's name takes at most 100"),
    (lambda p: p.replace("concurrency = 2", 'price = "judge=abc"'), "plan.toml: key 'price': 'judge=abc': expected"),
    (lambda p: re.sub(r'dataset = ".*"', 'dataset = "../../etc"', p),
     "plan.toml: key 'dataset': dataset ../../etc: not a dataset folder"),
    (lambda p: re.sub(r'dataset = ".*"', 'dataset = "./no-such-folder"', p),
     "plan.toml: key 'dataset': dataset ./no-such-folder: no such folder"),
])
def test_plan_wide_values_and_names_are_checked_once_before_any_target(edit, named, scripted_server, dataset,
                                                                       tmp_path, monkeypatch):
    """A bad shared value is the plan's (not target 't1-run''s, not once per target); a target's name is not one of
    the leaderboard's files nor longer than a folder name takes."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "hosts").write_text("127.0.0.1 localhost\n")       # a folder, but no dataset
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a" / "b")                                # the plan's paths: from here
    srv = scripted_server(Counting(), models=(*TARGETS, "sim", "jdg"))
    plan = write_plan(tmp_path / "plan.toml", srv, dataset)
    plan.write_text(edit(plan.read_text()))
    for dry in ((), ("--dry-run",)):
        line = one_error_line(invoke("sweep", plan, "--out", tmp_path / "sweep", *dry))
        assert named in line and "target 't1-run'" not in line, line
    assert srv.count() == 0 and not (tmp_path / "sweep").exists()


def test_a_plan_with_a_byte_order_mark_reads_and_a_second_sweep_into_one_folder_is_refused(scripted_server, dataset,
                                                                                            tmp_path):
    from carryon_eval.run.lock import hold

    srv = scripted_server(Counting(), models=(*TARGETS, "sim", "jdg"))
    plan = write_plan(tmp_path / "plan.toml", srv, dataset)
    plan.write_bytes(b"\xef\xbb\xbf" + plan.read_bytes())            # as Windows' Notepad saves it
    assert [t.name for t in read_plan(plan).targets] == [f"{m}-run" for m in TARGETS]
    out = tmp_path / "sweep"
    with hold(out, "carryon-eval sweep"):                             # another sweep writes DIR meanwhile
        line = one_error_line(invoke("sweep", plan, "--out", out))
    assert line == (f"carryon-eval: error: {out} is being written by carryon-eval sweep (PID {os.getpid()}); wait "
                    "for it to end, or use another folder")
    assert srv.count() == 0 and not out.exists()


def test_a_sweep_that_cannot_write_says_one_line_per_target(scripted_server, dataset, tmp_path):
    """A file-size limit (as a full disk) fails every target's writes: each target's one line, never a traceback."""
    import resource
    import subprocess
    import sys

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (8000, 8000))     # run.json fits; transcripts.jsonl soon not

    srv = scripted_server(Counting(), models=(*TARGETS, "sim", "jdg"))
    plan = write_plan(tmp_path / "plan.toml", srv, dataset)
    proc = subprocess.run([sys.executable, "-m", "carryon_eval.cli", "sweep", str(plan), "--out",
                           str(tmp_path / "sweep")], capture_output=True, text=True, preexec_fn=limited, timeout=600)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    failed = [line for line in proc.stderr.splitlines() if " FAILED (exit 2): " in line]
    assert [line.split()[1] for line in failed] == [f"{m}-run" for m in TARGETS], proc.stderr
    assert all(line.endswith("File too large; the file outgrew the file-size limit (ulimit -f): raise it, then "
                             "rerun the same command") for line in failed), failed
