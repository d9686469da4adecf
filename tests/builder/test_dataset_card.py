"""The generated dataset card: the Hub metadata and links a card should have (license_link and the terms file
beside it, source_datasets, the paper, the upstream terms, a load example naming the release's tag), no process
residue, and a Jinja2 template whose unknown placeholder is an error, not an empty string. Built in-process from
the synthetic source (no gated data needed)."""
from __future__ import annotations

import re

import pytest
import yaml
from support.synthetic_source import build_synthetic

from carryonbench_builder.dataset_folder import LICENSE_FILE, render_card
from carryonbench_builder.verify import verify_folder


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    return build_synthetic(tmp_path_factory.mktemp("card"), release="v0.1.0")


def header_and_body(folder):
    text = (folder / "README.md").read_text(encoding="utf-8")
    _, header, body = text.split("---\n", 2)
    return yaml.safe_load(header), body


def test_hub_metadata_links_the_terms_and_the_sources(built):
    header, _ = header_and_body(built)
    assert header["license"] == "other" and header["license_name"] == "carryonbench-research-use"
    assert header["license_link"] == LICENSE_FILE and (built / LICENSE_FILE).is_file()
    terms = (built / LICENSE_FILE).read_text(encoding="utf-8")
    assert "huggingface.co/datasets/sorry-bench/sorry-bench-202406" in terms
    assert "github.com/BriansIDP/CASEBench" in terms
    assert header["source_datasets"] == ["sorry-bench/sorry-bench-202406", "https://github.com/BriansIDP/CASEBench"]
    problems, manifest = verify_folder(built)        # the terms file is pinned by the manifest like every file
    assert problems == [] and LICENSE_FILE in manifest["files"]


def test_body_links_the_paper_and_upstream_terms_and_loads_the_tag(built):
    _, body = header_and_body(built)
    assert "(https://arxiv.org/abs/2604.27093)" in body
    assert "(https://huggingface.co/datasets/sorry-bench/sorry-bench-202406)" in body
    assert "(https://github.com/BriansIDP/CASEBench)" in body
    assert 'load_dataset("ORG/carryonbench", "conversations", split="test", revision="v0.1.0")' in body


def test_a_release_names_its_own_tag(tmp_path):
    _, body = header_and_body(build_synthetic(tmp_path, release="v0.2.0"))
    assert 'revision="v0.2.0"' in body and 'revision="v0.1.0"' not in body


def test_no_process_residue_and_no_placeholder_left(built):
    text = (built / "README.md").read_text(encoding="utf-8")
    assert not re.search(r"issue ?[0-9]+", text, re.I)
    assert not re.search(r"\{\{\s*[a-z0-9_]+\s*\}\}|\{%", text)    # (bibtex's {{...}} is not a placeholder)


def test_template_numbers_and_unknown_placeholders():
    assert render_card("{{ n }} rows, seed {{ seed }}\n", {"n": 6150, "seed": "2026"}) == "6,150 rows, seed 2026\n"
    assert render_card("{{ text }}", {"text": "{{ not_a_placeholder }} <b>"}) == "{{ not_a_placeholder }} <b>"
    with pytest.raises(KeyError, match="'missing' is undefined"):
        render_card("a {{ missing }} b", {})
