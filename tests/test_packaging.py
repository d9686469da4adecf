"""Packaging: the wheel works installed non-editable, and the declared dependencies
match the imports.

The wheel is built with `pip wheel --no-deps` from a clean copy of the repository's files (git's view:
tracked files and untracked ones it does not ignore), so that a stale build/ or egg-info in the work tree
cannot leak into it, and installed with `pip install --no-deps --target SITE`. Its two console scripts then
run from SITE/bin with PYTHONPATH=SITE alone, in an empty working folder, so nothing of the source tree is
importable (checked: `builder.__file__` and `carryon_eval.__file__` are under SITE). `carryon-build build
--no-llm` runs on the shipped CASE-Bench source (gated: skips without it) and `carryon-eval` on the built-in
sample against a scripted server.
"""
from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Optional

import pytest
from support.builder_models import SOURCE
from support.rollout_data import evaluator_handler

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("builder", "carryon_eval")          # the folders
IMPORT_NAMES = {"builder": "carryonbench_builder", "carryon_eval": "carryon_eval"}   # what they install as


# ---------------------------------------------------------------- the wheel, built and installed once
def repo_files(root: Path) -> Optional[list[Path]]:
    """The files git sees in ``root`` (tracked, and untracked but not ignored); None outside a checkout."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return [Path(p) for p in out.decode().split("\0") if p]


def copy_source(root: Path, dest: Path) -> None:
    files = repo_files(root)
    if files is None:
        shutil.copytree(root, dest, symlinks=True, ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "*.egg-info", "__pycache__", ".pytest_cache", "carryon-runs"))
        return
    for rel in files:
        src = root / rel
        if src.is_symlink() or src.is_file():      # a tracked file deleted in the work tree is skipped
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel, follow_symlinks=False)


def pip(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"pip {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wheel")
    copy_source(REPO, root / "src")
    pip("wheel", "--no-deps", "-w", str(root / "dist"), str(root / "src"))
    (built,) = (root / "dist").glob("carryonbench-*.whl")
    return built


@pytest.fixture(scope="module")
def site(wheel: Path) -> Path:
    target = wheel.parent.parent / "site"
    pip("install", "--no-deps", "--target", str(target), str(wheel))
    return target


def site_env(site: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PYTHONPATH=str(site), HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    return env


def run_from_site(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """``python ARGS`` with only the installed wheel importable, in the empty folder ``cwd``."""
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=site_env(site), capture_output=True, text=True,
                          timeout=600)


# ---------------------------------------------------------------- tests
def test_wheel_holds_every_file_of_the_packages(wheel: Path) -> None:
    """Every file of builder/ and carryon_eval/ (prompts, data, the sample, the card template) is in the wheel."""
    files = repo_files(REPO)
    if files is None:
        pytest.skip("not a git checkout: the package files cannot be listed")
    expected = {"/".join((IMPORT_NAMES[p.parts[0]], *p.parts[1:])) for p in files
                if p.parts[0] in PACKAGES and "__pycache__" not in p.parts and (REPO / p).is_file()}
    with zipfile.ZipFile(wheel) as whl:
        shipped = set(whl.namelist())
    assert sorted(expected - shipped) == [], "package files missing from the wheel"


def test_a_fresh_venv_gets_no_top_level_name_but_the_projects(wheel: Path, tmp_path: Path) -> None:
    """`pip install` of the project (its wheel, built from the clean source as `pip install .` builds it) into a
    fresh venv installs no top-level import name other than the project's own: the names are listed from the
    installed distribution's files (and setuptools' top_level.txt must say the same)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    pip("--python", str(python), "install", "--no-deps", str(wheel))
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    (dist,) = [d for d in importlib.metadata.distributions(path=[purelib]) if d.metadata["Name"] == "carryonbench"]
    tops = {Path(str(f)).parts[0] for f in dist.files or ()}
    tops = {t.removesuffix(".py") for t in tops if t != ".." and not t.endswith(".dist-info") and t != "__pycache__"}
    assert tops == {"carryon_eval", "carryonbench_builder"}, sorted(tops)
    assert set((dist.read_text("top_level.txt") or "").split()) == tops
    assert sorted(p.name for p in Path(purelib).iterdir() if not p.name.endswith(".dist-info")
                  and not p.name.startswith("_")) == ["carryon_eval", "carryonbench_builder"]


def test_installed_wheel_is_what_runs(site: Path, tmp_path: Path) -> None:
    proc = run_from_site(site, tmp_path / "cwd", "-c",
                         "import carryonbench_builder, carryon_eval; print(carryonbench_builder.__file__); print(carryon_eval.__file__)")
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = proc.stdout.splitlines()
    assert len(files) == len(PACKAGES) and all(Path(f).resolve().is_relative_to(site.resolve()) for f in files), files


