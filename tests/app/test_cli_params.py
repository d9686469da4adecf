"""`carryon-eval` against endpoints that refuse parameters, with per-role request options, and options given
before a subcommand (scripted server, real HTTP, the real openai client)."""
from __future__ import annotations

import json

from support.eval_cli import invoke, one_error_line, remote
from support.rollout_data import evaluator_handler as handler

from carryon_eval.run.records import RunMeta


def read(path):
    return json.loads(path.read_text())


def test_a_reasoning_model_endpoint_completes_a_run_and_says_what_was_sent(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"), quirks=("reasoning_model",))
    out = tmp_path / "run"
    res = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--concurrency", "2")
    assert res.exit_code == 0, res.output
    meta = RunMeta.from_json(read(out / "run.json"))
    for role in ("target", "user", "judge"):
        assert meta.role(role).sent["max_tokens"] == "sent as max_completion_tokens"
        assert meta.role(role).sent["temperature"].startswith("not sent: provider default")
    statuses = srv.statuses
    assert set(statuses) == {200, 400} and statuses.count(400) <= 3 * 2 * 2   # learned once per endpoint
    answered = [b for b, s in zip(srv.requests, statuses) if s == 200]
    assert all("max_tokens" not in b and "temperature" not in b and "max_completion_tokens" in b for b in answered)
    notes = read(out / "results.json")["notes"]
    said = [n for n in notes if "temperature: provider default; not 0:" in n]
    assert len(said) == 2 and any("target (tgt)" in n for n in said) and any("judge (jdg)" in n for n in said)
    assert any("user (sim)" in n and "provider default; not 0.7" in n for n in notes)
    assert "temperature: provider default; not 0" in (out / "report.html").read_text()
    again = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--concurrency", "2")   # a rerun: all cached
    assert again.exit_code == 0, again.output and srv.count() == len(statuses)


def test_role_request_options_are_sent_recorded_and_pin_the_run(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    args = [*remote(srv), "--dataset", dataset, "--out", out, "--limit", "1", "--conditions", "turn1,bc",
            "--target-system-prompt", "You are a careful assistant.", "--target-reasoning-effort", "low",
            "--user-extra-body", '{"top_p": 0.5}', "--user-max-tokens", "99", "--judge-temperature", "default",
            "--target-temperature", "0.3"]
    res = invoke(*args)
    assert res.exit_code == 0, res.output
    by = {m: [b for b in srv.requests if b["model"] == m] for m in ("tgt", "sim", "jdg")}
    assert all(b["messages"][0] == {"role": "system", "content": "You are a careful assistant."}
               and b["reasoning_effort"] == "low" and b["temperature"] == 0.3 for b in by["tgt"])
    assert by["sim"] and all(b["top_p"] == 0.5 and b["max_tokens"] == 99 for b in by["sim"])
    assert by["jdg"] and all("temperature" not in b and b["messages"][0]["role"] == "user" for b in by["jdg"])
    run = read(out / "run.json")
    assert run["roles"]["target"]["system_prompt"] == "You are a careful assistant."
    assert run["roles"]["target"]["reasoning_effort"] == "low" and run["roles"]["user"]["extra_body"] == {"top_p": 0.5}
    assert run["roles"]["judge"]["temperature"] == "default" and run["generation"]["user"]["max_tokens"] == 99
    assert run["generation"]["target"]["temperature"] == 0.3
    assert "system_prompt" not in run["roles"]["judge"] and "sent" not in run["roles"]["target"]
    notes = read(out / "results.json")["notes"]
    assert any("judge (jdg) ran with temperature: provider default; as asked" in n for n in notes)
    other = list(args)
    other[other.index("You are a careful assistant.")] = "Something else."
    line = one_error_line(invoke(*other))
    assert "roles.target.request" in line


def test_old_spellings_still_work(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    res = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--limit", "1", "--conditions", "turn1",
                 "--max-tokens", "77", "--temperature", "0.2")
    assert res.exit_code == 0, res.output
    assert read(out / "run.json")["generation"]["target"] == {"temperature": 0.2, "max_tokens": 77, "seed": 0}
    assert "--max-tokens" not in invoke("--help").output and "--target-max-tokens" in invoke("--help").output
    line = one_error_line(invoke(*remote(srv), "--max-tokens", "5", "--target-max-tokens", "6", "--dataset", dataset,
                                 "--out", tmp_path / "r2"))
    assert "--target-max-tokens" in line


def test_options_before_a_subcommand_apply_to_it_or_are_refused(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg", "other-judge"))
    out = tmp_path / "run"
    assert invoke(*remote(srv), "--dataset", dataset, "--out", out, "--limit", "1", "--conditions", "turn1"
                  ).exit_code == 0
    before = srv.count(lambda b: b["model"] == "other-judge")
    res = invoke("--judge-model", "other-judge", "--judge-temperature", "0.5", "judge", out)
    assert res.exit_code == 0, res.output
    asked = [b for b in srv.requests if b["model"] == "other-judge"]
    assert before == 0 and asked and all(b["temperature"] == 0.5 for b in asked)
    assert "judge (other-judge)" in res.output
    line = one_error_line(invoke("--limit", 1, "report", out))
    assert "--limit" in line and "'report'" in line
    moved = invoke("--dataset", dataset, "report", out)        # report takes --dataset: it applies
    assert moved.exit_code == 0, moved.output
    line = one_error_line(invoke("--judge-model", "other-judge", "report", out))
    assert "--judge-model" in line


def test_reasoning_content_stays_in_the_transcript_and_reaches_no_one_else(scripted_server, dataset, tmp_path):
    from support.scripted_server import QUIRK_REASONING

    srv = scripted_server(handler, models=("tgt", "sim", "jdg"), quirks=("reasoning_content",))
    out = tmp_path / "run"
    res = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--limit", "1")
    assert res.exit_code == 0, res.output
    replies = [json.loads(line) for line in (out / "transcripts.jsonl").read_text().splitlines()]
    kept = [m["content"] for t in replies for m in t["messages"] if m["role"] == "assistant"]
    assert kept and all(c.startswith(f"<think>{QUIRK_REASONING}</think>") for c in kept)
    later = [b for b in srv.requests if len(b["messages"]) > 1 or b["model"] != "tgt"]
    assert later and all(QUIRK_REASONING not in json.dumps(b["messages"]) for b in later)   # not the judges,
    assert any(b["model"] == "sim" for b in later) and any(b["model"] == "jdg" for b in later)  # user, target


def test_a_refused_role_option_stops_the_run_in_one_line_before_spending_more(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"), quirks=("no_reasoning_effort",))
    out = tmp_path / "run"
    line = one_error_line(invoke(*remote(srv), "--dataset", dataset, "--out", out, "--concurrency", "2",
                                 "--judge-reasoning-effort", "high"))
    assert "model 'jdg'" in line and "parameter 'reasoning_effort'" in line
    assert "Unrecognized request argument supplied: reasoning_effort" in line
    refused = [b for b in srv.requests if b["model"] == "jdg"]
    assert refused and all(b["reasoning_effort"] == "high" for b in refused)
    assert len(refused) <= 2 * 2          # the requests already in flight when it was learned; no more
