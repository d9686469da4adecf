"""`carryon-build build --min-safe-rate`: the stricter subset of queries whose safe context most annotators
judged safe, said in MANIFEST.json and the card (a default build stays byte-identical: tests/builder/test_builder.py)."""
import json
import subprocess
import sys
import os

import pytest
from support.shared_data import CASEBENCH as SOURCE

EXCLUDED = {"child-related crimes", "evasion of law enforcement", "non-sexual explicit content generation",
            "social stereotype promotion"}
pytestmark = pytest.mark.skipif(
    not SOURCE.is_file(), reason=f"the CASE-Bench source is not at {SOURCE} (gated data, beside the clone or further up)")


def carryon_build(*args):
    return subprocess.run([sys.executable, "-c", "from carryonbench_builder.cli import main; main()", *map(str, args)],
                          capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def low_safe_rate_queries() -> tuple[int, int]:
    """(selected queries, those whose safe context has safe_rate < 0.5), counted from the source itself."""
    rows = json.loads(SOURCE.read_text(encoding="utf-8"))
    safe = [r for r in rows if str(r["context_intended_to_be_safe"]) == "True" and r["category"] not in EXCLUDED]
    return len(safe), sum(float(r["safe_rate"]) < 0.5 for r in safe)


def test_min_safe_rate_builds_the_stricter_subset_and_says_so(tmp_path):
    n, low = low_safe_rate_queries()
    default, strict = tmp_path / "default", tmp_path / "strict"
    r = carryon_build("build", "--source", SOURCE, "--out", default, "--no-llm")
    assert r.returncode == 0, r.stderr
    default_log = r.stderr
    r = carryon_build("build", "--source", SOURCE, "--out", strict, "--no-llm", "--min-safe-rate", 0.5)
    assert r.returncode == 0, r.stderr
    assert f"safe contexts: {low} of {n} queries have safe_rate < 0.5" in default_log
    assert "min_safe_rate" not in json.loads((default / "MANIFEST.json").read_text())["counts"]
    counts = json.loads((strict / "MANIFEST.json").read_text())["counts"]
    assert counts["min_safe_rate"] == {"threshold": 0.5, "kept": n - low, "dropped": low}
    assert counts["queries"] == n - low
    card = (strict / "README.md").read_text()
    assert f"| queries in this dataset | {n - low} (only queries whose safe context has `safe_rate` >= 0.5: " \
           f"`carryon-build --min-safe-rate 0.5`, {low} dropped; 0 of these have `safe_rate` < 0.5) |" in card
    from datasets import load_dataset
    queries = load_dataset(str(strict), "queries", split="test")
    assert min(queries["safe_rate"]) >= 0.5


def test_min_safe_rate_out_of_range_is_one_line_exit_2(tmp_path):
    r = carryon_build("build", "--source", SOURCE, "--out", tmp_path / "x", "--no-llm", "--min-safe-rate", 1.5)
    assert r.returncode == 2 and "--min-safe-rate" in r.stderr and "Traceback" not in r.stderr
