"""What a run of a given size can resolve: the dry run's smallest detectable difference against a seeded simulation
of the same design through the leaderboard's own verdict (tests/support/boards.py, the spreads' source), the queries
``--detect`` asks for against their simulated power, the dry run's and a finished run's power in their outputs
(results.json, table.md, report.html, the leaderboard), and, where no fidelity check ran, the line beside the
clarification effect with the simulation's leak figures."""
from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.boards import bc_gain_for, nc_leak_shift, need_means, resample_counts, simulate
from support.eval_cli import invoke, remote
from support.rollout_data import evaluator_handler

from carryon_eval.report.board_stats import ColumnFamily
from carryon_eval.report.blocks import plain
from carryon_eval.suites.carryonbench.metrics.condition import ClarificationFidelity
from carryon_eval.suites.carryonbench.metrics.fidelity import LEAK_SHIFT, NO_FIDELITY, fidelity_text
from carryon_eval.suites.carryonbench.metrics.power import Design, DesignPower, design_power, power_lines, run_power_line

CONDITIONS = ("turn1", "oracle", "bc", "nc")
BOARDS = 200


def power_at(difference: float, n_queries: int, seed: int) -> float:
    """The share of seeded two-model boards (full plan) whose adjusted verdict says the better model's BC utility
    differs, and in the right direction (400 resamples: the verdict stands on the replicates' SD)."""
    rng = np.random.default_rng(seed)
    gain = [bc_gain_for(difference), 0.0]
    hits = 0
    for _ in range(BOARDS):
        board = simulate(rng, 2, n_queries, gain=gain, conditions=("bc",), utility_only=True)
        points, reps = need_means(board, resample_counts(rng, n_queries, 400))[("bc", "utility")]
        fam = ColumnFamily.of("bc.utility", "A", [0, 1], points, reps.T, n_queries, "higher")
        hits += bool(fam.family.differs[0]) and points[0] > points[1]
    return hits / BOARDS


@pytest.mark.parametrize("n_queries", [80, 398])
def test_the_dry_runs_detectable_difference_agrees_with_a_simulation_of_its_design(n_queries: int) -> None:
    detectable = design_power(Design(n_queries, CONDITIONS, 10)).numbers["bc.utility"].detectable
    # the simulated difference seen 80% of the time lies within 15% of the printed one
    assert power_at(0.85 * detectable, n_queries, seed=n_queries) < 0.80
    assert power_at(1.15 * detectable, n_queries, seed=n_queries + 1) > 0.80


def test_detect_gives_the_queries_whose_simulated_power_is_about_80_percent() -> None:
    table = design_power(Design(80, CONDITIONS, 10), detect=3.0)
    n = table.numbers["bc.utility"].queries_for_detect
    assert 0.75 <= power_at(3.0, n, seed=7) <= 0.85, n


def test_the_quick_subset_and_a_missing_condition_change_the_table() -> None:
    full = design_power(Design(398, CONDITIONS, 10)).numbers
    quick = design_power(Design(398, CONDITIONS, 1)).numbers
    assert all(quick[k].detectable > full[k].detectable for k in full)     # fewer conversations per query
    small = design_power(Design(20, CONDITIONS, 10)).numbers
    assert small["bc.utility"].detectable > 2 * full["bc.utility"].detectable
    no_nc = design_power(Design(398, ("turn1", "oracle", "bc"), 10)).numbers
    assert no_nc["clarification_effect"].detectable is None and "no nc" in no_nc["clarification_effect"].reason


def test_the_dry_runs_power_table_reads_back_and_writes_the_same_json() -> None:
    """`--dry-run --json`'s ``power`` is a record: read back, it writes the same object, key order included (a
    row's difference among the board's models under a key that names them; a row the design lacks with its
    reason); its printed lines show the numbers in the reports' one format."""
    for table in (design_power(Design(80, CONDITIONS, 10), detect=3.0, models=5),
                  design_power(Design(398, ("turn1", "oracle", "bc"), 1))):
        text = json.dumps(table.to_json())
        assert json.dumps(DesignPower.from_json(json.loads(text)).to_json()) == text
    row = json.loads(text)["numbers"]
    assert list(row["bc.utility"]) == ["name", "sd_pair", "spread", "detectable", "detectable_among_14"]
    assert list(row["clarification_effect"]) == ["name", "detectable", "reason"]
    lines = power_lines(DesignPower.from_json(json.loads(text)))
    assert "clarification effect   n/a (the run has no nc)" in lines[3]
    assert "(one pair among 14 models, adjusted: " in lines[1]


