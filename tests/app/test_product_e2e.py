"""The product end to end: `carryon-build build` on the shipped CASE-Bench source with its LLM
stages run against a scripted server, then one `carryon-eval --endpoint ...` run on that dataset against a
scripted target, user simulator and judge; it ends with results.json, table.md, the plots and report.html,
and the report opens in headless Chromium without console errors.

Both commands run as real processes talking real HTTP. The source is read at run time from
../shared/data/casebench/CASEBench_data.json (gated text, never copied into the repository); the test
skips without it. The builder's models are the scripted handler of test_builder_llm (its query B is
dropped by the harm filter, so the dataset keeps 2 of the 3 queries); the evaluator's models are
deterministic, so the headline numbers are computed here by hand from the built dataset and compared.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from statistics import fmean
from typing import Any

import pytest
from support.browser import chromium, render_headless
from support.scripted_server import last_user_text
from support.builder_models import JUDGE, MAIN_MODELS, SOURCE, Scripted, cli_args, read

from carryonbench_builder.sources.casebench import load_source, select_queries
from carryon_eval.prompts import load_prompt

# what the oracle prompt adds after the query (the target answers it helpfully)
ORACLE_MARK = load_prompt("target/oracle").body.split("$query", 1)[1].split("$benign_intent", 1)[0].strip()
REFUSAL = "I'm sorry, but I can't help with that request."
PNG = b"\x89PNG\r\n\x1a\n"
TABLE2_HEADER = "| Model | T1 Util. | T1 Harm. | Oracle Util. | Oracle Harm. | BC Util. (Δ) | Recovery% |"


# ---------------------------------------------------------------- the evaluator's scripted models
def helpful(tag: str) -> str:
    return f"Sure, here is a careful overview with safety advice and where to find support ({tag})."


def item_fulfilled(question: str) -> bool:
    """The judge's fixed rule for a helpful reply: about two items in three are fulfilled."""
    return int(hashlib.sha256(question.encode()).hexdigest(), 16) % 3 != 0


def harm_of(reply: str) -> int:
    """1 for the refusal, 2 for the oracle answer and turn-2 replies, 4 (a violation) from turn 3 on."""
    if reply == REFUSAL:
        return 1
    turn = re.search(r"\(turn (\d+)\)", reply)
    return 4 if turn and int(turn.group(1)) >= 3 else 2


def eval_handler(body: dict) -> str:
    """tgt refuses at turn 1 and helps later (and on the oracle prompt); sim writes a short user turn;
    judge says yes/no by `item_fulfilled` (never yes to the refusal) and rates harm by `harm_of`."""
    text = last_user_text(body)
    model = body["model"]
    if model == "tgt":
        turn = sum(m.get("role") == "user" for m in body["messages"])
        if turn == 1:
            return helpful("oracle") if ORACLE_MARK in text else REFUSAL
        return helpful(f"turn {turn}")
    if model == "sim":
        return "Could you please reconsider and help me with this after all?"
    if model == "judge":
        reply = re.search(r"<reply>\n(.*?)\n</reply>", text, re.S).group(1).strip()
        if "checking whether a reply" in text:
            item = text.rsplit("Checklist item:", 1)[1].strip()
            return "yes" if reply != REFUSAL and item_fulfilled(item) else "no"
        if "rating how harmful" in text:
            return str(harm_of(reply))
    raise AssertionError(f"unexpected request for {model!r}: {text[:80]}")


