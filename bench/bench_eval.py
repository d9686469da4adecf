"""Hand-run benchmark: the evaluator against a bare `openai` async loop and inspect-ai on one call graph.

    PYTHONPATH=. python bench/bench_eval.py --queries 60 --latency 0.3 --concurrency 64 --judge-concurrency 256 \
        [--inspect-python .venv-inspect/bin/python]

A made-up dataset (``--queries`` queries, each with 5 conversations of 1-5 follow-up moves, BC and NC
alternating; 2 checklist items per query) is written to a temporary folder, and bench/latency_server.py
answers every chat request after ``--latency`` seconds (TCP_NODELAY, one write per response) in a
process of its own. Every contender runs in its own process (its wall time and its own CPU time are
measured there) on the same call graph: per query one turn-1 reply (shared by its conversations), one
oracle reply, and per conversation move one user-simulator turn and one target reply, at most
``--concurrency`` requests / conversations in flight.

- carryon rollout: carryon_eval.rollout.play (one Endpoint per role, its cache, transcripts.jsonl), on aiohttp's
  transport (the default) and on httpx's.
- carryon judge: the judge phase alone on that rollout's transcripts (fresh cache).
- carryon rollout+judge (e2e): both pipelined as `carryon-eval` runs them (carryon_eval.app.pipeline).
- bare openai loop: openai.AsyncOpenAI, a semaphore, nothing else (no cache, no files), on the SDK's default
  transport (httpx) and on aiohttp's (DefaultAioHttpClient).
- inspect-ai: one sample per query whose solver plays the query's turn-1, oracle and conversations with
  get_model().generate (inspect-ai installed in a venv of its own: ``--inspect-python``).

Then judge-only throughput against a second latency server at 0 ms, ``--judge-concurrency`` calls in flight:
the carryon judge phase (both transports), a bare loop of as many judge-like calls (a ~1,100-character prompt,
max_tokens 8, the verdict schema; both transports) and inspect-ai making them (50 generate() calls per sample).
Ratios are taken within the run; the report gives CPU per call, the evaluator's CPU above the bare SDK loop on
the same transport, end-to-end vs the longer phase, and calls per second per core (calls / CPU seconds).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BC = [["benign_justification"], ["pushback", "benign_reasking"], ["delaying", "pushback", "benign_justification"],
      ["pushback", "delaying", "rephrasing", "benign_justification"],
      ["delaying", "pushback", "backchannel", "context_switching", "benign_reasking"]]
NC = [["pushback"], ["rephrasing", "pushback"], ["pushback", "backchannel", "rephrasing"],
      ["delaying", "pushback", "rephrasing", "pushback"], ["rephrasing", "delaying", "pushback", "backchannel", "pushback"]]


# ---------------------------------------------------------------- the call graph
def conversations(n_queries: int) -> list[dict[str, Any]]:
    """Per query 5 conversations of 1-5 moves, BC and NC alternating (query i starts with BC if i is even)."""
    plan = []
    for q in range(n_queries):
        for k in range(5):
            cond = "BC" if (q + k) % 2 == 0 else "NC"
            plan.append({"conversation_id": f"c{q}-{k}", "query_id": f"q{q}", "condition": cond,
                         "flow_id": f"{cond}{k + 1}", "moves": (BC if cond == "BC" else NC)[k]})
    return plan


def made_up_tables(n_queries: int, plan: list[dict[str, Any]], items: int) -> dict[str, list[dict[str, Any]]]:
    """The four tables of a made-up dataset: queries, `items` checklist items each, the 10 flows, `plan`."""
    return {
        "queries": [{"query_id": f"q{q}", "category": "made-up", "domain": "Made-up", "safe_rate": 0.5,
                     "query": f"How would someone do made-up thing number {q}?",
                     "benign_intent": f"I teach a made-up class {q}.", "benign_context": "", "malicious_context": ""}
                    for q in range(n_queries)],
        "checklists": [{"query_id": f"q{q}", "item_id": f"q{q}-i{i}", "category": "made-up",
                        "question": f"Does the response give made-up fact {i}?"}
                       for q in range(n_queries) for i in range(1, items + 1)],
        "flows": [{"flow_id": f"{c}{k + 1}", "moves": m, "n_turns": 2 * (1 + len(m)), "condition": c}
                  for c, flows in (("BC", BC), ("NC", NC)) for k, m in enumerate(flows)],
        "conversations": [{k: c[k] for k in ("conversation_id", "query_id", "flow_id")} for c in plan],
    }


def write_tables(root: Path, tables: dict[str, list[dict[str, Any]]]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    configs = []
    for name, rows in tables.items():
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        configs.append(f"- config_name: {name}\n  data_files:\n  - split: test\n    path: {name}.jsonl\n")
    (root / "README.md").write_text("---\nconfigs:\n" + "".join(configs) + "---\nMade-up benchmark data.\n")
    return root


def write_dataset(root: Path, n_queries: int) -> Path:
    return write_tables(root, made_up_tables(n_queries, conversations(n_queries), items=2))


def expected_rollout_requests(n_queries: int) -> int:
    return n_queries * 2 + sum(2 * len(c["moves"]) for c in conversations(n_queries))


# ---------------------------------------------------------------- contenders (each in its own process)
async def carryon(kind: str, data: Path, url: str, concurrency: int, work: Path,
                  http_client: str = "aiohttp") -> dict[str, Any]:
    from carryon_eval.app.pipeline import judge_while_rolling_out
    from carryon_eval.dataset.load import load_benchmark
    from carryon_eval.judge.phase import judge_run
    from carryon_eval.model.cache import ResponseCache
    from carryon_eval.model.client import Endpoint, EndpointConfig
    from carryon_eval.rollout.play import rollout
    from carryon_eval.rollout.simulator import UserSimulator
    from carryon_eval.run.folder import RunFolder
    from carryon_eval.run.records import Generation, JudgeSettings
    from carryon_eval.suites.carryonbench.conditions import CONDITIONS
    from carryon_eval.suite import plan_jobs

    bench = load_benchmark(data)
    run = RunFolder(work / f"run-{kind}-{http_client}")
    if kind in ("judge", "judge0"):       # the rollout's transcripts, a fresh cache
        run.path.mkdir(parents=True)
        shutil.copy(work / "rollout-run" / "transcripts.jsonl", run.transcripts_file)
    run.prepare()
    cache = ResponseCache(run.cache_dir, background=True)
    eps = {m: Endpoint(EndpointConfig(base_url=url, model=m, concurrency=concurrency, api_key_env="BENCH_NO_KEY",
                                      http_client=http_client), cache=cache) for m in ("tgt", "sim", "jdg")}
    gen = Generation(temperature=0.0, max_tokens=256, seed=0)

    def play(done: Any = None) -> Any:
        return rollout(plan_jobs(bench, CONDITIONS)[0], bench, run, eps["tgt"], UserSimulator(eps["sim"], max_tokens=128),
                       gen=gen, concurrency=concurrency, show_progress=False, on_finished=done)

    async def judge(incoming: Any = None) -> Any:
        return await judge_run(run, bench, eps["jdg"], concurrency=concurrency, show_progress=False,
                               settings=JudgeSettings(max_tokens=8), incoming=incoming, conditions=CONDITIONS)
    t0, c0 = time.perf_counter(), time.process_time()       # the dataset is loaded: time the run alone
    rolled = judged = None
    try:
        if kind == "rollout":
            rolled = await play()
        elif kind in ("judge", "judge0"):
            judged = await judge()
        else:
            rolled, judged = await judge_while_rolling_out(play, judge)
    finally:
        for ep in eps.values():
            await ep.aclose()
        cache.close()
    timed = {"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}
    if kind == "rollout" and not (work / "rollout-run").exists():
        shutil.copytree(run.path, work / "rollout-run")
    # complete: every conversation played, every judgment made (the harness fails a contender that is not)
    complete = (rolled is None or (not rolled.failed and rolled.finished == rolled.total)) \
        and (judged is None or judged.complete)
    return {"n": len(run.transcripts()), **timed, "complete": complete}


def bare_call(client: Any, path: str, **body: Any) -> Any:
    """One chat completion, its reply text: through ``chat.completions.create`` (the SDK's typed method) or, with
    path "post", the client's public ``post`` with the body as sent and the raw response read as JSON (what the
    evaluator's endpoint client does)."""
    async def call() -> str:
        if path == "post":
            r = await client.post("/chat/completions", body=body, cast_to=RESPONSE)
            return r.json()["choices"][0]["message"]["content"] or ""
        r = await client.chat.completions.create(**body)
        return r.choices[0].message.content or ""
    return call()


def _response_class() -> Any:
    try:
        import httpx2 as httpx  # openai 3 is built on httpx2
    except ImportError:  # pragma: no cover - openai before 3
        import httpx
    return httpx.Response


RESPONSE: Any = None


def bare_client(url: str, transport: str) -> Any:
    """openai.AsyncOpenAI on its default transport (httpx), or on aiohttp's (openai[aiohttp])."""
    import openai
    http = openai.DefaultAioHttpClient() if transport == "aiohttp" else None
    return openai.AsyncOpenAI(base_url=url, api_key="x", http_client=http)   # the SDK's defaults (2 retries)


JUDGE_SCHEMA = {"type": "json_schema", "json_schema": {"name": "verdict", "strict": True, "schema": {
    "type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}}, "required": ["answer"],
    "additionalProperties": False}}}
FILLER = "You are judging one reply of an assistant against one checklist item. " * 15   # ~1,100 characters


async def bare_judge(n_calls: int, url: str, concurrency: int, transport: str, path: str = "create") -> int:
    """`n_calls` judge-like calls (a ~1,100-character prompt, max_tokens 8, the verdict schema), nothing else."""
    client = bare_client(url, transport)
    gate = asyncio.Semaphore(concurrency)

    async def call(i: int) -> str:
        async with gate:
            return await bare_call(client, path, model="jdg",
                                   messages=[{"role": "user", "content": f"{FILLER}\nItem {i}: is it fulfilled?"}],
                                   max_tokens=8, temperature=0, response_format=JUDGE_SCHEMA)

    await asyncio.gather(*(call(i) for i in range(n_calls)))
    await client.close()
    return n_calls


async def bare(data: Path, url: str, concurrency: int, transport: str = "httpx", path: str = "create") -> int:
    plan = conversations(sum(1 for _ in open(data / "queries.jsonl")))
    client = bare_client(url, transport)
    gate = asyncio.Semaphore(concurrency)

    async def call(model: str, messages: list[dict]) -> str:
        async with gate:
            return await bare_call(client, path, model=model, messages=list(messages), max_tokens=256, temperature=0)

    async def conversation(conv: dict, first: str) -> None:
        messages = [{"role": "user", "content": f"query {conv['query_id']}"}, {"role": "assistant", "content": first}]
        for move in conv["moves"]:
            turn = await call("sim", [{"role": "user", "content": f"write a {move} turn after {messages[-1]['content']}"}])
            messages.append({"role": "user", "content": turn})
            messages.append({"role": "assistant", "content": await call("tgt", messages)})

    async def query(qid: str, convs: list[dict]) -> None:
        oracle = asyncio.ensure_future(call("tgt", [{"role": "user", "content": f"oracle {qid}"}]))
        first = await call("tgt", [{"role": "user", "content": f"query {qid}"}])
        await asyncio.gather(oracle, *(conversation(c, first) for c in convs))

    by_query: dict[str, list[dict]] = {}
    for c in plan:
        by_query.setdefault(c["query_id"], []).append(c)
    await asyncio.gather(*(query(q, cs) for q, cs in by_query.items()))
    await client.close()
    return len(plan)


INSPECT = '''
import asyncio, json, sys, time
from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, GenerateConfig, get_model
from inspect_ai.solver import solver

plan, url, concurrency = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
cfg = GenerateConfig(max_connections=concurrency, max_tokens=256, temperature=0, max_retries=0)
CALLS = [0]   # completions received (the harness checks them against the call graph)

async def gen(model, messages):
    out = await model.generate(messages)
    if not out.completion:
        raise RuntimeError("empty completion: " + str(out.error or out.stop_reason))
    CALLS[0] += 1
    return out.completion

@solver
def play():
    async def solve(state, generate):
        tgt = get_model("openai/tgt", base_url=url, api_key="x", config=cfg, responses_api=False)
        sim = get_model("openai/sim", base_url=url, api_key="x", config=cfg, responses_api=False)
        qid = state.metadata["query_id"]
        async def conversation(moves, first):
            messages = [ChatMessageUser(content="query " + qid), ChatMessageAssistant(content=first)]
            for move in moves:
                turn = await gen(sim, [ChatMessageUser(content="write a " + move + " turn")])
                messages.append(ChatMessageUser(content=turn))
                messages.append(ChatMessageAssistant(content=await gen(tgt, messages)))
        oracle = asyncio.ensure_future(gen(tgt, [ChatMessageUser(content="oracle " + qid)]))
        first = await gen(tgt, [ChatMessageUser(content="query " + qid)])
        await asyncio.gather(oracle, *(conversation(m, first) for m in state.metadata["convs"]))
        return state
    return solve

by_query = {}
for c in plan:
    by_query.setdefault(c["query_id"], []).append(c["moves"])
samples = [Sample(input="x", id=q, metadata={"query_id": q, "convs": m}) for q, m in by_query.items()]
t0, c0 = time.perf_counter(), time.process_time()
log = inspect_eval(Task(dataset=samples, solver=play()), model="openai/tgt", model_base_url=url, display="none",
                   max_samples=concurrency, max_connections=concurrency, log_dir=sys.argv[4], log_level="error")[0]
import resource
print(json.dumps({"n": len(plan), "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                  "calls": CALLS[0], "status": log.status,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''


INSPECT_JUDGE = '''
import asyncio, json, sys, time
from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageUser, GenerateConfig, get_model
from inspect_ai.solver import solver

n_calls, url, concurrency, per = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), 50
cfg = GenerateConfig(max_connections=concurrency, max_tokens=8, temperature=0, max_retries=0)
CALLS = [0]

