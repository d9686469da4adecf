"""Hand-run benchmark: `carryon-eval compare --out` over real run folders at the paper's scale (wall, CPU, memory).

    PYTHONPATH=. python bench/paper_runs.py --out /somewhere/paper-runs --targets 14      # the run folders, once
    PYTHONPATH=. python bench/bench_compare.py /somewhere/paper-runs/runs --runs 2 4 14

Each count of runs is one `carryon-eval compare RUN... --out DIR` in a process of its own, timed by /usr/bin/time
(wall clock; user + system CPU of the process and its children; its peak resident memory), the first N run
folders in name order. The run folders are real runs (bench/paper_runs.py: rollout, judges and report against the
scripted latency server), never made-up rows. Prints one JSON line per count, then a table.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def timed_compare(runs: list[Path], out: Path) -> dict:
    log = out.with_suffix(".time")
    cmd = ["/usr/bin/time", "-o", str(log), "-f", "%e %U %S %M", sys.executable, "-m", "carryon_eval.cli", "compare",
           *map(str, runs), "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if done.returncode:
        raise SystemExit(f"compare of {len(runs)} runs: exit {done.returncode}\n{done.stderr[-2000:]}")
    wall, user, system, rss = log.read_text().split()
    return {"runs": len(runs), "wall_s": float(wall), "cpu_s": round(float(user) + float(system), 2),
            "max_rss_mb": round(int(rss) / 1024), "load_average": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="a folder of run folders (each with results.json)")
    ap.add_argument("--runs", type=int, nargs="+", default=[2, 4, 14])
    args = ap.parse_args()
    runs = sorted(p for p in args.folder.iterdir() if (p / "results.json").is_file())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.runs:
            if n > len(runs):
                raise SystemExit(f"{args.folder} has {len(runs)} finished runs, not {n}")
            row = timed_compare(runs[:n], Path(tmp) / f"cmp{n}")
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("| runs | wall | CPU | peak memory |\n| --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['runs']} | {r['wall_s']:.1f} s | {r['cpu_s']:.1f} s | {r['max_rss_mb']} MB |")


if __name__ == "__main__":
    main()
