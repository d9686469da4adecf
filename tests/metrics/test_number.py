"""A number is a record: Number and the records that hold numbers (a condition's block, a breakdown cell, a
leaderboard cell, a paired difference, the truncation count) are written to JSON and read back to the same record,
in the shape results.json, compare.json and leaderboard.jsonl have always had; the codec they share reads what it
wrote, byte for byte. Every class of the package that writes itself with ``to_json`` reads itself back with
``from_json``, and each number and section record reads back what a real run's results.json, compare.json and
leaderboard.jsonl hold (the recorded run folder, reported, and compared with a copy of itself)."""
from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Optional

import pytest
from support.eval_cli import invoke
from support.shared_data import FIXTURES, REPO

from carryon_eval.codec import OMIT_NONE, Record
from carryon_eval.metrics.number import BreakdownCell, MetricBlock, Number
from carryon_eval.report.comparison import Comparison
from carryon_eval.report.leaderboard import Difference
from carryon_eval.run.results import Results
from carryon_eval.suite.inputs import Cell
from carryon_eval.suites.carryonbench.metrics.headline import Truncation


@dataclass(frozen=True)
class Part(Record):
    share: Optional[Number] = None
    count: int = 0


@dataclass(frozen=True)
class Whole(Record):
    name: str
    parts: dict[str, Part] = field(default_factory=dict)
    rows: list[Part] = field(default_factory=list)
    renamed: Optional[str] = field(default=None, metadata={"key": "other name", **OMIT_NONE})


def test_the_codec_reads_back_what_it_wrote_keys_in_field_order():
    whole = Whole("w", {"a": Part(Number(0.5, ci95=[0.25, 0.75], n=4), 3)}, [Part(None, 2)], renamed="r")
    data = whole.to_json()
    assert list(data) == ["name", "parts", "rows", "other name"]
    assert data["parts"]["a"]["share"] == {"value": 0.5, "ci95": [0.25, 0.75], "n": 4}
    assert Whole.from_json(json.loads(json.dumps(data))) == whole
    assert "other name" not in Whole("w").to_json()


def test_the_codec_keeps_numbers_as_they_were_read():
    data = {"name": "w", "rows": [{"share": {"value": 3, "scored_share": 100}, "count": 1}]}
    back = Whole.from_json(data).to_json()
    assert json.dumps(back["rows"]) == json.dumps(data["rows"])      # 3 stays 3, never 3.0


def test_a_number_says_what_it_stands_on_and_why_it_is_missing():
    n = Number(61.25, ci95=[55.0, 67.5], bounds=[58.0, 64.0], scored_share=94.0, n=410)
    assert n.under_95 and not Number(61.25, scored_share=95.0).under_95
    assert Number.from_json(n.to_json()) == n
    missing = Number(reason="condition not run")
    assert missing.to_json() == {"value": None, "reason": "condition not run"} and not missing.under_95


def test_a_metric_block_reads_back_from_a_condition_block_and_gives_numbers():
    block = MetricBlock({"utility": 61.0, "harm": None}, {"utility": [55.0, 67.0], "harm": None},
                        {"harm": "no conversation decided by scored judgments"},
                        {"utility": [58.0, 64.0], "harm": None}, {"harm": "none"})
    condition = {**block.to_json(), "n_conversations": 12}       # a condition's block holds more keys
    assert list(condition)[:2] == ["utility", "harm"]
    assert MetricBlock.from_json(condition) == block
    assert block.number("utility", {"utility": 90.0}, 12) == Number(61.0, [55.0, 67.0], [58.0, 64.0], 90.0, 12)
    assert block.number("harm").reason == "no conversation decided by scored judgments"


def test_the_cells_differences_and_truncation_read_back():
    cell = BreakdownCell(3, {"utility": 50.0, "harm": None}, {"utility": [40.0, 60.0]}, {"utility_items": 100.0})
    assert list(cell.to_json()) == ["n", "utility", "harm", "bounds", "scored"]
    assert BreakdownCell.from_json(cell.to_json()) == cell and cell.number("utility").bounds == [40.0, 60.0]
    board = Cell(1.5, [1.0, 2.0], 90.0)
    assert board.to_json() == {"value": 1.5, "ci95": [1.0, 2.0], "scored_share": 90.0} and board.under_95
    assert Cell.from_json(board.to_json()) == board
    assert Cell(None, reason="not run").to_json()["reason"] == "not run"
    diff = Difference(0, 1, 2.0, [1.0, 3.0], 5, differs=True)
    assert diff.to_json() == {"a": 0, "b": 1, "value": 2.0, "ci95": [1.0, 3.0], "n": 5, "reason": None,
                              "differs": True}
    assert Difference.from_json(diff.to_json()) == diff and diff.number.n == 5
    cut = Truncation(3, 2, 1)
    assert cut.to_json() == {"replies": 3, "with_finish_reason": 2, "length": 1, "share": 50.0}
    assert Truncation.from_json(cut.to_json()) == cut


#: classes with a ``to_json`` that are no record read back: a protocol, and the dry run's cost table and prices
#: (written for people and scripts to read, never read back by the evaluator)
WRITE_ONLY = {"CostRow", "Estimate", "Price"}


def test_every_class_that_writes_json_reads_it_back():
    missing = []
    for path in sorted((REPO / "carryon_eval").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                methods = {f.name for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
                if "to_json" in methods and "from_json" not in methods and node.name not in WRITE_ONLY:
                    missing.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    assert not missing, "to_json without from_json: " + ", ".join(missing)


@pytest.fixture(scope="module")
def real_outputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict, list[dict]]:
    """results.json of the recorded run folder (reported again), and compare.json and leaderboard.jsonl of it
    beside a copy of itself."""
    base = tmp_path_factory.mktemp("real")
    shutil.copytree(FIXTURES / "run_v0_1_0", base / "a")
    assert invoke("report", base / "a").exit_code == 0
    shutil.copytree(base / "a", base / "b")
    compared = invoke("compare", base / "a", base / "b", "--out", base / "cmp")
    assert compared.exit_code == 0, compared.output
    rows = [json.loads(line) for line in (base / "cmp" / "leaderboard.jsonl").read_text().splitlines()]
    return (json.loads((base / "a" / "results.json").read_text()),
            json.loads((base / "cmp" / "compare.json").read_text()), rows)


def same(record: Any, data: dict) -> None:
    """``record`` written again is ``data``'s keys it holds, byte for byte and in order."""
    written = record.to_json()
    assert json.dumps(written) == json.dumps({k: data[k] for k in written}), (written, data)


def test_each_number_record_reads_back_what_a_real_run_wrote(real_outputs):
    results, cmp, rows = real_outputs
    assert json.dumps(Results.from_json(results).to_json()) == json.dumps(results)
    blocks = [b for b in results["conditions"].values() if b.get("n_conversations")]
    assert blocks
    for block in blocks:
        same(MetricBlock.from_json(block), block)
        same(Truncation.from_json(block["truncated"]), block["truncated"])
    cells = [c for domain in results["by_domain"].values() for c in domain.values() if isinstance(c, dict)]
    assert cells
    for c in cells:
        same(BreakdownCell.from_json(c), c)
    metrics = [m for row in rows for m in row["metrics"].values()]
    assert any(m["value"] is not None for m in metrics)
    for m in metrics:
        same(Cell.from_json(m), m)
        same(Number.from_json(m), m)
    pairs = [d for diffs in cmp["pairs"].values() for d in diffs]
    assert pairs
    for d in pairs:
        same(Difference.from_json(d), d)
    assert json.dumps(Comparison.from_json(cmp).to_json()) == json.dumps(cmp)
