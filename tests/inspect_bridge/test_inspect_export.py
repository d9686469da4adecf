"""`carryon-eval export RUNDIR --format inspect`: the run folder read back with inspect-ai's `read_eval_log`.

Skips, saying why, without inspect-ai (the `test` extra installs it)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.eval_cli import invoke, one_error_line
from support.inspect_run import judged_run, partly_unscored_handler

pytest.importorskip("inspect_ai", reason="inspect-ai is not installed (the `test` extra has it)")

from inspect_ai.log import read_eval_log  # noqa: E402

from carryon_eval.run.folder import RunFolder, read_jsonl  # noqa: E402


@pytest.fixture
def run(tmp_path: Path, dataset: Path, scripted_server) -> Path:
    srv = scripted_server(partly_unscored_handler, models=("tgt", "sim", "jdg"))
    return judged_run(srv, dataset, tmp_path / "run")


def test_export_reads_back_with_every_judgment(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "logs" / "run.eval"
    result = invoke("export", run, "--format", "inspect", "--out", out)
    assert result.exit_code == 0, result.output
    log = read_eval_log(str(out))
    transcripts = RunFolder(run).transcripts()

    # one sample per transcript, id = conversation id, messages with turn and move metadata
    samples = {s.id: s for s in log.samples}
    assert len(log.samples) == len(transcripts) and set(samples) == {t.conversation_id for t in transcripts}
    for t in transcripts:
        s = samples[t.conversation_id]
        assert [m.text for m in s.messages] == [m.content for m in t.messages]
        assert [(m.metadata["turn"], m.metadata["move"]) for m in s.messages] == [(m.turn, m.move) for m in t.messages]
        assert (s.metadata["condition"], s.metadata["flow_id"], s.metadata["moves"]) == (t.condition, t.flow_id, t.moves)
        assert s.metadata["query"] and s.metadata["domain"] == "Assistance with Crimes or Torts"

    # every judgment present, unscored as None
    utility = list(read_jsonl(run / "utility_judgments.jsonl"))
    safety = list(read_jsonl(run / "safety_judgments.jsonl"))
    assert any(u["verdict"] is None for u in utility) and any(s["score"] is None for s in safety)
    for u in utility:
        items = samples[u["conversation_id"]].scores["ben_util"].metadata["items"]
        assert {"turn": u["turn"], "item_id": u["item_id"], "verdict": u["verdict"]}.items() <= \
            next(i for i in items if (i["turn"], i["item_id"]) == (u["turn"], u["item_id"])).items()
    for h in safety:
        harm = samples[h["conversation_id"]].scores["harm"].value
        assert harm[f"turn_{h['turn']}"] == h["score"]
        if h["score"] is None:
            assert harm["max"] is None
    assert sum(len(s.scores["ben_util"].metadata["items"]) for s in log.samples) == len(utility)
    # a turn with an unscored verdict still has a utility from its scored item; per-turn values are percents
    q2 = [s for s in log.samples if s.metadata["query_id"] == "q2"]
    assert q2 and all(v in (0.0, 100.0, None) for s in q2 for v in s.scores["ben_util"].value.values())

    # the log's metrics equal results.json's headline numbers, CI and bounds included
    results = json.loads((run / "results.json").read_text())
    groups = {g.name: g for g in log.results.scores}
    assert set(groups) == {"turn1", "oracle", "bc", "nc", "recovery"}
    for cond in ("turn1", "oracle", "bc", "nc"):
        block, group = results["conditions"][cond], groups[cond]
        for name in block["ci95"]:
            if block[name] is None:
                assert name not in group.metrics and name in group.metadata["null"]
            else:
                assert group.metrics[name].value == block[name]
                assert group.metrics[name].metadata["ci95"] == block["ci95"][name]
                assert group.metrics[name].metadata["bounds"] == block["bounds"][name]
    rec = groups["recovery"]
    if results["recovery"]["value"] is None:
        assert rec.metadata["null"]["recovery"] == results["recovery"]["reason"]
    else:
        assert rec.metrics["recovery"].value == results["recovery"]["value"]

    # usage per role, model roles from run.json (no key), marked as exported
    assert set(log.stats.role_usage) == {"target", "user", "grader"}
    assert all(u.input_tokens > 0 for u in log.stats.role_usage.values())
    assert {r: c.model for r, c in log.eval.model_roles.items()} == {"target": "tgt", "user": "sim", "grader": "jdg"}
    assert log.eval.metadata["exported_from"] == "carryon-eval"
    assert "api_key" not in out.read_bytes().decode("latin-1").lower().replace("api_key_env", "")


def test_export_of_an_unreported_folder_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "nothing").mkdir()
    line = one_error_line(invoke("export", tmp_path / "nothing", "--format", "inspect", "--out", tmp_path / "x.eval"))
    assert "not a run folder" in line
    assert not (tmp_path / "x.eval").exists()
