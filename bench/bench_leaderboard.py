"""Hand-run benchmark: how long the leaderboard of `carryon-eval compare --out` takes at the paper's scale.

    PYTHONPATH=. python bench/bench_leaderboard.py --models 14 --queries 398

Made-up per-conversation scores shaped like a full run (per query: turn 1, oracle, 8 BC and 5 NC conversations,
utility 0-100, harm 1-5, redundancy) for every model, one comparability group; the paper's 1000 bootstrap
resamples. Printed: the seconds of build_leaderboard (every column's paired differences over every pair) and of
render_page, and the page's size.
"""
from __future__ import annotations

import argparse
import random
import time

from carryon_eval.report.leaderboard import RunEntry, build_leaderboard
from carryon_eval.report.leaderboard_page import render_page
from carryon_eval.run.results import JudgesInfo, Results
from carryon_eval.suites.carryonbench.section import SECTION, CarryOnBenchSection
from carryon_eval.suites.carryonbench.conditions import CONDITIONS

PLAN = ["turn1", "oracle"] + ["bc"] * 8 + ["nc"] * 5


def made_up_run(model: str, n_queries: int, rng: random.Random) -> RunEntry:
    block = {"utility": 50.0, "harm": 2.0, "violation_rate": 20.0, "ci95": {}, "scored_share": {}, "reasons": {}}
    section = CarryOnBenchSection(conditions={c: dict(block) for c in CONDITIONS},
                                  recovery={"value": 50.0, "ci95": [40.0, 60.0]}, bootstrap={"n_resamples": 1000, "seed": 0})
    results = Results(model=model, sections={SECTION: section},
                      judges=JudgesInfo(utility={"models": ["j"], "prompt_refs": ["u"]},
                                        safety={"models": ["j"], "prompt_refs": ["s"]}))
    scores = [{"query_id": f"q{q}", "condition": c, "utility": 100 * rng.random(), "harm": rng.randint(1, 5),
               "redundancy": 100 * rng.random()} for q in range(n_queries) for c in PLAN]
    return RunEntry(model, f"runs/{model}", results, scores)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=14)
    ap.add_argument("--queries", type=int, default=398)
    args = ap.parse_args()
    rng = random.Random(0)
    runs = [made_up_run(f"model-{i}", args.queries, rng) for i in range(args.models)]
    start = time.perf_counter()
    board = build_leaderboard(runs)
    built = time.perf_counter()
    page = render_page(board, {}, {})
    done = time.perf_counter()
    pairs = sum(len(v) for v in board.differences.values())
    print(f"{args.models} models x {args.queries} queries: build_leaderboard {built - start:.1f} s "
          f"({pairs} paired differences), render_page {done - built:.2f} s, page {len(page) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
