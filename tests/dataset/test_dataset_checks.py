"""Datasets that should not be accepted are refused at load, before a run folder is made, with one line naming
the config, the row and the field; so are conditions that have nothing to run on, and endpoint URL typos."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest
from support.eval_cli import invoke, one_error_line, remote
from support.rollout_data import evaluator_handler, make_dataset


def edit(path: Path, change: Callable[[list[dict]], list[dict]]) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in change(rows)))


def at(i: int, **fields: Any) -> Callable[[list[dict]], list[dict]]:
    return lambda rows: [{**r, **fields} if n == i else r for n, r in enumerate(rows)]


BAD = {
    "duplicate conversation_id": ("conversations", at(1, conversation_id="c1"),
                                  "conversations row 1: duplicate conversation_id 'c1'"),
    "duplicate flow_id": ("flows", lambda rows: rows + [dict(rows[0])], "flows row 4: duplicate flow_id 'F1-bj'"),
    "null query": ("queries", at(1, query=None), "queries row 1: field 'query' must be a non-empty text, got null"),
    "empty query": ("queries", at(0, query="  "), "queries row 0: field 'query' must be a non-empty text"),
    "null question": ("checklists", at(2, question=None), "checklists row 2: field 'question' must be a non-empty"),
    "n_turns": ("flows", at(0, n_turns=7), "flows row 0: field 'n_turns' is 7 but flow F1-bj has 1 move(s), so 4"),
    "null query_id": ("queries", at(0, query_id=None), "queries row 0: field 'query_id' must be a non-empty text"),
    "unknown flow": ("conversations", at(0, flow_id="F9"), "conversations row 0: unknown flow_id 'F9'"),
}


@pytest.mark.parametrize("bad", list(BAD))
def test_a_bad_dataset_is_one_line_naming_config_row_and_field(scripted_server, tmp_path, bad):
    config, change, expected = BAD[bad]
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    data = make_dataset(tmp_path / "data")
    edit(data / f"{config}.jsonl", change)
    out = tmp_path / "run"
    line = one_error_line(invoke(*remote(srv), "--dataset", data, "--out", out))
    assert f"dataset {data}: {expected}" in line, line
    assert not out.exists() and srv.count() == 0


@pytest.mark.parametrize("condition, expected", [
    ("triplet", "dataset {data} has no triplets config"),                # the suite's own word (Suite.missing)
    ("oracle", "nothing to run on dataset {data} (query has no benign_intent"),
])
def test_a_condition_without_its_inputs_is_refused_before_a_run_folder_is_made(scripted_server, tmp_path,
                                                                               condition, expected):
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    data = make_dataset(tmp_path / "data")
    edit(data / "queries.jsonl", lambda rows: [{**r, "benign_intent": None} for r in rows])
    edit(data / "conversations.jsonl", lambda rows: [r for r in rows if r["flow_id"] != "F1-bj"])
    out = tmp_path / "run"
    line = one_error_line(invoke(*remote(srv), "--dataset", data, "--out", out, "--conditions", f"turn1,{condition}"))
    assert f"--conditions {condition}: {expected.format(data=data)}" in line, line
    assert not out.exists() and srv.count() == 0


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:1/v1", "127.0.0.1:8000/v1", "http:///v1"])
def test_an_endpoint_url_typo_is_a_bad_option_not_an_outage(dataset, tmp_path, url):
    out = tmp_path / "run"
    line = one_error_line(invoke("--endpoint", url, "--model", "m", "--dataset", dataset, "--out", out))
    assert f"--endpoint {url}: not an http(s) URL" in line and "rerun" not in line
    assert not out.exists()
