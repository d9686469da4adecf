"""The open build is a release: releases/open-v1.0.0 freezes the MANIFEST.json of the OpenSafeIntent `--no-llm`
build (and nothing of OpenSafeIntent's text), named `carryonbench-open` and pinned to the public release it is
built from (Uppaal/OpenSafeIntent at the commit SOURCE.md names, with its files' sha256); a fresh build verifies
against it byte for byte, and `verify` names that release and its source. The CASE-Bench line (v0.1.0) is checked
as before (tests/builder/test_builder.py) and never lists the open release in its changelog.

Builds from ../shared/data/opensafeintent; skips, saying why, where it is absent."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow
import pytest

from carryonbench_builder.changelog import changelog_rows, frozen_manifests, release_line
from support.shared_data import OPENSAFEINTENT, REPO

RELEASE = "open-v1.0.0"
FROZEN = REPO / "releases" / RELEASE
DATASET = OPENSAFEINTENT / "dataset.json"
needs_release = pytest.mark.skipif(not DATASET.is_file(), reason=f"the OpenSafeIntent release is not at "
                                   f"{OPENSAFEINTENT} (CI has ../shared/data/opensafeintent beside the clone)")


def carryon_build(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "carryonbench_builder.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    if not DATASET.is_file():
        pytest.skip(f"the OpenSafeIntent release is not at {OPENSAFEINTENT}")
    out = tmp_path_factory.mktemp("open") / "carryonbench-open"
    r = carryon_build("build", "--source", OPENSAFEINTENT, "--out", out, "--no-llm")     # no --release: its line's
    assert r.returncode == 0, r.stderr
    return out


def source_md() -> tuple[str, dict[str, str]]:
    """SOURCE.md's commit and {file: sha256} (the files its table names with a hash)."""
    text = (OPENSAFEINTENT / "SOURCE.md").read_text(encoding="utf-8")
    commit = re.search(r"at commit ([0-9a-f]{40})", text).group(1)
    files = {m.group(1): m.group(2) for m in re.finditer(r"^\| (\S+)[^|]*\| ([0-9a-f]{64}) \|$", text, re.M)}
    return commit, files


def test_the_frozen_release_is_its_manifest_and_notes_only():
    assert sorted(p.relative_to(FROZEN).as_posix() for p in FROZEN.rglob("*") if p.is_file()) == \
        ["MANIFEST.json", "RELEASE.json"]
    manifest = json.loads((FROZEN / "MANIFEST.json").read_text())
    assert manifest["name"] == "carryonbench-open" and manifest["release"] == RELEASE
    assert manifest["llm_stages"] is None and manifest["scoring"]["utility"] == ["rubric"]
    assert release_line(RELEASE) == ("open", (1, 0, 0)) and release_line("v0.1.0") == ("", (0, 1, 0))


@needs_release
def test_the_frozen_release_pins_the_public_source_release():
    manifest = json.loads((FROZEN / "MANIFEST.json").read_text())
    commit, files = source_md()
    pinned = manifest["source"]["release"]
    assert pinned["repository"] == "Uppaal/OpenSafeIntent" and pinned["commit"] == commit
    assert pinned["files"] == files and manifest["source"]["sha256"] == files["dataset.json"]
    probe = json.loads(DATASET.read_text(encoding="utf-8"))[0]["prompt_dual_use"][:60]
    assert probe not in (FROZEN / "MANIFEST.json").read_text()         # hashes and counts, no third-party text


