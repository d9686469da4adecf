"""Hand-run benchmark: wall time and peak memory of `carryon-build build --no-llm` on the shipped source.

    python bench/bench_build.py [--source ../shared/data/casebench/CASEBench_data.json] [--repeat 3]
"""
from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default=str(REPO.parent / "shared/data/casebench/CASEBench_data.json"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    times = []
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "from carryonbench_builder.cli import main; main()", "build", "--source",
                            args.source, "--out", f"{tmp}/cob", "--no-llm"], check=True, capture_output=True)
            times.append(time.perf_counter() - t0)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"carryon-build build --no-llm: median {statistics.median(times):.2f} s over {args.repeat} runs "
          f"(min {min(times):.2f}, max {max(times):.2f}); peak RSS {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
