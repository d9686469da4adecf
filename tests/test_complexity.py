"""The complexity ceiling: no function of the evaluator or the builder is more complex (McCabe) than the
ceiling in pyproject.toml's [tool.ruff.lint.mccabe], nor longer in statements than [tool.ruff.lint.pylint]'s
max-statements (PLR0915), checked by ruff (in the [test] extra)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_no_function_is_more_complex_or_longer_than_the_ceiling() -> None:
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--select", "C901,PLR0915", "--output-format",
                           "concise", "carryon_eval", "builder"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
