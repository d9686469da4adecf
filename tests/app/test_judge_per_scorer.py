"""A judge per scorer: `--ben-util-judge-model A --safety-judge-model B` sends every Ben-Util call to A and every
safety call to B (the scripted server's log), and run.json, judge.json, results.json, table.md, report.html, compare
and the leaderboard name each scorer's judge; a run judged by A alone is warned about and grouped apart. A plan with
the two judges does the same for every target, and `judge RUNDIR` keeps each scorer's judge (or takes another)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.eval_cli import invoke

from carryon_eval import evaluate
from support.rollout_data import evaluator_handler, last_user_text

BEN_UTIL, SAFETY = "checking whether a reply", "rating how harmful"
JUDGES = ("judge-a", "judge-b", "jdg")


def handler(body: dict) -> Any:
    """tgt / sim as usual; every judge model answers as the scripted judge does."""
    return evaluator_handler({**body, "model": "jdg" if body["model"] in JUDGES else body["model"]})


class Quiet:
    def info(self, text: str) -> None:
        pass

    def note(self, text: str) -> None:
        pass


def kinds(srv: Any) -> dict[str, set[str]]:
    """{judge kind: the models its calls went to} from the server's log."""
    out: dict[str, set[str]] = {"ben_util": set(), "safety": set()}
    for body in srv.requests:
        text = last_user_text(body)
        if BEN_UTIL in text:
            out["ben_util"].add(body["model"])
        elif SAFETY in text:
            out["safety"].add(body["model"])
    return out


def run(srv: Any, dataset: Path, out: Path, *judges: str) -> Any:
    res = invoke("--endpoint", srv.base_url, "--model", "tgt", "--user-endpoint", srv.base_url, "--user-model", "sim",
                 "--judge-endpoint", srv.base_url, "--judge-model", "jdg", "--dataset", dataset, "--limit", 2,
                 "--out", out, *judges)
    assert res.exit_code == 0, res.output
    return res


def test_each_scorer_asks_its_own_judge_and_every_artifact_names_it(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", *JUDGES))
    both = tmp_path / "both"
    run(srv, dataset, both, "--ben-util-judge-model", "judge-a", "--safety-judge-model", "judge-b")
    assert kinds(srv) == {"ben_util": {"judge-a"}, "safety": {"judge-b"}}       # every call to its own judge

    meta = json.loads((both / "run.json").read_text())
    assert meta["roles"]["ben_util_judge"]["model"] == "judge-a" and meta["roles"]["safety_judge"]["model"] == "judge-b"
    passes = json.loads((both / "judge.json").read_text())["judges"]
    assert set(passes["judge-a"]["scorers"]) == {"utility"} and set(passes["judge-b"]["scorers"]) == {"safety"}
    results = json.loads((both / "results.json").read_text())
    assert results["judges"]["utility"]["models"] == ["judge-a"] and results["judges"]["safety"]["models"] == ["judge-b"]
    assert results["judges"]["complete"] is True and results["conditions"]["bc"]["utility"] is not None
    assert "judge-a" in (both / "table.md").read_text() and "judge-b" in (both / "table.md").read_text()
    page = (both / "report.html").read_text()
    assert "judge-a" in page and "judge-b" in page

    srv.reset()
    alone = tmp_path / "alone"
    run(srv, dataset, alone, "--judge-model", "judge-a")             # one judge for every scorer
    assert kinds(srv) == {"ben_util": {"judge-a"}, "safety": {"judge-a"}}
    assert "ben_util_judge" not in json.loads((alone / "run.json").read_text())["roles"]

    cmp = invoke("compare", both, alone, "--out", tmp_path / "cmp")
    assert cmp.exit_code == 0, cmp.output
    assert "WARNING" in cmp.stderr and "safety judges" in cmp.stderr                  # warned, in one line
    rows = [json.loads(line) for line in (tmp_path / "cmp" / "leaderboard.jsonl").read_text().splitlines()]
    assert [r["comparability_group"] for r in rows] == ["A", "B"]                     # grouped apart
    assert rows[0]["judges"]["utility"]["models"] == ["judge-a"] and rows[0]["judges"]["safety"]["models"] == ["judge-b"]
    assert rows[1]["judges"]["safety"]["models"] == ["judge-a"]
    board = (tmp_path / "cmp" / "leaderboard.html").read_text()
    assert "judge-b" in board and "different judges" in board


def test_judge_rundir_keeps_each_scorers_judge_or_takes_another(scripted_server, dataset, tmp_path):
    """The run made through the Python API; then `judge RUNDIR` on it."""
    srv = scripted_server(handler, models=("tgt", "sim", *JUDGES, "judge-c"))
    out = tmp_path / "run"
    results = evaluate(endpoint=srv.base_url, model="tgt", user_endpoint=srv.base_url, user_model="sim",
                       judge_endpoint=srv.base_url, judge_model="jdg", dataset=str(dataset), limit=1, out=str(out),
                       ben_util_judge_model="judge-a", safety_judge_model="judge-b", output=Quiet())
    assert results.judges.utility["models"] == ["judge-a"] and results.judges.safety["models"] == ["judge-b"]
    assert kinds(srv) == {"ben_util": {"judge-a"}, "safety": {"judge-b"}}
    srv.reset()
    again = invoke("judge", out)
    assert again.exit_code == 0, again.output
    assert srv.count() == 0                                      # the same judges: every verdict is there
    res = invoke("judge", out, "--safety-judge-model", "judge-c")
    assert res.exit_code == 0, res.output
    assert kinds(srv) == {"ben_util": set(), "safety": {"judge-c"}}
    passes = json.loads((out / "judge.json").read_text())["judges"]
    assert set(passes["judge-c"]["scorers"]) == {"safety"}


def test_a_plan_with_the_two_judges_judges_every_target_so(scripted_server, dataset, tmp_path):
    srv = scripted_server(lambda body: handler({**body, "model": "tgt" if body["model"] in ("t1", "t2")
                                                else body["model"]}), models=("t1", "t2", "sim", *JUDGES))
    plan = tmp_path / "plan.toml"
    plan.write_text(f'dataset = "{dataset}"\nlimit = 1\nuser-endpoint = "{srv.base_url}"\nuser-model = "sim"\n'
                    f'judge-endpoint = "{srv.base_url}"\njudge-model = "jdg"\nben-util-judge-model = "judge-a"\n'
                    'safety-judge-model = "judge-b"\nconcurrency = 2\n'
                    + "".join(f'\n[[target]]\nname = "{m}"\nendpoint = "{srv.base_url}"\nmodel = "{m}"\n'
                              for m in ("t1", "t2")))
    res = invoke("sweep", plan, "--out", tmp_path / "sweep")
    assert res.exit_code == 0, res.output
    assert kinds(srv) == {"ben_util": {"judge-a"}, "safety": {"judge-b"}}
    rows = [json.loads(line) for line in (tmp_path / "sweep" / "leaderboard.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and {r["comparability_group"] for r in rows} == {"A"}
    assert all(r["judges"]["utility"]["models"] == ["judge-a"] and r["judges"]["safety"]["models"] == ["judge-b"]
               for r in rows)
    for m in ("t1", "t2"):                                       # every target's own files name both
        results = json.loads((tmp_path / "sweep" / m / "results.json").read_text())
        assert results["judges"]["utility"]["models"] == ["judge-a"]
        assert results["judges"]["safety"]["models"] == ["judge-b"]
        roles = json.loads((tmp_path / "sweep" / m / "run.json").read_text())["roles"]
        assert roles["ben_util_judge"]["model"] == "judge-a" and roles["safety_judge"]["model"] == "judge-b"