def test_carryon_build_no_llm_from_the_wheel(site: Path, tmp_path: Path) -> None:
    """The wheel's `carryon-build build --no-llm` on the shipped source writes the same folder, byte for
    byte, as the source tree's."""
    if not SOURCE.is_file():
        pytest.skip(f"CASE-Bench source not found at {SOURCE} (gated data, not in the repository)")
    out = tmp_path / "from-wheel"
    proc = run_from_site(site, tmp_path / "cwd", str(site / "bin" / "carryon-build"), "build", "--no-llm",
                         "--source", str(SOURCE), "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    for config in ("queries", "flows", "conversations"):
        assert (out / "data" / config / "test.parquet").is_file(), config
    assert not (out / "data" / "checklists").exists()      # no rows in a --no-llm build: not written
    assert (out / "README.md").is_file() and (out / "MANIFEST.json").is_file()

    tree = tmp_path / "from-tree"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    ref = subprocess.run([sys.executable, "-c", "from carryonbench_builder.cli import main; main()", "build", "--no-llm",
                          "--source", str(SOURCE), "--out", str(tree)], env=env, capture_output=True, text=True,
                         timeout=600)
    assert ref.returncode == 0, ref.stderr[-3000:]
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tree) for p in tree.rglob("*") if p.is_file())
    for rel in files:
        assert (out / rel).read_bytes() == (tree / rel).read_bytes(), rel


def test_carryon_eval_on_the_builtin_sample_from_the_wheel(site: Path, tmp_path: Path, scripted_server) -> None:
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    url, run = srv.base_url, tmp_path / "run"
    proc = run_from_site(site, tmp_path / "cwd", str(site / "bin" / "carryon-eval"), "--endpoint", url,
                         "--model", "tgt", "--user-endpoint", url, "--user-model", "sim", "--judge-endpoint", url,
                         "--judge-model", "jdg", "--limit", "1", "--out", str(run))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not srv.errors, srv.errors
    assert {b["model"] for b in srv.requests} == {"tgt", "sim", "jdg"}
    assert json.loads((run / "run.json").read_text())["dataset"]["source"] == "builtin:sample"
    sample = site / "carryon_eval" / "dataset" / "sample_data"                   # the only sample importable here

    transcripts = [json.loads(line) for line in (run / "transcripts.jsonl").read_text().splitlines()]
    planned = [json.loads(line) for line in (sample / "conversations.jsonl").read_text().splitlines()]
    first = json.loads((sample / "queries.jsonl").read_text().splitlines()[0])["query_id"]
    n_planned = 2 + sum(c["query_id"] == first and c.get("condition") != "MC"   # turn 1 + oracle + its conversations
                        for c in planned)                                      # (mc is not a default condition)
    assert sorted({t["query_id"] for t in transcripts}) == [first] and len(transcripts) == n_planned
    results = json.loads((run / "results.json").read_text())
    assert results["model"] == "tgt"
    assert results["unscored"]["utility_items"] == 0 and results["unscored"]["safety"] == 0
    assert (run / "report.html").is_file() and "| tgt |" in (run / "table.md").read_text()


# ---------------------------------------------------------------- declared dependencies vs imports
def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    return _norm(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1))


def declared() -> tuple[set[str], set[str]]:
    """(core dependencies, core + every extra), as normalised distribution names, from pyproject.toml."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python 3.11")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    core = {_requirement_name(r) for r in project.get("dependencies", [])}
    extras = {_requirement_name(r) for reqs in project.get("optional-dependencies", {}).values() for r in reqs}
    return core, core | extras


def third_party_imports() -> dict[str, set[str]]:
    """Top-level module name -> the files of builder/ and carryon_eval/ that import it (absolute imports
    that are neither the standard library nor our own packages)."""
    found: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in PACKAGES:
                        found.setdefault(top, set()).add(path.relative_to(REPO).as_posix())
    return found


def distributions_of(module: str) -> set[str]:
    """The installed distributions that provide a top-level module (its own name when none is installed)."""
    dists = importlib.metadata.packages_distributions().get(module) or [module]
    return {_norm(d) for d in dists}


def test_every_third_party_import_is_declared() -> None:
    _, everything = declared()
    imports = third_party_imports()
    assert imports, "no third-party import found: the scan is broken"
    undeclared = {module: sorted(files) for module, files in imports.items()
                  if not distributions_of(module) & everything}
    assert undeclared == {}, f"imported but not declared in pyproject.toml (dependencies or an extra): {undeclared}"


def test_every_core_dependency_is_imported() -> None:
    core, _ = declared()
    provided = set().union(*(distributions_of(m) for m in third_party_imports()))
    assert sorted(core - provided) == [], "declared in pyproject.toml's dependencies but imported nowhere"
