"""The README is a front page and docs/ the reference: the README stays within 300 lines with every section in its
navigation lines, links every docs page (and every link it has to a file resolves), and the pages build with
`mkdocs build --strict` (mkdocs.yml: every page in the nav; a broken link or anchor between pages fails). The pages
name repository files as code: each exists, the layout table's modules are in their folders, and the run folder
table names files a run folder declares (tests/test_readme_open_path.py checks it against a real run's files)."""
from __future__ import annotations

import re
import subprocess
import sys

import yaml

from support.docs_pages import run_folder_table
from support.shared_data import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
PAGES = sorted(p.name for p in (REPO / "docs").glob("*.md"))


def anchor(title: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def test_the_readme_is_a_front_page_with_every_section_in_its_navigation():
    lines = README.splitlines()
    assert len(lines) <= 300, len(lines)
    navigation = "\n".join(lines[:12])
    sections = [line[3:] for line in lines if line.startswith("## ")]
    assert sections
    for title in sections:
        assert f"](#{anchor(title)})" in navigation, title


def test_the_readme_links_every_docs_page_and_its_file_links_resolve():
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    for target in (t for t in targets if not t.startswith("http")):
        assert (REPO / target).exists(), target
    for page in PAGES:
        assert f"](docs/{page})" in README, page


def test_mkdocs_lists_every_page_and_builds_strictly(tmp_path):
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = sorted(next(iter(entry.values())) for entry in config["nav"])
    assert listed == PAGES
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                           cwd=REPO, capture_output=True, text=True, timeout=300)
    assert "No module named mkdocs" not in built.stderr, "mkdocs is in the test extra: pip install -e \".[local,test]\""
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    for page in PAGES:
        if page != "index.md":
            assert (tmp_path / "site" / page.removesuffix(".md") / "index.html").is_file(), page


def test_every_repository_path_the_pages_name_exists():
    """Pages name files as code (`carryon_eval/run/folder.py`), not as links out of docs/: each must exist."""
    for page in ["README.md", *(f"docs/{p}" for p in PAGES)]:
        text = (REPO / page).read_text(encoding="utf-8")
        for path in re.findall(r"`((?:carryon_eval|builder|tests|bench|releases|docs)/[^`\s<>*{}]*)`", text):
            if "..." not in path:
                assert (REPO / path.split("::")[0]).exists(), (page, path)


def test_the_layout_table_names_only_files_of_its_folders():
    folders = (REPO / "docs" / "layout.md").read_text(encoding="utf-8").split("\n## A run folder\n", 1)[0]
    rows = re.findall(r"^\| `([^`]+)`[^|]*\| (.*) \|$", folders, re.MULTILINE)
    assert len(rows) >= 10
    for folder, what in rows:
        root = REPO / folder
        assert root.is_dir(), folder
        for name in re.findall(r"`([\w/]+\.(?:py|json))`", what):
            found = list(root.rglob(name.rsplit("/", 1)[-1]))
            assert any(str(f).endswith(name) for f in found), (folder, name)


def test_every_module_of_the_evaluator_and_the_builder_is_in_the_layout_table():
    """A new module is named in its folder's row of docs/layout.md (with what it holds)."""
    folders = (REPO / "docs" / "layout.md").read_text(encoding="utf-8").split("\n## A run folder\n", 1)[0]
    rows = dict(re.findall(r"^\| `((?:carryon_eval|builder)/[^`]*)`[^|]*\| (.*) \|$", folders, re.MULTILINE))
    for path in sorted((REPO / "carryon_eval").rglob("*.py")) + sorted((REPO / "builder").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if path.name == "__init__.py" or "/sample_data/" in rel:
            continue
        row = max((folder for folder in rows if rel.startswith(folder)), key=len)
        assert f"`{path.name}`" in rows[row] or f"/{path.name}`" in rows[row], \
            f"docs/layout.md: the row of {row} does not name {rel}"


def test_the_run_folder_table_names_files_a_run_folder_declares():
    from carryon_eval.run.folder import owner_of
    from carryon_eval.suite.registry import suites
    suites()                                              # the wings declare their own files
    names = run_folder_table()
    assert "run.json" in names and "results.json" in names
    for name in names:
        if name != "embedded_crash.json":                 # the embedded model's watch writes it (carryon_eval/model/crash.py)
            assert owner_of(name.rstrip("/")) is not None, name


def documented_commands() -> list[tuple[str, str]]:
    """(page, command line) for every `carryon-eval` / `carryon-build` command of the README and the pages: each
    line of a bash block (continuation lines joined, comments dropped) and each inline code span."""
    found = []
    for page in ["README.md", *(f"docs/{p}" for p in PAGES)]:
        text = (REPO / page).read_text(encoding="utf-8")
        for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split(" #", 1)[0].strip()
                for part in re.split(r"&&|;", line):
                    if part.strip().startswith(("carryon-eval", "carryon-build")):
                        found.append((page, part.strip()))
        found += [(page, span) for span in re.findall(r"`((?:carryon-eval|carryon-build)\b[^`]*)`", text)]
    return found


def test_every_documented_command_and_option_exists():
    from click.testing import CliRunner

    from carryon_eval.cli import cli as eval_cli
    from carryonbench_builder.cli import cli as build_cli
    clis = {"carryon-eval": eval_cli, "carryon-build": build_cli}
    helps: dict[tuple[str, ...], str] = {}
    commands = documented_commands()
    assert len(commands) >= 20
    for page, line in commands:
        words = line.split()
        path = tuple(words[1:2]) if len(words) > 1 and re.fullmatch(r"[a-z]+", words[1]) else ()
        if (words[0], *path) not in helps:
            result = CliRunner().invoke(clis[words[0]], [*path, "--help"])
            assert result.exit_code == 0, (page, line, result.output)
            helps[(words[0], *path)] = result.output
        for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*", line):
            assert re.search(rf"{re.escape(flag)}\b", helps[(words[0], *path)]), (page, line, flag)


def test_the_commands_ci_runs_are_the_readmes_first_screen_verbatim():
    """.ci/run installs and tests by the README's own commands (it greps for them): both on the first screen."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    commands = dict(re.findall(r"^(INSTALL|TEST)='(.+)'$", ci, re.MULTILINE))
    assert commands == {"INSTALL": 'pip install -e ".[local]"', "TEST": 'pip install -e ".[local,test]" && python -m pytest'}
    first_screen = "\n".join(README.splitlines()[:40])
    for command in commands.values():
        assert f"\n{command}\n" in first_screen, command
