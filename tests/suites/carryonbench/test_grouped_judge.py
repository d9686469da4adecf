"""Grouped Ben-Util (one judge call per reply for all its checklist items) against a scripted judge, real HTTP.

The scripted judge (support/grouped_judge.py) decides every (reply, item) verdict from the texts alone, so it
answers the per-item and the grouped prompt consistently: the two modes must give the same verdicts. A grouped
answer that leaves out an item or names it by a wrong id leaves exactly those items to be asked alone."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from support.batch_runner import batch_runner
from support.eval_cli import invoke, table_calls
from support.grouped_judge import GROUPED, PER_ITEM, consistent_handler, grouped_answer, per_item_answer, reply_of
from support.rollout_data import unique_replies
from support.scripted_server import last_user_text

from carryon_eval.suites.carryonbench.judging.grouped import parse_verdicts


def remote(srv: Any) -> list[Any]:
    return ["--endpoint", srv.base_url, "--model", "tgt", "--user-endpoint", srv.base_url, "--user-model", "sim",
            "--judge-endpoint", srv.base_url, "--judge-model", "jdg"]


def records(path: Path) -> dict[tuple, dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {(r["conversation_id"], r["turn"], r["item_id"]): r for r in rows}


def judge_asks(srv: Any, marker: str) -> list[str]:
    return [last_user_text(b) for b in srv.requests if b["model"] == "jdg" and marker in last_user_text(b)]


def test_grouped_gives_the_per_item_verdicts_in_one_call_per_reply(scripted_server, dataset, tmp_path):
    srv = scripted_server(consistent_handler(), models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    assert invoke(*remote(srv), "--dataset", dataset, "--out", out, "--conditions", "turn1,bc").exit_code == 0
    per_item = records(out / "utility_judgments.jsonl")
    srv_calls_before = len(judge_asks(srv, PER_ITEM))
    srv.reset()
    result = invoke("judge", out, "--utility-judge", "grouped")
    assert result.exit_code == 0, result.output
    grouped = records(out / "utility_grouped_judgments.jsonl")
    assert grouped.keys() == per_item.keys() and len(grouped) > 0
    assert {k: r["verdict"] for k, r in grouped.items()} == {k: r["verdict"] for k, r in per_item.items()}
    assert {True, False} <= {r["verdict"] for r in grouped.values()}            # both verdicts occur
    assert all(r["mode"] == "grouped" and r["asked"] == "group" for r in grouped.values())
    assert all(r["prompt_version"].startswith("judges/ben_util_grouped@") for r in grouped.values())
    asks = judge_asks(srv, GROUPED)
    assert len(asks) == len(set(asks)) <= len({(c, t) for c, t, _ in grouped})  # one call per distinct reply
    per_item_calls = srv_calls_before                                             # every item of those replies
    assert len(asks) * 2 == per_item_calls                                       # 2 items per checklist
    assert not judge_asks(srv, PER_ITEM)                                         # nothing asked alone
    body = next(b for b in srv.requests if b["model"] == "jdg" and GROUPED in last_user_text(b))
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == [i for i, _ in re.findall(r"^\[([^\]]+)\] (.+)$", last_user_text(body), re.M)]

    assert invoke("report", out).exit_code == 0
    res = json.loads((out / "results.json").read_text())
    assert res["judges"]["utility"]["utility_judge"] == "grouped"
    assert res["judges"]["utility"]["calibration"]["calibrated"] is False
    assert any("NOT CALIBRATED" in n for n in res["notes"])
    assert "grouped" in res["run"]["status"] and "GROUPED BEN-UTIL" in (out / "table.md").read_text()
    assert "mode grouped" in (out / "report.html").read_text()
    assert invoke("report", out).exit_code == 0


def test_an_omitted_or_mislabelled_item_is_asked_alone(scripted_server, dataset, tmp_path):
    omit = lambda reply, item: item.endswith("-i2") and "#3" in reply
    mislabel = lambda reply, item: item.endswith("-i1") and "#5" in reply
    srv = scripted_server(consistent_handler(omit=omit, mislabel=mislabel), models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    result = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--conditions", "turn1,bc",
                    "--utility-judge", "grouped")
    assert result.exit_code == 0, result.output
    assert "without calibration" in result.output
    grouped = records(out / "utility_grouped_judgments.jsonl")
    replies = {(c, t): None for c, t, _ in grouped}
    texts = {}
    for line in (out / "transcripts.jsonl").read_text().splitlines():
        t = json.loads(line)
        for m in t["messages"]:
            if m["role"] == "assistant":
                texts[(t["conversation_id"], m["turn"])] = m["content"]
    expected_alone = {k for k in grouped if (omit(texts[k[:2]], k[2]) or mislabel(texts[k[:2]], k[2]))}
    assert expected_alone and len(expected_alone) < len(grouped)
    assert {k for k, r in grouped.items() if r["asked"] == "alone"} == expected_alone
    assert all(r["verdict"] is not None for r in grouped.values())             # the re-asks answered
    alone = judge_asks(srv, PER_ITEM)
    asked = {(reply_of(a), a.rsplit("Checklist item: ", 1)[1].strip()) for a in alone}
    assert len(alone) == len(asked) == len({(texts[k[:2]], k[2]) for k in expected_alone})   # each once, alone
    assert len(replies) > 0


def test_the_grouped_judgment_file_holds_each_raw_answer_once(scripted_server, dataset, tmp_path):
    """A group's answer is stored once (utility_grouped_answers.jsonl) and its item records name it; an item asked
    alone names its own answer; both files read with jsonlines and datasets, and a reader of the records gets each
    record's raw answer back."""
    import datasets
    import jsonlines

    from carryon_eval.run.folder import RunFolder

    omit = lambda reply, item: item.endswith("-i2") and "#3" in reply
    srv = scripted_server(consistent_handler(omit=omit), models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    result = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--conditions", "turn1,bc",
                    "--utility-judge", "grouped")
    assert result.exit_code == 0, result.output
    with jsonlines.open(out / "utility_grouped_judgments.jsonl") as reader:
        items = list(reader)
    with jsonlines.open(out / "utility_grouped_answers.jsonl") as reader:
        answers = {a["answer"]: a["raw"] for a in reader}
    group_answers = {grouped_answer(a, omit) for a in judge_asks(srv, GROUPED)}
    alone_answers = {per_item_answer(a) for a in judge_asks(srv, PER_ITEM)}
    assert len(group_answers) > 1 and alone_answers
    assert sorted(answers.values()) == sorted(group_answers | alone_answers)        # each text once
    assert all("raw" not in r and r["answer"] in answers for r in items)            # records name theirs
    assert {r["answer"] for r in items} == set(answers)
    by_reply: dict[tuple, set] = {}
    for r in items:
        if r["asked"] == "group":
            by_reply.setdefault((r["conversation_id"], r["turn"]), set()).add(r["answer"])
    assert by_reply and all(len(named) == 1 for named in by_reply.values())       # one answer per group call
    folder = out / "utility_grouped_judgments.jsonl"
    text = folder.read_text() + (out / "utility_grouped_answers.jsonl").read_text()
    assert all(text.count(json.dumps(raw)[1:-1]) == 1 for raw in group_answers)
    assert len(datasets.load_dataset("json", data_files=str(folder), split="train")) == len(items)
    assert datasets.load_dataset("json", data_files=str(out / "utility_grouped_answers.jsonl"),
                                 split="train")["raw"] == list(answers.values())
    held = RunFolder(out).judgments().records("utility_grouped_judgments.jsonl")
    assert [answers[r["answer"]] for r in items] == [r.raw for r in held]          # each answer put back in its records


