"""OpenSafeIntent's suite record: its inputs (a release folder), its jobs, its judges, its probe and its section.

    carryon-eval --conditions opensafeintent --opensafeintent DIR [--opensafeintent-sets triplets] [--limit N]

``load`` reads the release named by the suite options (``opensafeintent``: the folder; ``opensafeintent_sets``:
``release`` or ``triplets``, the dataset's own triplets under the release's judges) into
``bench.extras["opensafeintent"]`` and returns run.json's ``suites.opensafeintent`` (the files' sha256, the
generation, the judges' settings, the options to load it again); a resume on changed files is refused with one
line. ``missing`` says why the condition cannot run without it. ``plan`` gives the 7 single-turn jobs per set;
the registered scorers (carryon_eval.suites.opensafeintent.scorers) judge them, the assistance level on the dual-use
original only; the intent probe asks the target afterwards (at most one call per set). Its section is summarized
from the judge phase's records (``inputs.records(scorer)``) and the probe's, and exported in the reference's layout.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Optional, Sequence

from carryon_eval.suites.opensafeintent.export import write_reference
from carryon_eval.suites.opensafeintent.errors import ReleaseError
from carryon_eval.suites.opensafeintent.release import check_resume, load_release, with_triplets
from carryon_eval.suites.opensafeintent import scorers  # noqa: F401 - registers its three judges
from carryon_eval.suites.opensafeintent.report import compare_columns, compare_markdown, render_html, render_markdown
from carryon_eval.suites.opensafeintent.suite import (ASSISTANCE_MAX_TOKENS, CONDITION, DUAL_USE, PROBE_FILE,
                                               PROBE_MAX_TOKENS, RUBRIC_MAX_TOKENS, SCORERS, TARGET_MAX_TOKENS,
                                               TARGET_TEMPERATURE, Inputs, load_probes, plan, probe_intent, probe_run_file,
                                               prompt_name, section, set_exports, target_model)
from carryon_eval.suites.opensafeintent.metrics import HEADLINE
from carryon_eval.suite import (JobGeneration, Probe, ScorerUse, Suite, SuiteOption, SuiteReport, headline_unscored,
                                register_suite)

SETS = ("release", "triplets")
NEEDS = "needs --opensafeintent DIR (an OpenSafeIntent release folder: dataset.json and prompts/metrics/)"


def triplets_sha256(rows: Sequence[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(list(rows), sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def load(bench: Any, options: dict[str, Any], recorded: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """The release into ``bench.extras``; run.json's record of it (None when no folder is given)."""
    if options.get("opensafeintent") is None:
        return None
    return load_as(bench, options, recorded, CONDITION, options.get("opensafeintent_sets") or "release")


def load_as(bench: Any, options: dict[str, Any], recorded: Optional[dict[str, Any]], condition: str,
            sets: str) -> dict[str, Any]:
    """The release (``sets``: its dataset.json, or the dataset's triplets under its judges) into
    ``bench.extras[condition]``; run.json's record of it (the triplet wing loads it as ``triplet``)."""
    folder = options["opensafeintent"]
    release = load_release(folder, options.get("limit"))
    extra: dict[str, str] = {}
    if sets == "triplets":
        if not bench.triplets:          # the real cause, not "nothing to run"
            raise ReleaseError(f"--opensafeintent-sets triplets: dataset {bench.source} has no triplets config "
                               "(no benign / dual-use / malicious prompt-sets of its own); give --opensafeintent-sets "
                               "release to play the release's dataset.json, or a dataset built with triplets")
        extra = {"triplets": triplets_sha256(bench.triplets)}
        release = with_triplets(release, bench.source, bench.triplets, extra["triplets"])
    if recorded is not None:
        check_resume(recorded.get("sha256", {}), release.folder, extra)
    temperature = options.get("temperature")
    gen = JobGeneration(temperature=TARGET_TEMPERATURE if temperature is None else float(temperature),
                        max_tokens=options.get("max_tokens") or TARGET_MAX_TOKENS, retry_empty=False)
    bench.extras[condition] = Inputs(release, gen)
    return {"folder": str(release.folder), "layout": release.layout, "sets": len(release.sets),
            "rows_in_release": release.total_rows, "prompts": release.n_prompts, "sha256": dict(release.hashes),
            "summary": f"{len(release.sets):,} prompt-sets, {release.n_prompts:,} prompts ({release.folder})",
            "generation": {"turns": 1, "system_prompt": None, "temperature": gen.temperature,
                           "max_tokens": gen.max_tokens},
            "judges": {"osi_helpfulness": {"max_tokens": RUBRIC_MAX_TOKENS, "temperature": 0.0},
                       "osi_harmfulness": {"max_tokens": RUBRIC_MAX_TOKENS, "temperature": 0.0},
                       "osi_assistance_level": {"max_tokens": ASSISTANCE_MAX_TOKENS, "temperature": 0.0},
                       "intent_probe": {"model": "target", "max_tokens": PROBE_MAX_TOKENS, "temperature": 0.0}},
            "reading": "reference (first integer / JSON object, no re-ask; unreadable answers are failures)",
            "options": {"opensafeintent": str(folder), "opensafeintent_sets": sets,
                        "temperature": gen.temperature, "max_tokens": gen.max_tokens}}


