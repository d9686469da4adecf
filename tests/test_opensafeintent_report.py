"""OpenSafeIntent's section in results.json, table.md and report.html: alone, and added to a CarryOnBench run's
files (kept as they were); the page checked in headless Chromium by what it shows."""
from __future__ import annotations

import json
import re

import pytest

from browser import chromium, render_headless
from carryon_eval.suites.opensafeintent.metrics import HEADLINE, summarize
from carryon_eval.suites.opensafeintent.report import write_section
from test_opensafeintent_metrics import fixture_sets

needs_chromium = pytest.mark.skipif(chromium() is None, reason="chromium is not installed (CI installs it)")


@pytest.fixture(scope="module")
def sec():
    return {"model": "m", "judge_model": "j", **summarize([e.scores for e in fixture_sets()], n_resamples=200)}


@needs_chromium
def test_the_page_shows_the_six_metrics(tmp_path, sec):
    write_section(tmp_path, sec)
    dom, console = render_headless(tmp_path / "report.html", profile_dir=tmp_path / "chrome-profile")
    assert not console, console
    section = dom[dom.index('id="opensafeintent"'):]
    for m in HEADLINE:
        cell = re.search(rf"<td>{m}</td><td>([^<]*)</td><td>(\d+)</td>", section)
        assert cell is not None, m
        assert (cell.group(1), int(cell.group(2))) == (f"{sec[m]['value']:.4f}", sec[m]["n"])
    assert "Intent probe (7 dual-use replies with harm above 0): FULL 2, CONSTRAINED 2, REFUSE 2, ERROR 1" in section


def test_added_to_a_carryonbench_runs_files(tmp_path, sec):
    (tmp_path / "results.json").write_text(json.dumps({"model": "m", "conditions": {"turn1": {"utility": 1.0}}}))
    (tmp_path / "table.md").write_text("# CarryOnBench\n\n| a |\n")
    (tmp_path / "report.html").write_text("<html><body><h1>CarryOnBench report</h1></body></html>")
    write_section(tmp_path, sec)
    write_section(tmp_path, sec)                     # a rerun replaces the section, never doubles it
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["conditions"] == {"turn1": {"utility": 1.0}}
    assert results["opensafeintent"]["intent_calibrated_utility"]["n"] == 19
    table = (tmp_path / "table.md").read_text()
    assert table.startswith("# CarryOnBench") and table.count("## OpenSafeIntent") == 1
    assert f"| intent_calibrated_utility | {sec['intent_calibrated_utility']['value']:.4f} | 19 |" in table
    page = (tmp_path / "report.html").read_text()
    assert page.count('id="opensafeintent"') == 1 and "<h1>CarryOnBench report</h1>" in page
