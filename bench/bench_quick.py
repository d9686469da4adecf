"""Hand-run benchmark: what `--subset quick` costs and how wide its confidence intervals get, against full.

    PYTHONPATH=. python bench/bench_quick.py --queries 40

A made-up dataset shaped like CarryOnBench's plan (per query 15 conversations: per length of 1-5 follow-up
moves 2 BC and 1 NC; 3 checklist items) is evaluated twice, full and `--subset quick`, against
bench/latency_server.py with no latency, whose judge answers vary per request (so per query). Printed: the
calls per role of each (the dry run's count, which the run makes to the call for target and user, and
reaches for the judge since no two replies are identical) and the 95% CI half-width of each headline.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_eval import made_up_tables, write_tables  # noqa: E402

HEADLINES = [("turn1", "utility"), ("oracle", "utility"), ("bc", "utility"), ("nc", "utility"),
             ("bc", "harm"), ("nc", "harm")]


def write_dataset(root: Path, n_queries: int) -> Path:
    plan = [{"conversation_id": f"c{q}-{k}-{j}", "query_id": f"q{q}", "flow_id": f"{cond}{k + 1}"}
            for q in range(n_queries) for k in range(5) for j, cond in enumerate(("BC", "BC", "NC"))]
    return write_tables(root, made_up_tables(n_queries, plan, items=3))


def evaluate(url: str, data: Path, out: Path, subset: str) -> tuple[dict[str, int], dict]:
    from carryon_eval.app import commands as app
    from carryon_eval.sweep import Captured       # keeps the info lines (the dry run's JSON table)
    from carryon_eval.app.config import EvaluateConfig, RoleChoice

    role = RoleChoice(url, "tgt", "BENCH_NO_KEY")
    cfg = EvaluateConfig(target=role, user=RoleChoice(url, "sim"), judge=RoleChoice(url, "jdg"),
                         dataset=str(data), out=out, concurrency=32, max_tokens=64, judge_max_tokens=8,
                         subset=subset)
    lines = Captured()
    asyncio.run(app.evaluate(cfg, lines))
    calls = {}
    for line in lines.lines:
        parts = line.split()
        if len(parts) >= 3 and parts[0] in ("target", "user", "judge") and parts[1] == "all":
            calls[parts[0]] = int(parts[2].replace(",", ""))
    return calls, json.loads((out / "results.json").read_text())


def half_width(results: dict, cond: str, metric: str) -> str:
    ci = (results["conditions"][cond].get("ci95") or {}).get(metric)
    return "n/a" if not ci or None in ci else f"{(ci[1] - ci[0]) / 2:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--port", type=int, default=8933)
    args = ap.parse_args()
    server = subprocess.Popen([sys.executable, str(HERE / "latency_server.py"), "--port", str(args.port),
                               "--latency", "0"])
    try:
        time.sleep(1.0)
        with tempfile.TemporaryDirectory() as tmp:
            data = write_dataset(Path(tmp) / "data", args.queries)
            url = f"http://127.0.0.1:{args.port}/v1"
            runs = {s: evaluate(url, data, Path(tmp) / s, s) for s in ("full", "quick")}
    finally:
        server.terminate()
        server.wait()
    print(f"{args.queries} queries")
    print("| | " + " | ".join(f"{c} {m} CI half-width" for c, m in HEADLINES) + " | target calls | user calls | "
          "judge calls | all calls |")
    print("|" + " --- |" * (len(HEADLINES) + 5))
    for name, (calls, results) in runs.items():
        cells = [half_width(results, c, m) for c, m in HEADLINES]
        print(f"| {name} | " + " | ".join(cells) + f" | {calls.get('target', 0):,} | {calls.get('user', 0):,} | "
              f"{calls.get('judge', 0):,} | {sum(calls.values()):,} |")
    full, quick = (sum(runs[s][0].values()) for s in ("full", "quick"))
    print(f"quick / full calls: {quick / full:.1%}")


if __name__ == "__main__":
    main()
