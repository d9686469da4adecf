"""The built-in sample's README names only paths and modules that exist (a new user copies them)."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from carryon_eval.dataset.load import SAMPLE_DATASET

ROOT = Path(__file__).resolve().parents[2]


def test_every_path_and_module_the_sample_readme_names_exists():
    text = (SAMPLE_DATASET / "README.md").read_text(encoding="utf-8")
    paths = set(re.findall(r"[`\"]((?:carryon_eval|tests)/[\w/.-]+)[`\"]", text))
    modules = set(re.findall(r"python -m ([\w.]+)", text))
    assert paths and modules
    assert [p for p in sorted(paths) if not (ROOT / p).exists()] == []
    assert [m for m in sorted(modules) if importlib.util.find_spec(m) is None] == []
