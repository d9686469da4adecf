"""`carryon-eval compare` without the [report] extra (scipy, statsmodels): every table, rank and figure, and one
line saying what the mixed models would add and how to add them."""
from __future__ import annotations

import json
import subprocess
import sys

from support.eval_cli import invoke, remote
from support.rollout_data import unique_replies

# A fresh interpreter in which importing scipy or statsmodels fails as it does where they are not installed.
WITHOUT_EXTRA = """
import sys
sys.modules["scipy"] = None
sys.modules["statsmodels"] = None
from carryon_eval.cli import main
sys.argv = ["carryon-eval", "compare", *sys.argv[1:]]
main()
"""


def test_compare_without_the_report_extra_says_what_the_mixed_models_would_add(scripted_server, dataset, tmp_path):
    srv = scripted_server(lambda body: unique_replies({**body, "model": "tgt" if body["model"] in ("a", "b")
                                                       else body["model"]}), models=("a", "b", "sim", "jdg"))
    runs = [tmp_path / "a", tmp_path / "b"]
    for run in runs:
        done = invoke(*remote(srv), "--model", run.name, "--dataset", dataset, "--limit", 1, "--out", run)
        assert done.exit_code == 0, done.output
    proc = subprocess.run([sys.executable, "-c", WITHOUT_EXTRA, *map(str, runs), "--out", str(tmp_path / "cmp")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "## Not computed here" in proc.stdout and "statsmodels is not installed" in proc.stdout
    cmp = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert cmp["missing"] == [f"Mixed linear models: {cmp['mixed_models']['utility']['reason']}"]
    assert "pip install 'carryonbench[report]'" in cmp["missing"][0]
    assert (tmp_path / "cmp" / "leaderboard.html").is_file() and cmp["leaderboard"]["groups"] == ["A", "A"]
    assert "statsmodels is not installed" in (tmp_path / "cmp" / "leaderboard.html").read_text()