def test_dry_run_prints_the_power_and_reads_spreads_from_a_finished_run(scripted_server, dataset, tmp_path):
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    dry = invoke(*remote(srv), "--dataset", dataset, "--out", tmp_path / "run", "--dry-run", "--detect", "10")
    assert dry.exit_code == 0, dry.output
    assert "power: the smallest difference between two models detectable 80% of the time" in dry.stdout
    assert "queries to detect 10" in dry.stdout and srv.count() == 0
    table = json.loads(invoke(*remote(srv), "--dataset", dataset, "--out", tmp_path / "run", "--dry-run", "--json",
                              "--detect", "10").stdout.splitlines()[-1])["power"]
    assert table["detect"] == 10.0 and table["numbers"]["bc.utility"]["queries_for_detect"] > 0
    assert table["numbers"]["bc.utility"]["detectable"] > 0 and "simulation" in table["spreads"]

    run = invoke(*remote(srv), "--dataset", dataset, "--out", tmp_path / "run")
    assert run.exit_code == 0, run.output
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["power"]["n_queries"] == results["n"]["queries"]
    assert set(results["power"]["numbers"]) == set(table["numbers"])
    line = plain(run_power_line(results["power"]))        # what this run's size resolves, or that it resolves none
    assert line.startswith(("Smallest difference between two models", f"This run's {results['n']['queries']} queries"))
    assert line in (tmp_path / "run" / "table.md").read_text()
    assert html.escape(line) in (tmp_path / "run" / "report.html").read_text()
    # no fidelity check ran: one line beside the clarification effect says what a leaking simulator does to it
    assert results["clarification_effect"]["fidelity"] == {"checked": False, "note": NO_FIDELITY}
    beside = ClarificationFidelity.from_json(results["clarification_effect"]["fidelity"])
    assert plain(fidelity_text(beside)) in (tmp_path / "run" / "table.md").read_text()
    # the leaderboard states the run's own detectable differences beside its numbers
    assert invoke("compare", tmp_path / "run", "--out", tmp_path / "cmp").exit_code == 0
    (row,) = [json.loads(r) for r in (tmp_path / "cmp" / "leaderboard.jsonl").read_text().splitlines()]
    assert {k: row["metrics"][f"power.{k}"]["value"] for k in table["numbers"]} == \
        {k: r["detectable"] for k, r in results["power"]["numbers"].items()}
    assert row["metrics"]["fidelity.nc_leak"]["reason"] == NO_FIDELITY
    assert "Detectable difference (80% power)" in (tmp_path / "cmp" / "leaderboard.html").read_text()
    again = json.loads(invoke(*remote(srv), "--dataset", dataset, "--out", tmp_path / "new", "--dry-run", "--json",
                              "--power-from", tmp_path / "run").stdout.splitlines()[-1])["power"]
    assert "--power-from" in again["spreads"]

    bad = invoke(*remote(srv), "--dataset", dataset, "--out", tmp_path / "new", "--dry-run",
                 "--power-from", tmp_path / "nowhere")
    assert bad.exit_code == 2 and "--power-from" in bad.output and "Traceback" not in bad.output
    worse = invoke(*remote(srv), "--dataset", dataset, "--dry-run", "--detect", "-3")
    assert worse.exit_code == 2 and "above 0" in worse.output


def test_the_leak_figures_beside_the_clarification_effect_are_the_simulations() -> None:
    """The shift the no-fidelity line states is the board simulation's (NC user turns revealing the intent, the
    model answering as under BC from there on)."""
    assert {leak: round(nc_leak_shift(leak), 1) for leak in LEAK_SHIFT} == LEAK_SHIFT
    assert all(f"{shift:+.1f} points" in NO_FIDELITY or f"{shift:+.1f} at" in NO_FIDELITY
               for shift in LEAK_SHIFT.values())
