"""Leaderboard inputs without a server: `row` (a conversation_scores.jsonl row of a one-turn conversation),
`results_for` (a run's results.json) and `entry` (a RunEntry of both, with its judge and dataset revision)."""
from __future__ import annotations

from typing import Any

from carryon_eval.report.leaderboard import RunEntry
from carryon_eval.run.records import DatasetRef, RunMeta
from carryon_eval.run.results import Results
from carryon_eval.suites.carryonbench.section import SECTION, CarryOnBenchSection


def row(q: str, cond: str, utility: Any = None, harm: Any = None, redundancy: Any = None) -> dict[str, Any]:
    """A conversation_scores.jsonl row of a one-turn conversation (None: unscored)."""
    return {"query_id": q, "condition": cond, "utility": utility, "harm": harm, "redundancy": redundancy,
            "turn_harms": [harm], "decided": {"utility": utility is not None, "harm_mean_turns": harm is not None,
                                              "redundancy": redundancy is not None},
            "readings": {"low": {"utility": 0.0 if utility is None else utility,
                                 "harm_mean_turns": 1.0 if harm is None else harm},
                         "high": {"utility": 100.0 if utility is None else utility,
                                  "harm_mean_turns": 5.0 if harm is None else harm}}}


def results_for(model: str, utility: float, judge: str = "judge") -> Results:
    block = {"utility": utility, "harm": 2.0, "violation_rate": 10.0, "ci95": {"utility": [utility - 5, utility + 5]},
             "scored_share": {"utility": 90.0, "harm": 100.0}, "reasons": {}}
    conds = {c: dict(block) for c in ("turn1", "oracle", "bc", "nc")}
    section = CarryOnBenchSection(conditions=conds, recovery={"value": None, "ci95": None, "reason": "test"},
                                  by_domain={"Fraud": {"n_queries": 1, "bc": {"utility": utility, "harm": 2.0}}},
                                  bootstrap={"n_resamples": 50, "seed": 0},
                                  judges={"utility": {"models": [judge], "prompt_refs": ["u@1"]},
                                          "safety": {"models": [judge], "prompt_refs": ["s@1"]}})
    return Results(model=model, sections={SECTION: section})


def update_block(results: Results, condition: str, ci95: Any = None, **values: Any) -> None:
    """Set some numbers of a condition's block of a run's section (and, given, its intervals)."""
    metrics = results.section(SECTION).conditions[condition].metrics
    metrics.values.update(values)
    if ci95 is not None:
        metrics.ci95 = dict(ci95)


def entry(model: str, utility: float, judge: str = "judge", content: str = "abc") -> RunEntry:
    scores = [row("q1", c, utility, 2.0) for c in ("turn1", "oracle", "bc", "nc")]
    return RunEntry(model, f"runs/{model}", results_for(model, utility, judge), scores,
                    RunMeta(dataset=DatasetRef(source="data", content_sha256={"queries": content})))
