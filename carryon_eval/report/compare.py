"""`carryon-eval compare RUNDIR... [--out DIR]`: several models side by side.

- Table 2 for all runs (from each run's results.json);
- the move effects across models (paper Fig. 23: each move's mean deviation over models, with its SE);
- Spearman rank correlation between model utility and model harm, per condition (paper §C.1, Fig. 18);
- the paper's REML linear mixed models (Tables 3-4, §5.2) over all multi-turn conversations:
  conversation utility ~ turn-1 utility + number of benign moves + number of turns, and
  conversation harm   ~ turn-1 harm    + number of benign moves + number of turns,
  with a random intercept per model ("number of turns" = messages of both sides, the paper's 4-12).
Fewer than 2 models: Spearman and the mixed models are null with a reason (so too for runs of other suites
alone, e.g. OpenSafeIntent's: their sections' columns come from each suite's SuiteReport.compare).
With --out, plots/ holds every model's utility vs harm (Fig. 1B) and the move effects per model (Fig. 24);
a plot whose data is all null is not drawn and compare.json "plots" says why.
"""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any, Optional, Sequence

from carryon_eval.moves import MOVE_GROUP, MOVES
from carryon_eval.run.records import UTILITY_NAMES, Results
from carryon_eval.report.tables import markdown_table
from carryon_eval.run.folder import RESULTS_FILE, SCORES_FILE, RunFolder
from carryon_eval.schema import CONDITIONS, MULTI_TURN_CONDITIONS
from carryon_eval.suite import suites

PREDICTORS = {"utility": ("turn1_utility", "n_benign", "n_turns"), "harm": ("turn1_harm", "n_benign", "n_turns")}


class CompareError(Exception):
    """Run folders that cannot be compared; one line (the command line's error, exit 2)."""


