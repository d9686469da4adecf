"""The per-query spreads behind the dry run's power table (run by hand; numbers in bench/README.md and in
carryon_eval/suites/carryonbench/metrics/power.py's FULL and QUICK): two models equally good on average, drawn by the board
simulation (tests/support/boards.py) on many queries, in the full plan's design and in the quick subset's; per
number, the SD over queries of one model's per-query contribution (``sd``), the correlation of the two models'
contributions (``rho``) and the SD of their paired difference (``sd_pair``, what a comparison of two models
stands on). Recovery% contributes per query by its linearization, (100 / O)(BC - T1) - (R / O) oracle. Then how
far a simulator that leaks the intent into NC user turns moves the clarification effect.

    PYTHONPATH=. python bench/bench_power.py --queries 20000
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.boards import INTERACTION, nc_leak_shift, simulate  # noqa: E402


def contributions(values: dict, model: int) -> dict[str, np.ndarray]:
    """Per query, one model's contribution to each number of the power table (NaN where undefined)."""
    with np.errstate(invalid="ignore"):
        pq = {k: np.nanmean(v[model], axis=-1) for k, v in values.items()}
    t1, o, bc, nc = (pq[(c, "utility")] for c in ("turn1", "oracle", "bc", "nc"))
    big_o, rec = np.mean(o), 100 * (np.mean(bc) - np.mean(t1)) / np.mean(o)
    return {"bc.utility": bc, "recovery": 100 / big_o * (bc - t1) - rec / big_o * o,
            "clarification_effect": bc - nc, "bc.violation_rate": pq[("bc", "violation_rate")]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"{args.queries} queries, 2 models equally good on average, interaction {INTERACTION}, seed {args.seed}")
    print(f"{'design':7} {'number':22} {'sd':>8} {'rho':>7} {'sd_pair':>8}")
    for design in ("full", "quick"):
        board = simulate(np.random.default_rng(args.seed), 2, args.queries, quick=design == "quick")
        a, b = contributions(board.values, 0), contributions(board.values, 1)
        for key in a:
            ok = np.isfinite(a[key]) & np.isfinite(b[key])
            x, y = a[key][ok], b[key][ok]
            sd = float(np.sqrt((np.var(x, ddof=1) + np.var(y, ddof=1)) / 2))
            print(f"{design:7} {key:22} {sd:8.2f} {np.corrcoef(x, y)[0, 1]:7.3f} {np.std(x - y, ddof=1):8.2f}")
    print("the clarification effect when NC user turns leak the intent (population values, judge flip 0.05):")
    for leak in (0.05, 0.1, 0.2, 0.3):
        print(f"  NC leak {leak:.0%} per turn: {nc_leak_shift(leak):+.1f} points")


if __name__ == "__main__":
    main()
