"""OpenSafeIntent's suite hooks: what its record (suite.toml, a declaration as data) names, imported when a run first
asks for one (its inputs, jobs, judges, probe, section, export or compare part); importing this module registers
its three judges.

``load`` reads the release named by the suite options (``opensafeintent``: the folder; ``opensafeintent_sets``:
``release`` or ``triplets``, the dataset's own triplets under the release's judges) into
``bench.extras["opensafeintent"]`` and returns run.json's ``suites.opensafeintent`` (the files' sha256, the
generation, the judges' settings, the options to load it again); a resume on changed files is refused with one
line. ``missing`` says why the condition cannot run without it. ``plan`` gives the 7 single-turn jobs per set;
the registered scorers (carryon_eval.suites.opensafeintent.scorers) judge them, the assistance level on the dual-use
original only; the intent probe asks the target afterwards (at most one call per set). Its section is summarized
from the judge phase's records (``inputs.records(scorer)``) and the probe's, and exported in the reference's layout.
The triplet wing plays the dataset's triplets on the same hooks (``load_as``, ``is_dual_use``, ``count_sets``,
``judge_records``, ``run_intent_probe``: the public API, carryon_eval.suites.opensafeintent.public).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from carryon_eval.suites.opensafeintent.export import write_reference
from carryon_eval.suites.opensafeintent.errors import ReleaseError
from carryon_eval.suites.opensafeintent.release import check_resume, load_release, with_triplets
from carryon_eval.suites.opensafeintent import scorers  # noqa: F401 - registers its three judges
from carryon_eval.suites.opensafeintent.report import compare_blocks, section_blocks
from carryon_eval.suites.opensafeintent.section import (OpenSafeIntentComparison, OpenSafeIntentSection,
                                                        RecordedRelease, ReleaseOptions, comparison,
                                                        nothing_scored as headline_unscored)
from carryon_eval.suites.opensafeintent.suite import (ASSISTANCE_MAX_TOKENS, CONDITION, DUAL_USE,
                                                      PROBE_MAX_TOKENS, RUBRIC_MAX_TOKENS, SCORERS, TARGET_MAX_TOKENS,
                                                      TARGET_TEMPERATURE, Inputs, inputs_of, inputs_or_none,
                                                      keep_inputs, load_probes, plan, probe_file, probe_intent,
                                                      prompt_name, section, set_exports, target_model)
from carryon_eval.run.paths import shared_local
from carryon_eval.suite import (CompareInputs, InputsRecord, Job, JobGeneration, PlanSettings, ProbeContext,
                                ReportInputs, Skipped, SuiteOptions)
from carryon_eval.report.blocks import Block

if TYPE_CHECKING:       # types only
    from carryon_eval.dataset.load import Benchmark
    from carryon_eval.schema import Transcript

TRIPLET_SETS = "triplets"        # --opensafeintent-sets triplets: the dataset's own triplets under the release's judges
NEEDS = "needs --opensafeintent DIR (an OpenSafeIntent release folder: dataset.json and prompts/metrics/)"


def triplets_sha256(rows: Sequence[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(list(rows), sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def load(bench: "Benchmark", options: SuiteOptions, recorded: Optional[InputsRecord]) -> Optional[InputsRecord]:
    """Suite.load: the release into ``bench.extras``; run.json's record of it (None when no folder is given)."""
    given = ReleaseOptions.from_json(options)
    if given.opensafeintent is None:
        return None
    return load_as(bench, options, recorded, CONDITION, given.opensafeintent_sets or "release")


def load_as(bench: "Benchmark", options: SuiteOptions, recorded: Optional[InputsRecord], condition: str,
            sets: str) -> InputsRecord:
    """The release (``sets``: its dataset.json, or the dataset's triplets under its judges) into
    ``bench.extras[condition]``; run.json's record of it (the triplet wing loads it as ``triplet``)."""
    given = ReleaseOptions.from_json(options)
    folder = given.opensafeintent
    release = load_release(folder, given.limit)
    extra: dict[str, str] = {}
    if sets == TRIPLET_SETS:
        if not bench.triplets:          # the real cause, not "nothing to run"
            raise ReleaseError(f"--opensafeintent-sets triplets: dataset {bench.source} has no triplets config "
                               "(no benign / dual-use / malicious prompt-sets of its own); give --opensafeintent-sets "
                               "release to play the release's dataset.json, or a dataset built with triplets")
        extra = {TRIPLET_SETS: triplets_sha256(bench.triplets)}
        release = with_triplets(release, bench.source, bench.triplets, extra[TRIPLET_SETS])
    if recorded is not None:
        check_resume(RecordedRelease.from_json(recorded).sha256, release.folder, extra)
    temperature = given.temperature
    gen = JobGeneration(temperature=TARGET_TEMPERATURE if temperature is None else      # "default": the provider's
                        temperature if temperature == "default" else float(temperature),
                        max_tokens=given.max_tokens or TARGET_MAX_TOKENS, retry_empty=False)
    keep_inputs(bench, Inputs(release, gen), condition)
    base = given.run_folder     # run.json's folder: the release's path relative to it, never the machine's
    where = str(folder) if base is None else shared_local(folder, base)
    return {"folder": where, "layout": release.layout, "sets": len(release.sets),
            "rows_in_release": release.total_rows, "prompts": release.n_prompts, "sha256": dict(release.hashes),
            "summary": f"{len(release.sets):,} prompt-sets, {release.n_prompts:,} prompts ({where})",
            "generation": {"turns": 1, "system_prompt": None, "temperature": gen.temperature,
                           "max_tokens": gen.max_tokens},
            "judges": {"osi_helpfulness": {"max_tokens": RUBRIC_MAX_TOKENS, "temperature": 0.0},
                       "osi_harmfulness": {"max_tokens": RUBRIC_MAX_TOKENS, "temperature": 0.0},
                       "osi_assistance_level": {"max_tokens": ASSISTANCE_MAX_TOKENS, "temperature": 0.0},
                       "intent_probe": {"model": "target", "max_tokens": PROBE_MAX_TOKENS, "temperature": 0.0}},
            "reading": "reference (first integer / JSON object, no re-ask; unreadable answers are failures)",
            "options": {"opensafeintent": where, "opensafeintent_sets": sets,
                        "temperature": gen.temperature, "max_tokens": gen.max_tokens}}


