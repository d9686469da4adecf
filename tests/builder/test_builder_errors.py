"""carryon-build: a source nested too deeply for the JSON parser and an --out that cannot be made end with one
line (exit 2, no traceback, nothing written), like every other bad input of the builder."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from support.synthetic_source import synthetic_source

from carryonbench_builder.cli import cli


def build(*args: object) -> str:
    result = CliRunner().invoke(cli, ["build", *map(str, args), "--no-llm"], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("carryon-build: error: ") and "Traceback" not in result.output
    return lines[0]


def test_a_source_nested_200k_deep_is_one_line(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    line = build("--source", deep, "--out", tmp_path / "ds")
    assert f"{deep}: JSON nested too deeply" in line and not (tmp_path / "ds").exists()


@pytest.mark.parametrize("where", ["under a file", "in a folder that cannot exist"])
def test_an_out_folder_that_cannot_be_made_is_one_line(tmp_path, where):
    source = synthetic_source(tmp_path / "src.json")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    out = blocker / "ds" if where == "under a file" else Path("/proc/carryon-cannot-write/ds")
    line = build("--source", source, "--out", out)
    expected = f"{blocker} is a file, not a folder" if where == "under a file" else "cannot write in /proc"
    assert f"--out {out}: " in line and expected in line, line


def test_a_source_row_without_scores_is_one_line(tmp_path):
    """safe_rate stands on the annotators' votes: a row with none is refused, never taken as measured."""
    import json
    source = synthetic_source(tmp_path / "src.json")
    rows = json.loads(source.read_text())
    rows[1]["scores"] = []
    source.write_text(json.dumps(rows))
    line = build("--source", source, "--out", tmp_path / "ds")
    assert line == (f"carryon-build: error: {source}: row 1: field 'scores': expected a non-empty list of 1 (safe) "
                    "/ 2 (unsafe) ratings (the annotators' votes safe_rate stands on), got []")
    assert not (tmp_path / "ds").exists()
