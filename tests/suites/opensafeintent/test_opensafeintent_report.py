"""OpenSafeIntent's report section (its blocks in HTML): the page checked in headless Chromium by what it shows. (The
section in a run's results.json, table.md and report.html: tests/suites/opensafeintent/test_opensafeintent_run.py.)"""
from __future__ import annotations

import re

import pytest

from support.browser import chromium, render_headless
from carryon_eval.suites.opensafeintent.metrics import HEADLINE, summarize
from carryon_eval.report.blocks import to_html
from carryon_eval.suites.opensafeintent.report import section_blocks
from carryon_eval.suites.opensafeintent.section import OpenSafeIntentSection
from support.opensafeintent_fixture import fixture_sets

needs_chromium = pytest.mark.skipif(chromium() is None, reason="chromium is not installed (CI installs it)")


@pytest.fixture(scope="module")
def sec():
    return {"model": "m", "judge_model": "j", **summarize([e.scores for e in fixture_sets()], n_resamples=200).to_json()}


@needs_chromium
def test_the_page_shows_the_six_metrics(tmp_path, sec):
    (tmp_path / "report.html").write_text('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>t</title>'
                                          f"</head><body>{to_html(section_blocks(OpenSafeIntentSection.from_json(sec)))}</body></html>\n")
    dom, console = render_headless(tmp_path / "report.html", profile_dir=tmp_path / "chrome-profile")
    assert not console, console
    section = dom[dom.index('id="opensafeintent"'):]
    for m in HEADLINE:
        cell = re.search(rf"<td>{m}</td><td>([^<]*)</td><td>(\d+)</td>", section)
        assert cell is not None, m
        assert (cell.group(1), int(cell.group(2))) == (f"{sec[m]['value']:.4f}", sec[m]["n"])
    assert "Intent probe (7 dual-use replies with harm above 0): FULL 2, CONSTRAINED 2, REFUSE 2, ERROR 1" in section