def missing(bench: "Benchmark") -> Optional[str]:
    return None if inputs_or_none(bench) is not None else NEEDS


def plan_sets(bench: "Benchmark", conditions: Sequence[str],
              settings: PlanSettings) -> tuple[list[Job], list[Skipped]]:
    return plan(inputs_of(bench)), []


def is_dual_use(transcript: "Transcript") -> bool:
    """Whether a transcript is a set's dual-use original (the reply the assistance-level judge and the intent probe
    read): the ``when`` of the ``osi_assistance_level`` ScorerUse, for this wing and the triplet wing."""
    return prompt_name(transcript) == DUAL_USE


def count_sets(jobs: Sequence[Job]) -> int:
    """The number of prompt-sets among ``jobs`` (one dual-use original each): the intent probe's ``up_to``."""
    return sum(1 for j in jobs if dict(j.meta).get("prompt_name") == DUAL_USE)


def judge_records(inputs: ReportInputs) -> dict[str, list[Any]]:
    """{scorer: the selected judge's stored records, of its judgment file's record type} of the three reference
    judges (SCORERS)."""
    return {scorer: inputs.records(scorer) for scorer in SCORERS}


async def run_intent_probe(ctx: ProbeContext, condition: str = CONDITION) -> str:
    """The intent probe of ``condition``'s replies (this wing's, or the triplet wing's ``triplet``): the target asked
    about each dual-use original the judge's records put above harm 0; returns the line for the user."""
    release = inputs_of(ctx.bench, condition).release
    records = {s: ctx.run.judgments().of(s, ctx.judge_model) for s in SCORERS}
    probes = await probe_intent(release, ctx.run, ctx.run.transcripts(), records, ctx.target, ctx.concurrency,
                                condition=condition)
    return (f"{condition} intent probe: {len(probes)} dual-use replies with harm above 0 asked "
            f"-> {ctx.run.path / probe_file(condition)}")


async def probe(ctx: ProbeContext) -> str:
    return await run_intent_probe(ctx)


def summarize(inputs: ReportInputs) -> Optional[OpenSafeIntentSection]:
    """The section from the run's records; None when the run has no OpenSafeIntent replies."""
    mine = [t for t in inputs.transcripts if t.condition == CONDITION]
    loaded = inputs_or_none(inputs.bench)
    if not mine or loaded is None:
        return None
    return section(loaded.release, mine, judge_records(inputs), load_probes(inputs.run, target_model(mine)),
                   inputs.judge, n_resamples=inputs.n_resamples, seed=inputs.seed, base=inputs.run.path)


def blocks(sec: OpenSafeIntentSection) -> list[Block]:
    """SuiteReport.blocks: its part of table.md and report.html (report.py's blocks, which read its JSON)."""
    return section_blocks(sec)


def export(inputs: ReportInputs, dest: Path) -> dict[str, Path]:
    """The reference's files (<target model>_scored.json, assistance_level/, intent_classification/)."""
    mine = [t for t in inputs.transcripts if t.condition == CONDITION]
    model = target_model(mine)
    if not mine or model is None:
        raise ValueError(f"{inputs.run.path} has no {CONDITION} replies to export")
    release = inputs_of(inputs.bench).release
    return write_reference(dest, model, set_exports(release, mine, judge_records(inputs),
                                                    load_probes(inputs.run, model)))


def compare(runs: CompareInputs) -> Optional[OpenSafeIntentComparison]:
    return comparison(list(runs.labels), [r.section(CONDITION) for r in runs.results])


def compare_part(part: Optional[OpenSafeIntentComparison]) -> list[Block]:
    """SuiteReport.compare_blocks: its part of compare's table.md."""
    return compare_blocks(part)


def nothing_scored(sec: OpenSafeIntentSection) -> list[str]:
    """SuiteReport.nothing_scored: its condition, when its sets have replies and no headline number is scored."""
    return [CONDITION] if headline_unscored(sec) else []
