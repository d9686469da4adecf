"""`carryon-eval compare` without the [report] extra (scipy, statsmodels) says what to install, in one line."""
from __future__ import annotations

import subprocess
import sys

# A fresh interpreter in which importing scipy or statsmodels fails as it does where they are not installed.
WITHOUT_EXTRA = """
import sys
sys.modules["scipy"] = None
sys.modules["statsmodels"] = None
from carryon_eval.cli import main
sys.argv = ["carryon-eval", "compare", *sys.argv[1:]]
main()
"""


def test_compare_without_the_report_extra_names_the_extra_to_install(tmp_path):
    runs = [tmp_path / "a", tmp_path / "b"]
    for run in runs:
        run.mkdir()
    proc = subprocess.run([sys.executable, "-c", WITHOUT_EXTRA, *map(str, runs)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0] == "carryon-eval: error: compare needs scipy and statsmodels: pip install 'carryonbench[report]'"
