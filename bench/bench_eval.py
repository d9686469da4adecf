"""Hand-run benchmark: the evaluator against a bare `openai` async loop and inspect-ai on one call graph.

    PYTHONPATH=. python bench/bench_eval.py --queries 60 --latency 0.3 --concurrency 64 \
        [--inspect-python /tmp/benchvenv/bin/python]

A made-up dataset (``--queries`` queries, each with 5 conversations of 1-5 follow-up moves, BC and NC
alternating; 2 checklist items per query) is written to a temporary folder, and bench/latency_server.py
answers every chat request after ``--latency`` seconds (TCP_NODELAY, one write per response) in a
process of its own. Every contender runs in its own process (its wall time and its own CPU time are
measured there) on the same call graph: per query one turn-1 reply (shared by its conversations), one
oracle reply, and per conversation move one user-simulator turn and one target reply, at most
``--concurrency`` requests / conversations in flight.

- carryon rollout: carryon_eval.rollout.play (one Endpoint per role, its cache, transcripts.jsonl).
- carryon judge: the judge phase alone on that rollout's transcripts (fresh cache).
- carryon rollout+judge: both pipelined as `carryon-eval` runs them (carryon_eval.app.pipeline).
- bare openai loop: openai.AsyncOpenAI, a semaphore, nothing else (no cache, no files).
- inspect-ai: one sample per query whose solver plays the query's turn-1, oracle and conversations with
  get_model().generate (inspect-ai installed in a venv of its own: ``--inspect-python``).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
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
async def carryon(kind: str, data: Path, url: str, concurrency: int, work: Path) -> dict[str, Any]:
    from carryon_eval.model.cache import ResponseCache
    from carryon_eval.model.client import Endpoint, EndpointConfig
    from carryon_eval.dataset.load import load_benchmark
    from carryon_eval.judge.phase import judge_run
    from carryon_eval.app.pipeline import judge_while_rolling_out
    from carryon_eval.run.records import Generation, JudgeSettings
    from carryon_eval.rollout.play import rollout
    from carryon_eval.suite import plan_jobs
    from carryon_eval.run.folder import RunFolder
    from carryon_eval.schema import CONDITIONS
    from carryon_eval.rollout.simulator import UserSimulator

    bench = load_benchmark(data)
    run = RunFolder(work / f"run-{kind}")
    if kind == "judge":                   # the rollout's transcripts, a fresh cache
        run.path.mkdir(parents=True)
        shutil.copy(work / "rollout-run" / "transcripts.jsonl", run.transcripts_file)
    run.prepare()
    cache = ResponseCache(run.cache_dir, background=True)
    eps = {m: Endpoint(EndpointConfig(base_url=url, model=m, concurrency=concurrency, api_key_env="BENCH_NO_KEY"),
                       cache=cache) for m in ("tgt", "sim", "jdg")}
    gen = Generation(temperature=0.0, max_tokens=256, seed=0)

    def play(done: Any = None) -> Any:
        return rollout(plan_jobs(bench, CONDITIONS)[0], bench, run, eps["tgt"], UserSimulator(eps["sim"], max_tokens=128),
                       gen=gen, concurrency=concurrency, show_progress=False, on_finished=done)

    async def judge() -> Any:
        return await judge_run(run, bench, eps["jdg"], concurrency=concurrency, show_progress=False,
                               settings=JudgeSettings(max_tokens=8))
    t0, c0 = time.perf_counter(), time.process_time()       # the dataset is loaded: time the run alone
    try:
        if kind == "rollout":
            await play()
        elif kind == "judge":
            await judge()
        else:
            await judge_while_rolling_out(play, judge, batch=max(concurrency, len(bench.conversations) // 10))
            await judge()
    finally:
        for ep in eps.values():
            await ep.aclose()
        cache.close()
    timed = {"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}
    if kind == "rollout":
        shutil.copytree(run.path, work / "rollout-run")
    return {"n": len(run.transcripts()), **timed}


async def bare(data: Path, url: str, concurrency: int) -> int:
    import openai

    plan = conversations(sum(1 for _ in open(data / "queries.jsonl")))
    client = openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0)
    gate = asyncio.Semaphore(concurrency)

    async def call(model: str, messages: list[dict]) -> str:
        async with gate:
            r = await client.chat.completions.create(model=model, messages=messages, max_tokens=256, temperature=0)
            return r.choices[0].message.content or ""

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

@solver
def play():
    async def solve(state, generate):
        tgt = get_model("openai/tgt", base_url=url, api_key="x", config=cfg)
        sim = get_model("openai/sim", base_url=url, api_key="x", config=cfg)
        qid = state.metadata["query_id"]
        async def conversation(moves, first):
            messages = [ChatMessageUser(content="query " + qid), ChatMessageAssistant(content=first)]
            for move in moves:
                turn = (await sim.generate([ChatMessageUser(content="write a " + move + " turn")])).completion
                messages.append(ChatMessageUser(content=turn))
                messages.append(ChatMessageAssistant(content=(await tgt.generate(messages)).completion))
        oracle = asyncio.ensure_future(tgt.generate([ChatMessageUser(content="oracle " + qid)]))
        first = (await tgt.generate([ChatMessageUser(content="query " + qid)])).completion
        await asyncio.gather(oracle, *(conversation(m, first) for m in state.metadata["convs"]))
        return state
    return solve

by_query = {}
for c in plan:
    by_query.setdefault(c["query_id"], []).append(c["moves"])
samples = [Sample(input="x", id=q, metadata={"query_id": q, "convs": m}) for q, m in by_query.items()]
t0, c0 = time.perf_counter(), time.process_time()
inspect_eval(Task(dataset=samples, solver=play()), model="openai/tgt", model_base_url=url, display="none",
             max_samples=concurrency, max_connections=concurrency, log_dir=sys.argv[4], log_level="error")
print(json.dumps({"n": len(plan), "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}))
'''


def run_contender(kind: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    if kind == "inspect":
        plan = json.dumps(conversations(args.queries))
        cmd = [args.inspect_python, "-c", INSPECT, plan, args.url, str(args.concurrency), str(work / "inspect-logs")]
        env = {**os.environ, "OPENAI_API_KEY": "x"}
    else:
        cmd = [sys.executable, __file__, "--contender", kind, "--data", str(args.data), "--url", args.url,
               "--concurrency", str(args.concurrency), "--work", str(work)]
        env = dict(os.environ)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{proc.stderr[-3000:]}")
    return {"contender": kind, **json.loads(proc.stdout.strip().splitlines()[-1])}


def contender_main(args: argparse.Namespace) -> None:
    """One contender, timed from after its imports: wall time and this process's CPU time."""
    import openai  # noqa: F401 - imported before the clock starts, as inspect-ai's script does
    if args.contender != "bare":
        import carryon_eval.judge.phase  # noqa: F401
    if args.contender == "bare":
        t0, c0 = time.perf_counter(), time.process_time()
        n = asyncio.run(bare(Path(args.data), args.url, args.concurrency))
        print(json.dumps({"n": n, "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}))
    else:
        print(json.dumps(asyncio.run(carryon(args.contender, Path(args.data), args.url, args.concurrency,
                                             Path(args.work)))))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--latency", type=float, default=0.3)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--port", type=int, default=8931)
    ap.add_argument("--inspect-python", default=None)
    ap.add_argument("--contender")
    ap.add_argument("--data")
    ap.add_argument("--url")
    ap.add_argument("--work")
    args = ap.parse_args()
    if args.contender:
        return contender_main(args)
    args.url = f"http://127.0.0.1:{args.port}/v1"
    server = subprocess.Popen([sys.executable, str(HERE / "latency_server.py"), "--port", str(args.port),
                               "--latency", str(args.latency)])
    try:
        time.sleep(1.0)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            args.data = write_dataset(work / "data", args.queries)
            kinds = ["bare", "rollout", "judge", "e2e"] + (["inspect"] if args.inspect_python else [])
            rows = [run_contender(k, args, work) for k in kinds]
    finally:
        server.terminate()
        server.wait()
    n_rollout = expected_rollout_requests(args.queries)
    print(f"{args.queries} queries, {len(conversations(args.queries))} conversations, {n_rollout} rollout requests, "
          f"latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}")
    # the floor: the longest chain of dependent requests (turn-1 reply, then 2 per move of a 5-move
    # conversation) times the latency, or the requests over the concurrency, whichever is larger
    floor = max(11, n_rollout / args.concurrency) * args.latency
    print(f"rollout floor {floor:.2f} s")
    print("| contender | wall s | CPU s | CPU ms / rollout request |")
    print("| --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['contender']} | {r['wall']:.2f} | {r['cpu']:.2f} | {1000 * r['cpu'] / n_rollout:.2f} |")


if __name__ == "__main__":
    main()
