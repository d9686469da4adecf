"""Hand-run benchmark: one run at the paper's scale, its memory, CPU, folder, and the report alone.

    PYTHONPATH=. python bench/bench_scale.py --queries 410 --mode grouped          # the full run, grouped judge
    PYTHONPATH=. python bench/bench_scale.py --queries 52 --mode per-item          # 1/8 of it, per item
    PYTHONPATH=. python bench/bench_scale.py ... --source /path/to/other/checkout  # the same on another version

A made-up dataset shaped like the shipped plan (bench_grouped.write_dataset: per query 15 conversations, 2 BC and
1 NC per length of 1-5 follow-up moves; ``--items`` checklist items per query, the paper's checklists hold about
18), bench/latency_server.py answering every call after ``--latency`` seconds in a process of its own, then two
commands, each in a process of its own under ``/usr/bin/time -v``:

1. ``carryon-eval`` (the default conditions turn1, oracle, bc, nc: rollout, judges, report) at ``--concurrency``;
2. ``carryon-eval report RUN`` on the finished folder (the report alone).

Printed as JSON: per command its wall time, CPU (user + sys), peak resident memory (the process's own, from
``time -v``) and exit code, and for the run the calls the server answered and how long the run went on after the
last of them (``after_last_call_s``), split at the judge phase's summary line into the judge phase's end
(``judge_done_after_last_call_s``) and the report and what follows it (``report_in_run_s``); the run folder's
size (bytes of its files, and the disk blocks they take: what ``du`` counts) and file count; the machine's load
average before and after.
``--source`` runs the evaluator of another checkout (its folder goes first on PYTHONPATH), for before/after
figures side by side. ``--keep DIR`` leaves the run folder there.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_grouped import free_port, write_dataset  # noqa: E402

TIME_FIELDS = {"user": r"User time \(seconds\): ([\d.]+)", "sys": r"System time \(seconds\): ([\d.]+)",
               "peak_rss_mb": r"Maximum resident set size \(kbytes\): (\d+)",
               "wall": r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)"}


def _seconds(clock: str) -> float:
    parts = [float(p) for p in clock.split(":")]
    return sum(p * 60 ** i for i, p in enumerate(reversed(parts)))


def timed(args: list[str], env: dict[str, str], log: Path) -> dict:
    """One command under /usr/bin/time -v: wall, CPU, peak RSS, exit code (its output goes to ``log``, each line
    with the time it was read: ``lines``, (time, text) pairs)."""
    load = os.getloadavg()[0]
    started = time.time()
    lines: list[tuple[float, str]] = []
    with open(log, "w") as fh:
        proc = subprocess.Popen(["/usr/bin/time", "-v", *args], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace",
                                cwd=log.parent)      # not this checkout's folder: PYTHONPATH says which runs
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append((time.time(), line))
            fh.write(line)
        proc.wait()
    text = log.read_text(errors="replace")
    found = {k: re.findall(rx, text) for k, rx in TIME_FIELDS.items()}
    user, system = float(found["user"][-1]), float(found["sys"][-1])
    return {"exit": proc.returncode, "wall_s": round(_seconds(found["wall"][-1]), 1),
            "cpu_s": round(user + system, 1), "user_s": user, "sys_s": system,
            "peak_rss_mb": round(int(found["peak_rss_mb"][-1]) / 1024, 1),
            "load_1min_before": round(load, 2), "load_1min_after": round(os.getloadavg()[0], 2),
            "started": started, "ended": time.time(), "lines": lines}


def server_stats(url: str) -> dict:
    """The latency server's count of answered calls and the time of its last answer."""
    with urllib.request.urlopen(url.rsplit("/v1", 1)[0] + "/stats", timeout=10) as resp:
        return json.loads(resp.read())


def folder_stats(run: Path) -> dict:
    files = [p for p in run.rglob("*") if p.is_file()]
    by_top: dict[str, int] = {}
    for p in files:
        top = p.relative_to(run).parts[0]
        by_top[top] = by_top.get(top, 0) + p.stat().st_size
    return {"files": len(files), "size_mb": round(sum(by_top.values()) / 1e6, 1),
            "disk_mb": round(sum(p.stat().st_blocks * 512 for p in files) / 1e6, 1),     # what du counts
            "largest_mb": {k: round(v / 1e6, 1) for k, v in sorted(by_top.items(), key=lambda kv: -kv[1])[:6]}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=410)
    ap.add_argument("--items", type=int, default=18)
    ap.add_argument("--mode", choices=("grouped", "per-item"), default="grouped")
    ap.add_argument("--latency", type=float, default=0.01)
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--source", type=Path, default=HERE.parent, help="the checkout whose evaluator runs")
    ap.add_argument("--keep", type=Path, help="leave the run folder here")
    args = ap.parse_args()
    env = {**os.environ, "BENCH_NO_KEY": "none", "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1",   # lines as said
           "PYTHONPATH": f"{args.source.resolve()}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cli = [sys.executable, "-m", "carryon_eval.cli"]
    port = free_port()
    server = subprocess.Popen([sys.executable, str(HERE / "latency_server.py"), "--port", str(port),
                               "--latency", str(args.latency)])
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        try:
            time.sleep(1.0)
            url = f"http://127.0.0.1:{port}/v1"
            data = write_dataset(work / "data", args.queries, args.items)
            run = work / "run"
            result: dict = {"queries": args.queries, "conversations": args.queries * 15, "items": args.items,
                            "mode": args.mode, "latency_s": args.latency, "concurrency": args.concurrency,
                            "source": str(args.source), "load_before": [round(x, 2) for x in os.getloadavg()]}
            result["run"] = timed([*cli, "--endpoint", url, "--model", "tgt", "--user-model", "sim",
                                   "--judge-model", "jdg", "--api-key-env", "BENCH_NO_KEY", "--dataset", str(data),
                                   "--out", str(run), "--concurrency", str(args.concurrency),
                                   "--utility-judge", args.mode], env, work / "run.log")
            stats = server_stats(url)
            result["run"]["calls"] = stats["answered"]
            # the end of the run after its last call: the judge phase's end (its summary line), then the report
            # (and whatever else keeps the process up)
            lines, ended = result["run"].pop("lines"), result["run"].pop("ended")
            result["run"]["after_last_call_s"] = round(ended - stats["last_answer"], 1)
            judged = [t for t, line in lines if line.startswith("judge (")]
            if judged:
                result["run"]["judge_done_after_last_call_s"] = round(judged[-1] - stats["last_answer"], 1)
                result["run"]["report_in_run_s"] = round(ended - judged[-1], 1)
            result["run"].pop("started")
            result["folder"] = folder_stats(run)
            result["evaluator"] = subprocess.run([sys.executable, "-c", "import carryon_eval; print(carryon_eval.__file__)"],
                                                 env=env, cwd=work, capture_output=True, text=True).stdout.strip()
            result["report"] = timed([*cli, "report", str(run)], env, work / "report.log")
            for key in ("started", "ended", "lines"):
                result["report"].pop(key)
            result["load_after"] = [round(x, 2) for x in os.getloadavg()]
            if args.keep:
                shutil.copytree(run, args.keep)
        finally:
            server.terminate()
            server.wait()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
