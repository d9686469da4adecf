"""Every config a build declares loads with `datasets.load_dataset`, and `verify` proves it.

A config with no rows is neither written nor declared (`datasets` cannot load an empty split); the card says
why it is absent. The LLM builds use the scripted builder models of tests/builder/test_builder_llm.py (real HTTP).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.builder_models import JUDGE, MAIN_MODELS, SOURCE, Scripted, cli_args, run_cli
from support.synthetic_source import row, write_llm_source

from carryon_eval.suites.carryonbench.dataset_support import dataset_notes

from carryonbench_builder.dataset_folder import SCHEMAS, parquet_name, write_parquet
from carryonbench_builder.files import file_entry
from carryonbench_builder.declared import declared_config_names, feature_type, field_tables
from carryonbench_builder.sources.casebench import load_source, select_queries

needs_source = pytest.mark.skipif(not SOURCE.is_file(),
                                  reason=f"CASE-Bench source not found at {SOURCE} (gated data, not in the repository)")


def carryon_build(*args, env=None):
    return subprocess.run([sys.executable, "-c", "from carryonbench_builder.cli import main; main()", *map(str, args)],
                          capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})


def load_every_declared_config(folder: Path, cache: Path) -> dict[str, int]:
    """load_dataset each config the card declares, as a researcher would; its columns are the card's table."""
    from datasets import load_dataset
    card = (folder / "README.md").read_text(encoding="utf-8")
    fields = field_tables(card)
    rows = {}
    for config in declared_config_names(card):
        ds = load_dataset(str(folder), config, split="test", cache_dir=str(cache))
        assert [(n, feature_type(f)) for n, f in ds.features.items()] == fields[config], config
        assert len(ds) > 0, config
        rows[config] = len(ds)
    assert sorted(p.parent.name for p in (folder / "data").glob("*/test.parquet")) == sorted(rows)
    return rows


# ---------------------------------------------------------------- the shipped source, --no-llm
@needs_source
def test_no_llm_build_of_the_shipped_source_loads_every_declared_config(tmp_path):
    out = tmp_path / "carryonbench"
    r = carryon_build("build", "--source", SOURCE, "--out", out, "--no-llm")
    assert r.returncode == 0, r.stderr
    rows = load_every_declared_config(out, tmp_path / "hf-cache")
    assert rows == {"queries": 410, "flows": 1866, "conversations": 6150}
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "no checklists: built with `--no-llm`" in card and "no provenance: built with `--no-llm`" in card
    assert json.loads((out / "MANIFEST.json").read_text())["counts"]["checklists"] == 0
    # the evaluator reads the folder: no checklists config = no checklist items
    from carryon_eval.dataset.load import load_benchmark
    bench = load_benchmark(out)
    assert len(bench.queries) == 410 and not any(bench.checklists.values())
    assert any("410 of 410 queries have no checklist items" in n for n in dataset_notes(bench, "benutil"))
    r = carryon_build("verify", out)
    assert r.returncode == 0, r.stdout + r.stderr


# ---------------------------------------------------------------- LLM builds on a scripted server
class ItemFilterDrops(Scripted):
    """The scripted builder models, except that the item filter removes every item of the labelled queries."""

    def __init__(self, labels: dict[str, str], remove_all_of: set[str]) -> None:
        super().__init__(labels)
        self.remove_all_of = remove_all_of

    def reply(self, body: dict):
        if self.stage(body) == "item_filter":
            user = next(m["content"] for m in body["messages"] if m["role"] == "user")
            if self.label(user) in self.remove_all_of:
                return json.dumps({"enables_misuse": True, "reason": "scripted"})
        return super().reply(body)


@pytest.fixture(scope="module")
def synthetic_source(tmp_path_factory) -> Path:
    return write_llm_source(tmp_path_factory.mktemp("source") / "casebench_synthetic.json")


@pytest.fixture(scope="module")
def three_queries(synthetic_source):
    return synthetic_source, select_queries(load_source(synthetic_source))[:3]


def llm_build(scripted_server, source_and_queries, tmp_path, remove_all_of: set[str]) -> Path:
    source, queries = source_and_queries
    script = ItemFilterDrops({q.query: label for q, label in zip(queries, "ABC")}, remove_all_of)
    main = scripted_server(script.reply, models=MAIN_MODELS)
    judge = scripted_server(script.reply, models=(JUDGE,))
    out = tmp_path / "ds"
    res = run_cli(cli_args(source, main, judge, out, tmp_path / "cache"))
    assert res.exit_code == 0, res.output
    assert not main.errors and not judge.errors
    return out


def test_llm_build_where_the_item_filter_drops_every_item_of_one_query(scripted_server, three_queries, tmp_path):
    out = llm_build(scripted_server, three_queries, tmp_path, remove_all_of={"A"})
    rows = load_every_declared_config(out, tmp_path / "hf-cache")
    # A loses every item at the item filter, B is dropped by the harm filter (the script): C alone is left
    assert rows["queries"] == 1 and rows["checklists"] == 23 and rows["conversations"] == 15 + 5   # the plan's 15, and one mc per length (5)
    assert set(rows) == {"queries", "checklists", "flows", "conversations", "provenance", "triplets"}
    assert rows["triplets"] == 7          # C's prompt-set
    assert carryon_build("verify", out).returncode == 0


