"""The values of the keys a run uses never land in a file, even when a server puts the request's Authorization
header into its replies: transcripts, judgments, the response cache, results.json and report.html hold none."""
from __future__ import annotations

import json

from support.cache_entries import stored
from support.eval_cli import invoke, remote
from support.rollout_data import evaluator_handler

from carryon_eval.model.redact import MASK

KEY = "sk-test-0123456789abcdef-leaky"


def test_a_key_echoed_by_the_server_is_written_nowhere(scripted_server, dataset, tmp_path, monkeypatch):
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"), api_key=KEY, echo_authorization=True)
    monkeypatch.setenv("LEAKY_KEY", KEY)
    out = tmp_path / "run"
    result = invoke(*remote(srv), "--api-key-env", "LEAKY_KEY", "--dataset", dataset, "--out", out,
                    "--conditions", "turn1,bc")
    assert result.exit_code == 0, result.output
    assert KEY not in result.output
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) > 10 and (out / "report.html").is_file()
    leaked = [p for p in files if KEY.encode() in p.read_bytes()]
    assert leaked == []
    replies = [m["content"] for line in (out / "transcripts.jsonl").read_text().splitlines()
               for m in json.loads(line)["messages"] if m["role"] == "assistant"]
    assert replies and all(reply.endswith(f"[Bearer {MASK}]") for reply in replies)   # echoed, and masked
    cached = stored(out / "cache").values()
    assert cached and all(MASK in json.dumps(p) for p in cached)
