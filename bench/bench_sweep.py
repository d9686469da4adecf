"""Hand-run benchmark: a `carryon-eval sweep` of N targets against its slowest target alone, and what the sweep's
server saw (when requests were in flight, how long the sweep ran after its last call).

    PYTHONPATH=. python bench/bench_sweep.py --targets 3 --latency 0.1 --concurrency 8 --repeats 4
    PYTHONPATH=. python bench/bench_sweep.py --targets 14 --queries 20 --latency 0.05 --concurrency 16 --no-alone \
        --end-parts

bench/latency_server.py (its own process, ``--log``: one line per chat request) answers every request after
``--latency`` seconds; the targets t1, t2, ..., the simulator sim and the judge jdg are models of that one server
(no-model-check). The dataset is the built-in sample, or with ``--queries Q`` one shaped like the paper's plan
(bench_grouped.write_dataset: 15 conversations per query, 18 checklist items). Each repeat runs every target alone
(a one-target plan, the sweep's own code path) then all of them in one sweep, every run into a fresh folder, each
command timed around its process (wall; CPU of the process and its children). From the server's log of the sweep:
the last answer's time, so the time the sweep ran after its last call (its reports and its leaderboard), the
longest stretch with no request in flight between its first request and its last, and each model's busy time (the
sum of its requests' durations); the same phases (before the first request, first request to last answer, after
the last answer) of each target alone; and the sweep against its floor: the slowest alone, its calling phase as
long as the shared simulator's or judge's busy time over ``--concurrency`` where that is longer (the judge the
bottleneck). ``--end-parts``: then, each in a process of its own right after the sweep, one report (the last
target's run, written again) and one leaderboard (`compare --out` over every run): what the sweep's end is held
to. Printed per repeat, then the medians.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_grouped import free_port  # noqa: E402


SHARED = ("sim", "jdg")         # the models every target's run shares: the simulator and the judge


def plan(url: str, targets: list[str], concurrency: int, dataset: str) -> str:
    head = (f'user-endpoint = "{url}"\nuser-model = "sim"\njudge-endpoint = "{url}"\njudge-model = "jdg"\n'
            f"concurrency = {concurrency}\nno-model-check = true\n"
            + (f'dataset = "{dataset}"\nutility-judge = "grouped"\n' if dataset else ""))
    own = "target-max-tokens = 64\n" if dataset else ""          # a target's own key: in each [[target]] table
    return head + "".join(f'\n[[target]]\nname = "{t}"\nendpoint = "{url}"\nmodel = "{t}"\n{own}' for t in targets)


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed(name: str, *args: str) -> dict:
    """One `carryon-eval ARGS...` in a process of its own: its wall and CPU time (the process and its children)."""
    cpu0, start = children_cpu(), time.time()
    done = subprocess.run([sys.executable, "-m", "carryon_eval.cli", *args], check=False,
                          capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    end = time.time()
    if done.returncode:
        raise SystemExit(f"{name}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return {"start": start, "end": end, "wall": end - start, "cpu": children_cpu() - cpu0}


def timed_sweep(folder: Path, name: str, text: str) -> dict:
    path = folder / f"{name}.toml"
    path.write_text(text)
    return timed(name, "sweep", str(path), "--out", str(folder / name))


def end_parts(folder: Path, targets: list[str]) -> dict:
    """What the sweep's end stands on, each alone after the sweep: one report (the last target's run, written again)
    and one leaderboard (`compare --out` over every run)."""
    runs = [str(folder / "sweep" / t) for t in targets]
    report = timed("report", "report", runs[-1])
    board = timed("leaderboard", "compare", *runs, "--out", str(folder / "board"))
    return {"one_report": report["wall"], "one_leaderboard": board["wall"]}


def server_view(log: Path, start: float, end: float) -> dict:
    """From the server's log, the requests made between start and end: the last answer's time (so the run's
    time after it) and the longest stretch with nothing in flight between the first request and the last (and when
it began, seconds after the command started)."""
    rows = [(float(a), float(b), m) for a, b, m in (line.split() for line in log.read_text().splitlines())
            if start <= float(a) <= end]
    spans = sorted((a, b) for a, b, _ in rows)
    busy: dict[str, float] = {}
    for a, b, m in rows:
        busy[m] = busy.get(m, 0.0) + b - a
    longest, at, busy_until = 0.0, 0.0, spans[0][1]
    for a, b in spans[1:]:
        if a - busy_until > longest:
            longest, at = a - busy_until, busy_until
        busy_until = max(busy_until, b)
    return {"requests": len(spans), "after_last_call": end - busy_until, "longest_idle": longest,
            "longest_idle_from": at - start, "first_request": spans[0][0] - start, "last_answer": busy_until - start,
            "calling": busy_until - spans[0][0], "busy": busy}


def one_repeat(url: str, log: Path, targets: list[str], args: argparse.Namespace, dataset: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        alone = {} if args.no_alone else {
            t: timed_sweep(folder, f"alone-{t}", plan(url, [t], args.concurrency, dataset)) for t in targets}
        sweep = timed_sweep(folder, "sweep", plan(url, targets, args.concurrency, dataset))
        if args.end_parts:
            sweep.update(end_parts(folder, targets))
    for timed in (sweep, *alone.values()):
        timed.update(server_view(log, timed["start"], timed["end"]))
    out = {"sweep": sweep, "alone": alone, "load_average": [round(x, 2) for x in os.getloadavg()]}
    if alone:
        slowest = out["slowest"] = max(alone.values(), key=lambda r: r["wall"])
        out["sweep_over_slowest"] = sweep["wall"] / slowest["wall"]
        # the floor: the slowest alone, its calls taking as long as the shared simulator's and judge's work in the
        # sweep at their concurrency where that is longer (the judge the bottleneck)
        shared = max(sweep["busy"].get(m, 0.0) for m in SHARED) / args.concurrency
        out["shared_work"] = shared
        out["floor"] = max(slowest["wall"], slowest["first_request"] + max(slowest["calling"], shared)
                           + slowest["after_last_call"])
        out["sweep_over_floor"] = sweep["wall"] / out["floor"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", type=int, default=3)
    ap.add_argument("--queries", type=int, default=0, help="a paper-shaped dataset of Q queries [default: the sample]")
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--no-alone", action="store_true", help="time the sweep only")
    ap.add_argument("--end-parts", action="store_true",
                    help="after each sweep, time one report and one leaderboard of its runs, each alone")
    args = ap.parse_args()
    targets = [f"t{i + 1}" for i in range(args.targets)]
    with tempfile.TemporaryDirectory() as tmp:
        dataset = ""
        if args.queries:
            from bench_grouped import write_dataset
            dataset = str(write_dataset(Path(tmp) / "data", args.queries, 18))
        log = Path(tmp) / "server.log"
        port = free_port()
        server = subprocess.Popen([sys.executable, str(HERE / "latency_server.py"), "--port", str(port),
                                   "--latency", str(args.latency), "--log", str(log)])
        try:
            time.sleep(1.0)
            url = f"http://127.0.0.1:{port}/v1"
            repeats = []
            for i in range(args.repeats):
                r = one_repeat(url, log, targets, args, dataset)
                repeats.append(r)
                print(json.dumps({"repeat": i + 1, **r}), flush=True)
        finally:
            server.terminate()
            server.wait()
    med = {k: statistics.median(r["sweep"][k] for r in repeats) for k in ("wall", "cpu", "after_last_call",
                                                                          "longest_idle")}
    print(f"{args.targets} targets, latency {args.latency:g} s, concurrency {args.concurrency}, "
          f"{'queries ' + str(args.queries) if args.queries else 'built-in sample'}; median of {len(repeats)}:")
    print(f"sweep: wall {med['wall']:.1f} s, CPU {med['cpu']:.1f} s; after its last call {med['after_last_call']:.1f} s "
          f"({100 * med['after_last_call'] / med['wall']:.0f}% of its wall time); longest stretch with no request "
          f"in flight {med['longest_idle']:.2f} s")
    if args.end_parts:
        parts = [r["sweep"]["one_report"] + r["sweep"]["one_leaderboard"] for r in repeats]
        print(f"one report + one leaderboard, each alone after the sweep: median {statistics.median(parts):.1f} s "
              f"(report {statistics.median(r['sweep']['one_report'] for r in repeats):.1f} s, leaderboard "
              f"{statistics.median(r['sweep']['one_leaderboard'] for r in repeats):.1f} s)")
    if not args.no_alone:
        ratios = sorted(r["sweep_over_slowest"] for r in repeats)
        print(f"sweep / slowest target alone: median {statistics.median(ratios):.2f} x "
              f"(range {ratios[0]:.2f}-{ratios[-1]:.2f})")
        print(f"the shared simulator's and judge's work at concurrency {args.concurrency}: median "
              f"{statistics.median(r['shared_work'] for r in repeats):.1f} s; sweep / floor (the slowest alone, its "
              f"calls as long as that work where longer): median "
              f"{statistics.median(r['sweep_over_floor'] for r in repeats):.2f} x")
        print("median seconds    before its first request   first request to last answer   after its last answer")
        for who, runs in (("sweep", [r["sweep"] for r in repeats]), ("slowest alone", [r["slowest"] for r in repeats])):
            phases = [statistics.median(x[k] for x in runs) for k in ("first_request", "calling", "after_last_call")]
            print(f"{who:<17} {phases[0]:>22.1f} {phases[1]:>30.1f} {phases[2]:>23.1f}")


if __name__ == "__main__":
    main()
