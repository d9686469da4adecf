"""SORRY-Bench's 45 categories and 4 domains (vendored facts: carryon_eval/data/sorry_bench_domains.json)."""
from __future__ import annotations

import json
from importlib import resources

_DATA = json.loads((resources.files("carryon_eval.dataset") / "data" / "sorry_bench_domains.json").read_text(encoding="utf-8"))

DOMAINS: tuple[str, ...] = tuple(_DATA["domains"])
CATEGORIES: dict[str, dict] = _DATA["categories"]          # name -> {"sorry_bench_id", "domain"}
EXCLUDED_CATEGORIES: frozenset[str] = frozenset(_DATA["excluded_by_carryonbench"])