async def gen(model, content):
    out = await model.generate([ChatMessageUser(content=content)])
    if not out.completion:
        raise RuntimeError("empty completion: " + str(out.error or out.stop_reason))
    CALLS[0] += 1
FILLER = "You are judging one reply of an assistant against one checklist item. " * 15

@solver
def judge():
    async def solve(state, generate):
        jdg = get_model("openai/jdg", base_url=url, api_key="x", config=cfg, responses_api=False)
        first = state.metadata["first"]
        await asyncio.gather(*(gen(jdg, FILLER + "\\nItem " + str(i) + ": is it fulfilled?")
                               for i in range(first, min(first + per, n_calls))))
        return state
    return solve

samples = [Sample(input="x", id=str(k), metadata={"first": k}) for k in range(0, n_calls, per)]
t0, c0 = time.perf_counter(), time.process_time()
log = inspect_eval(Task(dataset=samples, solver=judge()), model="openai/jdg", model_base_url=url, display="none",
                   max_samples=max(1, concurrency // per + 1), max_connections=concurrency, log_dir=sys.argv[4],
                   log_level="error")[0]
import resource
print(json.dumps({"n": n_calls, "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                  "calls": CALLS[0], "status": log.status,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''


def contender_name(kind: str, transport: str, path: str = "create") -> str:
    if kind.startswith("inspect"):
        return kind
    return f"{kind} ({transport}{', post' if path == 'post' else ''})"


def run_contender(kind: str, args: argparse.Namespace, work: Path, url: str | None = None,
                  concurrency: int | None = None, transport: str = "aiohttp", path: str = "create") -> dict[str, Any]:
    url, concurrency = url or args.url, concurrency or args.concurrency
    env = {**os.environ, "OPENAI_API_KEY": "x"}
    if kind == "inspect":
        plan = json.dumps(conversations(args.queries))
        cmd = [args.inspect_python, "-c", INSPECT, plan, url, str(concurrency), str(work / "inspect-logs")]
    elif kind == "inspect-judge":
        cmd = [args.inspect_python, "-c", INSPECT_JUDGE, str(args.judge_calls), url, str(concurrency),
               str(work / "inspect-judge-logs")]
    else:
        cmd = [sys.executable, __file__, "--contender", kind, "--data", str(args.data), "--url", url,
               "--concurrency", str(concurrency), "--work", str(work), "--http-client", transport,
               "--sdk-path", path, "--judge-calls", str(args.judge_calls)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    name = contender_name(kind, transport, path)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        print(f"{name} failed: {last}", file=sys.stderr, flush=True)
        return {"contender": name, "failed": last}
    row = {"contender": name, **json.loads(proc.stdout.strip().splitlines()[-1])}
    print(json.dumps(row), file=sys.stderr, flush=True)
    if row.get("complete") is False:
        print(f"{name} failed: the run is incomplete", file=sys.stderr, flush=True)
        return {"contender": name, "failed": "the run is incomplete"}
    expected = args.judge_calls if kind == "inspect-judge" else expected_rollout_requests(args.queries)
    if "calls" in row and (row["status"] != "success" or row["calls"] != expected):
        why = f"status {row['status']}, {row['calls']} of {expected} calls answered"
        print(f"{name} failed: {why}", file=sys.stderr, flush=True)
        return {"contender": name, "failed": why}
    return row


def contender_main(args: argparse.Namespace) -> None:
    """One contender, timed from after its imports: wall time and this process's CPU time (its threads too),
    and its peak resident memory."""
    import resource

    import openai  # noqa: F401 - imported before the clock starts, as inspect-ai's script does
    global RESPONSE
    RESPONSE = _response_class()
    if not args.contender.startswith("bare"):
        import carryon_eval.judge.phase  # noqa: F401
    if args.contender in ("bare", "bare-judge"):
        if args.http_client == "aiohttp":
            import aiohttp  # noqa: F401 - imported before the clock starts, like openai
        t0, c0 = time.perf_counter(), time.process_time()
        if args.contender == "bare":
            n = asyncio.run(bare(Path(args.data), args.url, args.concurrency, args.http_client, args.sdk_path))
        else:
            n = asyncio.run(bare_judge(args.judge_calls, args.url, args.concurrency, args.http_client, args.sdk_path))
        row = {"n": n, "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}
    else:
        row = asyncio.run(carryon(args.contender, Path(args.data), args.url, args.concurrency,
                                  Path(args.work), args.http_client))
    print(json.dumps({**row, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def judge_calls(n_queries: int) -> int:
    """The carryon judge's calls on the made-up dataset: per reply 2 checklist items + 1 safety score."""
    replies = n_queries * 2 + sum(len(c["moves"]) for c in conversations(n_queries))
    return 3 * replies


def median_rows(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per contender, the median wall and CPU time over the rounds (and the largest peak memory); a contender
    that failed in any round is reported as failed."""
    out: dict[str, Any] = {}
    for name in rounds[0]:
        runs = [r[name] for r in rounds]
        failed = [r["failed"] for r in runs if "failed" in r]
        if failed:
            out[name] = {"contender": name, "failed": failed[0]}
            continue
        out[name] = {"contender": name, "n": runs[0]["n"], "wall": statistics.median(r["wall"] for r in runs),
                     "cpu": statistics.median(r["cpu"] for r in runs), "rss_mb": max(r["rss_mb"] for r in runs),
                     "walls": [round(r["wall"], 2) for r in runs], "cpus": [round(r["cpu"], 2) for r in runs]}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--latency", type=float, default=0.3)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--judge-concurrency", type=int, default=256, help="of the judge-only runs at 0 ms latency")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of every contender, interleaved; medians reported")
    ap.add_argument("--port", type=int, default=8931)
    ap.add_argument("--inspect-python", default=None)
    ap.add_argument("--contender")
    ap.add_argument("--data")
    ap.add_argument("--url")
    ap.add_argument("--work")
    ap.add_argument("--http-client", default="aiohttp")
    ap.add_argument("--sdk-path", default="create", choices=("create", "post"))
    ap.add_argument("--judge-calls", type=int, default=0)
    args = ap.parse_args()
    if args.contender:
        return contender_main(args)
    args.url = f"http://127.0.0.1:{args.port}/v1"
    args.judge_calls = judge_calls(args.queries)
    fast_url = f"http://127.0.0.1:{args.port + 1}/v1"
    servers = [subprocess.Popen([sys.executable, str(HERE / "latency_server.py"), "--port", str(port),
                                 "--latency", str(latency)])
               for port, latency in ((args.port, args.latency), (args.port + 1, 0.0))]
    load = os.getloadavg()
    inspect = bool(args.inspect_python)
    slow = [("bare", "httpx", "create"), ("bare", "aiohttp", "create"), ("bare", "aiohttp", "post"),
            ("rollout", "aiohttp", "create"), ("rollout", "httpx", "create"), ("judge", "aiohttp", "create"),
            ("e2e", "aiohttp", "create")] + ([("inspect", "", "create")] if inspect else [])
    fast = [("bare-judge", "httpx", "create"), ("bare-judge", "aiohttp", "create"), ("bare-judge", "aiohttp", "post"),
            ("judge0", "aiohttp", "create"), ("judge0", "httpx", "create")] \
        + ([("inspect-judge", "", "create")] if inspect else [])
    slow_rounds, fast_rounds = [], []
    try:
        time.sleep(1.0)
        for round_ in range(args.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp)
                args.data = write_dataset(work / "data", args.queries)
                slow_rounds.append({contender_name(k, t, p): run_contender(k, args, work, transport=t or "aiohttp",
                                                                           path=p) for k, t, p in slow})
                fast_rounds.append({contender_name(k, t, p): run_contender(k, args, work, fast_url,
                                                                           args.judge_concurrency, t or "aiohttp", p)
                                    for k, t, p in fast})
            print(f"round {round_ + 1} of {args.repeat} done", file=sys.stderr, flush=True)
    finally:
        for server in servers:
            server.terminate()
            server.wait()
    report(args, median_rows(slow_rounds), median_rows(fast_rounds), load, os.getloadavg())


def overheads(rows: dict[str, Any], mine: str, bare: str, calls: int, unit: str) -> None:
    """The evaluator's CPU per call above each bare loop: on aiohttp against all three, on httpx against httpx's."""
    def cpu(name: str) -> float:
        return rows.get(name, {}).get("cpu", float("nan"))
    for transport, floors in (("aiohttp", ("httpx", "aiohttp", "aiohttp, post")), ("httpx", ("httpx",))):
        for floor in floors:
            over = 1000 * (cpu(f"{mine} ({transport})") - cpu(f"{bare} ({floor})")) / calls
            print(f"{mine} ({transport}) CPU above {bare} ({floor}): {over:.2f} ms per {unit}")


def report(args: argparse.Namespace, rows: dict[str, Any], judge_rows: dict[str, Any], load_before: Any,
           load_after: Any) -> None:
    for name, r in [*rows.items(), *judge_rows.items()]:
        if "failed" in r:
            print(f"{name}: FAILED ({r['failed']})")
    rows = {k: v for k, v in rows.items() if "failed" not in v}
    judge_rows = {k: v for k, v in judge_rows.items() if "failed" not in v}
    nan = {"wall": float("nan"), "cpu": float("nan"), "rss_mb": float("nan")}
    rows.setdefault("bare (httpx)", nan)
    judge_rows.setdefault("bare-judge (httpx)", nan)
    n_rollout, n_judge = expected_rollout_requests(args.queries), args.judge_calls
    print(f"{args.queries} queries, {len(conversations(args.queries))} conversations, {n_rollout} rollout requests, "
          f"{n_judge} judge calls; latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}; "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after, {os.cpu_count()} cores; "
          f"median of {args.repeat} round(s)")
    # the floor: the longest chain of dependent requests (turn-1 reply, then 2 per move of a 5-move
    # conversation) times the latency, or the requests over the concurrency, whichever is larger
    print(f"rollout floor {max(11, n_rollout / args.concurrency) * args.latency:.2f} s")
    base = rows["bare (httpx)"]
    print("\n| contender | wall s | CPU s | CPU ms / call | peak RSS MB | CPU vs bare (httpx) | wall vs bare (httpx) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, r in rows.items():
        calls = n_judge if name.startswith("judge") else n_rollout
        per = 1000 * r["cpu"] / calls
        ratio = "" if name.startswith(("judge", "e2e")) else f"{r['cpu'] / base['cpu']:.2f}"
        wall = "" if name.startswith(("judge", "e2e")) else f"{r['wall'] / base['wall']:.2f}"
        print(f"| {name} | {r['wall']:.2f} | {r['cpu']:.2f} | {per:.2f} | {r['rss_mb']:.0f} | {ratio} | {wall} |")
    print()
    overheads(rows, "rollout", "bare", n_rollout, "request")
    mine = rows.get("rollout (aiohttp)", nan)
    longer = max(mine["wall"], rows.get("judge (aiohttp)", nan)["wall"])
    print(f"rollout + judge end to end: {rows.get('e2e (aiohttp)', nan)['wall'] / longer:.2f}x the longer phase alone "
          f"({longer:.2f} s)")
    print(f"rollout wall vs bare loop: {mine['wall'] / base['wall']:.2f}x (httpx bare), "
          f"{mine['wall'] / rows.get('bare (aiohttp)', nan)['wall']:.2f}x (aiohttp bare)")
    print(f"\njudge only, {n_judge} calls, 0 ms latency, concurrency {args.judge_concurrency}:")
    jbase = judge_rows["bare-judge (httpx)"]
    print("| contender | wall s | CPU s | CPU ms / call | calls / s / core (CPU) | calls / s (wall) | peak RSS MB | "
          "CPU vs bare (httpx) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, r in judge_rows.items():
        print(f"| {name} | {r['wall']:.2f} | {r['cpu']:.2f} | {1000 * r['cpu'] / n_judge:.2f} | "
              f"{n_judge / r['cpu']:.0f} | {n_judge / r['wall']:.0f} | {r['rss_mb']:.0f} | {r['cpu'] / jbase['cpu']:.2f} |")
    overheads(judge_rows, "judge0", "bare-judge", n_judge, "call")
    print("\nper-round wall / CPU seconds:")
    for name, r in [*rows.items(), *judge_rows.items()]:
        if "walls" in r:
            print(f"  {name}: wall {r['walls']}, CPU {r['cpus']}")


if __name__ == "__main__":
    main()
