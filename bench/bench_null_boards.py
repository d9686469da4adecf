"""Boards of identical models through the leaderboard's own code (run by hand; numbers in bench/README.md): how often
chance alone marks a pair as differing, hands out a failure-mode flag, or separates two models' rank intervals.

Each board: M identical models on Q queries (tests/support/boards.py: per-query difficulty shared by the models,
each model's conversations drawn on their own, a judge misreading verdicts and harm scores with chance --flip),
written as each run's conversation_scores.jsonl rows and results.json numbers, then `build_leaderboard` and the
wing's failure modes, exactly as `compare --out` runs them. Works on the code before adjusted verdicts too (a pair
"differs" there when its 95% interval excludes 0, the page's old "excludes 0" column).

    PYTHONPATH=. python bench/bench_null_boards.py --boards 20 --models 14 --queries 60
    PYTHONPATH=/path/to/other/checkout python bench/bench_null_boards.py ...     # the same boards, other code

``--arrays``: many more boards through the statistics alone (each model's per-query numbers, as
tests/report/test_board_family.py draws them), the rules before adjustment (a pair's percentile interval excluding 0;
the flag to whoever is on top) beside the leaderboard's (Holm; the flag only past the runner-up), and the percentile
interval of each model's rank over the replicates beside the simultaneous rank intervals.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.boards import Board, simulate  # noqa: E402

from carryon_eval.report.leaderboard import RunEntry, build_leaderboard  # noqa: E402
from carryon_eval.run.records import DatasetRef, RunMeta  # noqa: E402
from carryon_eval.run.results import JudgesInfo, Results  # noqa: E402
from carryon_eval.suites.carryonbench.section import SECTION, CarryOnBenchSection  # noqa: E402

CONDITIONS = ("turn1", "oracle", "bc", "nc")


def _rows(board: Board, model: int) -> list[dict[str, Any]]:
    """One model's conversation_scores.jsonl rows (every judgment scored: the max harm at the last turn)."""
    rows = []
    for cond in CONDITIONS:
        util, harm = board.values[(cond, "utility")][model], board.values[(cond, "harm")][model]
        red = board.values.get((cond, "redundancy"))
        for q in range(board.n_queries):
            for c, length in enumerate(board.lengths[cond]):
                r = None if red is None or not np.isfinite(red[model, q, c]) else float(red[model, q, c])
                u, h = float(util[q, c]), int(harm[q, c])
                values = {"utility": u, "harm_mean_turns": float(h), "redundancy": r}
                rows.append({"query_id": f"q{q}", "condition": cond, "utility": u, "harm": float(h), "redundancy": r,
                             "turn_harms": [1] * (length - 1) + [h],
                             "decided": {"utility": True, "harm_mean_turns": True, "redundancy": True},
                             "readings": {"low": dict(values), "high": dict(values),
                                          "always": {"redundancy": r is not None}}})
    return rows


def _results(board: Board, model: int, n_resamples: int) -> Results:
    """results.json's numbers of one model (points over its conversations; every length equally planned)."""
    means = {need: float(np.nanmean(x[model])) for need, x in board.values.items()}
    conds: dict[str, Any] = {}
    for cond in CONDITIONS:
        block = {m: means.get((cond, m)) for m in ("utility", "harm", "violation_rate", "redundancy")}
        if cond in ("bc", "nc"):
            block.update({f"{m}_delta": means[(cond, m)] - means[("turn1", m)]
                          for m in ("utility", "harm", "violation_rate")})
        conds[cond] = {**block, "ci95": {}, "scored_share": {}, "reasons": {},
                       "plan_lengths": {str(n): float(board.lengths[cond].count(n)) for n in set(board.lengths[cond])}}
    t1, o, bc, nc = (means[(c, "utility")] for c in CONDITIONS)
    section = CarryOnBenchSection(conditions=conds, recovery={"value": 100 * (bc - t1) / o, "ci95": None},
                                  clarification_effect={"value": bc - nc, "ci95": None},
                                  bootstrap={"n_resamples": n_resamples, "seed": 0})
    return Results(model=f"m{model}", sections={SECTION: section},
                   judges=JudgesInfo(utility={"models": ["j"], "prompt_refs": ["u@1"]},
                                     safety={"models": ["j"], "prompt_refs": ["s@1"]}))


def _entries(board: Board, n_resamples: int) -> list[RunEntry]:
    meta = RunMeta(dataset=DatasetRef(source="data", content_sha256={"queries": "null"}))
    return [RunEntry(f"m{i}", f"runs/m{i}", _results(board, i, n_resamples), _rows(board, i), meta)
            for i in range(board.n_models)]


def _differs(d: Any) -> bool:
    if hasattr(d, "differs"):
        return bool(d.differs)
    return _excludes_zero(d)


def _excludes_zero(d: Any) -> bool:
    """A pair's own 95% interval (not adjusted) excludes 0."""
    return d.ci95 is not None and (d.ci95[0] > 0 or d.ci95[1] < 0)


def _disjoint(ranks: dict[int, Any]) -> bool:
    spans = [tuple(v) for v in ranks.values() if v is not None]
    return any(a[1] < b[0] for a in spans for b in spans)


