"""The triplet suite record: every prompt of a dataset's `triplets` config sent once, as a single turn.

Its replies are judged by the safety judge (all), Ben-Util (benign and ambiguous ones: the malicious version has
no benign information need) and the response-mode judge (ambiguous ones); after judging, the risk-recognition
probe asks the target about the ambiguous replies judged unsafe (at most one call per ambiguous prompt). Its
numbers are results.json's ``triplet`` section (carryon_eval.suites.triplet.metrics).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from carryon_eval.dataset.load import Benchmark
from carryon_eval.schema import TRIPLET_CONDITION
from carryon_eval.suite import (Job, PlanSettings, Probe, ScorerUse, Skipped, Suite, SuiteReport, headline_unscored,
                                register_suite)
from carryon_eval.suites.triplet import response_modes  # noqa: F401 - registers its scorer (the response-mode judge)
from carryon_eval.suites.triplet.metrics import SET_METRICS
from carryon_eval.suites.triplet.prompt_sets import is_variant, parse_triplet_id, triplet_prompts, triplets_problem
from carryon_eval.suites.triplet.report import (compare_markdown, compare_triplets, leaderboard_columns, summarize_triplets,
                                         triplet_html, triplet_markdown, triplet_replies)


def missing(bench: Benchmark) -> Optional[str]:
    """Why the triplets cannot run on the dataset: no triplets config, or its first bad row."""
    if not bench.triplets:
        return f"dataset {bench.source} has no triplets config"
    problem = triplets_problem(bench.triplets, bench.queries)
    return f"dataset {bench.source}: {problem}" if problem else None


def plan_triplets(bench: Benchmark, conditions: Sequence[str],
                  settings: PlanSettings) -> tuple[list[Job], list[Skipped]]:
    if not bench.triplets:
        return [], [Skipped(TRIPLET_CONDITION, TRIPLET_CONDITION, "the dataset has no triplets config")]
    return [Job(cid, set_id, TRIPLET_CONDITION, prompt=prompt)
            for cid, (set_id, prompt) in triplet_prompts(bench.triplets).items()], []


def _ambiguous_jobs(jobs: Sequence[Job]) -> int:
    return sum(is_variant(j.conversation_id, "ambiguous") for j in jobs)


async def _probe(ctx: Any) -> str:
    from carryon_eval.suites.triplet.risk_probe import PROBE_FILE, probe_risk

    probes = await probe_risk(ctx.run.path, ctx.target, judge=ctx.judge_model, concurrency=ctx.concurrency)
    return f"risk probe: {len(probes)} unsafe ambiguous triplet replies asked -> {ctx.run.path / PROBE_FILE}"


def _summarize(inputs: Any) -> Optional[dict[str, Any]]:
    replies = triplet_replies(inputs.rundir, inputs.bench, inputs.transcripts, inputs.utility, inputs.safety,
                              inputs.judge)
    return summarize_triplets(replies, n_resamples=inputs.n_resamples, seed=inputs.seed)


def _not_malicious(t: Any) -> bool:
    return not is_variant(t.conversation_id, "malicious")


def _ambiguous(t: Any) -> bool:
    return is_variant(t.conversation_id, "ambiguous")


TRIPLETS = register_suite(Suite(
    name="triplet", conditions=(TRIPLET_CONDITION,), plan=plan_triplets, default=False, missing=missing, rank=10,
    uses=(ScorerUse("utility", when=_not_malicious), ScorerUse("safety"), ScorerUse("response_mode", when=_ambiguous)),
    probes=(Probe("risk_probe", "target", up_to=_ambiguous_jobs, run=_probe),),
    report=SuiteReport(section="triplet", summarize=_summarize, markdown=triplet_markdown, html=triplet_html,
                       compare=compare_triplets, compare_markdown=compare_markdown,
                       leaderboard=leaderboard_columns,
                       nothing_scored=lambda section: headline_unscored(section, SET_METRICS)),
    description="benign / ambiguous / malicious prompt-sets, after OpenSafeIntent"))

__all__ = ["TRIPLETS", "parse_triplet_id"]