def test_llm_build_that_keeps_no_query_writes_nothing(scripted_server, three_queries, tmp_path):
    """An empty folder (which could not be evaluated) is no longer written: a build whose stages keep
    no query stops with one line naming the stage and its commonest reason, exit 2, and writes no folder."""
    source, queries = three_queries
    script = ItemFilterDrops({q.query: label for q, label in zip(queries, "ABC")}, {"A", "C"})
    main = scripted_server(script.reply, models=MAIN_MODELS)
    judge = scripted_server(script.reply, models=(JUDGE,))
    res = run_cli(cli_args(source, main, judge, tmp_path / "ds", tmp_path / "cache"))
    assert res.exit_code == 2, res.output
    assert res.stderr.strip().splitlines()[-1] == (
        "carryon-build: error: item_filter: 0 of 2 queries kept (2 of 2: only 0 items left after the item filter "
        "(at least 7 needed))")
    assert not (tmp_path / "ds").exists()


# ---------------------------------------------------------------- verify names an unloadable config
@pytest.fixture(scope="module")
def small_build(tmp_path_factory):
    """A --no-llm build of a two-row synthetic source (no gated data)."""
    tmp = tmp_path_factory.mktemp("small")
    src = tmp / "source.json"
    src.write_text(json.dumps([row(), row(safe=False, safe_rate=0.1)]))
    out = tmp / "ds"
    r = carryon_build("build", "--source", src, "--out", out, "--no-llm")
    assert r.returncode == 0, r.stderr
    return out


def repin(folder: Path) -> None:
    """Make MANIFEST.json pin the folder's files as they are now (so only the fault under test remains)."""
    man = json.loads((folder / "MANIFEST.json").read_text())
    man["files"] = {p.relative_to(folder).as_posix(): file_entry(p) for p in sorted(folder.rglob("*"))
                    if p.is_file() and p.name != "MANIFEST.json"}
    (folder / "MANIFEST.json").write_text(json.dumps(man, indent=2) + "\n")


def declare(folder: Path, config: str) -> None:
    card = folder / "README.md"
    entry = f"- config_name: {config}\n  data_files:\n  - split: test\n    path: {parquet_name(config)}\n"
    card.write_text(card.read_text().replace("configs:\n", "configs:\n" + entry, 1))


def verify_mismatches(folder: Path, tmp_path: Path) -> tuple[int, list[str]]:
    hf_home = tmp_path / "hf-home"
    r = carryon_build("verify", folder, env={"HF_HOME": str(hf_home), "HF_DATASETS_CACHE": str(hf_home / "ds")})
    assert "Traceback" not in r.stderr
    assert not hf_home.exists()          # loaded in a temporary cache: nothing left behind
    return r.returncode, [line for line in r.stdout.splitlines() if line.startswith("MISMATCH")]


def test_verify_passes_on_a_fresh_build(small_build, tmp_path):
    assert verify_mismatches(small_build, tmp_path) == (0, [])


def test_verify_names_a_declared_config_with_no_rows(small_build, tmp_path):
    """What earlier builds wrote: a declared checklists config as a zero-row Parquet file."""
    folder = tmp_path / "ds"
    shutil.copytree(small_build, folder)
    write_parquet(folder / parquet_name("checklists"), "checklists", [], SCHEMAS["checklists"])
    declare(folder, "checklists")
    repin(folder)
    code, lines = verify_mismatches(folder, tmp_path)
    assert code == 1 and len(lines) == 1, lines
    assert "config 'checklists' does not load with datasets.load_dataset" in lines[0]
    assert "BatchSize must be greater than 0" in lines[0]


def test_verify_names_a_declared_config_that_is_not_parquet(small_build, tmp_path):
    folder = tmp_path / "ds"
    shutil.copytree(small_build, folder)
    (folder / parquet_name("checklists")).parent.mkdir(parents=True)
    (folder / parquet_name("checklists")).write_bytes(b"not parquet at all\n")
    declare(folder, "checklists")
    repin(folder)
    code, lines = verify_mismatches(folder, tmp_path)
    assert code == 1 and len(lines) == 1, lines
    assert lines[0].startswith("MISMATCH data/checklists/test.parquet: config 'checklists': unreadable Parquet")


def test_verify_names_a_config_whose_columns_differ_from_the_card(small_build, tmp_path):
    folder = tmp_path / "ds"
    shutil.copytree(small_build, folder)
    card = folder / "README.md"
    text = card.read_text()
    assert "| n_follow_ups | int64 |" in text
    card.write_text(text.replace("| n_follow_ups | int64 |", "| n_follow_ups | string |"))
    repin(folder)
    code, lines = verify_mismatches(folder, tmp_path)
    assert code == 1 and len(lines) == 1, lines
    assert "config 'flows': columns differ from the card's field table: n_follow_ups is int64" in lines[0]


def test_verify_names_an_absent_config_the_card_does_not_explain(small_build, tmp_path):
    folder = tmp_path / "ds"
    shutil.copytree(small_build, folder)
    card = folder / "README.md"
    card.write_text(card.read_text().replace("no checklists: built with", "checklists: built with"))
    repin(folder)
    code, lines = verify_mismatches(folder, tmp_path)
    assert code == 1 and len(lines) == 1, lines
    assert "config 'checklists' is not declared and the card does not say why" in lines[0]


def test_the_evaluator_loads_a_build_without_checklists(small_build):
    from carryon_eval.dataset.load import load_benchmark
    bench = load_benchmark(small_build)
    assert len(bench.queries) == 1 and bench.checklists == {q: [] for q in bench.queries}
    assert len(bench.conversations) == 15
    assert any("1 of 1 queries have no checklist items" in n for n in dataset_notes(bench, "benutil"))
    assert not any("checklist" in n for n in dataset_notes(bench, "rubric"))     # rubric utility needs no checklist