def arrays(args: argparse.Namespace) -> None:
    """The statistics alone on many boards: before (percentile intervals, flags to the top) and now."""
    from report.test_board_family import COLUMNS, families
    from support.boards import need_means, resample_counts

    from carryon_eval.metrics.family import pair_list, replicate_rank_intervals
    from carryon_eval.metrics.stats import ci95
    from carryon_eval.suites.carryonbench.report.leaderboard import STANDOUTS, standout_flags

    rng = np.random.default_rng(args.seed)
    pairs = pair_list(args.models)
    rows = {k: [0, 0, 0, 0, 0, 0] for k in COLUMNS}        # before: boards, pairs; now: boards, pairs; ranks old, new
    flags_before = flags_now = 0
    start = time.time()
    for b in range(args.boards):
        board = simulate(rng, args.models, args.queries, flip=args.flip, oracle_at_bc=True)
        fams = families(board, rng)
        for key, fam in fams.items():
            old = sum(1 for i, j in pairs if (ci := ci95(fam.reps[i] - fam.reps[j])) and (ci[0] > 0 or ci[1] < 0))
            new = int(fam.family.differs.sum())
            old_ranks = dict(enumerate(replicate_rank_intervals(fam.reps, COLUMNS[key].better)))
            r = rows[key]
            r[0] += old > 0
            r[1] += old
            r[2] += new > 0
            r[3] += new
            r[4] += _disjoint(old_ranks)
            r[5] += _disjoint(fam.ranks)
        flags_before += any(len(set(fams[s.column].points)) > 1 for s in STANDOUTS)
        flags_now += bool(standout_flags(fams)[0])
        if (b + 1) % 50 == 0:
            print(f"  {b + 1}/{args.boards} boards ({(b + 1) / (time.time() - start):.1f}/s)", file=sys.stderr, flush=True)
    n = args.boards
    print(f"{n} boards of {args.models} identical models x {args.queries} queries (statistics alone), "
          f"{args.resamples} resamples, judge flip {args.flip}, seed {args.seed}")
    print(f"{'column':28} {'any pair before':>16} {'pairs before':>13} {'any pair now':>13} {'pairs now':>10} "
          f"{'ranks apart before':>19} {'ranks apart now':>16}")
    for key, r in rows.items():
        print(f"{key:28} {100 * r[0] / n:15.1f}% {r[1] / n:13.2f} {100 * r[2] / n:12.1f}% {r[3] / n:10.2f} "
              f"{100 * r[4] / n:18.1f}% {100 * r[5] / n:15.1f}%")
    print(f"a flag given: before {100 * flags_before / n:.1f}% of boards, now {100 * flags_now / n:.1f}%")


def main() -> None:
    from carryon_eval.suites.carryonbench.report.leaderboard import failure_modes

    ap = argparse.ArgumentParser()
    ap.add_argument("--boards", type=int, default=20)
    ap.add_argument("--models", type=int, default=14)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--flip", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--arrays", action="store_true", help="many boards through the statistics alone")
    args = ap.parse_args()
    if args.arrays:
        arrays(args)
        return
    rng = np.random.default_rng(args.seed)
    any_pair: dict[str, int] = {}
    n_pairs: dict[str, int] = {}
    disjoint: dict[str, int] = {}
    flags: dict[str, int] = {}
    own: dict[str, list[int]] = {}                         # pairs whose own interval excludes 0, pairs with one
    start = time.time()
    for b in range(args.boards):
        board = build_leaderboard(_entries(simulate(rng, args.models, args.queries, flip=args.flip), args.resamples))
        for key, diffs in board.differences.items():
            marked = sum(_differs(d) for d in diffs)
            any_pair[key] = any_pair.get(key, 0) + (marked > 0)
            n_pairs[key] = n_pairs.get(key, 0) + marked
            counted = own.setdefault(key, [0, 0])
            counted[0] += sum(_excludes_zero(d) for d in diffs)
            counted[1] += sum(d.ci95 is not None for d in diffs)
        for key, ranks in (getattr(board, "ranks", None) or {}).items():
            disjoint[key] = disjoint.get(key, 0) + _disjoint(ranks)
        given = {f.split(":")[0] for row in failure_modes(board, "A") for f in row["flags"]}
        for name in given | {"any"} if given else ():
            flags[name] = flags.get(name, 0) + 1
        rate = (b + 1) / (time.time() - start)
        print(f"  board {b + 1}/{args.boards} ({rate * 60:.1f}/min, ETA {(args.boards - b - 1) / rate:.0f}s)",
              file=sys.stderr, flush=True)
    n = args.boards
    print(f"{n} boards of {args.models} identical models x {args.queries} queries, {args.resamples} resamples, "
          f"judge flip {args.flip}, seed {args.seed}")
    print(f"{'column':34} {'boards with a differing pair':>30} {'pairs marked / board':>22} {'rank intervals disjoint':>24} "
          f"{'own interval excludes 0':>24}")
    for key in any_pair:
        excl, total = own.get(key, [0, 0])
        print(f"{key:34} {100.0 * any_pair[key] / n:29.1f}% {n_pairs[key] / n:22.2f} "
              + (f"{100.0 * disjoint[key] / n:23.1f}%" if key in disjoint else f"{'n/a':>24}")
              + (f" {100.0 * excl / total:23.1f}%" if total else f" {'n/a':>24}"))
    print("flags given (share of boards): " + (", ".join(f"{k} {100.0 * v / n:.1f}%" for k, v in sorted(flags.items()))
                                               or "none"))
    print(f"done in {time.time() - start:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
