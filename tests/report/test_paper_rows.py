"""`carryon-eval compare RUN... --paper-rows`: the paper's Table 2 rows beside a measured run (real HTTP for the
run, the scripted server), as reported, in a group of their own, never ranked or paired with it."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from support.browser import chromium, render_headless
from support.eval_cli import invoke, remote
from support.rollout_data import make_dataset, unique_replies
from support.scripted_server import ScriptedServer

from carryon_eval.suites.carryonbench.report.paper_rows import table


def test_the_data_file_holds_table_2_as_reported():
    doc = table()
    assert doc["version"] == 1 and "arXiv:2604.27093" in doc["citation"]
    assert doc["setup"]["user_simulator"] == "Gemini-3-Flash"
    rows = {r["model"]: r for r in doc["rows"]}
    assert len(rows) == 14
    gpt = rows["GPT-OSS-120b"]
    assert (gpt["turn1"]["utility"], gpt["oracle"]["utility"], gpt["bc"]["utility"], gpt["recovery"]) == \
        (10.5, 25.2, 52.5, 166.4)
    assert rows["GPT-5-mini"]["nc"] == {"utility": 48.6, "utility_delta": 11.0, "harm": 2.0, "harm_delta": 0.5}
    for r in doc["rows"]:            # the transcription agrees with itself: each Δ is its column minus Turn 1
        for cond in ("bc", "nc"):
            assert abs(r[cond]["utility"] - r["turn1"]["utility"] - r[cond]["utility_delta"]) <= 0.15, r["model"]
            assert abs(r[cond]["harm"] - r["turn1"]["harm"] - r[cond]["harm_delta"]) <= 0.15, r["model"]


@pytest.fixture(scope="module")
def paper_board(tmp_path_factory) -> tuple[Path, str]:
    """`compare RUN --paper-rows --out DIR` of one measured run (the scripted server): DIR and compare's stdout."""
    tmp = tmp_path_factory.mktemp("paper")
    run, out = tmp / "run", tmp / "cmp"
    with ScriptedServer(unique_replies, models=("tgt", "sim", "jdg")) as srv:
        assert invoke(*remote(srv), "--dataset", make_dataset(tmp / "data"), "--out", run).exit_code == 0
    res = invoke("compare", run, "--paper-rows", "--out", out)
    assert res.exit_code == 0, res.output
    return out, res.stdout


def test_compare_with_paper_rows_shows_them_apart_and_unranked(paper_board):
    out, stdout = paper_board
    assert "Reported in the paper" in stdout and "arXiv:2604.27093" in stdout

    rows = [json.loads(line) for line in (out / "leaderboard.jsonl").read_text().splitlines()]
    measured = [r for r in rows if r["status"] != ["reported"]]
    reported = {r["model"]: r for r in rows if r["status"] == ["reported"]}
    assert len(measured) == 1 and len(reported) == 14
    gpt = reported["GPT-OSS-120b (paper)"]
    assert gpt["metrics"]["bc.utility"]["value"] == 52.5 and gpt["metrics"]["recovery"]["value"] == 166.4
    assert gpt["metrics"]["bc.utility"]["ci95"] is None and gpt["metrics"]["recovery"]["ci95"] is None
    assert gpt["simulator"]["model"] == "Gemini-3-Flash" and any("Gemini-3-Flash" in n for n in gpt["notes"])
    groups = {r["comparability_group"] for r in reported.values()}
    assert len(groups) == 1 and measured[0]["comparability_group"] not in groups      # a group of their own

    page = (out / "leaderboard.html").read_text()
    group = groups.pop()
    assert re.search(rf'data-group="{group}" data-unranked="reported in a paper"', page)
    assert "REPORTED IN THE PAPER, not measured here, not ranked" in page
    compared = json.loads((out / "compare.json").read_text())
    assert compared["models"] == [measured[0]["model"]]                 # compare's own table: the measured run
    data = json.loads(re.search(r'<script type="application/json" id="lb-data">(.*?)</script>', page, re.S).group(1))
    assert data["pairs"] and all(diffs == [] for diffs in data["pairs"].values())   # no pair with a paper row


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (CI installs it)")
def test_the_paper_rows_are_shown_unranked_in_headless_chromium(paper_board, tmp_path):
    out, _ = paper_board
    dom, console = render_headless(out / "leaderboard.html", profile_dir=tmp_path / "chrome-profile")
    assert not console, console
    ranks = dict(re.findall(r'<tr class="model"[^>]*data-model="([^"]+)">\s*<td class="rank">([^<]*)</td>', dom))
    paper = {m: r for m, r in ranks.items() if m.endswith("(paper)")}
    assert len(paper) == 14 and set(paper.values()) == {"–"}           # shown beside, never ranked
    assert [r for m, r in ranks.items() if m not in paper] == ["–"]     # the measured run, alone in its group
    assert "GPT-OSS-120b (paper)" in dom and "REPORTED IN THE PAPER" in dom


def test_the_papers_ben_util_rows_never_sit_under_a_rubric_runs_headers(paper_board, tmp_path):
    """Beside runs of rubric utility, the paper's rows (Ben-Util) are left off the board, and the page says why;
    compare's own table of them keeps Ben-Util's header."""
    rubric = tmp_path / "rubric-run"
    shutil.copytree(paper_board[0].parent / "run", rubric)
    results = json.loads((rubric / "results.json").read_text())
    (rubric / "results.json").write_text(json.dumps({**results, "utility_measure": "rubric"}))
    res = invoke("compare", rubric, "--paper-rows", "--out", tmp_path / "cmp")
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (tmp_path / "cmp" / "leaderboard.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rows] != [] and all(r["status"] != ["reported"] for r in rows)
    page = (tmp_path / "cmp" / "leaderboard.html").read_text()
    assert "Rubric util. %" in page and "GPT-OSS-120b (paper)" not in page
    assert ("The rows the paper reports are not shown beside these runs: cannot put different utility measures in "
            "one column") in page
    reported = res.stdout.split("## Reported in the paper", 1)[1]
    assert "Util." in reported and "Rubric util" not in reported
