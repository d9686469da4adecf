"""The README's open path stays true: right after the first screen's set-up commands (unchanged), one code block
takes a new user from nothing to a measured model without gated data, with the pinned OpenSafeIntent commit,
the frozen open release and only options the commands have; the README says that no Hub release is published yet
and how one is (`carryon-build publish`), and has a Citation heading."""
from __future__ import annotations

import re

from click.testing import CliRunner

from carryon_eval.cli import cli as eval_cli
from carryonbench_builder.cli import cli as build_cli
from carryonbench_builder.sources.opensafeintent import OPEN_RELEASE, UPSTREAM
from support.shared_data import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
SETUP = '```bash\npip install -e ".[local]"\ncarryon-eval --limit 1\n```'


def section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def open_block() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", section("A real number without gated data: the open build"), re.S)
    return block.group(1).replace("\\\n", " ").splitlines()


def help_of(cli, *command: str) -> str:
    result = CliRunner().invoke(cli, [*command, "--help"])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_open_path_comes_right_after_the_unchanged_set_up_commands():
    assert README.count(SETUP) == 1
    setup_at, open_at = README.index(SETUP), README.index("\n## A real number without gated data")
    assert setup_at < open_at < README.index("\n## Evaluate your model")
    assert README.index("\n## ", setup_at) == open_at            # the next section after the set-up's


def test_the_open_block_gets_the_pinned_release_builds_verifies_evaluates_and_compares():
    lines = open_block()
    assert f"git clone {UPSTREAM['url']} && git -C OpenSafeIntent checkout {UPSTREAM['commit']}" in lines
    steps = [line.split()[:2] for line in lines]
    assert [s for s in steps if s[0].startswith("carryon-")] == [
        ["carryon-build", "build"], ["carryon-build", "verify"], ["carryon-eval", "--dataset"],
        ["carryon-eval", "compare"]]
    verify = next(line for line in lines if line.startswith("carryon-build verify"))
    assert f"releases/{OPEN_RELEASE}/MANIFEST.json" in verify
    assert (REPO / "releases" / OPEN_RELEASE / "MANIFEST.json").is_file()
    assert "--utility" not in " ".join(lines)                       # the build says how it is scored


def test_every_option_of_the_open_block_is_one_its_command_has():
    helps = {("carryon-build", "build"): help_of(build_cli, "build"),
             ("carryon-build", "verify"): help_of(build_cli, "verify"),
             ("carryon-eval", None): help_of(eval_cli), ("carryon-eval", "compare"): help_of(eval_cli, "compare")}
    for line in open_block():
        words = line.split()
        if not words[0].startswith("carryon-"):
            continue
        key = (words[0], words[1] if not words[1].startswith("--") else None)
        for flag in (w for w in words if w.startswith("--")):
            assert re.search(rf"{re.escape(flag)}\b", helps[key]), (line, flag)


def test_the_readme_says_no_hub_release_is_published_yet_and_how_to_publish_and_how_to_cite():
    text = section("A real number without gated data: the open build")
    assert "No CarryOnBench release is published on the Hub yet" in text and "carryon-build publish" in text
    assert "\n## Citation\n" in README and "@article{zheng2026carryonbench," in section("Citation")
