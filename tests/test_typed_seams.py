"""The seam between the frame and the suites is typed (issue: results read back as types): results.json's layout
(which suite's section sits at its top level) is known by its one serializer only, carryon_eval/run/results.py, and
compare.json's by its own, carryon_eval/report/comparison.py; app/ and report/ never branch on it, and a suite's
hooks take its own types (no ``Callable[[Any], ...]`` in the suite record)."""
from __future__ import annotations

import re

from support.shared_data import REPO

PACKAGE = REPO / "carryon_eval"


def test_no_module_of_app_or_report_branches_on_the_top_level_section():
    found = [f"{p.relative_to(REPO)}:{i}" for folder in ("app", "report") for p in sorted((PACKAGE / folder).rglob("*.py"))
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if re.search(r"\btop_level\b", line)]
    assert not found, "top_level outside the serializers: " + ", ".join(found)


def test_the_suite_record_hooks_take_typed_arguments():
    text = (PACKAGE / "suite" / "records.py").read_text(encoding="utf-8")
    assert "Callable[[Any]" not in text and "Callable[[ Any" not in text
    assert "record:" in text                    # each suite declares its section's record type
