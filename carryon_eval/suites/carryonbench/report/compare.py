"""CarryOnBench's part of `carryon-eval compare` (its SuiteReport's ``compare``, a CarryOnBenchComparison, and
``compare_blocks``, that part in compare's table.md; its keys are compare.json's own, as its section is results.json's
top level):

- the move effects across models (paper Fig. 23: each move's mean deviation over models, with its SE);
- Spearman rank correlation between model utility and model harm, per condition (paper §C.1, Fig. 18);
- the paper's REML linear mixed models (Tables 3-4, §5.2) over all multi-turn conversations:
  conversation utility ~ turn-1 utility + number of benign moves + number of turns, and
  conversation harm   ~ turn-1 harm    + number of benign moves + number of turns,
  with a random intercept per model ("number of turns" = messages of both sides, the paper's 4-12).
Fewer than 2 models: Spearman and the mixed models are null with a reason (so too for runs of other suites
alone, e.g. OpenSafeIntent's: their sections' columns come from each suite's SuiteReport.compare).
"""
from __future__ import annotations

import math
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Optional, Sequence

from carryon_eval.codec import ABSENT, OMIT_EMPTY, Record, absent

from carryon_eval.metrics.stats import Coefficient, MixedModel, RankCorrelation
from carryon_eval.metrics.number import Number
from carryon_eval.moves import MOVE_GROUP, MOVES
from carryon_eval.report.blocks import INTERVAL, P_VALUE, Block, Cell, Heading, Shown, Table, Text, shown
from carryon_eval.run.results import Results
from carryon_eval.suites.carryonbench.settings import UTILITY_NAMES
from carryon_eval.suites.carryonbench.conditions import CONDITIONS, MULTI_TURN_CONDITIONS
from carryon_eval.suites.carryonbench.metrics.breakdown_rows import MoveEffect
from carryon_eval.suites.carryonbench.section import read
from carryon_eval.suite import CompareInputs
from carryon_eval.suites.carryonbench.report.headline_blocks import has_conditions
from carryon_eval.suites.carryonbench.report.leaderboard import utility_judge

@dataclass
class Across(Record):
    """One move's deviation over models: its mean, its standard error over models and how many models have it."""
    mean: Optional[float] = None
    se: Optional[float] = None
    n_models: int = 0


@dataclass
class MoveAcross(Record):
    group: str = absent()                   # a move's group (``moves`` only)
    utility_dev: Across = field(default_factory=Across)
    harm_dev: Across = field(default_factory=Across)


@dataclass
class MoveEffectsAcross(Record):
    """compare.json's ``move_effects``: each move's (and move group's) deviation across models (paper Figure 23)."""
    baseline: str = absent()
    moves: dict[str, MoveAcross] = field(default_factory=dict)
    groups: dict[str, MoveAcross] = field(default_factory=dict)


@dataclass
class UtilityHarm:
    """Spearman's rho of model utility against model harm in one condition (compare.json's ``spearman``: what it
    is ``between``, always the same, then the correlation's fields)."""
    correlation: RankCorrelation = field(default_factory=RankCorrelation)
    BETWEEN: ClassVar[str] = "model utility and model harm"

    def to_json(self) -> dict[str, Any]:
        return {"between": self.BETWEEN, **self.correlation.to_json()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "UtilityHarm":
        return cls(RankCorrelation.from_json(d))


@dataclass
class CarryOnBenchComparison(Record):
    """Its part of compare.json (whose serializer, carryon_eval.report.comparison, holds it at the top level, its
    notes after the runs' status lines): Spearman per condition, the mixed models, the notes on what makes the runs'
    utilities incomparable, what the mixed models would add where statsmodels is not installed (``missing``) and
    the move effects across models."""
    utility_measure: str = "benutil"
    spearman: dict[str, UtilityHarm] = field(default_factory=dict)
    mixed_models: dict[str, MixedModel] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list, metadata=OMIT_EMPTY)
    move_effects: MoveEffectsAcross = field(default_factory=MoveEffectsAcross)