@needs_release
def test_a_fresh_open_build_verifies_against_the_frozen_manifest_and_names_it(fresh):
    frozen = json.loads((FROZEN / "MANIFEST.json").read_text())
    r = carryon_build("verify", fresh, "--manifest", FROZEN / "MANIFEST.json")
    if frozen["encoding"]["pyarrow"] != pyarrow.__version__:       # another pyarrow encodes the Parquet otherwise
        pytest.skip(f"the release was frozen with pyarrow {frozen['encoding']['pyarrow']}")
    assert r.returncode == 0, r.stdout + r.stderr
    line = r.stdout.strip().splitlines()[-1]
    assert line.startswith(f"OK {fresh} is release {RELEASE} exactly (carryonbench-open, built from dataset.json "
                           f"sha256 {frozen['source']['sha256'][:12]}... = Uppaal/OpenSafeIntent at commit "
                           f"{frozen['source']['release']['commit'][:12]}; matches {FROZEN / 'MANIFEST.json'})"), line
    assert (fresh / "MANIFEST.json").read_bytes() == (FROZEN / "MANIFEST.json").read_bytes()


@needs_release
def test_verify_calls_a_folder_the_release_only_when_it_is_the_frozen_one(fresh, tmp_path):
    """Without --manifest: the fresh build is the release (its MANIFEST.json is the frozen one); a build from an
    edited source keeps the release's name but is not called the release. --manifest takes the release's folder."""
    frozen = json.loads((FROZEN / "MANIFEST.json").read_text())
    same = carryon_build("verify", fresh)
    assert same.returncode == 0, same.stdout + same.stderr
    if frozen["encoding"]["pyarrow"] == pyarrow.__version__:
        assert f"OK {fresh} is release {RELEASE} exactly" in same.stdout
    source = tmp_path / "OpenSafeIntent"
    shutil.copytree(OPENSAFEINTENT, source)
    rows = json.loads((source / "dataset.json").read_text(encoding="utf-8"))
    rows[0]["prompt_benign"] = rows[0]["prompt_benign"] + " (edited)"
    (source / "dataset.json").write_text(json.dumps(rows), encoding="utf-8")
    edited = tmp_path / "edited"
    assert carryon_build("build", "--source", source, "--out", edited, "--no-llm").returncode == 0
    own = carryon_build("verify", edited)
    assert own.returncode == 0, own.stdout + own.stderr
    line = own.stdout.strip().splitlines()[-1]
    assert line.startswith(f"OK {edited} matches its own MANIFEST.json (carryonbench-open, built from dataset.json "
                           f"sha256 ") and f"but is not release {RELEASE}: its MANIFEST.json differs from the frozen " \
        f"releases/{RELEASE}/MANIFEST.json" in line and "exactly" not in line, line
    against = carryon_build("verify", edited, "--manifest", FROZEN)          # the release's folder, not a file
    assert against.returncode == 1 and "MISMATCH MANIFEST.json: differs from" in against.stdout, against.stdout
    nothing = carryon_build("verify", edited, "--manifest", tmp_path)
    assert nothing.returncode == 2 and nothing.stderr.strip() == (
        f"carryon-build: error: --manifest {tmp_path}: a folder without MANIFEST.json; give a release's "
        "MANIFEST.json (or its folder, e.g. releases/open-v1.0.0)")


@needs_release
def test_the_card_says_where_the_release_comes_from_and_the_command_that_gets_it(fresh):
    card = (fresh / "README.md").read_text(encoding="utf-8")
    commit, _ = source_md()
    command = f"git clone https://github.com/Uppaal/OpenSafeIntent && git -C OpenSafeIntent checkout {commit}"
    assert card.count(command) == 1
    assert f"releases/{RELEASE}/MANIFEST.json" in card and "# CarryOnBench open-v1.0.0" in card
    assert f"| {RELEASE} | " in card.split("## Changelog")[1]                   # its own line's changelog
    assert "| v0.1.0 | " not in card.split("## Changelog")[1]


def test_the_casebench_line_never_lists_the_open_release():
    assert all(release_line(m["release"])[0] == "" for m in frozen_manifests())
    rows = changelog_rows({"release": "v0.3.0", "builder_version": "x", "counts": {}})
    assert RELEASE not in [r["release"] for r in rows]
    assert [r["release"] for r in changelog_rows({"release": "open-v1.1.0", "counts": {}})] == [RELEASE, "open-v1.1.0"]
