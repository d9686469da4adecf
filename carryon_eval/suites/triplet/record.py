"""The triplet suite record: the dataset's `triplets` config scored with OpenSafeIntent's reference definitions.

    carryon-eval --conditions triplet --opensafeintent DIR

Triplets have one definition, OpenSafeIntent's: each prompt-set (benign, ambiguous = dual-use with its 4
paraphrases, malicious) is played as the reference plays its sets (7 single-turn jobs, its generation), judged by
the release's own judges (helpfulness, harmfulness, the assistance level; each sees the prompt that was sent) and
summarized by its reference metrics (Triplet Safety, ICU, Worst-Case Utility weighted by safety, ...): the
OpenSafeIntent wing's machinery (carryon_eval.suites.opensafeintent) under condition ``triplet``. The judge prompts
are the release's files, read at run time from the folder ``--opensafeintent DIR`` names; without it the condition
is refused with one line. Results.json's ``triplet`` section is OpenSafeIntent's section on these sets.

A run folder written before (this project's earlier triplet definitions: harm >= 4 unsafe, unweighted Worst-Case
Utility, the bare query shown to the judges) still reports: its results.json section is shown as it was, marked
with those definitions (legacy.py), and its transcripts are not scored again under other definitions.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

from carryon_eval.schema import TRIPLET_CONDITION
from carryon_eval.suite import (CompareInputs, InputsRecord, Job, PlanSettings, Probe, ProbeContext, ReportInputs, ScorerUse, Section,
                                Skipped, Suite, SuiteOptions, SuiteReport, headline_unscored, register_suite)
from carryon_eval.suites.opensafeintent.public import (HEADLINE, Inputs, compare_columns, compare_markdown, inputs_of,
                                                       inputs_or_none, load_probes, plan, probe_run_file, render_html,
                                                       render_markdown, section, target_model)
# the suite record registers OpenSafeIntent's suite and its reference judges, which the triplets are judged by
from carryon_eval.suites.opensafeintent.record import (NEEDS, count_sets, is_dual_use, judge_records, load_as,
                                                       run_intent_probe)
from carryon_eval.suites.triplet.legacy import is_legacy, legacy_html, legacy_markdown, legacy_section

if TYPE_CHECKING:       # types only
    from carryon_eval.dataset.load import Benchmark

TITLE = "Triplet evaluation (OpenSafeIntent's reference definitions)"
DEFINITIONS = "OpenSafeIntent's reference definitions (the release's judges and metrics), 0-1 scale"


def triplet_inputs(bench: Optional["Benchmark"]) -> Optional[Inputs]:
    """The wing's one read of ``bench.extras``: the release's judges on the dataset's triplets, as its ``load`` put
    them (OpenSafeIntent's accessor under condition ``triplet``), None when not loaded."""
    return inputs_or_none(bench, TRIPLET_CONDITION)


def missing(bench: "Benchmark") -> Optional[str]:
    if not bench.triplets:
        return f"dataset {bench.source} has no triplets config"
    return None if triplet_inputs(bench) is not None else NEEDS + " for the judge prompts"


def load(bench: "Benchmark", options: SuiteOptions, recorded: Optional[InputsRecord]) -> Optional[InputsRecord]:
    """The release's judges on the dataset's triplets into ``bench.extras["triplet"]`` (None without a folder or
    without triplets)."""
    if options.get("opensafeintent") is None or not bench.triplets:
        return None
    return load_as(bench, options, recorded, TRIPLET_CONDITION, sets="triplets")


def _plan(bench: "Benchmark", conditions: Sequence[str], settings: PlanSettings) -> tuple[list[Job], list[Skipped]]:
    return plan(inputs_of(bench, TRIPLET_CONDITION), TRIPLET_CONDITION), []


async def _probe(ctx: ProbeContext) -> str:
    return await run_intent_probe(ctx, TRIPLET_CONDITION)


def summarize(inputs: ReportInputs) -> Optional[Section]:
    """The section from the run's records; a folder written before, the earlier section marked as such."""
    mine = [t for t in inputs.transcripts if t.condition == TRIPLET_CONDITION]
    if not mine:
        return None
    loaded = triplet_inputs(inputs.bench)
    if loaded is None:
        return legacy_section(inputs.run, mine)
    out = section(loaded.release, mine, judge_records(inputs),
                  load_probes(inputs.run, target_model(mine, TRIPLET_CONDITION), TRIPLET_CONDITION),
                  inputs.judge, n_resamples=inputs.n_resamples, seed=inputs.seed, condition=TRIPLET_CONDITION,
                  base=inputs.run.path)
    return {"definitions": DEFINITIONS, **out}


def markdown(sec: Section) -> str:
    return legacy_markdown(sec) if is_legacy(sec) else render_markdown(sec, TITLE)


def html(sec: Section) -> str:
    return legacy_html(sec) if is_legacy(sec) else render_html(sec, TITLE, TRIPLET_CONDITION)


def compare(runs: CompareInputs) -> Optional[Section]:
    labels = runs.labels
    sections = [r.sections.get(TRIPLET_CONDITION) for r in runs.results]
    mine = [None if s is None or is_legacy(s) else s for s in sections]
    part = compare_columns(list(labels), mine)
    old = [label for label, s in zip(labels, sections) if s is not None and is_legacy(s)]
    if part is None and not old:
        return None
    return {**(part or {"table": []}), "earlier_definitions": old}


def compare_text(part: Optional[Section]) -> str:
    if not part:
        return ""
    text = compare_markdown(part, "Triplet evaluation (OpenSafeIntent's reference definitions, 0-1)") \
        if part.get("table") else ""
    if part.get("earlier_definitions"):
        text += ("\nTriplet sections of " + ", ".join(part["earlier_definitions"]) + " use this project's earlier "
                 "triplet definitions and are not compared with OpenSafeIntent's.\n")
    return text


TRIPLETS = register_suite(Suite(
    name="triplet", conditions=(TRIPLET_CONDITION,), plan=_plan, default=False, missing=missing, load=load, rank=10,
    uses=(ScorerUse("osi_helpfulness"), ScorerUse("osi_harmfulness"),
          ScorerUse("osi_assistance_level", when=is_dual_use)),
    probes=(Probe("intent_probe", "target", up_to=count_sets, run=_probe),), files=(probe_run_file(TRIPLET_CONDITION),),
    report=SuiteReport(section="triplet", summarize=summarize, markdown=markdown, html=html,
                       compare=compare, compare_markdown=compare_text,
                       nothing_scored=lambda sec: [] if is_legacy(sec) else headline_unscored(sec, HEADLINE)),
    description="the dataset's benign / ambiguous / malicious prompt-sets under OpenSafeIntent's reference judges and "
                "metrics (needs --opensafeintent DIR)"))

__all__ = ["DEFINITIONS", "TITLE", "TRIPLETS"]
