"""`carryon-build` on the OpenSafeIntent source: the release folder beside the clone (../shared/data/opensafeintent),
read at run time; nothing of its text is in this repository. Every test builds into a temporary folder and skips,
saying why, where the release is absent."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from carryonbench_builder.cli import cli
from carryonbench_builder.declared import front_matter
from carryonbench_builder.sources import detect
from carryonbench_builder.sources.opensafeintent import BENIGN_USE, MISUSE_RISK, UPSTREAM, load_release
from support.builder_models import GENERATORS, JUDGE, MAIN_MODELS, Scripted, cli_args, read
from support.shared_data import OPENSAFEINTENT, REPO

DATASET = OPENSAFEINTENT / "dataset.json"
pytestmark = pytest.mark.skipif(not DATASET.is_file(),
                                reason=f"the OpenSafeIntent release is not at {OPENSAFEINTENT} "
                                       "(CI has ../shared/data/opensafeintent beside the clone)")


def carryon_build(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "carryonbench_builder.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("osi") / "ds"
    r = carryon_build("build", "--source-format", "opensafeintent", "--source", OPENSAFEINTENT, "--out", out,
                      "--no-llm")
    assert r.returncode == 0, r.stderr
    return out


def test_no_llm_build_has_every_prompt_set_and_verifies(built):
    manifest = json.loads((built / "MANIFEST.json").read_text())
    counts = manifest["counts"]
    assert (counts["queries"], counts["flows"], counts["conversations"], counts["triplets"]) == (700, 1866, 10500, 4900)
    assert counts["checklists"] == 0 and "provenance" not in counts
    assert manifest["source"] == {"file": "dataset.json", "sha256": manifest["source"]["sha256"],
                                  "format": "opensafeintent", "release": UPSTREAM}     # exactly the pinned release's file
    assert manifest["release"] == "open-v1.0.0" and manifest["name"] == "carryonbench-open"   # its own line
    import hashlib
    assert manifest["source"]["sha256"] == hashlib.sha256(DATASET.read_bytes()).hexdigest()
    r = carryon_build("verify", built)              # hashes, references, flow rules, load_dataset of every config
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK" in r.stdout


def test_queries_take_the_release_fields_and_its_descriptions_verbatim(built):
    rows = json.loads(DATASET.read_text(encoding="utf-8"))
    queries = pq.read_table(built / "data" / "queries" / "test.parquet").to_pylist()
    assert [q["set_row"] for q in queries] == list(range(700))
    for q, row in zip(queries, rows):
        assert q["query"] == row["prompt_dual_use"].strip()
        assert (q["domain"], q["category"]) == (row["harm_domain"], row["task_type"])
        assert q["benign_intent"] == q["benign_context"] == row[BENIGN_USE].strip()
        assert q["malicious_intent"] == q["malicious_context"] == row[MISUSE_RISK].strip()
        assert q["safe_rate"] is None
    conversations = pq.read_table(built / "data" / "conversations" / "test.parquet").to_pylist()
    assert {c["query_id"] for c in conversations} == {q["query_id"] for q in queries}
    assert len(conversations) == 15 * 700
    triplets = read(built, "triplets")
    first = [t for t in triplets if t["set_id"] == queries[0]["query_id"]]
    assert [(t["variant"], t["paraphrase"]) for t in first] == [("benign", 0), ("ambiguous", 0), *[
        ("ambiguous", k) for k in range(1, 5)], ("malicious", 0)]
    assert [t["prompt"] for t in first] == [rows[0][f].strip() for f in (
        "prompt_benign", "prompt_dual_use", "prompt_dual_use_2", "prompt_dual_use_3", "prompt_dual_use_4",
        "prompt_dual_use_5", "prompt_malicious")]


def test_card_states_license_no_gating_counts_and_differences(built):
    card = (built / "README.md").read_text(encoding="utf-8")
    header = front_matter(card)
    assert header["license"] == "apache-2.0" and not any(k.startswith("extra_gated") for k in header)
    assert header["source_datasets"] == ["Uppaal/OpenSafeIntent"]
    assert [c["config_name"] for c in header["configs"]] == ["queries", "flows", "conversations", "triplets"]
    assert "## What differs from the CASE-Bench build" in card and "third-person descriptions" in card
    assert "| queries in this dataset | 700 |" in card and "| conversations | 10,500 |" in card
    assert "no checklists: built with `--no-llm` (Ben-Util needs them)" in card
    assert "Apache License, Version 2.0" in (built / "LICENSE.md").read_text()
    croissant = json.loads((built / "croissant.json").read_text())
    assert croissant["license"] == "https://spdx.org/licenses/Apache-2.0.html" and "conditionsOfAccess" not in croissant


def test_second_build_is_byte_identical(built, tmp_path):
    again = tmp_path / "again"
    r = carryon_build("build", "--source", OPENSAFEINTENT, "--out", again, "--no-llm")    # format detected
    assert r.returncode == 0, r.stderr
    files = sorted(p.relative_to(built).as_posix() for p in built.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again).as_posix() for p in again.rglob("*") if p.is_file())
    for rel in files:
        assert (built / rel).read_bytes() == (again / rel).read_bytes(), rel


def test_publish_plan_is_ungated(built):
    r = carryon_build("publish", built, "--repo-id", "org/carryonbench-open", "--tag", "open-v1.0.0", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "gated=False" in r.stdout


@pytest.mark.parametrize("row, field, value", [(3, "task_type", None), (5, MISUSE_RISK, ""),
                                               (7, "prompt_dual_use_3", 42)])
def test_a_changed_release_file_is_one_line_naming_file_row_and_field(tmp_path, row, field, value):
    rows = json.loads(DATASET.read_text(encoding="utf-8"))
    if value is None:
        del rows[row][field]
    else:
        rows[row][field] = value
    folder = tmp_path / "release"
    folder.mkdir()
    (folder / "dataset.json").write_text(json.dumps(rows), encoding="utf-8")
    out = tmp_path / "ds"
    r = carryon_build("build", "--source", folder, "--out", out, "--no-llm")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert f"dataset.json: row {row}: field '{field}'" in lines[0] and "expected a non-empty string" in lines[0]
    assert not out.exists()


def test_malformed_json_and_format_detection(tmp_path):
    folder = tmp_path / "release"
    folder.mkdir()
    (folder / "dataset.json").write_text("[{", encoding="utf-8")
    r = carryon_build("build", "--source", folder, "--out", tmp_path / "ds", "--no-llm")
    assert r.returncode == 2 and "dataset.json: not valid JSON" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert detect(OPENSAFEINTENT).name == "opensafeintent" and detect(DATASET).name == "opensafeintent"
    r = carryon_build("build", "--source", OPENSAFEINTENT, "--out", tmp_path / "ds2", "--no-llm",
                      "--min-safe-rate", "0.5")
    assert r.returncode == 2 and "has no annotator ratings" in r.stderr


# ---------------------------------------------------------------- the LLM stages, against the scripted models
def test_llm_build_of_5_writes_intents_checklists_provenance_and_the_dry_run_predicts_it(scripted_server, tmp_path):
    queries = load_release(OPENSAFEINTENT)[:5]
    script = Scripted({q.query: label for q, label in zip(queries, "ABCDE")})
    main = scripted_server(script.reply, models=MAIN_MODELS)
    judge = scripted_server(script.reply, models=(JUDGE,))
    out = tmp_path / "ds"
    args = [a if a != "3" else "5" for a in cli_args(OPENSAFEINTENT, main, judge, out, tmp_path / "cache")]
    args[1:1] = ["--source-format", "opensafeintent"]

    dry = CliRunner().invoke(cli, [*args, "--dry-run"], catch_exceptions=False)
    assert dry.exit_code == 0, dry.output
    assert main.count() == 0 and judge.count() == 0
    plan = {line.split()[0]: line.split() for line in dry.stdout.splitlines() if line.split()}
    assert "paraphrase" not in plan                         # the release's own prompts are the triplets
    predicted = {s: int(plan[s][3].replace(",", "")) for s in ("intents", "oracle_answers", "harm_filter",
                                                                "malicious_intent")}
    assert predicted == {"intents": 5, "oracle_answers": 15, "harm_filter": 15, "malicious_intent": 5}

    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output

    def calls(stage: str) -> int:
        return sum(1 for s in (main, judge) for b in s.requests if script.stage(b) == stage)
    # nothing is dropped before the harm filter: the first three stages cost exactly what the dry run said
    assert {s: calls(s) for s in ("intents", "oracle_answers", "harm_filter")} == {
        "intents": 5, "oracle_answers": 15, "harm_filter": 15}
    assert calls("malicious_intent") == 4 <= predicted["malicious_intent"]     # B dropped by the harm filter
    assert calls("paraphrase") == 0

    ids = [q.query_id for q in queries]
    rows = read(out, "queries")
    assert [r["query_id"] for r in rows] == [ids[0], *ids[2:]]
    assert all(r["benign_intent"].startswith("I am a teacher") for r in rows)
    assert all(r["malicious_intent"].startswith("I want the answer") for r in rows)
    assert all(r["benign_context"] == q.benign_context for r, q in zip(rows, [queries[0], *queries[2:]]))
    checklists = read(out, "checklists")
    assert {r["query_id"] for r in checklists} == set(rows_ids := [r["query_id"] for r in rows]) and checklists
    prov = read(out, "provenance")
    assert {r["stage"] for r in prov} == {"intents", "oracle_answers", "harm_filter", "decompose", "merge",
                                          "item_filter", "malicious_intent"}
    assert any(r["detail"].startswith("model=intent-m; prompt=builder/intent_writer_described@") for r in prov)
    assert len(read(out, "triplets")) == 7 * len(rows_ids)
    manifest = json.loads((out / "MANIFEST.json").read_text())
    assert list(manifest["llm_stages"]["stages"]) == ["intents", "oracle_answers", "harm_filter", "decompose",
                                                      "merge", "item_filter", "malicious_intent"]
    assert manifest["llm_stages"]["stages"]["intents"]["prompt"]["ref"].startswith("builder/intent_writer_described@")
    assert manifest["counts"]["limit"] == 5 and len(GENERATORS) == 3
    r = carryon_build("verify", out)
    assert r.returncode == 0, r.stdout + r.stderr


def test_release_text_is_not_copied_into_the_repository():
    repo = REPO
    probe = json.loads(DATASET.read_text(encoding="utf-8"))[0]["prompt_dual_use"][:60]
    if not shutil.which("git"):
        pytest.skip("git is not installed")
    tracked = subprocess.run(["git", "-C", str(repo), "ls-files"], capture_output=True, text=True).stdout.split()
    for rel in tracked:
        path = repo / rel
        text_file = path.suffix in (".py", ".md", ".txt", ".json", ".toml")
        if path.is_file() and text_file and path.stat().st_size < 5_000_000:
            assert probe not in path.read_text(encoding="utf-8", errors="replace"), rel
