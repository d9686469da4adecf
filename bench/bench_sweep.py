"""Hand-run benchmark: a 3-target `carryon-eval sweep` against each of its targets run alone.

    PYTHONPATH=. python bench/bench_sweep.py --latency 0.1 --concurrency 8

bench/latency_server.py (its own process) answers every chat request after ``--latency`` seconds; the targets
t1, t2, t3, the simulator sim and the judge jdg are models of that one server (no-model-check: it lists only
tgt, sim, jdg). The built-in sample dataset. Each target is first run alone (a one-target plan, the sweep's own
code path), then the three in one sweep, every run into a fresh folder; the wall time of each command is
measured around its process. In the sweep the simulator and judge are shared: at most ``--concurrency``
requests in flight to each over all three runs, so the sweep is bounded below by the shared judge's work.
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGETS = ("t1", "t2", "t3")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def plan(url: str, targets: tuple[str, ...], concurrency: int) -> str:
    head = (f'user-endpoint = "{url}"\nuser-model = "sim"\njudge-endpoint = "{url}"\njudge-model = "jdg"\n'
            f"concurrency = {concurrency}\nno-model-check = true\n")
    return head + "".join(f'\n[[target]]\nname = "{t}"\nendpoint = "{url}"\nmodel = "{t}"\n' for t in targets)


def timed_sweep(folder: Path, name: str, text: str) -> float:
    path = folder / f"{name}.toml"
    path.write_text(text)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "carryon_eval.cli", "sweep", str(path), "--out", str(folder / name)],
                          capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    wall = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{name}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()
    port = free_port()
    server = subprocess.Popen([sys.executable, str(HERE / "latency_server.py"), "--port", str(port),
                               "--latency", str(args.latency)])
    try:
        time.sleep(1.0)
        url = f"http://127.0.0.1:{port}/v1"
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            alone = {t: timed_sweep(folder, f"alone-{t}", plan(url, (t,), args.concurrency)) for t in TARGETS}
            together = timed_sweep(folder, "sweep", plan(url, TARGETS, args.concurrency))
    finally:
        server.terminate()
        server.wait()
    slowest = max(alone.values())
    print(f"latency {args.latency:g} s, concurrency {args.concurrency}, built-in sample, 3 targets")
    print("alone: " + ", ".join(f"{t} {s:.1f} s" for t, s in alone.items())
          + f"; slowest {slowest:.1f} s, sum {sum(alone.values()):.1f} s")
    print(f"sweep of the three, side by side: {together:.1f} s = {together / slowest:.2f} x the slowest single run, "
          f"{together / sum(alone.values()):.2f} x their sum")


if __name__ == "__main__":
    main()
