"""The full coverage table of the 95% intervals (run by hand; numbers in bench/README.md): the seeded simulation of
tests/support/coverage.py with many seeds, every headline and intent number, every interval method
(carryon_eval.metrics.stats.INTERVALS), fully scored and with 10% of judgments unscored three times as often on
harmful replies. Usage: python bench/bench_coverage.py [--seeds 200] [--queries 80] [--resamples 1000] [--missing both] [--kind both]
[--first-seed 0]"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.coverage import coverage, headline_truth, intent_truth  # noqa: E402

from carryon_eval.metrics.stats import INTERVALS  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--queries", type=int, default=80)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--truth-queries", type=int, default=20000)
    ap.add_argument("--missing", choices=("none", "harmful", "both"), default="both")
    ap.add_argument("--kind", choices=("headline", "intent", "both"), default="both")
    ap.add_argument("--first-seed", type=int, default=0)
    args = ap.parse_args()
    start = time.time()
    kinds = ("headline", "intent") if args.kind == "both" else (args.kind,)
    makers = {"headline": headline_truth, "intent": intent_truth}
    truths = {k: makers[k](args.truth_queries) for k in kinds}
    print(f"truth from {args.truth_queries} queries in {time.time() - start:.0f}s", file=sys.stderr, flush=True)
    print(f"{args.seeds} seeds (from {args.first_seed}) x {args.queries} queries, {args.resamples} resamples; % of intervals covering the truth")
    print(f"{'missing':10} {'number':32} {'truth':>8} " + " ".join(f"{m:>13}" for m in INTERVALS))
    for missing in {"none": (None,), "harmful": ("harmful",), "both": (None, "harmful")}[args.missing]:
        for kind, truth in truths.items():
            hits: dict[str, dict[str, int]] = {m: {k: 0 for k in truth} for m in INTERVALS}
            for i, seed in enumerate(range(args.first_seed, args.first_seed + args.seeds)):
                for m, row in coverage(range(seed, seed + 1), args.queries, args.resamples, truth, missing).items():
                    for k, h in row.items():
                        hits[m][k] += h
                if (i + 1) % 20 == 0:
                    rate = (i + 1) / (time.time() - start)
                    print(f"  {missing or 'none'} {kind}: {i + 1}/{args.seeds} seeds ({rate:.2f}/s)", file=sys.stderr,
                          flush=True)
            for k in truth:
                print(f"{missing or 'none':10} {k:32} {truth[k]:8.2f} "
                      + " ".join(f"{100.0 * hits[m][k] / args.seeds:13.1f}" for m in INTERVALS), flush=True)
    print(f"done in {time.time() - start:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
