"""A sweep cannot fail at its end: on an install without scipy and statsmodels (simulated in the sweep's own process
by an import blocker on PYTHONPATH, the code under test untouched) it ends with exit 0 and a leaderboard whose page
says what the mixed models would add; SIGTERM and SIGINT stop it as they stop a run (one line, exit 4, every run
resumable to the end)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from support.browser import chromium, render_headless
from support.eval_cli import invoke, slowly
from support.rollout_data import make_dataset, unique_replies
from support.scripted_server import ScriptedServer

TARGETS = ("t1", "t2")
BLOCKER = '''import sys


class _NotInstalled:
    """An install without these packages: importing one fails as it would there."""
    blocked = ("scipy", "statsmodels")

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
'''


def handler(body: dict) -> Any:
    return unique_replies({**body, "model": "tgt" if body["model"] in TARGETS else body["model"]})


def write_plan(path: Path, srv: Any, dataset: Path, extra: str = "") -> Path:
    head = (f'dataset = "{dataset}"\nuser-endpoint = "{srv.base_url}"\nuser-model = "sim"\n'
            f'judge-endpoint = "{srv.base_url}"\njudge-model = "jdg"\nconcurrency = 2\n{extra}')
    path.write_text(head + "".join(f'\n[[target]]\nname = "{m}"\nendpoint = "{srv.base_url}"\nmodel = "{m}"\n'
                                   for m in TARGETS))
    return path


def without_stats(tmp: Path) -> dict[str, str]:
    """The environment of a process on an install without scipy and statsmodels."""
    site = tmp / "no-stats"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}


def sweep(plan: Path, out: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "carryon_eval.cli", "sweep", str(plan), "--out", str(out)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, subprocess.CompletedProcess]]:
    tmp = tmp_path_factory.mktemp("sweep-end")
    env = without_stats(tmp)
    blocked = subprocess.run([sys.executable, "-c", "import scipy"], env=env, capture_output=True, text=True)
    assert blocked.returncode == 1 and "No module named 'scipy'" in blocked.stderr     # the install lacks them
    with ScriptedServer(handler, models=(*TARGETS, "sim", "jdg")) as srv:
        plan, out = write_plan(tmp / "plan.toml", srv, make_dataset(tmp / "data")), tmp / "sweep"
        proc = sweep(plan, out, env)
        stdout, stderr = proc.communicate(timeout=600)
    yield out, subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def test_a_sweep_without_scipy_and_statsmodels_ends_with_a_leaderboard_saying_what_is_missing(swept):
    out, done = swept
    assert done.returncode == 0, done.stderr
    assert "sweep: 2 of 2 runs finished" in done.stderr + done.stdout and "Traceback" not in done.stderr
    rows = [json.loads(line) for line in (out / "leaderboard.jsonl").read_text().splitlines()]
    assert sorted(r["target_model"] for r in rows) == list(TARGETS)
    cmp = json.loads((out / "compare.json").read_text())
    for model in cmp["mixed_models"].values():               # not fitted, saying why and how to add them
        assert model["coefficients"] is None and "statsmodels" in model["reason"]
        assert "pip install 'carryonbench[report]'" in model["reason"]
    assert len(cmp["missing"]) == 1 and cmp["missing"][0].startswith("Mixed linear models: not fitted")
    assert "## Not computed here" in (out / "table.md").read_text()
    spearman = cmp["spearman"]["bc"]                          # two models: rho with no p-value, computed without scipy
    assert spearman["n"] == 2 and "fewer than 3 models" in (spearman["reason"] or "") or spearman["rho"] is None


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (CI installs it)")
def test_the_leaderboard_page_without_statsmodels_says_what_the_mixed_models_would_add_in_chromium(swept, tmp_path):
    out, done = swept
    assert done.returncode == 0, done.stderr
    dom, console = render_headless(out / "leaderboard.html", profile_dir=tmp_path / "chrome-profile")
    assert not [line for line in console if "Uncaught" in line], console
    section = dom.split('<div id="missing">', 1)[1].split("</div>", 1)[0]
    assert "Not computed here" in section and "Mixed linear models" in section
    assert "statsmodels is not installed" in section and "carryonbench[report]" in section
    assert "Tables 3-4" in section                        # what they would add
    assert 'id="leaderboard"' in dom and dom.count('class="model"') >= 2     # the ranks stand without them


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_a_sweep_in_one_line_with_exit_4_and_a_rerun_finishes_it(sig, scripted_server, dataset,
                                                                               tmp_path):
    srv = scripted_server(slowly(handler, 0.05), models=(*TARGETS, "sim", "jdg"))
    plan, out = write_plan(tmp_path / "plan.toml", srv, dataset, extra="limit = 1\n"), tmp_path / "sweep"
    dry = invoke("sweep", plan, "--out", out, "--dry-run")
    planned = {m.group(1): int(m.group(2).replace(",", ""))
               for m in re.finditer(r"^(all)\s+plan\s+([\d,]+)", dry.stdout, re.M)}["all"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    proc = sweep(plan, out, env)
    deadline = time.monotonic() + 120
    while srv.count() < 6 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 4, stderr
    assert stderr.strip().splitlines()[-1] == (f"carryon-eval: sweep stopped ({sig.name}): 0 of 2 runs finished; "
                                               "rerun the same command to resume t1, t2"), stderr
    assert "Traceback" not in stderr and not (out / "leaderboard.html").exists()
    assert 6 <= srv.count() < planned
    again = sweep(plan, out, env)
    stdout, stderr = again.communicate(timeout=300)
    assert again.returncode == 0, stderr
    assert all((out / m / "results.json").is_file() for m in TARGETS) and (out / "leaderboard.html").is_file()
    in_flight = 4 * 2           # at most the concurrency (2) of each of the four models was asked twice
    assert planned <= srv.count() <= planned + in_flight     # resumed: what was answered is not paid again
