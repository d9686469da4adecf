"""The builder's recipe: the filter rule the build applied stated in card and MANIFEST, the checklist-size
rules as options with their counts, and build recipes (`--recipe FILE`, flags override, a dry run needing no
endpoint and no source). Scripted servers, real HTTP; the source is the synthetic CASE-Bench-shaped file."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.builder_models import GENERATORS, JUDGE, MAIN_MODELS, Scripted, cli_args, read
from support.synthetic_source import write_llm_source

from carryonbench_builder.cli import cli
from carryonbench_builder.sources.casebench import load_source, select_queries
from support.shared_data import REPO

PAPER = REPO / "releases" / "recipes" / "paper.toml"


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    return write_llm_source(tmp_path_factory.mktemp("source") / "casebench_synthetic.json")


@pytest.fixture
def servers(scripted_server, source):
    queries = select_queries(load_source(source))[:3]
    script = Scripted({q.query: label for q, label in zip(queries, "ABC")})
    return scripted_server(script.reply, models=MAIN_MODELS), scripted_server(script.reply, models=(JUDGE,)), queries


def run(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_three_generators_apply_the_three_harmless_rule_and_say_so(source, servers, tmp_path):
    main, judge, queries = servers
    out = tmp_path / "ds"
    res = run(*cli_args(source, main, judge, out, tmp_path / "cache"))
    assert res.exit_code == 0, res.output
    a, b, c = (q.query_id for q in queries)
    assert [r["query_id"] for r in read(out, "queries")] == [a, c]          # B: 1 harmless of 3 -> dropped
    prov = [r for r in read(out, "provenance") if r["query_id"] == b and r["stage"] == "harm_filter"]
    assert prov[-1]["decision"] == "dropped" and "(at least 3 needed)" in prov[-1]["reason"]
    rule = (f"a query is kept only with at least 3 harmless answers of 3 generators ({', '.join(GENERATORS)}), "
            f"judged by {JUDGE} (LLM judge)")
    card = (out / "README.md").read_text()
    assert f"harmfulness classifier applied this rule in this build: {rule}" in card
    assert f"Harm filter rule applied in this build: {rule}; harmful answers are excluded." in card
    assert "keeps a query only with at least 3 harmless answers;" not in card      # not the paper's wording
    manifest = json.loads((out / "MANIFEST.json").read_text())["llm_stages"]
    assert manifest["harm_filter_rule"].startswith(rule)
    assert manifest["stages"]["harm_filter"]["min_harmless_answers"] == 3
    assert manifest["checklist_items"] == {"min": 7, "max": 23, "queries_truncated_at_max": 1, "items_cut_at_max": 2,
                                           "queries_dropped_below_min": {"merge": 0, "item_filter": 0}}


def test_one_generator_states_its_one_answer_rule(source, servers, tmp_path):
    main, judge, _ = servers
    args = [a for a in cli_args(source, main, judge, tmp_path / "ds", tmp_path / "cache")]
    keep = [x for i, x in enumerate(args) if not (x == "--generator-model" or (i and args[i - 1] == "--generator-model"))]
    res = run(*keep, "--generator-model", "gen-a")
    assert res.exit_code == 0, res.output
    card = (tmp_path / "ds" / "README.md").read_text()
    assert "at least 1 harmless answers of 1 generator (gen-a)" in card


def test_item_range_options_and_their_counts_in_the_card(source, servers, tmp_path):
    main, judge, queries = servers
    out = tmp_path / "ds"
    res = run(*cli_args(source, main, judge, out, tmp_path / "cache"), "--min-items", 12, "--max-items", 20)
    assert res.exit_code == 0, res.output
    a, _, c = (q.query_id for q in queries)
    # A: 12 merged items, 11 after the item filter < 12 -> dropped; C: 25 merged -> cut to 20
    assert [r["query_id"] for r in read(out, "queries")] == [c]
    assert len([r for r in read(out, "checklists") if r["query_id"] == c]) == 20
    card = (out / "README.md").read_text()
    assert ("Checklist size rules applied: at most 20 items (--max-items; 1 query truncated, 5 items cut), at least "
            "12 (--min-items; 0 queries dropped after merging, 1 query after the item filter).") in card
    items = json.loads((out / "MANIFEST.json").read_text())["llm_stages"]["checklist_items"]
    assert items["min"] == 12 and items["max"] == 20 and items["queries_dropped_below_min"]["item_filter"] == 1
    assert run(*cli_args(source, main, judge, tmp_path / "x", tmp_path / "c2"), "--min-items", 9,
               "--max-items", 8).exit_code == 2


def test_paper_recipe_dry_run_needs_no_endpoint_and_no_source():
    res = run("build", "--recipe", PAPER, "--dry-run")
    assert res.exit_code == 0, res.output
    assert "dry run: 398 queries, 5 generators; no endpoint was called" in res.output
    assert "recipe paper (" in res.output
    assert "at least 3 harmless answers of 5 generators" in res.output and "allenai/wildguard" in res.output
    assert "gemini-2.5-flash" in res.output and "gpt-4o" in res.output
    assert "7 to 23 items" in res.output


def test_flags_override_the_recipe(source, tmp_path):
    res = run("build", "--recipe", PAPER, "--dry-run", "--source", source, "--limit", 2,
              "--generator-model", "only-one", "--max-items", 15, "--role-model", "item_filter=mine")
    assert res.exit_code == 0, res.output
    assert "dry run: 2 queries, 1 generator;" in res.output
    assert "at least 1 harmless answers of 1 generator (only-one)" in res.output
    assert "7 to 15 items" in res.output and "mine" in res.output
    assert "allenai/wildguard" in res.output           # the recipe's other roles stay


def test_a_bad_recipe_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[build]\ngenerator_modles = ["x"]\n')
    res = CliRunner().invoke(cli, ["build", "--recipe", str(bad), "--dry-run"])
    assert res.exit_code == 2
    assert res.stderr.strip() == f"carryon-build: error: recipe {bad}: unknown or not allowed option(s) in [build]: " \
                                 "generator_modles"
    res = CliRunner().invoke(cli, ["build", "--recipe", str(tmp_path / "none.toml"), "--dry-run"])
    assert res.exit_code == 2 and "no such file" in res.stderr
    res = CliRunner().invoke(cli, ["build", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m"])
    assert res.exit_code == 2 and "--source FILE and --out DIR" in res.stderr
