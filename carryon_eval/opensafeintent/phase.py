"""OpenSafeIntent's phases in a run: generate, judge, probe, then its section (what the application layer calls)."""
from __future__ import annotations

from typing import Any, Optional, Protocol

from carryon_eval.model.endpoint import ChatEndpoint
from carryon_eval.run.folder import RunFolder
from carryon_eval.opensafeintent.release import Release
from carryon_eval.opensafeintent.report import write_section
from carryon_eval.opensafeintent.suite import (ASSISTANCE_MAX_TOKENS, PROBE_MAX_TOKENS, RUBRIC_MAX_TOKENS,
                                               TARGET_MAX_TOKENS, generate, judge_replies, plan,
                                               probe_intent, section)


class Output(Protocol):
    def info(self, text: str) -> None: ...


def suite_record(release: Release, temperature: float, max_tokens: Optional[int]) -> dict[str, Any]:
    """run.json's ``suites.opensafeintent``: the release's files and the generation, as the reference's."""
    return {"folder": str(release.folder), "layout": release.layout, "sets": len(release.sets),
            "rows_in_release": release.total_rows, "sha256": dict(release.hashes),
            "generation": {"turns": 1, "system_prompt": None, "temperature": temperature,
                           "max_tokens": max_tokens or TARGET_MAX_TOKENS},
            "judges": {"helpfulness": {"max_tokens": RUBRIC_MAX_TOKENS, "temperature": 0.0},
                       "harmfulness": {"max_tokens": RUBRIC_MAX_TOKENS, "temperature": 0.0},
                       "assistance_level": {"max_tokens": ASSISTANCE_MAX_TOKENS, "temperature": 0.0},
                       "intent_probe": {"model": "target", "max_tokens": PROBE_MAX_TOKENS, "temperature": 0.0}},
            "reading": "reference (first integer / JSON object, no re-ask; unreadable answers are failures)"}


async def run_suite(release: Release, run: RunFolder, record: dict[str, Any], target: ChatEndpoint,
                    judge: ChatEndpoint, concurrency: int, out: Output) -> dict[str, Any]:
    gen = record["generation"]
    made = await generate(release, run, target, temperature=gen["temperature"], max_tokens=gen["max_tokens"],
                          concurrency=concurrency)
    out.info(f"opensafeintent: {len(plan(release))} prompts of {len(release.sets)} sets ({made} new)")
    judged = await judge_replies(release, run, judge, concurrency)
    out.info(f"opensafeintent judge ({judge.config.model}): {len(judged)} answers "
             f"({sum(j.raw is None for j in judged)} calls failed)")
    probes = await probe_intent(release, run, target, judge.config.model, concurrency)
    out.info(f"opensafeintent intent probe: {len(probes)} dual-use replies with harm above 0 asked")
    sec = section(release, run, judge.config.model, target_model=target.config.model)
    write_section(run.path, sec)
    v = sec["intent_calibrated_utility"]["value"]
    out.info(f"opensafeintent: intent_calibrated_utility {'n/a' if v is None else f'{v:.4f}'} "
             f"(n {sec['intent_calibrated_utility']['n']}) -> {run.path / 'results.json'}")
    return sec