def test_an_item_unscored_alone_too_stays_unscored(scripted_server, dataset, tmp_path):
    omit = lambda reply, item: item.endswith("-i2")                   
    srv = scripted_server(consistent_handler(omit=omit, alone=lambda text: "perhaps"), models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    result = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--conditions", "turn1",
                    "--utility-judge", "grouped", "--judge-format", "text")
    assert result.exit_code == 0, result.output
    grouped = records(out / "utility_grouped_judgments.jsonl")
    i2 = [r for k, r in grouped.items() if k[2].endswith("-i2")]
    assert i2 and all(r["verdict"] is None and r["asked"] == "alone" and r["attempts"] == 4 for r in i2)
    assert all(r["verdict"] is not None for k, r in grouped.items() if k[2].endswith("-i1"))
    judge = json.loads((out / "judge.json").read_text())
    assert judge["utility_grouped"]["unscored"] == len(i2)


def test_dry_run_predicts_the_grouped_calls_exactly(scripted_server, dataset, tmp_path):
    for size in ("25", "1"):
        srv = scripted_server(lambda b: unique_replies(b) if b["model"] != "jdg" else consistent_handler()(b),
                              models=("tgt", "sim", "jdg"))
        out = tmp_path / f"run-{size}"
        args = [*remote(srv), "--dataset", dataset, "--out", out, "--utility-judge", "grouped",
                "--utility-group-size", size]
        dry = invoke(*args, "--dry-run", "--json")
        assert dry.exit_code == 0, dry.output
        table = json.loads(dry.stdout)
        modes = table["utility_modes"]
        assert table["utility_judge"] == "grouped" and modes["group_size"] == int(size)
        assert modes["grouped"]["calls"] < modes["per-item"]["calls"] or size == "1"
        real = invoke(*args)
        assert real.exit_code == 0, real.output
        assert len(judge_asks(srv, GROUPED)) == table["judge_by_scorer"]["utility_grouped"] \
            == modes["grouped"]["calls"]
        assert srv.count(lambda b: b["model"] == "jdg") == table["roles"]["judge"]["all"]["calls"]
        assert table_calls(real.stdout)["judge"] == table["roles"]["judge"]["all"]["calls"]


