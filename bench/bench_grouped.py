"""Hand-run benchmark: Ben-Util per item (the paper's protocol) against grouped (one call per reply).

    PYTHONPATH=. python bench/bench_grouped.py --queries 410 --items 18                  # the dry run only
    PYTHONPATH=. python bench/bench_grouped.py --queries 410 --items 18 --wall --latency 0.05

A made-up dataset shaped like the shipped plan (per query 15 conversations: per length of 1-5 follow-up moves 2
BC and 1 NC; 410 queries give its 6,150 conversations) with ``--items`` checklist items per query (the paper's
checklists hold about 18). Printed, side by side:

- the dry run's judge calls and estimated tokens for the whole plan, per-item and grouped (``carryon-eval
  --dry-run --json`` with ``--utility-judge per-item`` and ``grouped``; Ben-Util alone and all judges);
- with ``--wall``: one rollout against bench/latency_server.py (fixed ``--latency``), then the judge phase of
  those same transcripts twice, on two fresh copies of the run folder (no response cache), per-item then
  grouped, each timed (wall clock) with the judge calls its run.json records.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_eval import made_up_tables, write_tables  # noqa: E402


def write_dataset(root: Path, n_queries: int, items: int) -> Path:
    plan = [{"conversation_id": f"c{q}-{k}-{j}", "query_id": f"q{q}", "flow_id": f"{cond}{k + 1}"}
            for q in range(n_queries) for k in range(5) for j, cond in enumerate(("BC", "BC", "NC"))]
    return write_tables(root, made_up_tables(n_queries, plan, items=items))


class Lines:
    """The evaluator's output, kept (the dry run's JSON line) or echoed to stderr (progress of the timed phases)."""

    def __init__(self, echo: bool = False) -> None:
        self.lines: list[str] = []
        self.echo = echo

    def info(self, text: str) -> None:
        self.lines.append(text)
        if self.echo:
            print(text, file=sys.stderr, flush=True)

    def note(self, text: str) -> None:
        pass


def config(url: str, data: Path, out: Path, **more: object) -> object:
    from carryon_eval.app.config import EvaluateConfig, RoleChoice
    return EvaluateConfig(target=RoleChoice(url, "tgt", "BENCH_NO_KEY"), user=RoleChoice(url, "sim"),
                          judge=RoleChoice(url, "jdg"), dataset=str(data), out=out, concurrency=64, max_tokens=64,
                          judge_max_tokens=256, **more)


def dry_run(data: Path, work: Path, mode: str) -> dict:
    from carryon_eval.app import commands as app
    lines = Lines()
    cfg = config("http://127.0.0.1:9/v1", data, work / f"dry-{mode}", dry_run=True, dry_run_json=True,
                 utility_judge=mode)
    asyncio.run(app.evaluate(cfg, lines))
    return json.loads(next(line for line in lines.lines if line.startswith("{")))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def timed_judge(rundir: Path, mode: str) -> float:
    from carryon_eval.app import commands as app
    from carryon_eval.app.config import RunOptions
    started = time.perf_counter()
    await app.judge_folder(RunOptions(rundir, concurrency=64, utility_judge=mode), Lines(echo=True))
    return time.perf_counter() - started


def wall(data: Path, work: Path, latency: float) -> dict:
    from carryon_eval.app import commands as app
    port = free_port()
    server = subprocess.Popen([sys.executable, str(HERE / "latency_server.py"), "--port", str(port),
                               "--latency", str(latency)])
    try:
        time.sleep(1.0)
        url = f"http://127.0.0.1:{port}/v1"
        base = work / "rolled"
        # the rollout, with a grouped judge beside it (the cheaper mode; not timed here): both timed judge phases
        # below start from a copy of these transcripts with no judgments
        cfg = config(url, data, base, conditions=("turn1", "oracle", "bc", "nc"), utility_judge="grouped")
        started = time.perf_counter()
        asyncio.run(app.evaluate(cfg, Lines(echo=True)))
        rollout_s = time.perf_counter() - started
        out = {"latency_s": latency, "rollout_and_first_judge_s": round(rollout_s, 1)}
        print(f"rollout and a first (grouped) judge: {rollout_s:.0f} s", file=sys.stderr, flush=True)
        for mode in ("per-item", "grouped"):
            copy = work / f"judge-{mode}"
            copy.mkdir()
            for name in ("run.json", "transcripts.jsonl"):
                shutil.copy(base / name, copy / name)
            seconds = asyncio.run(timed_judge(copy, mode))
            usage = json.loads((copy / "run.json").read_text()).get("usage", {}).get("judge", {})
            out[mode] = {"judge_phase_s": round(seconds, 1), "judge_calls": usage.get("calls"),
                         "prompt_tokens_reported": usage.get("prompt_tokens"),
                         "load_average_after": [round(x, 2) for x in os.getloadavg()]}
            print(f"judge phase {mode}: {seconds:.0f} s, {usage.get('calls')} calls", file=sys.stderr, flush=True)
        return out
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=410)
    ap.add_argument("--items", type=int, default=18)
    ap.add_argument("--wall", action="store_true", help="also time the judge phase of both modes")
    ap.add_argument("--latency", type=float, default=0.05)
    args = ap.parse_args()
    os.environ.setdefault("BENCH_NO_KEY", "none")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = write_dataset(work / "data", args.queries, args.items)
        result: dict = {"queries": args.queries, "conversations": args.queries * 15, "items_per_query": args.items,
                        "load_average_before": [round(x, 2) for x in load_before]}
        started = time.perf_counter()
        for mode in ("per-item", "grouped"):
            table = dry_run(data, work, mode)
            judge = table["roles"]["judge"]["all"]
            result[f"dry_run_{mode}"] = {"judge_calls_all": judge["calls"],
                                         "judge_prompt_tokens_all": judge["prompt_tokens"],
                                         "judge_completion_tokens_all": judge["completion_tokens"],
                                         "judge_by_scorer": table["judge_by_scorer"]}
        result["dry_run_utility_modes"] = table["utility_modes"]
        result["dry_run_seconds_both"] = round(time.perf_counter() - started, 1)
        print(f"dry runs of both modes: {result['dry_run_seconds_both']:.0f} s", file=sys.stderr, flush=True)
        if args.wall:
            result["wall"] = wall(data, work, args.latency)
        result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
