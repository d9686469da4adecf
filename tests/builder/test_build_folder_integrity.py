"""`carryon-build build` never deletes a user's files: a rebuild replaces only what the earlier
build's MANIFEST lists, refuses with one line when other files are there unless --force (which keeps them);
--out naming a file, and a malformed MANIFEST.json given to verify, are one line, not a traceback."""
from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner
from support.synthetic_source import synthetic_source

from carryonbench_builder.cli import cli


def build(*args: Any) -> Any:
    return CliRunner().invoke(cli, ["build", *map(str, args), "--no-llm"], catch_exceptions=False)


def one_error_line(result: Any) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("carryon-build: error: "), result.stderr
    return lines[0]


def test_a_rebuild_keeps_the_users_files_refusing_without_force(tmp_path):
    src, out = synthetic_source(tmp_path / "source.json"), tmp_path / "B"
    assert build("--source", src, "--out", out).exit_code == 0
    first = json.loads((out / "MANIFEST.json").read_text())
    (out / "MY_NOTES.txt").write_text("my notes")
    (out / "analysis").mkdir()
    (out / "analysis" / "a.csv").write_text("a,b\n1,2\n")

    line = one_error_line(build("--source", src, "--out", out))
    assert "2 file(s) that no build wrote" in line and "analysis/a.csv" in line and "--force" in line
    assert (out / "MY_NOTES.txt").read_text() == "my notes"

    assert build("--source", src, "--out", out, "--force").exit_code == 0
    assert (out / "MY_NOTES.txt").read_text() == "my notes"
    assert (out / "analysis" / "a.csv").read_text() == "a,b\n1,2\n"
    assert json.loads((out / "MANIFEST.json").read_text())["files"] == first["files"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []    # no .old/.tmp folder left


def test_a_rebuild_over_an_earlier_build_alone_needs_no_force(tmp_path):
    src, out = synthetic_source(tmp_path / "source.json"), tmp_path / "B"
    assert build("--source", src, "--out", out).exit_code == 0
    assert build("--source", src, "--out", out).exit_code == 0


def test_out_naming_an_existing_file_is_one_line(tmp_path):
    a_file = tmp_path / "B"
    a_file.write_text("mine")
    line = one_error_line(build("--source", synthetic_source(tmp_path / "source.json"), "--out", a_file))
    assert "exists and is not a folder" in line
    assert a_file.read_text() == "mine"


def test_verify_names_a_malformed_manifest_in_the_folder(tmp_path):
    src, out = synthetic_source(tmp_path / "source.json"), tmp_path / "B"
    assert build("--source", src, "--out", out).exit_code == 0
    good = tmp_path / "release-MANIFEST.json"
    good.write_bytes((out / "MANIFEST.json").read_bytes())
    (out / "MANIFEST.json").write_bytes(b"\xff{ not json")
    result = CliRunner().invoke(cli, ["verify", str(out), "--manifest", str(good)], catch_exceptions=False)
    assert result.exit_code == 1 and "MANIFEST.json: differs from" in result.stdout
    result = CliRunner().invoke(cli, ["verify", str(out)], catch_exceptions=False)
    assert result.exit_code == 1 and "not a CarryOnBench manifest" in result.stdout