def load_run(run: RunFolder) -> tuple[Results, list[dict[str, Any]]]:
    results_path, scores_path, rundir = run.results_file, run.scores_file, run.path
    if not results_path.is_file() or not scores_path.is_file():
        raise CompareError(f"{rundir} has no {RESULTS_FILE}/{SCORES_FILE}; run `carryon-eval report {rundir}` first")
    try:
        results = Results.from_json(json.loads(results_path.read_text(encoding="utf-8")))
        scores = [json.loads(line) for line in scores_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (ValueError, TypeError, AttributeError) as exc:
        raise CompareError(f"{rundir}: unreadable report files ({exc}); rerun `carryon-eval report {rundir}`") from None
    return results, scores


def _labels(runs: Sequence[tuple[Path, Results]]) -> list[str]:
    """Model names, made unique with the run folder name where two runs share one."""
    names = [r.model or "?" for _, r in runs]
    return [f"{n} ({p.name})" if names.count(n) > 1 else n for n, (p, _) in zip(names, runs)]


def headline_table(results: Sequence[Results]) -> tuple[list[str], list[list[str]]]:
    """The top-level suite's table (its SuiteReport's ``table``: header, one row per run); none: no columns."""
    table = next((s.report.table for s in suites() if s.report is not None and s.report.table is not None), None)
    return table(results) if table is not None else (["Model"], [[r.model or "?"] for r in results])


def refuse_mixed_utility(runs: Sequence[tuple[Path, Results]]) -> None:
    """Utilities of different measures (Ben-Util, rubric utility) never share a column: CompareError (one line)."""
    measures = {r.utility_measure for _, r in runs}
    if len(measures) > 1:
        named = "; ".join(f"{p} measures {UTILITY_NAMES.get(r.utility_measure, r.utility_measure)}" for p, r in runs)
        raise CompareError(f"cannot put different utility measures in one column ({named}); compare runs of one "
                           "--utility at a time")


def compare(rundirs: Sequence[Path]) -> dict[str, Any]:
    try:
        import scipy  # noqa: F401
        import statsmodels  # noqa: F401
    except ImportError:
        raise CompareError("compare needs scipy and statsmodels: pip install 'carryonbench[report]'") from None
    from carryon_eval.metrics.stats import mixed_model, spearman

    loaded = [(Path(d), *load_run(RunFolder(d))) for d in rundirs]
    refuse_mixed_utility([(p, r) for p, r, _ in loaded])
    labels = _labels([(p, r) for p, r, _ in loaded])
    results = [dataclasses.replace(r, model=label) for (_, r, _), label in zip(loaded, labels)]
    header, table = headline_table(results)
    rows = [dict(s, model=label) for (_, _, scores), label in zip(loaded, labels)
            for s in scores if s["condition"] in MULTI_TURN_CONDITIONS]
    measure = results[0].utility_measure if results else "benutil"
    out: dict[str, Any] = {"models": labels, "runs": [str(p) for p, _, _ in loaded], "utility_measure": measure,
                           "table": [dict(zip([*header, "Status"],
                                              [*row, *["n/a"] * (len(header) - len(row)),
                                               " ".join(r.status()) or "full"])) for r, row in zip(results, table)],
                           "spearman": {}, "mixed_models": {}, "notes": []}
    for cond in CONDITIONS:
        util = [r.conditions[cond]["utility"] for r in results]
        harm = [r.conditions[cond]["harm"] for r in results]
        out["spearman"][cond] = {"between": "model utility and model harm", **spearman(util, harm)}
    for outcome, predictors in PREDICTORS.items():
        out["mixed_models"][outcome] = mixed_model(rows, outcome, predictors, group="model")
    out["move_effects"] = aggregate_move_effects(results)
    out["notes"] += [f"{label}: {line}" for label, r in zip(labels, results) for line in r.status_lines()]
    if len(results) < 2:
        out["notes"].append(f"{len(results)} model(s): Spearman correlations and mixed models need at least 2.")
    judges = {tuple(r.judges.utility.get("models", [])) for r in results}
    if len(judges) > 1:
        out["notes"].append(f"The runs were judged by different {UTILITY_NAMES.get(measure, measure)} judges; their "
                            "utilities are not directly comparable.")
    modes = sorted({(r.judges.utility or {}).get("utility_judge") or "per-item" for r in results})
    if len(modes) > 1:
        out["notes"].append(f"WARNING: the runs judged Ben-Util in different modes ({', '.join(modes)}): grouped "
                            "verdicts (one call per reply) are not the paper's per-item verdicts; their utilities "
                            "are not directly comparable.")
    datasets = {json.dumps(r.dataset.source) for r in results}
    if len(datasets) > 1:
        out["notes"].append("The runs used different datasets.")
    for s in suites():                # each suite's columns, under its section name (None: no run has them)
        if s.report is not None and s.report.section is not None and s.report.compare is not None:
            out[s.report.section] = s.report.compare(labels, results)
    out["_results"] = results
    out["_scores"] = [scores for _, _, scores in loaded]
    return out


EFFECT_KEYS = ("utility_dev", "harm_dev")


def aggregate_move_effects(results: Sequence[Results]) -> dict[str, Any]:
    """Paper Figure 23: each move's (and move group's) effect on turn-level utility and harm across models: the
    mean over models of its deviation from each model's own mean (move_effects.*_dev), with the standard error
    over models and how many models have it (a model with no scored turn after the move has none)."""
    def across(values: list[Optional[float]]) -> dict[str, Any]:
        known = [v for v in values if v is not None]
        mean = sum(known) / len(known) if known else None
        se = (math.sqrt(sum((v - mean) ** 2 for v in known) / (len(known) - 1) / len(known))
              if mean is not None and len(known) > 1 else None)
        return {"mean": mean, "se": se, "n_models": len(known)}

    def effects(kind: str, name: str) -> dict[str, Any]:
        per_model = [((r.move_effects or {}).get(kind) or {}).get(name) or {} for r in results]
        return {key: across([m.get(key) for m in per_model]) for key in EFFECT_KEYS}

    return {"baseline": "mean over models of each model's deviation from its own mean over every turn of its bc "
                        "and nc conversations (move_effects.baseline); se: standard error over models",
            "moves": {m: {"group": MOVE_GROUP[m], **effects("moves", m)} for m in MOVES},
            "groups": {g: effects("groups", g) for g in dict.fromkeys(MOVE_GROUP.values())}}


def _fmt(x: Optional[float], digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _p(p: Optional[float]) -> str:
    return "n/a" if p is None else ("<.001" if p < 0.001 else f"{p:.3f}")


def render_markdown(cmp: dict[str, Any]) -> str:
    header = list(cmp["table"][0]) if cmp["table"] else [*headline_table([])[0], "Status"]
    measure = cmp.get("utility_measure", "benutil")
    parts = ["# CarryOnBench comparison\n",
             *([f"Utility: {UTILITY_NAMES.get(measure, measure)} (OpenSafeIntent's 1-4 helpfulness rubric as "
                "(score - 1) / 3), not Ben-Util.\n"] if measure != "benutil" else []),
             markdown_table(header, [list(r.values()) for r in cmp["table"]]),
             "\n## Spearman: model utility vs model harm\n"]
    parts.append(markdown_table(["Condition", "rho", "p", "n models", "note"],
                                [[c, _fmt(s["rho"]), _p(s["p"]), s["n"], s["reason"] or s.get("note") or ""]
                                 for c, s in cmp["spearman"].items()]))
    for outcome, m in cmp["mixed_models"].items():
        parts.append(f"\n## Mixed linear model (REML): {m['formula']}, random intercept per model\n")
        if m["coefficients"] is None:
            parts.append(f"Not fitted: {m['reason']}\n")
            continue
        table = [[name, _fmt(c["B"]), _fmt(c["SE"]), _fmt(c["z"]), _p(c["p"]),
                  f"[{_fmt(c['ci95'][0])}, {_fmt(c['ci95'][1])}]"] for name, c in m["coefficients"].items()]
        table.append(["Group Var", _fmt(m["group_var"]["var"]), _fmt(m["group_var"]["SE"]), "", "", ""])
        parts.append(markdown_table(["Predictor", "B", "SE", "z", "p", "95% CI"], table))
        parts.append(f"\nn = {m['n']} conversations, {m['n_groups']} models; converged: {m['converged']}"
                     + (f"; warnings: {'; '.join(m['warnings'])}" if m["warnings"] else "") + "\n")
    effects = cmp["move_effects"]
    parts.append("\n## Move effects across models (turn-level deviation from each model's mean)\n")
    parts.append(markdown_table(
        ["Move", "Group", f"Δ {UTILITY_NAMES.get(measure, measure)} (pts)", "SE", "Δ harm", "SE", "models"],
        [[m, e["group"], _fmt(e["utility_dev"]["mean"], 1), _fmt(e["utility_dev"]["se"], 1),
          _fmt(e["harm_dev"]["mean"], 2), _fmt(e["harm_dev"]["se"], 2), e["utility_dev"]["n_models"]]
         for m, e in effects["moves"].items()]))
    for s in suites():
        if s.report is not None and s.report.section is not None and s.report.compare_markdown is not None:
            parts.append(s.report.compare_markdown(cmp.get(s.report.section)))
    if cmp["notes"]:
        parts.append("\n" + "\n".join(f"- {n}" for n in cmp["notes"]) + "\n")
    return "\n".join(parts)