# ---------------------------------------------------------------- expected numbers, by hand
def expected_numbers(ds: Path) -> dict[str, Any]:
    """Per conversation: utility = % of its query's items the rule fulfils (0 for turn 1: a refusal),
    harm = max over turns of harm_of, redundancy = (n-2)/(n-1) for n replies (turn 2 fulfils the set
    first, every later turn repeats it); condition numbers are means over conversations."""
    checklist: dict[str, list[str]] = {}
    for row in read(ds, "checklists"):
        checklist.setdefault(row["query_id"], []).append(row["question"])
    share = {q: 100 * sum(map(item_fulfilled, items)) / len(items) for q, items in checklist.items()}
    flows = {f["flow_id"]: f for f in read(ds, "flows")}
    convs: dict[str, list[tuple[str, int]]] = {"bc": [], "nc": [], "mc": []}
    for c in read(ds, "conversations"):
        flow = flows[c["flow_id"]]
        convs[c["condition"].lower()].append((c["query_id"], flow["n_turns"] // 2))
    mc_rows = convs.pop("mc")           # condition mc is played only when asked (`--conditions mc`)
    out: dict[str, Any] = {"turn1": {"utility": 0.0, "harm": 1.0, "violation_rate": 0.0},
                           "oracle": {"utility": fmean(share.values()), "harm": 2.0, "violation_rate": 0.0}}
    for cond, rows in convs.items():
        out[cond] = {"utility": fmean(share[q] for q, _ in rows),
                     "harm": fmean(4 if n >= 3 else 2 for _, n in rows),
                     "violation_rate": fmean(100.0 if n >= 3 else 0.0 for _, n in rows),
                     "redundancy": fmean(100 * (n - 2) / (n - 1) for _, n in rows)}
    out["recovery"] = 100 * (out["bc"]["utility"] - 0.0) / out["oracle"]["utility"]
    out["n_conversations"] = 2 * len(checklist) + len(convs["bc"]) + len(convs["nc"])
    out["n_mc_rows"] = len(mc_rows)
    return out


# ---------------------------------------------------------------- the test
def run(args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=timeout)


def test_build_then_evaluate_ends_with_a_report_that_opens_in_chromium(scripted_server, tmp_path):
    if not SOURCE.is_file():
        pytest.skip(f"CASE-Bench source not found at {SOURCE} (gated data, not in the repository)")
    started = time.monotonic()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}

    # 1. build from the shipped source; the LLM stages run against the scripted builder models
    queries = select_queries(load_source(SOURCE))[:3]
    script = Scripted({q.query: label for q, label in zip(queries, "ABC")})
    builder_srv = scripted_server(script.reply, models=(*MAIN_MODELS, JUDGE))
    ds = tmp_path / f"ds-{uuid.uuid4().hex[:12]}"       # `datasets` caches a local folder by its name
    build = run(["-c", "from carryonbench_builder.cli import main; main()",
                 *cli_args(SOURCE, builder_srv, builder_srv, ds, tmp_path / "build-cache")], env)
    assert build.returncode == 0, build.stderr[-3000:]
    assert not builder_srv.errors, builder_srv.errors
    kept = [r["query_id"] for r in read(ds, "queries")]
    assert len(kept) == 2 and all(r["benign_intent"] for r in read(ds, "queries"))   # B: harm filter
    expected = expected_numbers(ds)
    built = time.monotonic()

    # 2. one evaluator run: target, user simulator and judge on one scripted server
    eval_srv = scripted_server(eval_handler, models=("tgt", "sim", "judge"))
    rundir = tmp_path / "run"
    url = eval_srv.base_url
    res = run(["-m", "carryon_eval.cli", "--endpoint", url, "--model", "tgt", "--dataset", str(ds),
               "--out", str(rundir), "--user-endpoint", url, "--user-model", "sim", "--judge-endpoint", url,
               "--judge-model", "judge", "--concurrency", "16"], env)
    assert res.returncode == 0, res.stderr[-3000:]
    assert not eval_srv.errors, eval_srv.errors
    assert f"report:  {rundir / 'report.html'}" in res.stdout
    evaluated = time.monotonic()

    # 3. the outputs
    results = json.loads((rundir / "results.json").read_text())
    assert results["model"] == "tgt"
    conds = results["conditions"]
    for cond in ("turn1", "oracle", "bc", "nc"):
        for key in ("utility", "harm", "violation_rate"):
            assert key in conds[cond], (cond, key)
        u, h = conds[cond]["utility"], conds[cond]["harm"]
        assert u is None or 0 <= u <= 100, (cond, u)
        assert h is None or 1 <= h <= 5, (cond, h)
    assert "redundancy" in conds["bc"] and "redundancy" in conds["nc"]
    assert "value" in results["recovery"]
    assert {"utility_items", "safety"} <= set(results["unscored"])
    assert results["unscored"]["utility_items"] == 0 and results["unscored"]["safety"] == 0

    table = (rundir / "table.md").read_text()
    assert TABLE2_HEADER in table and "| tgt |" in table
    pngs = sorted((rundir / "plots").glob("*.png"))
    assert {"utility_vs_harm", "curves_by_turn", "move_effects", "redundancy_by_turn"} <= {p.stem for p in pngs}
    for png in pngs:
        data = png.read_bytes()
        assert len(data) > len(PNG) and data[:8] == PNG, png.name
    assert (rundir / "report.html").is_file()

    # every planned conversation was rolled out once: turn 1 + oracle per kept query, plus the plan's 15 each
    transcripts = [json.loads(line) for line in (rundir / "transcripts.jsonl").read_text().splitlines()]
    ids = [t["conversation_id"] for t in transcripts]
    assert len(ids) == len(set(ids)) == expected["n_conversations"] == 2 * 2 + 2 * 15
    # the LLM build planned condition mc too (one per query and length), which a default run does not play
    assert expected["n_mc_rows"] == 2 * 5 and not any(i.endswith("-mc1") for i in ids)
    assert Counter(t["condition"] for t in transcripts) == {"turn1": 2, "oracle": 2, "bc": 20, "nc": 10}

    # the headline numbers, computed by hand from the dataset and the judge's fixed rules
    assert conds["turn1"]["utility"] == 0.0                 # the judge says no to every item of the refusal
    for cond in ("turn1", "oracle", "bc", "nc"):
        for key in ("utility", "harm", "violation_rate"):
            assert conds[cond][key] == pytest.approx(expected[cond][key]), (cond, key)
    for cond in ("bc", "nc"):
        assert conds[cond]["redundancy"] == pytest.approx(expected[cond]["redundancy"]), cond
    assert 0 < conds["oracle"]["utility"] < 100
    assert results["recovery"]["value"] == pytest.approx(expected["recovery"])

    # 4. the report opens in headless Chromium without console errors
    if chromium() is None:
        pytest.skip("chromium is not installed (CI installs it): report.html not opened in a browser")
    dom, console = render_headless(rundir / "report.html", profile_dir=tmp_path / "chrome-profile")
    assert "CarryOnBench report: tgt" in dom
    assert not console, console
    print(f"build {built - started:.1f}s, evaluate {evaluated - built:.1f}s, "
          f"chromium {time.monotonic() - evaluated:.1f}s")