PREDICTORS = {"utility": ("turn1_utility", "n_benign", "n_turns"), "harm": ("turn1_harm", "n_benign", "n_turns")}
EFFECT_KEYS = ("utility_dev", "harm_dev")


def comparison(runs: CompareInputs) -> Optional[CarryOnBenchComparison]:
    """compare.json's CarryOnBench keys: Spearman per condition, the mixed models, the notes on what makes the
    runs' utilities incomparable, and the move effects across models; "missing": what the mixed models would add
    where statsmodels is not installed (numpy alone computes the rest)."""
    from carryon_eval.metrics.stats import fit_mixed_model, rank_correlation

    results = runs.results
    if results and not any(has_conditions(r) for r in results):
        return None                     # e.g. OpenSafeIntent's runs alone: nothing of the conditions to compare
    rows = [dict(s, model=label) for scores, label in zip(runs.scores, runs.labels)
            for s in scores if s["condition"] in MULTI_TURN_CONDITIONS]
    measure = next((r.utility_measure for r in results if has_conditions(r)), "benutil")   # one: incomparable
    out = CarryOnBenchComparison(utility_measure=measure)
    sections = [read(r) for r in results]
    for cond in CONDITIONS:
        util = [s.conditions[cond].value("utility") if cond in s.conditions else None for s in sections]
        harm = [s.conditions[cond].value("harm") if cond in s.conditions else None for s in sections]
        out.spearman[cond] = UtilityHarm(rank_correlation(util, harm))
    for outcome, predictors in PREDICTORS.items():
        out.mixed_models[outcome] = fit_mixed_model(rows, outcome, predictors, group="model")
    out.missing = list(dict.fromkeys(f"Mixed linear models: {m.reason}" for m in out.mixed_models.values()
                                     if m.missing))
    out.move_effects = aggregate_move_effects(results)
    if len(results) < 2:
        out.notes.append(f"{len(results)} model(s): Spearman correlations and mixed models need at least 2.")
    for kind, name, numbers in (("utility", UTILITY_NAMES.get(measure, measure), "utilities"),
                                ("safety", "safety", "harm numbers")):
        judges = [", ".join(getattr(read(r).judges, kind).models or []) or "none" for r in results]
        if len(set(judges)) > 1:
            out.notes.append(f"WARNING: the runs were judged by different {name} judges ("
                                + "; ".join(f"{label}: {j}" for label, j in zip(runs.labels, judges))
                                + f"); their {numbers} are not directly comparable (the leaderboard groups them "
                                "apart).")
    modes = sorted({utility_judge(r) for r in results})
    if len(modes) > 1:
        out.notes.append(f"WARNING: the runs judged Ben-Util in different modes ({', '.join(modes)}): grouped "
                            "verdicts (one call per reply) are not the paper's per-item verdicts; their utilities "
                            "are not directly comparable.")
    return out


def incomparable(folders: Sequence[Path], results: Sequence[Results]) -> Optional[str]:
    """SuiteReport.incomparable: utilities of different measures (Ben-Util, rubric utility) never share a column."""
    mine = [(p, r) for p, r in zip(folders, results) if has_conditions(r)]
    if len({r.utility_measure for _, r in mine}) <= 1:
        return None
    named = "; ".join(dict.fromkeys(f"{p} measures {UTILITY_NAMES.get(r.utility_measure, r.utility_measure)}"
                                    for p, r in mine))
    return f"cannot put different utility measures in one column ({named}); compare runs of one --utility at a time"


