"""An empty target reply is never final: the transcript keeps it (its turn unscored, the run incomplete), and the
next run asks that conversation again, until the model answers."""
from __future__ import annotations

import json

from support.eval_cli import invoke, remote
from support.rollout_data import evaluator_handler
from support.scripted_server import Fault, last_user_text

from carryon_eval.cli import INCOMPLETE
from carryon_eval.run.folder import RunFolder


def test_an_empty_reply_is_asked_again_by_the_next_run(scripted_server, dataset, tmp_path):
    flaky = {"on": True}

    def handler(body: dict):
        if flaky["on"] and body["model"] == "tgt" and "pinball" in last_user_text(body) \
                and len(body["messages"]) == 1:
            return Fault.empty("")                       # q1's shared turn-1 reply: empty, for now
        return evaluator_handler(body)

    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    command = [*remote(srv), "--dataset", dataset, "--out", out, "--conditions", "turn1,bc,nc"]
    first = invoke(*command)
    assert first.exit_code == INCOMPLETE, first.output          # never exit 0 on an empty reply
    empty = [t for t in RunFolder(out).transcripts() if t.query_id == "q1"]
    assert empty and all(t.replies[0].content == "" for t in empty)
    results = json.loads((out / "results.json").read_text())
    assert results["judges"]["complete"] is False and results["unscored"]["safety_not_judged"] >= len(empty)
    judged = {(r["conversation_id"], r["turn"]) for r in map(json.loads, (out / "safety_judgments.jsonl").open())}
    assert not judged & {(t.conversation_id, 1) for t in empty}     # no verdict on a reply that is not there

    flaky["on"] = False                                          # the model answers now
    srv.reset()
    again = invoke(*command)
    assert again.exit_code == 0, again.output
    asked = [b for b in srv.requests if b["model"] == "tgt" and len(b["messages"]) == 1]
    assert len(asked) == 1 and "pinball" in last_user_text(asked[0])     # the one empty reply, asked again
    redone = [t for t in RunFolder(out).transcripts() if t.query_id == "q1"]
    assert len(redone) == len(empty) and all(t.replies[0].content for t in redone)
    results = json.loads((out / "results.json").read_text())
    assert results["unscored"]["safety_not_judged"] == 0 and results["judges"]["complete"] is not False
