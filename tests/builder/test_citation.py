"""CITATION.cff validates (cffconvert) and agrees with the card's citation block, releases/README.md and what
`carryon-build publish` prints; the card's changelog comes from the frozen manifests and release notes."""
import json
import re

import pytest
import yaml
from support.synthetic_source import build_synthetic

from carryonbench_builder import BUILDER_VERSION
from carryonbench_builder.changelog import changelog_rows, changelog_table
from carryonbench_builder.citation import (
    DATASET_AUTHOR,
    DATASET_TITLE,
    PAPER_ARXIV,
    PAPER_AUTHORS,
    PAPER_TITLE,
    cff_title,
    paper_bibtex,
    release_bibtex,
)
from support.shared_data import REPO

CFF = REPO / "CITATION.cff"


def test_citation_cff_validates_with_cffconvert():
    citation = pytest.importorskip("cffconvert", reason="cffconvert is in the test extra: pip install -e '.[test]'")
    cff = citation.Citation(CFF.read_text(encoding="utf-8"))
    cff.validate()                                     # raises on any schema violation (CFF 1.2.0)
    assert cff.cffobj["cff-version"] == "1.2.0"


def test_citation_cff_agrees_with_the_package_card_and_releases_readme(tmp_path):
    cff = yaml.safe_load(CFF.read_text(encoding="utf-8"))
    version = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.MULTILINE).group(1)
    assert cff["type"] == "software" and cff["title"] == cff_title(DATASET_TITLE)
    assert str(cff["version"]) == version == BUILDER_VERSION
    assert [a["name"] for a in cff["authors"]] == [DATASET_AUTHOR]
    paper = cff["preferred-citation"]
    assert paper["type"] == "article" and paper["title"].strip() == PAPER_TITLE
    assert [(a["family-names"], a["given-names"]) for a in paper["authors"]] == list(PAPER_AUTHORS)
    assert PAPER_ARXIV in paper["journal"] and paper["year"] == 2026
    readme = (REPO / "releases" / "README.md").read_text(encoding="utf-8")
    assert paper_bibtex() in readme
    assert release_bibtex("v0.1.0", note="MANIFEST.json in releases/v0.1.0 of the CarryOnBench repository") in readme
    card = (build_synthetic(tmp_path) / "README.md").read_text(encoding="utf-8")
    block = card.split("## Citation", 1)[1]
    assert paper_bibtex() in block and release_bibtex("v0.1.0", note=None).split("  url")[0] in block
    assert "release v0.1.0" in block and f"{{{DATASET_AUTHOR}}}" in block


def manifest(release, builder="0.1.0", queries=410, checklists=0, llm=None):
    return {"release": release, "builder_version": builder, "seed": 2026, "source": {"sha256": "ab" * 32},
            "llm_stages": llm, "counts": {"queries": queries, "checklists": checklists, "flows": 1866,
                                          "conversations": 15 * queries}}


def freeze(root, m, notes=None):
    (root / m["release"]).mkdir(parents=True)
    (root / m["release"] / "MANIFEST.json").write_text(json.dumps(m))
    if notes:
        (root / m["release"] / "RELEASE.json").write_text(json.dumps(notes))


def test_changelog_rows_come_from_the_frozen_manifests_up_to_the_release_built(tmp_path):
    freeze(tmp_path, manifest("v0.1.0"), {"date": "2026-11-30", "changes": "LLM-free part"})
    freeze(tmp_path, manifest("v0.2.0", builder="0.2.0", queries=398, checklists=4000, llm={"stages": []}),
           {"date": "2026-12-20", "changes": "benign intents and checklists"})
    freeze(tmp_path, manifest("v1.0.0", builder="1.0.0"))
    building = manifest("v0.2.0", builder="0.2.0", queries=398, checklists=4000, llm={"stages": []})
    rows = changelog_rows(building, tmp_path)
    assert [r["release"] for r in rows] == ["v0.1.0", "v0.2.0"]          # v1.0.0 is later: not in v0.2.0's card
    assert rows[0] == {"release": "v0.1.0", "date": "2026-11-30", "builder": "0.1.0", "changes": "LLM-free part"}
    assert rows[1]["date"] == "2026-12-20" and rows[1]["changes"] == (
        "benign intents and checklists (builder 0.1.0 -> 0.2.0; LLM stages added; queries 410 -> 398; "
        "checklists 0 -> 4,000; conversations 6,150 -> 5,970)")
    table = changelog_table(manifest("v0.3.0", builder="0.3.0"), tmp_path)
    lines = table.splitlines()
    assert lines[0] == "| release | date | builder version | what changed |"
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| v0.3.0", "| v0.2.0", "| v0.1.0"]   # newest first
    assert "| v0.3.0 | not yet released | 0.3.0 |" in table


