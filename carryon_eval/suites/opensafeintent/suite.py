"""OpenSafeIntent in a run: its jobs, its judges' cases, the intent probe and its section, on the shared seams.

Generation is the reference's: each of a set's 7 prompts is one single-turn job (no system prompt) with its own
generation settings, 1,000 max tokens and temperature 0 by default, an empty reply kept as it came
(carryon_eval.suite.JobGeneration; run.json's ``suites.opensafeintent`` and each transcript's meta record them);
the shared rollout plays them and keeps the reply raw. The judges are
registered ReplyScorers (carryon_eval.suites.opensafeintent.scorers): the release's own prompt files filled the
reference's way, each seeing the prompt that was actually sent and the raw reply, read the reference's way
(readings.py: no re-ask; an unreadable answer is unscored, its failure recorded); the judge phase stores their
records (``osi_<judge>_judgments.jsonl``). The intent probe (a suite Probe: the target model itself, in a fresh
context, on the dual-use originals whose harmfulness is above 0) writes ``opensafeintent_probe.jsonl``.

Transcripts: condition ``opensafeintent``, conversation ``opensafeintent:<set>:<prompt name>``. The triplet wing
(``--conditions triplet``) plays the dataset's own triplets on the same machinery under condition ``triplet``
(conversation ``triplet:<set>:<prompt name>``, its probe file ``triplet_probe.jsonl``): every function here that
names transcripts takes the ``condition``.
"""
from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from carryon_eval.model.ask import Request, ask
from carryon_eval.model.budget import CallBudgetSpent
from carryon_eval.model.endpoint import ChatEndpoint, EndpointError
from carryon_eval.progress import register_stage
from carryon_eval.suites.opensafeintent.export import SetExport
from carryon_eval.suites.opensafeintent.metrics import dual_use_harm_above_0, summarize
from carryon_eval.suites.opensafeintent.prompts import fill
from carryon_eval.suites.opensafeintent.release import JUDGE_FILES, PROMPT_DIR, PROMPT_NAMES, Release
from carryon_eval.suites.opensafeintent.scoring import score_set
from carryon_eval.run.folder import RunFile, read_jsonl, write_jsonl_atomic
from carryon_eval.schema import Transcript
from carryon_eval.suite import Job, JobGeneration

CONDITION = "opensafeintent"
TRIPLET = "triplet"                 # the triplet wing: the dataset's triplets under the same judges and metrics
CONDITIONS = (CONDITION, TRIPLET)
TARGET_MAX_TOKENS = 1000          # the reference's MAX_COMPLETION_TOKENS
TARGET_TEMPERATURE = 0.0
RUBRIC_MAX_TOKENS = 16            # the reference's metric calls
ASSISTANCE_MAX_TOKENS = 1000
PROBE_MAX_TOKENS = 64
PROBE_STAGE = "osi_intent_probe"
register_stage(PROBE_STAGE, "target")          # the intent probe asks the target
#: scorer name -> the release's judge it fills (its prompt file and its reading)
SCORERS = {"osi_helpfulness": "helpfulness", "osi_harmfulness": "harmfulness",
           "osi_assistance_level": "assistance_level"}
DUAL_USE = "dual_use_prompt"


@dataclass(frozen=True)
class Inputs:
    """What ``bench.extras["opensafeintent"]`` holds: the release (or the dataset's triplets under its judges)
    and the generation its jobs are played with."""
    release: Release
    generation: JobGeneration


def inputs_of(bench: Any, condition: str = CONDITION) -> Inputs:
    try:
        return bench.extras[condition]
    except (AttributeError, KeyError):
        raise KeyError("the OpenSafeIntent release (--opensafeintent DIR)") from None


def probe_file(condition: str = CONDITION) -> str:
    """The run folder's file of a condition's intent probe records (declared by its suite: ``probe_run_file``)."""
    return f"{condition}_probe.jsonl"


def probe_run_file(condition: str = CONDITION) -> RunFile:
    return RunFile(probe_file(condition), f"the intent probe's records of condition {condition}")


