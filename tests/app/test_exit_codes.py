"""What the exit code says: 0 done, 2 bad input (one line, whatever the command), 3 nothing scored for some
condition, 4 incomplete and resumable (a spent --max-calls budget too); `--help` lists them."""
from __future__ import annotations

import shutil

import click
import pytest
from click.testing import CliRunner
from support.eval_cli import invoke, one_error_line
from support.shared_data import OPENSAFEINTENT as SHIPPED

from carryon_eval.cli import cli
from carryonbench_builder.cli import cli as build_cli


def commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of ``group``: () for the group itself, then each subcommand (and theirs)."""
    out = [path]
    for name, command in sorted(group.commands.items()):
        out += commands(command, (*path, name)) if isinstance(command, click.Group) else [(*path, name)]
    return out


@pytest.mark.parametrize("path", commands(cli), ids=lambda p: " ".join(p) or "carryon-eval")
def test_an_unknown_option_is_one_line_in_every_command_of_carryon_eval(path):
    line = one_error_line(invoke(*path, "--no-such-option"))
    where = " ".join(("carryon-eval", *path))
    assert line.startswith("carryon-eval: error: No such option '--no-such-option'") and line.endswith(
        f"(see '{where} --help')"), line


@pytest.mark.parametrize("path", commands(build_cli), ids=lambda p: " ".join(p) or "carryon-build")
def test_an_unknown_option_is_one_line_in_every_command_of_carryon_build(path):
    result = CliRunner().invoke(build_cli, [*path, "--no-such-option"], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    where = " ".join(("carryon-build", *path))
    assert len(lines) == 1 and lines[0].startswith("carryon-build: error: No such option '--no-such-option'")
    assert lines[0].endswith(f"(see '{where} --help')"), lines


def test_a_missing_argument_and_an_unknown_command_are_one_line():
    assert one_error_line(invoke("report")) == ("carryon-eval: error: Missing argument 'RUNDIR'. "
                                                "(see 'carryon-eval report --help')")
    assert one_error_line(invoke("reprot")) == ("carryon-eval: error: No such command 'reprot'. (Did you mean one "
                                                "of: 'export', 'report'?) "
                                                "(see 'carryon-eval --help')")


def test_help_lists_the_exit_codes():
    text = " ".join(invoke("--help").output.split())
    for code in ("0 done", "2 bad input", "3 written, but the judge answered nothing usable",
                 "4 incomplete: stopped before the end (--max-calls spent"):
        assert code in text, code


@pytest.mark.skipif(not (SHIPPED / "dataset.json").is_file(), reason="no OpenSafeIntent release copy")
def test_a_rubric_file_that_is_not_utf8_is_one_line(tmp_path):
    copy = tmp_path / "osi"
    shutil.copytree(SHIPPED, copy)
    rubric = copy / "prompts" / "metrics" / "helpfulness.txt"
    rubric.write_bytes(rubric.read_bytes()[:10] + b"\xff" + rubric.read_bytes()[10:])
    line = one_error_line(invoke("--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--utility", "rubric",
                                 "--opensafeintent", copy, "--dry-run"))
    assert line == (f"carryon-eval: error: {rubric}: not UTF-8 text (byte 10 is 0xff); the helpfulness judge's "
                    "prompt must be the release's file as published")
