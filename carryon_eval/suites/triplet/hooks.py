"""The triplet suite's hooks: what its record (suite.toml, a declaration as data) names, imported when a run first
asks for one. Its inputs are OpenSafeIntent's release on the dataset's triplets (that wing's ``load_as`` under
condition ``triplet``), its jobs, judges, probe and section that wing's (through its public API); a run folder
written before under this project's earlier definitions reports its section as it was (legacy.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

from carryon_eval.report.blocks import Block, Text
from carryon_eval.suite import (CompareInputs, InputsRecord, Job, PlanSettings, ProbeContext, ReportInputs, Skipped,
                                SuiteOptions)
# OpenSafeIntent's machinery, and its reference judges (registered with its hooks), which the triplets are judged by
from carryon_eval.suites.opensafeintent.public import (NEEDS, Inputs, OpenSafeIntentComparison, comparison,
                                                       compare_blocks, inputs_of, inputs_or_none, judge_records,
                                                       load_as, load_probes, nothing_scored as headline_unscored, plan,
                                                       run_intent_probe, section, section_blocks, target_model)
from carryon_eval.suites.triplet.legacy import legacy_blocks, legacy_section
from carryon_eval.suites.opensafeintent.public import HEADER
from carryon_eval.suites.triplet.section import TripletSectionRecord, EarlierTripletSection, TripletSection

if TYPE_CHECKING:       # types only
    from carryon_eval.dataset.load import Benchmark

TRIPLET_CONDITION = "triplet"       # its condition (suite.toml declares it)
TITLE = "Triplet evaluation (OpenSafeIntent's reference definitions)"


def triplet_inputs(bench: Optional["Benchmark"]) -> Optional[Inputs]:
    """The wing's one read of ``bench.extras``: the release's judges on the dataset's triplets, as its ``load`` put
    them (OpenSafeIntent's accessor under condition ``triplet``), None when not loaded."""
    return inputs_or_none(bench, TRIPLET_CONDITION)


def missing(bench: "Benchmark") -> Optional[str]:
    if not bench.triplets:
        return f"dataset {bench.source} has no triplets config"
    return None if triplet_inputs(bench) is not None else NEEDS + " for the judge prompts"


def load(bench: "Benchmark", options: SuiteOptions, recorded: Optional[InputsRecord]) -> Optional[InputsRecord]:
    """The release's judges on the dataset's triplets into ``bench.extras["triplet"]`` (the record's ``load`` asks
    only with a folder and triplets)."""
    return load_as(bench, options, recorded, TRIPLET_CONDITION, sets="triplets")


def plan_triplets(bench: "Benchmark", conditions: Sequence[str],
                  settings: PlanSettings) -> tuple[list[Job], list[Skipped]]:
    return plan(inputs_of(bench, TRIPLET_CONDITION), TRIPLET_CONDITION), []


async def probe(ctx: ProbeContext) -> str:
    return await run_intent_probe(ctx, TRIPLET_CONDITION)


def summarize(inputs: ReportInputs) -> Optional[TripletSectionRecord]:
    """The section from the run's records; a folder written before, the earlier section marked as such."""
    mine = [t for t in inputs.transcripts if t.condition == TRIPLET_CONDITION]
    if not mine:
        return None
    loaded = triplet_inputs(inputs.bench)
    if loaded is None:
        return EarlierTripletSection(legacy_section(inputs.run, mine))
    out = section(loaded.release, mine, judge_records(inputs),
                  load_probes(inputs.run, target_model(mine, TRIPLET_CONDITION), TRIPLET_CONDITION),
                  inputs.judge, n_resamples=inputs.n_resamples, seed=inputs.seed, condition=TRIPLET_CONDITION,
                  base=inputs.run.path)
    return TripletSection.of(out, **{k: getattr(out, k) for k in HEADER})


def blocks(sec: TripletSectionRecord) -> list[Block]:
    if isinstance(sec, EarlierTripletSection):
        return legacy_blocks(sec.data)
    return section_blocks(sec, TITLE, TRIPLET_CONDITION)


def compare(runs: CompareInputs) -> Optional[OpenSafeIntentComparison]:
    labels = runs.labels
    sections = [r.section(TRIPLET_CONDITION) for r in runs.results]
    part = comparison(list(labels), [s if isinstance(s, TripletSection) else None for s in sections])
    old = [label for label, s in zip(labels, sections) if isinstance(s, EarlierTripletSection)]
    if part is None and not old:
        return None
    out = part or OpenSafeIntentComparison()
    out.earlier_definitions = old
    return out


def compare_part(part: Optional[OpenSafeIntentComparison]) -> list[Block]:
    """SuiteReport.compare_blocks: its part of compare's table.md."""
    if not part:
        return []
    blocks = compare_blocks(part, "Triplet evaluation (OpenSafeIntent's reference definitions, 0-1)") \
        if part.table else []
    if part.earlier_definitions:
        blocks.append(Text("Triplet sections of " + ", ".join(part.earlier_definitions) + " use this project's "
                           "earlier triplet definitions and are not compared with OpenSafeIntent's."))
    return blocks


def nothing_scored(sec: TripletSectionRecord) -> list[str]:
    """SuiteReport.nothing_scored: its condition, when its sets have replies and no headline number is scored."""
    return [TRIPLET_CONDITION] if isinstance(sec, TripletSection) and headline_unscored(sec) else []