def test_the_built_card_has_this_repositorys_changelog(tmp_path):
    card = (build_synthetic(tmp_path) / "README.md").read_text(encoding="utf-8")
    notes = json.loads((REPO / "releases" / "v0.1.0" / "RELEASE.json").read_text())
    section = card.split("## Changelog", 1)[1].split("## Citation", 1)[0]
    assert f"| v0.1.0 | {notes['date']} | {BUILDER_VERSION} | {notes['changes']} |" in section


# ---------------------------------------------------------------- every CITATION.cff: cffconvert and the paper
def cffconvert_bibtex(path):
    """cffconvert's own validation (CFF 1.2.0 schema; raises on a violation) and BibTeX of a CITATION.cff."""
    cffconvert = pytest.importorskip("cffconvert", reason="cffconvert is in the test extra: pip install -e '.[test]'")
    citation = cffconvert.Citation(path.read_text(encoding="utf-8"))
    citation.validate()
    return citation.as_bibtex()


def built_folders(root):
    """The builds that carry a CITATION.cff, from the sources beside the clone (../shared/data)."""
    import subprocess
    import sys

    from support.shared_data import CASEBENCH, OPENSAFEINTENT

    todo = {}
    if (OPENSAFEINTENT / "dataset.json").is_file():
        todo["open"] = ["--source", str(OPENSAFEINTENT)]
        todo["open-hub"] = ["--source", str(OPENSAFEINTENT), "--hub-repo", "example-org/carryonbench-open"]
    if CASEBENCH.is_file():      # a later CASE-Bench release (v0.1.0 stays as frozen: it has no CITATION.cff)
        todo["casebench-v0.2.0"] = ["--source", str(CASEBENCH), "--release", "v0.2.0", "--limit", "5"]
    out = {}
    for name, args in todo.items():
        r = subprocess.run([sys.executable, "-m", "carryonbench_builder.cli", "build", "--out", str(root / name),
                            "--no-llm", *args], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        out[name] = root / name
    if not out:
        pytest.skip("neither source is beside the clone (CI has ../shared/data/casebench and opensafeintent)")
    return out


def test_the_root_citation_bibtex_names_the_paper():
    bib = cffconvert_bibtex(CFF)
    assert PAPER_TITLE in bib and f"arXiv:{PAPER_ARXIV}" in bib and DATASET_AUTHOR in bib


def test_every_built_folder_has_a_citation_cff_that_validates_and_names_the_paper_and_its_release(tmp_path):
    folders = built_folders(tmp_path)
    for name, folder in folders.items():
        manifest = json.loads((folder / "MANIFEST.json").read_text())
        assert "CITATION.cff" in manifest["files"], name                 # pinned like every file
        bib = cffconvert_bibtex(folder / "CITATION.cff")
        assert PAPER_TITLE in bib and f"release {manifest['release']}" in bib, (name, bib)
        cff = yaml.safe_load((folder / "CITATION.cff").read_text())
        assert cff["type"] == "dataset" and cff["version"] == manifest["release"]
        paper = cff["preferred-citation"]
        assert paper["title"] == PAPER_TITLE and [(a["family-names"], a["given-names"]) for a in paper["authors"]] \
            == list(PAPER_AUTHORS)
    if "open" in folders:
        cff = yaml.safe_load((folders["open"] / "CITATION.cff").read_text())
        assert cff["license"] == "Apache-2.0" and "url" not in cff
        assert cff["references"][0]["repository-code"] == "https://github.com/Uppaal/OpenSafeIntent"
        assert cff["references"][0]["commit"] == "9706897bc9ffdb328446141b2a4568c98c70843e"
        hub = folders["open-hub"]
        assert "url = {https://huggingface.co/datasets/example-org/carryonbench-open/tree/open-v1.0.0}" in \
            cffconvert_bibtex(hub / "CITATION.cff")
        card = (hub / "README.md").read_text()
        assert "howpublished = {Hugging Face dataset example-org/carryonbench-open, revision open-v1.0.0}" in card
    if "casebench-v0.2.0" in folders:
        assert "license" not in yaml.safe_load((folders["casebench-v0.2.0"] / "CITATION.cff").read_text())