def aggregate_move_effects(results: Sequence[Results]) -> MoveEffectsAcross:
    """Paper Figure 23: each move's (and move group's) effect on turn-level utility and harm across models: the
    mean over models of its deviation from each model's own mean (move_effects.*_dev), with the standard error
    over models and how many models have it (a model with no scored turn after the move has none)."""
    def across(values: list[Optional[float]]) -> Across:
        known = [v for v in values if v is not None]
        mean = sum(known) / len(known) if known else None
        se = (math.sqrt(sum((v - mean) ** 2 for v in known) / (len(known) - 1) / len(known))
              if mean is not None and len(known) > 1 else None)
        return Across(mean, se, len(known))

    per_run = [read(r).move_effects for r in results]

    def effects(kind: str, name: str, group: Any = ABSENT) -> MoveAcross:
        per_model = [((getattr(e, kind) or {}) if e else {}).get(name) or MoveEffect() for e in per_run]
        return MoveAcross(group, *(across([m.number(key).value for m in per_model]) for key in EFFECT_KEYS))

    return MoveEffectsAcross("mean over models of each model's deviation from its own mean over every turn of its "
                             "bc and nc conversations (move_effects.baseline); se: standard error over models",
                             {m: effects("moves", m, MOVE_GROUP[m]) for m in MOVES},
                             {g: effects("groups", g) for g in dict.fromkeys(MOVE_GROUP.values())})


@dataclass
class GroupVariance(Record):
    """A fitted mixed model's random-intercept variance and its standard error (MixedModel.group_var)."""
    var: Optional[float] = None
    SE: Optional[float] = None


def mixed_model_blocks(m: MixedModel) -> list[Block]:
    """One mixed model: its coefficients and group variance, what it stands on; or why it was not fitted."""
    heading = Heading(f"Mixed linear model (REML): {m.formula}, random intercept per model")
    if m.coefficients is None:
        return [heading, Text(f"Not fitted: {m.reason}")]
    coefficients = {name: Coefficient.from_json(c) for name, c in m.coefficients.items()}
    rows: list[list[Cell]] = [[name, shown(c.b, 3), shown(c.se, 3), shown(c.z, 3), shown(c.p, 3, show=P_VALUE),
                               Shown(Number(ci95=c.ci95), 3, INTERVAL)] for name, c in coefficients.items()]
    group = GroupVariance.from_json(m.group_var or {})
    rows.append(["Group Var", shown(group.var, 3), shown(group.SE, 3), "", "", ""])
    return [heading, Table(["Predictor", "B", "SE", "z", "p", "95% CI"], rows),
            Text(f"n = {m.n} conversations, {m.n_groups} models; converged: {m.converged}"
                 + (f"; warnings: {'; '.join(m.warnings)}" if m.warnings else ""))]


def compare_blocks(cmp: CarryOnBenchComparison) -> list[Block]:
    """SuiteReport.compare_blocks: the Spearman correlations, the mixed models and the move effects of its part of
    compare.json, as blocks."""
    measure = cmp.utility_measure
    utility = UTILITY_NAMES.get(measure, measure)
    blocks: list[Block] = [Text(f"Utility: {utility} (OpenSafeIntent's 1-4 helpfulness rubric as (score - 1) / 3), "
                                "not Ben-Util.")] if measure != "benutil" else []
    spearman = [[c, shown(r.rho, 3), shown(r.p, 3, show=P_VALUE), str(r.n), r.reason or r.note or ""]
                for c, r in ((c, s.correlation) for c, s in cmp.spearman.items())]
    blocks += [Heading("Spearman: model utility vs model harm"),
               Table(["Condition", "rho", "p", "n models", "note"], spearman)]
    for m in cmp.mixed_models.values():
        blocks += mixed_model_blocks(m)
    moves = [[m, e.group, shown(e.utility_dev.mean, 1), shown(e.utility_dev.se, 1), shown(e.harm_dev.mean, 2),
              shown(e.harm_dev.se, 2), str(e.utility_dev.n_models)] for m, e in cmp.move_effects.moves.items()]
    return blocks + [Heading("Move effects across models (turn-level deviation from each model's mean)"),
                     Table(["Move", "Group", f"Δ {utility} (pts)", "SE", "Δ harm", "SE", "models"], moves)]
