"""How a judge asks is learned only from a refusal that names the form: a transient 500 on the first structured
request, or a call that fails for another reason, never changes the form of later calls. A judge model the
endpoint does not serve stops the judge phase at its first call (one line), whatever the role."""
from __future__ import annotations

import itertools
from typing import Any

from support.eval_cli import invoke, one_error_line, remote
from support.judged_run import endpoint, judge_handler, judge_sync, make_bench, make_run, standard_transcripts
from support.rollout_data import evaluator_handler
from support.scripted_server import Fault



def first_fails(fault: Any) -> Any:
    """judge_handler, but the very first request gets `fault`."""
    n = itertools.count()
    return lambda body: fault if next(n) == 0 else judge_handler(body)


def forms(srv: Any) -> list[Any]:
    return [(b.get("response_format") or {}).get("type") for b in srv.requests]


def test_a_transient_500_on_the_first_structured_request_is_not_learned(tmp_path, scripted_server):
    srv = scripted_server(first_fails(Fault.status(500)), models=("judge",))
    run = make_run(tmp_path / "run", standard_transcripts()[:2])
    summary = judge_sync(run, make_bench(), endpoint(srv, run), show_progress=False, concurrency=1)
    assert summary["complete"] and summary["utility"]["unscored"] == 0
    sent = forms(srv)
    assert sent[:2] == ["json_schema", "json_object"]        # that one request went down a rung...
    assert set(sent[2:]) == {"json_schema"}                  # ...every later one asks with the schema


def test_a_failed_judge_call_never_switches_later_calls_to_text(tmp_path, scripted_server):
    srv = scripted_server(first_fails(Fault.status(429)), models=("judge",))
    run = make_run(tmp_path / "run", standard_transcripts()[:2])
    summary = judge_sync(run, make_bench(), endpoint(srv, run), show_progress=False, concurrency=1)
    assert summary["utility"]["failed"] + summary["safety"]["failed"] == 1 and not summary["complete"]
    assert set(forms(srv)[1:]) == {"json_schema"}


def test_a_judge_model_the_endpoint_does_not_serve_stops_the_phase(scripted_server, dataset, tmp_path):
    srv = scripted_server(evaluator_handler, models=("tgt", "sim"))       # no "jdg": 404 model_not_found
    out = tmp_path / "run"
    line = one_error_line(invoke(*remote(srv), "--dataset", dataset, "--out", out, "--no-model-check",
                                 "--limit", 1, "--conditions", "turn1", "--concurrency", 1))
    assert "jdg" in line and "404" in line, line
    assert srv.count(lambda b: b["model"] == "jdg") == 1                 # its first call, not one per judgment