def test_parse_verdicts_is_strict():
    ids = ["a-1", "a-2", "a-3"]
    assert parse_verdicts('{"a-1": "yes", "a-2": "no", "a-3": "Yes"}', ids) == ({"a-1": True, "a-2": False,
                                                                                  "a-3": True}, "json")
    assert parse_verdicts('```json\n{"a-1": "yes", "b-9": "no", "a-2": "maybe", "a-3": true}\n```', ids) \
        == ({"a-1": True}, "json")                          # unknown id, a value not yes/no: left unscored
    assert parse_verdicts("[a-1]: yes\na-2 = no\na-3: probably yes", ids) == ({"a-1": True, "a-2": False}, "lines")
    assert parse_verdicts("a-1: yes\na-1: no\na-2: no", ids) == ({"a-2": False}, "lines")     # contradicted
    assert parse_verdicts("All of them, yes.", ids) == ({}, "")


def test_batch_export_and_import_handle_grouped_requests(scripted_server, dataset, tmp_path):
    import shutil

    srv = scripted_server(consistent_handler(), models=("tgt", "sim", "jdg"))
    live = tmp_path / "live"
    assert invoke(*remote(srv), "--dataset", dataset, "--out", live, "--conditions", "turn1,bc",
                  "--utility-judge", "grouped").exit_code == 0
    grouped_calls = len(judge_asks(srv, GROUPED))
    copy = tmp_path / "batched"
    copy.mkdir()
    for name in ("run.json", "transcripts.jsonl"):
        shutil.copy(live / name, copy / name)
    srv.reset()

    assert invoke("judge", copy, "--batch-export", tmp_path / "b1").exit_code == 0
    requests = [json.loads(x) for x in (tmp_path / "b1" / "requests-0001.jsonl").read_text().splitlines()]
    grouped = [r for r in requests if GROUPED in r["body"]["messages"][-1]["content"]]
    assert len(grouped) == grouped_calls and all("ben_util_verdicts" in json.dumps(r["body"]) for r in grouped)
    omit = lambda reply, item: item.endswith("-i2") and "#3" in reply
    batch_runner(tmp_path / "b1" / "requests-0001.jsonl", tmp_path / "r1.jsonl",
                 answer=consistent_handler(omit=omit))
    first = invoke("judge", copy, "--batch-import", tmp_path / "r1.jsonl")
    assert first.exit_code == 2 and "have no answer in the result file" in first.output   # the items left out

    assert invoke("judge", copy, "--batch-export", tmp_path / "b2").exit_code == 0
    second = [json.loads(x) for x in (tmp_path / "b2" / "requests-0001.jsonl").read_text().splitlines()]
    assert second and all(PER_ITEM in r["body"]["messages"][-1]["content"] for r in second)   # each item alone
    assert all(r["body"]["messages"][-1]["content"].split("Checklist item: ")[1].startswith(
        "Does the response give made-up fact 2?") for r in second)                # only the items left out
    batch_runner(tmp_path / "b2" / "requests-0001.jsonl", tmp_path / "r2.jsonl", answer=consistent_handler())
    done = invoke("judge", copy, "--batch-import", tmp_path / "r1.jsonl", "--batch-import", tmp_path / "r2.jsonl")
    assert done.exit_code == 0, done.output
    assert srv.count() == 0                                                    # nothing was asked live
    mine, theirs = records(copy / "utility_grouped_judgments.jsonl"), records(live / "utility_grouped_judgments.jsonl")
    assert {k: r["verdict"] for k, r in mine.items()} == {k: r["verdict"] for k, r in theirs.items()}
    assert {r["asked"] for r in mine.values()} == {"group", "alone"}