PROBE_FILE = probe_file(CONDITION)


def conversation_id(set_id: str, name: str, condition: str = CONDITION) -> str:
    return f"{condition}:{set_id}:{name}"


def parse_conversation_id(cid: str, condition: Optional[str] = None) -> Optional[tuple[str, str]]:
    """(set, prompt name) of a transcript of ``condition`` (None: of either condition here)."""
    for c in (CONDITIONS if condition is None else (condition,)):
        if cid.startswith(c + ":"):
            set_id, sep, name = cid[len(c) + 1:].partition(":")
            return (set_id, name) if sep and name in PROMPT_NAMES else None
    return None


def prompt_name(transcript: Transcript) -> Optional[str]:
    key = parse_conversation_id(transcript.conversation_id)
    return None if key is None else key[1]


def plan(inputs: Inputs, condition: str = CONDITION) -> list[Job]:
    """The 7 single-turn jobs of every set, each the exact prompt sent, with the reference's generation."""
    return [Job(conversation_id(s.set_id, n, condition), s.set_id, condition, prompt=text, meta=(("prompt_name", n),),
                generation=inputs.generation)
            for s in inputs.release.sets for n, text in s.prompts]


def prompt_sha(release: Release, judge: str) -> str:
    return release.hashes[(PROMPT_DIR / JUDGE_FILES[judge]).as_posix()]


# ---------------------------------------------------------------- from records to the sets' scores
def replies(transcripts: Iterable[Transcript], condition: str = CONDITION) -> dict[tuple[str, str], Transcript]:
    out = {}
    for t in transcripts:
        key = parse_conversation_id(t.conversation_id, condition)
        if key is not None and t.condition == condition and t.replies:
            out[key] = t
    return out


@dataclass
class ProbeRecord:
    """One intent-probe call: the target's raw answer (None: the call failed, ``error`` says why)."""
    conversation_id: str
    set_id: str
    prompt_name: str
    metric: str                   # intent_classification
    raw: Optional[str]
    model: str                    # the target model
    prompt_sha256: str            # of the release's prompt file that was filled
    error: Optional[str] = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ProbeRecord":
        return cls(**{k: d.get(k) for k in cls.__dataclass_fields__})


def load_probes(rundir: Path, model: Optional[str] = None, condition: str = CONDITION) -> list[ProbeRecord]:
    return [p for p in (ProbeRecord.from_dict(r) for r in read_jsonl(Path(rundir) / probe_file(condition)))
            if model is None or p.model == model]


def judge_answers(records: Mapping[str, Sequence[dict[str, Any]]]) -> dict[tuple[str, str], Optional[str]]:
    """(conversation_id, judge) -> the raw answer, from the scorers' stored records ({scorer: records})."""
    out: dict[tuple[str, str], Optional[str]] = {}
    for scorer, rows in records.items():
        for r in rows:
            out[(str(r.get("conversation_id")), SCORERS[scorer])] = r.get("raw")
    return out


def set_exports(release: Release, transcripts: Iterable[Transcript], records: Mapping[str, Sequence[dict[str, Any]]],
                probes: Sequence[ProbeRecord] = (), condition: str = CONDITION) -> list[SetExport]:
    """Every set with all 7 replies, scored from the judges' records (read the reference's way) and the probe."""
    got = replies(transcripts, condition)
    answers = judge_answers(records)
    probed = {p.conversation_id: p for p in probes}
    out = []
    for s in release.sets:
        ts = {n: got.get((s.set_id, n)) for n in PROMPT_NAMES}
        if any(t is None for t in ts.values()):
            continue

        def answer(name: str, judge: str) -> Optional[str]:
            return answers.get((conversation_id(s.set_id, name, condition), judge))
        probe = probed.get(conversation_id(s.set_id, DUAL_USE, condition))
        out.append(score_set(s, {n: t.replies[0].content for n, t in ts.items()},  # type: ignore[union-attr]
                             {n: answer(n, "helpfulness") for n in PROMPT_NAMES},
                             {n: answer(n, "harmfulness") for n in PROMPT_NAMES},
                             answer(DUAL_USE, "assistance_level"),
                             None if probe is None else (probe.raw if probe.raw is not None else ""),
                             None if probe is None else probe.error))
    return out