def missing(bench: Any) -> Optional[str]:
    return None if CONDITION in getattr(bench, "extras", {}) else NEEDS


def _plan(bench: Any, conditions: Sequence[str], settings: Any) -> tuple[list[Any], list[Any]]:
    return plan(bench.extras[CONDITION]), []


def _dual_use(t: Any) -> bool:
    return prompt_name(t) == DUAL_USE


def _sets(jobs: Sequence[Any]) -> int:
    return sum(1 for j in jobs if dict(j.meta).get("prompt_name") == DUAL_USE)


def _records(inputs: Any) -> dict[str, list[dict[str, Any]]]:
    return {scorer: inputs.records(scorer) for scorer in SCORERS}


async def _probe(ctx: Any) -> str:
    release = ctx.bench.extras[CONDITION].release
    transcripts = ctx.run.transcripts()
    records = {s: ctx.run.judgments().of(s, ctx.judge_model) for s in SCORERS}
    probes = await probe_intent(release, ctx.run, transcripts, records, ctx.target, ctx.concurrency)
    return (f"opensafeintent intent probe: {len(probes)} dual-use replies with harm above 0 asked "
            f"-> {ctx.run.path / PROBE_FILE}")


def summarize(inputs: Any) -> Optional[dict[str, Any]]:
    """The section from the run's records; None when the run has no OpenSafeIntent replies."""
    mine = [t for t in inputs.transcripts if t.condition == CONDITION]
    if not mine or CONDITION not in inputs.bench.extras:
        return None
    release = inputs.bench.extras[CONDITION].release
    return section(release, mine, _records(inputs), load_probes(inputs.run, target_model(mine)), inputs.judge,
                   n_resamples=inputs.n_resamples, seed=inputs.seed)


def export(inputs: Any, dest: Path) -> dict[str, Path]:
    """The reference's files (<target model>_scored.json, assistance_level/, intent_classification/)."""
    mine = [t for t in inputs.transcripts if t.condition == CONDITION]
    model = target_model(mine)
    if not mine or model is None:
        raise ValueError(f"{inputs.run.path} has no {CONDITION} replies to export")
    release = inputs.bench.extras[CONDITION].release
    return write_reference(dest, model, set_exports(release, mine, _records(inputs), load_probes(inputs.run, model)))


def compare(labels: Sequence[str], results: Sequence[Any]) -> Optional[dict[str, Any]]:
    return compare_columns(list(labels), [r.sections.get(CONDITION) for r in results])


OPENSAFEINTENT = register_suite(Suite(
    name=CONDITION, conditions=(CONDITION,), default=False, plan=_plan, missing=missing, load=load, rank=20,
    options=(SuiteOption("--opensafeintent", metavar="DIR", path=True,
                         help="An OpenSafeIntent release folder (dataset.json and prompts/metrics/, e.g. a clone of "
                              "its repository) for condition opensafeintent; --limit N takes its first N prompt-sets."),
             SuiteOption("--opensafeintent-sets", choices=SETS, default="release",
                         help="Which prompt-sets condition opensafeintent plays: the release's dataset.json, or the "
                              "dataset's own triplets config (CarryOnBench's triplets under OpenSafeIntent's judges "
                              "and definitions).")),
    uses=(ScorerUse("osi_helpfulness"), ScorerUse("osi_harmfulness"),
          ScorerUse("osi_assistance_level", when=_dual_use)),
    probes=(Probe("intent_probe", "target", up_to=_sets, run=_probe),), files=(probe_run_file(CONDITION),),
    report=SuiteReport(section=CONDITION, summarize=summarize, markdown=render_markdown, html=render_html,
                       compare=compare, compare_markdown=compare_markdown, export=export,
                       nothing_scored=lambda section: headline_unscored(section, HEADLINE)),
    description="OpenSafeIntent's release under its own judges and reference metrics (--opensafeintent DIR)"))
