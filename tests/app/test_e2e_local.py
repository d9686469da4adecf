"""End to end on the real embedded model (Gemma 3 270M under llama.cpp), as a new user runs it:
`carryon-eval` with no endpoint and no dataset, on a short --limit. Every phase must complete and every
number in results.json must be computed or explicitly unscored (null with a stated reason); Ctrl-C must
leave no llama.cpp server behind and a run folder that the same command resumes; a crash of the server ends the
run at once with one line that names it."""
from __future__ import annotations

import json
import re
import os
import signal
import subprocess
import sys
import time
from typing import Any, Iterator

import pytest
from support.embedded import crash_mid_call, engine_pids as llama_server_pids, needs_local

from carryon_eval.model.local import LOCAL_MODEL_NOTICE

pytestmark = [pytest.mark.local_model, needs_local]
CLI = [sys.executable, "-c", "from carryon_eval.cli import main; main()"]
# Ctrl-C as a terminal delivers it: SIGINT handled even where the tests were started with it ignored (a shell's
# background job), which the child would inherit and so never stop
CTRL_C_CLI = [sys.executable, "-c", "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
              "from carryon_eval.cli import main; main()"]
METRICS = ("utility", "harm", "harm_mean_turns", "violation_rate", "harm5_rate")


def numbers_or_reasons(results: dict[str, Any]) -> Iterator[str]:
    """Every headline number that is neither a number nor a null with a reason."""
    for cond, block in results["conditions"].items():
        for m in METRICS + tuple(k for k in block if k.endswith("_delta") or k == "redundancy"):
            v = block.get(m)
            if v is None and not block["reasons"].get(m):
                yield f"{cond}.{m} is null without a reason"
            elif v is not None and not isinstance(v, (int, float)):
                yield f"{cond}.{m} is {v!r}"
    rec = results["recovery"]
    if rec["value"] is None and not rec["reason"]:
        yield "recovery is null without a reason"


def test_default_run_on_the_embedded_model_interrupted_then_resumed(tmp_path):
    before = llama_server_pids()
    cmd = CTRL_C_CLI + ["--limit", "1", "--max-tokens", "64", "--out", str(tmp_path / "run")]   # the cap: for time
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}

    # 1. Ctrl-C in the middle of the rollout
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    transcripts = tmp_path / "run" / "transcripts.jsonl"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        if transcripts.is_file() and transcripts.read_text().count("\n") >= 1:
            break
        time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    # A bound against a hang, not a speed claim: at load 18 the cancelled calls, the files and the embedded
    # server's stop took over 60 s (a CI run on a busy machine).
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, (out, err)
    assert "rerun the same command to resume" in err
    assert out.splitlines()[0] == LOCAL_MODEL_NOTICE
    time.sleep(1)
    assert llama_server_pids() - before == set(), "a llama.cpp server outlived the interrupted run"
    done_before = transcripts.read_text().count("\n")

    # 2. the same command resumes and runs every phase to the end
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == LOCAL_MODEL_NOTICE
    summary = re.compile(r"rollout: (\d+)/(\d+) conversations .*\((\d+) new\)")   # not the progress lines
    finished, total, new = map(int, next(m for m in map(summary.match, lines) if m).groups())
    assert finished == total and new == total - done_before     # only the unfinished ones were run again
    assert llama_server_pids() - before == set()
    run = tmp_path / "run"
    for name in ("run.json", "transcripts.jsonl", "utility_judgments.jsonl", "safety_judgments.jsonl",
                 "results.json", "table.md", "report.html"):
        assert (run / name).is_file(), name
    assert f"results: {run / 'results.json'}" in r.stdout and f"report:  {run / 'report.html'}" in r.stdout
    n_transcripts = transcripts.read_text().count("\n")
    assert n_transcripts > done_before
    conv_ids = [json.loads(line)["conversation_id"] for line in transcripts.read_text().splitlines()]
    assert len(conv_ids) == len(set(conv_ids)), "a finished conversation was run twice"

    results = json.loads((run / "results.json").read_text())
    assert list(numbers_or_reasons(results)) == []
    assert results["unscored"]["utility_items_total"] > 0 and results["unscored"]["safety_total"] > 0
    assert results["run"]["notice"] == LOCAL_MODEL_NOTICE
    html = (run / "report.html").read_text()
    assert LOCAL_MODEL_NOTICE.split(":")[0] in html