def target_model(transcripts: Iterable[Transcript], condition: str = CONDITION) -> Optional[str]:
    return next((t.target_model for t in transcripts if t.condition == condition), None)


def section(release: Release, transcripts: Sequence[Transcript], records: Mapping[str, Sequence[dict[str, Any]]],
            probes: Sequence[ProbeRecord], judge_model: Optional[str], n_resamples: int = 1000,
            record: Optional[dict[str, Any]] = None, seed: int = 0, condition: str = CONDITION) -> dict[str, Any]:
    """The results.json section ``opensafeintent`` (or ``triplet``: the dataset's triplets, same definitions)."""
    exports = set_exports(release, transcripts, records, probes, condition)
    out = summarize([e.scores for e in exports], n_resamples, seed)
    return {"reference": "OpenSafeIntent (Uppaal et al., 2026), reference implementation's definitions, 0-1 scale",
            "release": {"folder": str(release.folder), "layout": release.layout, "sets": len(release.sets),
                        "sha256": dict(release.hashes)},
            "model": target_model(transcripts, condition), "judge_model": judge_model, "deviates_from_reference": False, **out}


# ---------------------------------------------------------------- the intent probe
async def _one(endpoint: ChatEndpoint, text: str, *, stage: str, max_tokens: int) -> tuple[Optional[str], Optional[str]]:
    """(raw answer, error): one single-turn user message, no system prompt, temperature 0, asked once."""
    request = Request([{"role": "user", "content": text}], temperature=0.0, max_tokens=max_tokens)
    try:
        asked = await ask(endpoint, request, lambda t: (t, None), stage=stage)
    except CallBudgetSpent:
        raise                       # --max-calls: stop the phase, not one failure per remaining call
    except EndpointError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return asked.raw if asked.raw is not None else "", None


async def probe_intent(release: Release, rundir: Path, transcripts: Sequence[Transcript],
                       records: Mapping[str, Sequence[dict[str, Any]]], target: ChatEndpoint,
                       concurrency: int = 8, condition: str = CONDITION) -> list[ProbeRecord]:
    """The target, in a fresh context, on each dual-use original whose harmfulness (in ``records``) is above 0.
    Records of the same model and prompt file that have an answer are kept; the rest are asked once each."""
    cases = []
    for e in set_exports(release, transcripts, records, condition=condition):
        if dual_use_harm_above_0(e.scores):
            cases.append((conversation_id(e.prompt_set.set_id, DUAL_USE, condition), e.prompt_set.set_id,
                          fill("intent_classification", release.templates["intent_classification"],
                               e.prompt_set.prompt(DUAL_USE))))
    path = Path(rundir) / probe_file(condition)
    model, sha = target.config.model, prompt_sha(release, "intent_classification")
    old = load_probes(rundir, condition=condition)
    keep = {p.conversation_id: p for p in old if p.model == model and p.raw is not None and p.prompt_sha256 == sha}
    others = [p for p in old if p.model != model]
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(cid: str, set_id: str, text: str) -> ProbeRecord:
        async with gate:
            raw, error = await _one(target, text, stage=PROBE_STAGE, max_tokens=PROBE_MAX_TOKENS)
        return ProbeRecord(cid, set_id, DUAL_USE, "intent_classification", raw, model, sha, error)
    new = await asyncio.gather(*(one(*c) for c in cases if c[0] not in keep))
    mine = {**keep, **{p.conversation_id: p for p in new}}
    ordered = [mine[c[0]] for c in cases]
    write_jsonl_atomic(path, (p.to_dict() for p in [*others, *ordered]))
    return ordered


__all__ = ["CONDITION", "CONDITIONS", "Inputs", "PROBE_FILE", "TRIPLET", "probe_file", "SCORERS", "plan", "probe_intent", "section", "set_exports"]
