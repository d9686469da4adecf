"""The `carryon-eval` command: errors fail fast with one line and exit 2; a SIGKILLed run resumes;
the whole pipeline runs end to end on a minimum-column dataset folder (scripted server, real HTTP)."""
from __future__ import annotations

import html
import json
import signal
import socket
from typing import Any

import pytest
from support.scripted_server import Fault, last_user_text, script
from support.eval_cli import invoke, one_error_line, remote, slowly, spawn, wait_for_lines
from support.rollout_data import CONVERSATIONS, FLOWS, evaluator_handler as handler, make_dataset

from carryon_eval.run.records import RunMeta
from carryon_eval.rollout.play import turn_seed
from carryon_eval.run.folder import RunFolder
from carryon_eval.report.blocks import plain
from carryon_eval.suites.carryonbench.metrics.condition import ClarificationFidelity
from carryon_eval.suites.carryonbench.metrics.fidelity import fidelity_text

N_CONVERSATIONS = 11       # of the test dataset with all conditions (2 of its 13 are skipped: no intent)
SECRET = "sk-test-secret-value-42"


# ---------------------------------------------------------------- fail fast, one line, exit 2
def test_closed_port_fails_fast(dataset, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "run"
    line = one_error_line(invoke("--endpoint", f"http://127.0.0.1:{port}/v1", "--model", "m",
                                 "--dataset", dataset, "--out", out))
    assert "cannot reach endpoint" in line and str(port) in line
    assert not out.exists()                  # nothing written: a fixed rerun into the same --out just works


def test_unknown_model_fails_before_any_generation(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    line = one_error_line(invoke(*remote(srv), "--model", "no-such-model", "--dataset", dataset,
                                 "--out", tmp_path / "run"))
    assert "does not serve model 'no-such-model'" in line
    assert srv.count() == 0 and not (tmp_path / "run").exists()


def test_every_role_is_checked_before_generation(scripted_server, dataset, tmp_path):
    target = scripted_server(handler, models=("tgt", "sim"))
    judge = scripted_server(handler, models=("other-judge",))
    args = ["--endpoint", target.base_url, "--model", "tgt", "--user-model", "sim",
            "--judge-endpoint", judge.base_url, "--judge-model", "jdg", "--dataset", dataset, "--out", tmp_path / "r"]
    line = one_error_line(invoke(*args))
    assert "does not serve model 'jdg'" in line and judge.base_url in line
    assert target.count() == 0 and judge.count() == 0


@pytest.mark.parametrize("drop, expect", [(("flows", "condition"), "lacks column(s) ['condition']"),
                                          (("queries", "benign_intent"), "lacks column(s) ['benign_intent']")])
def test_dataset_missing_a_column(scripted_server, tmp_path, drop, expect):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    data = make_dataset(tmp_path / "bad", drop=drop)
    line = one_error_line(invoke(*remote(srv), "--dataset", data, "--out", tmp_path / "run"))
    assert expect in line and srv.count() == 0


def test_missing_dataset_folder(scripted_server, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    line = one_error_line(invoke(*remote(srv), "--dataset", tmp_path / "nowhere", "--out", tmp_path / "run"))
    assert line == f"carryon-eval: error: dataset {tmp_path / 'nowhere'}: no such folder"


def test_unusable_run_folders(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert "not a folder" in one_error_line(invoke(*remote(srv), "--dataset", dataset, "--out", a_file))
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    assert "not empty" in one_error_line(invoke(*remote(srv), "--dataset", dataset, "--out", busy))
    assert "not a run folder" in one_error_line(invoke("report", tmp_path / "nowhere"))
    assert "not a run folder" in one_error_line(invoke("rollout", busy))
    assert srv.count() == 0


def test_model_required_with_an_endpoint_url(scripted_server, dataset):
    srv = scripted_server(handler, models=("tgt",))
    assert "--model is required" in one_error_line(invoke("--endpoint", srv.base_url, "--dataset", dataset))


# ---------------------------------------------------------------- resume after SIGKILL
def test_sigkilled_run_resumes_without_repeating_finished_conversations(scripted_server, dataset, tmp_path):
    srv = scripted_server(slowly(handler), models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    proc = spawn(*remote(srv), "--dataset", dataset, "--out", out, "--concurrency", "2")
    try:
        wait_for_lines(proc, out / "transcripts.jsonl", 4)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=10)
    finished = RunFolder(out).finished_ids()
    assert 4 <= len(finished) < N_CONVERSATIONS

    srv.handler = handler
    srv.reset()
    result = invoke("rollout", out)
    assert result.exit_code == 0, result.output
    assert f"{N_CONVERSATIONS}/{N_CONVERSATIONS} conversations" in result.stdout
    ids = [t.conversation_id for t in RunFolder(out).transcripts()]
    assert len(ids) == len(set(ids)) == N_CONVERSATIONS
    finished_seeds = {turn_seed(0, cid, turn, role) + k for cid in finished for turn in range(1, 7)
                      for role, k in (("target", 0), ("user", 0), ("user", 1), ("user", 2))}
    assert not {b["seed"] for b in srv.requests} & finished_seeds
    assert srv.count() > 0 and not srv.count(lambda b: b["model"] == "jdg")

    srv.reset()
    assert invoke("rollout", out).exit_code == 0 and srv.count() == 0     # nothing left: no call at all


def test_rerun_with_other_settings_is_refused(scripted_server, dataset, tmp_path):
    srv = scripted_server(handler, models=("tgt", "sim", "jdg", "tgt2"))
    out = tmp_path / "run"
    assert invoke("rollout", out).exit_code == 2           # not a run folder yet
    RunFolder(out).start(RunMeta.from_json({"dataset": {"source": str(dataset), "revision": None,
                                                        "manifest_sha256": None},
                                            "roles": {"target": {"model": "tgt"}, "user": {"model": "sim"}},
                                            "conditions": ["bc"]}))
    line = one_error_line(invoke(*remote(srv), "--model", "tgt2", "--dataset", dataset, "--out", out))
    assert "other settings" in line and "--out" in line
    assert srv.count() == 0


def test_run_json_without_schema_version_reads_as_version_1(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"dataset": {"source": "d"}, "roles": {"target": {"model": "tgt"}},
                                              "conditions": ["bc"], "notice": None}))
    meta = RunFolder(out).read_meta()
    assert meta.schema_version == 1 and meta.role("target").model == "tgt" and meta.skipped == []
    assert meta.to_json()["schema_version"] == 1 and RunMeta.from_json(meta.to_json()) == meta


@pytest.mark.parametrize("verbose", [True, False])
def test_verbose_shows_the_clients_retry_messages(scripted_server, dataset, tmp_path, verbose):
    srv = scripted_server(script([Fault.status(503, retry_after=0)], then=handler), models=("tgt", "sim", "jdg"))
    args = [*remote(srv), "--dataset", dataset, "--out", tmp_path / "run", "--limit", 1, "--conditions", "turn1"]
    result = invoke(*(["--verbose"] if verbose else []), *args)
    assert result.exit_code == 0, result.output
    assert srv.count(lambda b: b["model"] == "tgt") == 2                # the 503, then its retry
    retries = [line for line in result.stderr.splitlines() if "HTTP 503" in line and "retry 1/" in line]
    assert len(retries) == (1 if verbose else 0), result.stderr


# ---------------------------------------------------------------- end to end
def test_end_to_end_on_a_minimum_column_folder(scripted_server, dataset, tmp_path):
    pytest.importorskip("carryon_eval.report.phase")
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"), api_key=SECRET)
    out = tmp_path / "run"
    env = {"OPENAI_API_KEY": SECRET}
    result = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--fidelity", env=env)
    assert result.exit_code == 0, result.output
    assert f"results: {out / 'results.json'}" in result.stdout
    assert f"report:  {out / 'report.html'}" in result.stdout
    assert (out / "results.json").is_file() and (out / "report.html").is_file()

    meta_text = (out / "run.json").read_text()
    assert SECRET not in meta_text and SECRET not in (out / "transcripts.jsonl").read_text()
    meta = json.loads(meta_text)
    assert meta["roles"]["target"]["model"] == "tgt" and meta["roles"]["user"]["model"] == "sim"
    assert meta["roles"]["judge"]["model"] == "jdg" and meta["notice"] is None
    assert meta["schema_version"] == 1 and json.loads((out / "results.json").read_text())["schema_version"] == 1
    assert meta["generation"]["target"] == {"temperature": 0.0, "max_tokens": 1024, "seed": 0}
    assert {s["conversation_id"] for s in meta["skipped"]} == {"oracle:q3", "c7"}
    assert len(RunFolder(out).transcripts()) == N_CONVERSATIONS

    fidelity = json.loads((out / "fidelity.json").read_text())
    n_user_turns = sum(len(FLOWS[f]) for c, _, f in CONVERSATIONS if c != "c7")
    assert fidelity["n_turns"] == n_user_turns
    assert fidelity["per_move"]["pushback"]["agreement"] == 1.0 and fidelity["intent_leak"]["n_leaks"] == 0
    # beside the clarification effect, what can move it: the check's NC leak rate, in every output
    beside = json.loads((out / "results.json").read_text())["clarification_effect"]["fidelity"]
    assert beside["checked"] and beside["nc_leaks"] == 0 and beside["nc_leak_rate"] == 0.0
    assert beside["nc_turns_checked"] == fidelity["intent_leak"]["n_checked"] > 0
    line = plain(fidelity_text(ClarificationFidelity.from_json(beside)))
    assert "NC turns leaking the intent 0.0%" in line and line in (out / "table.md").read_text()
    assert html.escape(line) in (out / "report.html").read_text()
    assert invoke("compare", out, "--out", tmp_path / "cmp").exit_code == 0
    (row,) = [json.loads(r) for r in (tmp_path / "cmp" / "leaderboard.jsonl").read_text().splitlines()]
    assert row["metrics"]["fidelity.nc_leak"]["value"] == 0.0

    # The same command again: everything is done or cached, so the server is not asked anything.
    srv.reset()
    again = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--fidelity", env=env)
    assert again.exit_code == 0, again.output
    assert srv.count() == 0


def test_report_picks_one_of_two_judges(scripted_server, dataset, tmp_path):
    def two_judges(body: dict) -> Any:
        if body["model"] != "jdg2":
            return handler(body)
        return "yes" if "checking whether a reply" in last_user_text(body) else "5"   # every item, harm 5
    srv = scripted_server(two_judges, models=("tgt", "sim", "jdg", "jdg2"))
    out = tmp_path / "run"
    assert invoke(*remote(srv), "--dataset", dataset, "--out", out, "--limit", 1).exit_code == 0
    own = json.loads((out / "results.json").read_text())
    result = invoke("judge", out, "--judge-model", "jdg2")
    assert result.exit_code == 0, result.output
    assert {r["judge_model"] for r in map(json.loads, (out / "utility_judgments.jsonl").read_text().splitlines())} \
        == {"jdg", "jdg2"}

    assert invoke("report", out, "--judge", "jdg2").exit_code == 0
    second = json.loads((out / "results.json").read_text())
    assert second["judges"]["selected"] == "jdg2" and second["judges"]["utility"]["models"] == ["jdg2"]
    for cond, block in second["conditions"].items():
        if block["n_conversations"]:
            assert (block["utility"], block["harm"], block["violation_rate"]) == (100.0, 5.0, 100.0), cond
    assert invoke("report", out).exit_code == 0                    # default: the run's own judge
    again = json.loads((out / "results.json").read_text())
    assert again["judges"]["selected"] == "jdg"
    assert {c: b["utility"] for c, b in again["conditions"].items()} == \
        {c: b["utility"] for c, b in own["conditions"].items()}
    assert invoke("report", out, "--judge", "jdg").exit_code == 0
    line = one_error_line(invoke("report", out, "--judge", "nope"))
    assert "judge 'nope' has no judgments" in line and "judges present: jdg, jdg2" in line
    # the whole command again with the second judge: nothing new is asked, and it reports that judge
    srv.reset()
    assert invoke(*remote(srv, "--judge-model", "jdg2"), "--dataset", dataset, "--out", out, "--limit", 1).exit_code == 0
    assert srv.count() == 0
    assert json.loads((out / "results.json").read_text())["judges"]["selected"] == "jdg2"


# ---------------------------------------------------------------- the embedded model's code path
def local_handler(body: dict) -> Any:
    """One model plays every role, as the embedded model does."""
    text = last_user_text(body)
    if "role-playing the user" in text:
        return handler({**body, "model": "sim"})
    if any(s in text for s in ("checking whether a reply", "rating how harmful", "Classify that", "hidden purpose")):
        return handler({**body, "model": "jdg"})
    return handler({**body, "model": "tgt"})


class StandInLocalServer:
    """Stands in for LocalModelServer (which needs the [local] extra and minutes of CPU): same attributes,
    a scripted model named like the embedded one behind real HTTP."""
    started: list[Any] = []
    options: list[dict] = []

    def __init__(self, **options: Any) -> None:
        StandInLocalServer.options.append(options)

    def __enter__(self) -> "StandInLocalServer":
        from support.scripted_server import ScriptedServer
        from carryon_eval.model.local import LOCAL_MODEL_ALIAS

        self.srv = ScriptedServer(local_handler, models=(LOCAL_MODEL_ALIAS,)).start()
        self.base_url, self.model = self.srv.base_url, LOCAL_MODEL_ALIAS
        StandInLocalServer.started.append(self.srv)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.srv.stop()

    def watch(self, endpoint: Any) -> Any:
        from carryon_eval.model.crash import ServerWatch
        return ServerWatch(endpoint, lambda: None)      # a scripted server does not crash


def test_without_endpoint_every_role_runs_on_the_embedded_model(monkeypatch, dataset, tmp_path):
    from carryon_eval.app import session as app_module
    from carryon_eval.model.local import LOCAL_MODEL_NOTICE

    monkeypatch.setattr(app_module, "LocalModelServer", StandInLocalServer)
    StandInLocalServer.started.clear()
    StandInLocalServer.options.clear()
    out = tmp_path / "run"
    result = invoke("--dataset", dataset, "--limit", 1, "--conditions", "turn1,nc", "--out", out)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == LOCAL_MODEL_NOTICE
    meta = json.loads((out / "run.json").read_text())
    assert meta["notice"] == LOCAL_MODEL_NOTICE
    assert all(meta["roles"][r]["local"] and meta["roles"][r]["model"] == "gemma-3-270m"
               and meta["roles"][r]["base_url"] == "local"
               for r in ("target", "user", "judge"))
    assert LOCAL_MODEL_NOTICE.split(":")[0] in (out / "report.html").read_text()
    assert len(StandInLocalServer.started) == 1                       # one server for all roles
    assert StandInLocalServer.options[-1] == {}          # the server's defaults (logprobs need no option)
    # token caps for the embedded model, recorded and sent
    from carryon_eval.model.local import LOCAL_MAX_TOKENS
    assert meta["generation"]["target"]["max_tokens"] == LOCAL_MAX_TOKENS["target"]
    assert meta["generation"]["user"]["max_tokens"] == LOCAL_MAX_TOKENS["user"]
    assert meta["judge"]["max_tokens"] == LOCAL_MAX_TOKENS["judge"]
    sent = {r["max_tokens"] for r in StandInLocalServer.started[0].requests}
    assert sent <= {LOCAL_MAX_TOKENS["target"], LOCAL_MAX_TOKENS["user"], LOCAL_MAX_TOKENS["judge"], 16}, sent
    assert {t.condition for t in RunFolder(out).transcripts()} == {"turn1", "nc"}

    # `rollout RUNDIR` starts the embedded model again (on another port) and finds nothing left to do.
    result = invoke("rollout", out)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == LOCAL_MODEL_NOTICE
    assert len(StandInLocalServer.started) == 2 and StandInLocalServer.started[1].count() == 0