def test_triplet_condition_on_the_embedded_model(tmp_path):
    """`--conditions triplet --opensafeintent DIR` on the built-in sample's triplets config, end to end on the
    embedded model; results.json has the triplet section (OpenSafeIntent's reference definitions) and report.html
    shows it in Chromium. The judge prompts are the release's files (skipped, saying why, without the copy).
    Gemma 3 270M, a base model, mostly echoes the reference judges' long prompts instead of answering in their
    format: every such reply is kept unscored and counted, never read as a score, and a run whose judge answered
    nothing usable says so and exits 3 with everything written."""
    from support.browser import chromium, render_headless
    from support.shared_data import OPENSAFEINTENT

    if not (OPENSAFEINTENT / "dataset.json").is_file():
        pytest.skip(f"the OpenSafeIntent release copy (the triplets' judge prompts) is not at {OPENSAFEINTENT}")
    before = llama_server_pids()
    run = tmp_path / "run"
    proc = subprocess.run(CLI + ["--limit", "1", "--conditions", "triplet", "--opensafeintent", str(OPENSAFEINTENT),
                                 "--max-tokens", "64", "--out", str(run)], capture_output=True,
                          text=True, timeout=2400, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert llama_server_pids() - before == set()
    transcripts = [json.loads(line) for line in (run / "transcripts.jsonl").read_text().splitlines()]
    assert len(transcripts) == 7 and {t["condition"] for t in transcripts} == {"triplet"}     # one prompt-set
    t = json.loads((run / "results.json").read_text())["triplet"]
    assert t["n_sets"] == 1 and t["definitions"].startswith("OpenSafeIntent's reference definitions")
    judged = {name: [json.loads(line) for line in (run / f"osi_{name}_judgments.jsonl").read_text().splitlines()]
              for name in ("helpfulness", "harmfulness")}
    for name, rows in judged.items():               # one helpfulness and one harmfulness judgment per reply
        assert len(rows) == 7, name
        unparsed = [r for r in rows if r["value"] is None]
        assert all(r["problem"] and r["raw"] is not None for r in unparsed), name      # kept, with the reason
        assert t["unscored"][name] == len(unparsed), name                             # and counted
    for key in ("triplet_safety", "intent_calibrated_utility", "non_malicious_worst_case_utility"):
        assert set(t[key]) == {"value", "n", "ci95"}, key
        assert (t[key]["value"] is None) == (t[key]["n"] == 0), key     # no number without what it stands on
    if t["triplet_safety"]["n"] == 0:
        assert proc.returncode == 3, proc.stderr[-3000:]
        assert "judge answered nothing usable: no scored number for condition(s) triplet" in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr[-3000:]
    for key in ("paraphrase", "response_modes", "intent_probe", "failure_profile"):
        assert key in t, key
    assert "## Triplet evaluation (OpenSafeIntent's reference definitions)" in (run / "table.md").read_text()
    if chromium() is None:
        pytest.skip("chromium is not installed (CI installs it): the report was not rendered")
    dom, console = render_headless(run / "report.html", profile_dir=tmp_path / "chrome-profile")
    assert '<section id="triplet">' in dom and "OpenSafeIntent's reference definitions" in dom
    assert not console, console


def test_a_crash_of_the_embedded_server_ends_the_run_with_one_line(tmp_path):
    """The server dies of SIGSEGV mid-rollout: the run ends within 2 minutes, exit 4, with one line naming the
    signal and the server's log (which exists); the same crash again drops the rerun hint (a rerun cannot help)."""
    before = llama_server_pids()
    cmd = CLI + ["--limit", "1", "--out", str(tmp_path / "run")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    lines = []
    for attempt in range(2):
        code, out, err, log = crash_mid_call(cmd, env)
        assert code == 4, (out, err[-3000:])
        line = err.strip().splitlines()[-1]
        assert line.startswith("carryon-eval: the embedded model server crashed (killed by signal SIGSEGV; "
                               f"its log: {log})"), line
        assert log.is_file() and "Traceback" not in err
        lines.append(line)
    assert lines[0].endswith("; rerun the same command to resume")
    assert "crashed the same way on the last try, so a rerun will not help" in lines[1]
    assert "rerun the same command" not in lines[1]
    assert llama_server_pids() - before == set()
