"""A run whose user simulator or judge fell back to the target model says so first and in every artifact
(status self-simulated / self-judged), and compare and the leaderboard keep it apart from runs under a fixed
simulator and judge (real HTTP, the scripted server)."""
from __future__ import annotations

import json
from typing import Any

from support.eval_cli import invoke, remote
from support.rollout_data import unique_replies
from support.scripted_server import last_user_text

from carryon_eval.run.results import STATUS_LINES

SIM_PROMPT = "Requirements for the message you write"
JUDGE_PROMPTS = ("checking whether a reply", "rating how harmful", "Classify that next message", "hidden purpose",
                 "the user was meant to state this purpose")


def by_prompt(body: dict) -> Any:
    """One model name plays every role: each request is answered as the role its prompt belongs to."""
    text = last_user_text(body)
    role = "sim" if SIM_PROMPT in text else "jdg" if any(p in text for p in JUDGE_PROMPTS) else "tgt"
    return unique_replies({**body, "model": role if body["model"] == "tgt" else body["model"]})


def test_a_self_judged_run_says_so_everywhere_and_is_grouped_apart(scripted_server, dataset, tmp_path):
    srv = scripted_server(by_prompt, models=("tgt", "sim", "jdg"))
    own, fixed, half = tmp_path / "own", tmp_path / "fixed", tmp_path / "half"
    res = invoke("--endpoint", srv.base_url, "--model", "tgt", "--dataset", dataset, "--out", own)
    assert res.exit_code == 0, res.output
    first = res.stdout.splitlines()[:2]
    assert first[0].startswith("SELF-SIMULATED") and "--user-model" in first[0], first
    assert first[1].startswith("SELF-JUDGED") and "--judge-model" in first[1], first
    results = json.loads((own / "results.json").read_text())
    assert {"self-simulated", "self-judged"} <= set(results["run"]["status"])
    table = (own / "table.md").read_text()
    assert STATUS_LINES["self-judged"] in table and STATUS_LINES["self-simulated"] in table
    page = (own / "report.html").read_text()
    assert "SELF-JUDGED" in page and "SELF-SIMULATED" in page

    assert invoke(*remote(srv), "--dataset", dataset, "--out", fixed).exit_code == 0
    fixed_status = json.loads((fixed / "results.json").read_text())["run"]["status"]
    assert "self-judged" not in fixed_status and "self-simulated" not in fixed_status
    # same judge as `fixed`, but the target plays its own user: only the simulator differs
    res = invoke("--endpoint", srv.base_url, "--model", "tgt", "--judge-endpoint", srv.base_url, "--judge-model",
                 "jdg", "--dataset", dataset, "--out", half)
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("SELF-SIMULATED") and "SELF-JUDGED" not in res.stdout
    assert json.loads((half / "results.json").read_text())["run"]["status"][:1] == ["self-simulated"]

    cmp = invoke("compare", own, fixed, half, "--out", tmp_path / "cmp")
    assert cmp.exit_code == 0, cmp.output
    assert "self-judged" in cmp.stdout and "users were simulated by different models" in cmp.stderr
    rows = {r["run"]: r for r in map(json.loads, (tmp_path / "cmp" / "leaderboard.jsonl").read_text().splitlines())}
    # leaderboard.jsonl names each run relative to the leaderboard's folder
    by_run = {name: rows[f"../{folder.name}"] for name, folder in (("own", own), ("fixed", fixed), ("half", half))}
    assert len({r["comparability_group"] for r in by_run.values()}) == 3      # simulator apart as judges are
    assert by_run["own"]["simulator"] == {"model": "tgt", "local": False}
    assert by_run["fixed"]["simulator"] == {"model": "sim", "local": False}
    assert {"self-simulated", "self-judged"} <= set(by_run["own"]["status"])
    html = (tmp_path / "cmp" / "leaderboard.html").read_text()
    assert "simulated by different models" in html and "judged by different judges" in html
