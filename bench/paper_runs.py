"""Hand-run: real run folders at the paper's scale, for the benchmarks that read finished runs (bench_compare.py).

    PYTHONPATH=. python bench/paper_runs.py --out /somewhere/paper-runs --targets 14 --parallel 2

A dataset shaped like the paper's plan (bench_grouped.write_dataset: 410 queries x 15 conversations of 1-5
follow-up moves, 18 checklist items per query), then one `carryon-eval` run per target model t01, t02, ... against
bench/latency_server.py (its own process), each into OUT/runs/<target> with the same simulator (sim) and judge
(jdg) of that server: real runs (rollout, judges, report), every row of their files made by the evaluator from
the server's answers. Ben-Util is judged grouped (one call per reply: 38,540 judge calls a run instead of
366,130); a run's folders have the same shape in either mode. A run whose results.json exists is skipped, so a
second invocation only finishes what is missing. Each run's wall and CPU time (its process and children, from
/usr/bin/time) goes to OUT/runs.jsonl.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_grouped import free_port, write_dataset  # noqa: E402


def run_one(url: str, data: Path, rundir: Path, model: str, concurrency: int) -> dict:
    cmd = ["/usr/bin/time", "-f", "%e %U %S %M", sys.executable, "-m", "carryon_eval.cli",
           "--dataset", str(data), "--endpoint", url, "--model", model, "--api-key-env", "BENCH_NO_KEY",
           "--user-endpoint", url, "--user-model", "sim", "--judge-endpoint", url, "--judge-model", "jdg",
           "--no-model-check", "--utility-judge", "grouped", "--concurrency", str(concurrency),
           "--target-max-tokens", "64", "--user-max-tokens", "64", "--judge-max-tokens", "256",
           "--progress-interval", "60", "--out", str(rundir)]
    log = rundir.with_suffix(".log")
    with open(log, "w") as f:
        done = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1",
                                                                            "BENCH_NO_KEY": "none"})
    wall, user, system, rss = log.read_text().strip().splitlines()[-1].split()
    return {"target": model, "exit": done.returncode, "wall_s": float(wall), "cpu_s": float(user) + float(system),
            "max_rss_mb": int(rss) / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--targets", type=int, default=14)
    ap.add_argument("--queries", type=int, default=410)
    ap.add_argument("--items", type=int, default=18)
    ap.add_argument("--parallel", type=int, default=2, help="runs at once (each its own process)")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.05)
    args = ap.parse_args()
    data = args.out / "data"
    if not (data / "README.md").is_file():
        write_dataset(data, args.queries, args.items)
    runs = args.out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    port = free_port()
    server = subprocess.Popen([sys.executable, str(HERE / "latency_server.py"), "--port", str(port),
                               "--latency", str(args.latency)])
    try:
        time.sleep(1.0)
        url = f"http://127.0.0.1:{port}/v1"
        todo = [f"t{i + 1:02d}" for i in range(args.targets) if not (runs / f"t{i + 1:02d}" / "results.json").is_file()]
        with ThreadPoolExecutor(args.parallel) as pool, open(args.out / "runs.jsonl", "a") as record:
            for row in pool.map(lambda m: run_one(url, data, runs / m, m, args.concurrency), todo):
                row["load_average"] = [round(x, 2) for x in os.getloadavg()]
                record.write(json.dumps(row) + "\n")
                record.flush()
                print(json.dumps(row), flush=True)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
