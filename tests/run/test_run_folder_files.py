"""A finished run folder is a few dozen files whatever the run's size: the response cache is one database, each
judgment file one file, and the report's transcripts at most MAX_PAGES pages. Counted on a 20-query run in each
Ben-Util mode (per item; grouped, calibrated on replies also judged per item: the judgment files of both), with the
report paged as a large run's is."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from support.eval_cli import invoke, remote
from support.grouped_judge import consistent_handler
from support.rollout_data import FLOWS, QUERIES, write_dataset_folder

from carryon_eval.model.cache import DATABASE
from carryon_eval.report import pages
from carryon_eval.schema import TABLE_COLUMNS

N_QUERIES = 20
MOST_FILES = 50


def twenty_queries(root: Path) -> Path:
    """20 queries of 2 checklist items, each with a BC and an NC conversation (1 and 3 follow-up moves)."""
    queries = [{**QUERIES[i % len(QUERIES)], "query_id": f"q{i}"} for i in range(N_QUERIES)]
    tables = {
        "queries": queries,
        "checklists": [{"query_id": q["query_id"], "item_id": f"{q['query_id']}-i{i}", "category": "made-up",
                        "question": f"Does the response give made-up fact {i}?"} for q in queries for i in (1, 2)],
        "flows": [{"flow_id": f, "moves": FLOWS[f], "n_turns": 2 * (1 + len(FLOWS[f])), "condition": c}
                  for f, c in (("F1-bj", "BC"), ("F3-pb.bk.rp", "NC"))],
        "conversations": [{"conversation_id": f"{q['query_id']}-{f}", "query_id": q["query_id"], "flow_id": f}
                          for q in queries for f in ("F1-bj", "F3-pb.bk.rp")],
    }
    tables = {name: [{k: r.get(k) for k in TABLE_COLUMNS[name]} for r in rows] for name, rows in tables.items()}
    root = root.parent / f"{root.name}-{uuid.uuid4().hex[:12]}"      # `datasets` caches a folder by its name
    root.mkdir(parents=True)
    return write_dataset_folder(root, tables, "A made-up dataset of 20 queries.")


MODES = {   # Ben-Util mode -> its options and the judgment files a run of it ends with
    "per-item": ((), {"utility_judgments.jsonl", "safety_judgments.jsonl"}),
    "grouped": (("--utility-judge", "grouped", "--calibrate", "6"),
                {"utility_grouped_judgments.jsonl", "utility_judgments.jsonl", "safety_judgments.jsonl"}),
}


@pytest.mark.parametrize("mode", MODES)
def test_a_finished_run_folder_holds_at_most_50_files(scripted_server, tmp_path, monkeypatch, mode):
    monkeypatch.setattr(pages, "INLINE_LIMIT", 0)          # its transcripts paged, as a large run's are
    srv = scripted_server(consistent_handler(), models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    options, judgment_files = MODES[mode]
    result = invoke(*remote(srv), "--dataset", twenty_queries(tmp_path / "data"), "--out", out, *options)
    assert result.exit_code == 0, result.output
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert len(files) <= MOST_FILES, files
    assert [f for f in files if f.startswith("cache")] == [f"cache/{DATABASE}"]       # its WAL folded back in
    paged = [f for f in files if f.startswith(pages.PAGES_DIR)]
    assert 0 < len(paged) <= pages.MAX_PAGES, paged
    judged = {f for f in files if f.endswith("_judgments.jsonl")}
    assert judged == judgment_files, judged
    assert ("utility_grouped_answers.jsonl" in files) == (mode == "grouped")
    assert srv.count() > 20 * 10                           # every query played and judged: a run of its size
