"""OpenSafeIntent as one suite of a run: its plan, generation, judges, probe, section and cost, each behind a
small function of the suite record's shape (``plan``, ``scorers``, ``summarize``, ``render``, ``cost``).

Generation is the reference's: each of a set's 7 prompts is one single-turn request, no system prompt, 1,000
max tokens, temperature 0 (overridable; run.json records it); the reply is kept raw. The judges are the
release's own prompt files filled the reference's way (prompts.py), each seeing the prompt that was actually
sent and the raw reply, read the reference's way (readings.py: no re-ask; unreadable = a recorded failure):
helpfulness 1-4 and harmfulness 0-3 on all 7 replies (16 max tokens), assistance level A0-A4 on the dual-use
original (1,000), and the intent probe: the target model itself, in a fresh context, on the dual-use originals
whose harmfulness is above 0 (64 max tokens), temperature 0.

Run folder: the replies are transcripts (condition ``opensafeintent``, conversation ``opensafeintent:<set>:<prompt
name>``) in ``opensafeintent_transcripts.jsonl`` (apart from CarryOnBench's conversations); the judges' answers
in ``opensafeintent_judgments.jsonl``, the probe's in
``opensafeintent_probe.jsonl`` (one record per call, rewritten atomically; the response cache makes a rerun free).
"""
from __future__ import annotations

import asyncio
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Optional

from carryon_eval.model.ask import Request, ask
from carryon_eval.model.budget import CallBudgetSpent
from carryon_eval.model.endpoint import ChatEndpoint, EndpointError
from carryon_eval.run.folder import RunFolder, read_jsonl, write_jsonl_atomic
from carryon_eval.schema import Message, Transcript
from carryon_eval.opensafeintent.export import SetExport, write_reference
from carryon_eval.opensafeintent.metrics import dual_use_harm_above_0, summarize
from carryon_eval.opensafeintent.prompts import fill
from carryon_eval.opensafeintent.release import PROMPT_NAMES, Release, sha256_file
from carryon_eval.opensafeintent.scoring import score_set

CONDITION = "opensafeintent"
TRANSCRIPTS_FILE = "opensafeintent_transcripts.jsonl"
FAILURES_FILE = "opensafeintent_failures.jsonl"
JUDGMENTS_FILE = "opensafeintent_judgments.jsonl"
PROBE_FILE = "opensafeintent_probe.jsonl"
TARGET_MAX_TOKENS = 1000          # the reference's MAX_COMPLETION_TOKENS
TARGET_TEMPERATURE = 0.0
RUBRIC_MAX_TOKENS = 16            # the reference's metric calls
ASSISTANCE_MAX_TOKENS = 1000
PROBE_MAX_TOKENS = 64
SCORERS = ("helpfulness", "harmfulness", "assistance_level")
STAGES = {"helpfulness": "osi_helpfulness", "harmfulness": "osi_harmfulness",
          "assistance_level": "osi_assistance_level", "intent_classification": "osi_intent_probe"}


@dataclass(frozen=True)
class Job:
    """One single-turn prompt to play against the target (the suite record's Job shape)."""
    conversation_id: str
    query_id: str                 # the set id, osi-000
    condition: str
    prompt: str                   # the exact user message that is sent
    prompt_name: str


def conversation_id(set_id: str, name: str) -> str:
    return f"{CONDITION}:{set_id}:{name}"


def parse_conversation_id(cid: str) -> Optional[tuple[str, str]]:
    if not cid.startswith(CONDITION + ":"):
        return None
    set_id, name = cid[len(CONDITION) + 1:].split(":", 1)
    return set_id, name


def plan(release: Release) -> list[Job]:
    return [Job(conversation_id(s.set_id, n), s.set_id, CONDITION, text, n)
            for s in release.sets for n, text in s.prompts]


def cost(n_sets: int) -> dict[str, Any]:
    """The calls a run of ``n_sets`` sets makes (the probe's is an upper bound: it asks only unsafe originals)."""
    return {"target": 7 * n_sets, "helpfulness": 7 * n_sets, "harmfulness": 7 * n_sets,
            "helpfulness+harmfulness": 14 * n_sets, "assistance_level": n_sets, "intent_probe_at_most": n_sets}


def cost_lines(release: Release) -> list[str]:
    c = cost(len(release.sets))
    return [f"opensafeintent: {len(release.sets):,} prompt-sets, {release.n_prompts:,} prompts ({release.folder})",
            f"  target        {c['target']:>7,} calls (single turn, no system prompt)",
            f"  judge         {c['helpfulness+harmfulness']:>7,} calls helpfulness + harmfulness "
            f"({c['helpfulness']:,} + {c['harmfulness']:,})",
            f"  judge         {c['assistance_level']:>7,} calls assistance level (dual-use originals)",
            f"  target        {c['intent_probe_at_most']:>7,} calls intent probe at most "
            "(dual-use originals with harmfulness above 0)"]


# ---------------------------------------------------------------- records
@dataclass
class OsiJudgment:
    conversation_id: str
    set_id: str
    prompt_name: str
    metric: str                   # helpfulness | harmfulness | assistance_level | intent_classification
    raw: Optional[str]            # the answer as it came (None: the call failed)
    model: str                    # judge model (the target model for the probe)
    prompt_sha256: str            # of the release's prompt file that was filled
    error: Optional[str] = None   # why the call failed

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "OsiJudgment":
        return cls(**{k: d.get(k) for k in cls.__dataclass_fields__})


def prompt_sha(release: Release, metric: str) -> str:
    from carryon_eval.opensafeintent.release import JUDGE_FILES, PROMPT_DIR
    return release.hashes[(PROMPT_DIR / JUDGE_FILES[metric]).as_posix()]


# ---------------------------------------------------------------- generation
async def _one(endpoint: ChatEndpoint, text: str, *, stage: str, temperature: float, max_tokens: int,
               seed: Optional[int] = None) -> tuple[Optional[str], Optional[str], Optional[str]]:
    """(raw answer, finish reason, error): one single-turn user message, no system prompt, asked once."""
    request = Request([{"role": "user", "content": text}], temperature=temperature, max_tokens=max_tokens,
                      seed=seed)
    try:
        asked = await ask(endpoint, request, lambda t: (t, None), stage=stage)
    except CallBudgetSpent:
        raise                       # --max-calls: stop the phase, not one failure per remaining call
    except EndpointError as exc:
        return None, None, f"{type(exc).__name__}: {exc}"
    return asked.raw if asked.raw is not None else "", asked.finish_reason, None


async def _bounded(coros: Iterable[Any], concurrency: int) -> list[Any]:
    gate = asyncio.Semaphore(max(1, concurrency))

    async def run(c: Any) -> Any:
        async with gate:
            return await c
    return await asyncio.gather(*(run(c) for c in coros))


async def generate(release: Release, run: RunFolder, target: ChatEndpoint, *, temperature: float = TARGET_TEMPERATURE,
                   max_tokens: int = TARGET_MAX_TOKENS, seed: Optional[int] = None,
                   concurrency: int = 8) -> int:
    """Every planned prompt not yet in transcripts.jsonl; returns how many were generated. A failed call is
    recorded in opensafeintent_failures.jsonl and asked again by a rerun."""
    done = {d["conversation_id"] for d in read_jsonl(run.path / TRANSCRIPTS_FILE)}
    todo = [j for j in plan(release) if j.conversation_id not in done]

    async def play(job: Job) -> int:
        raw, why, error = await _one(target, job.prompt, stage="target", temperature=temperature,
                                     max_tokens=max_tokens, seed=seed)
        if error is not None:
            append_line(run.path / FAILURES_FILE, {"conversation_id": job.conversation_id, "reason": error})
            return 0
        append_line(run.path / TRANSCRIPTS_FILE, Transcript(job.conversation_id, job.query_id, CONDITION, None, [],
                              [Message(role="user", content=job.prompt, turn=1),
                               Message(role="assistant", content=raw or "", turn=1, model=target.config.model)],
                              target.config.model, meta={"finish_reasons": [why], "prompt_name": job.prompt_name}
                              ).to_dict())
        return 1
    return sum(await _bounded((play(j) for j in todo), concurrency))


def append_line(path: Path, obj: dict[str, Any]) -> None:
    """One JSON line appended and on disk (a torn last line is skipped by read_jsonl)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def replies(run: RunFolder) -> dict[tuple[str, str], Transcript]:
    out = {}
    for t in (Transcript.from_dict(d) for d in read_jsonl(run.path / TRANSCRIPTS_FILE)):
        key = parse_conversation_id(t.conversation_id)
        if key is not None and t.condition == CONDITION:
            out[key] = t
    return out


# ---------------------------------------------------------------- judges and probe
def load_judgments(run: RunFolder) -> list[OsiJudgment]:
    out = []
    for name in (JUDGMENTS_FILE, PROBE_FILE):
        path = run.path / name
        if path.is_file():
            out += [OsiJudgment.from_dict(r) for r in read_jsonl(path)]
    return out


async def _ask_all(release: Release, run: RunFolder, endpoint: ChatEndpoint, cases: list[tuple[str, str, str, str]],
                   file: str, max_tokens: dict[str, int], concurrency: int) -> list[OsiJudgment]:
    """cases: (conversation_id, prompt_name, metric, filled text). Records of the same model and prompt file
    that have an answer are kept; the rest are asked (once each) and the file rewritten."""
    path = run.path / file
    model = endpoint.config.model
    old = [OsiJudgment.from_dict(r) for r in read_jsonl(path)] if path.is_file() else []
    keep = {(j.conversation_id, j.metric): j for j in old
            if j.model == model and j.raw is not None and j.prompt_sha256 == prompt_sha(release, j.metric)}
    others = [j for j in old if j.model != model]

    async def judge(cid: str, name: str, metric: str, text: str) -> OsiJudgment:
        raw, _, error = await _one(endpoint, text, stage=STAGES[metric], temperature=0.0,
                                   max_tokens=max_tokens[metric])
        set_id = cid.split(":")[1]
        return OsiJudgment(cid, set_id, name, metric, raw, model, prompt_sha(release, metric), error)
    todo = [c for c in cases if (c[0], c[2]) not in keep]
    new = await _bounded((judge(*c) for c in todo), concurrency)
    mine = {**keep, **{(j.conversation_id, j.metric): j for j in new}}
    ordered = [mine[(c[0], c[2])] for c in cases]
    write_jsonl_atomic(path, (j.to_dict() for j in [*others, *ordered]))
    return ordered


async def judge_replies(release: Release, run: RunFolder, judge: ChatEndpoint,
                        concurrency: int = 8) -> list[OsiJudgment]:
    """Helpfulness and harmfulness on every reply, the assistance level on each dual-use original."""
    cases = []
    got = replies(run)
    for s in release.sets:
        for name, _ in s.prompts:
            t = got.get((s.set_id, name))
            if t is None:
                continue
            sent, reply = t.messages[0].content, t.replies[0].content
            for metric in ("helpfulness", "harmfulness"):
                cases.append((t.conversation_id, name, metric, fill(metric, release.templates[metric], sent, reply)))
            if name == "dual_use_prompt":
                cases.append((t.conversation_id, name, "assistance_level",
                              fill("assistance_level", release.templates["assistance_level"], sent, reply)))
    return await _ask_all(release, run, judge, cases, JUDGMENTS_FILE,
                          {"helpfulness": RUBRIC_MAX_TOKENS, "harmfulness": RUBRIC_MAX_TOKENS,
                           "assistance_level": ASSISTANCE_MAX_TOKENS}, concurrency)


async def probe_intent(release: Release, run: RunFolder, target: ChatEndpoint, judge_model: str,
                       concurrency: int = 8) -> list[OsiJudgment]:
    """The target, in a fresh context, on each dual-use original whose harmfulness (by ``judge_model``) is
    above 0."""
    exports = set_exports(release, run, judge_model, probes=False)
    cases = []
    for e in exports:
        if dual_use_harm_above_0(e.scores):
            prompt = e.prompt_set.prompt("dual_use_prompt")
            cases.append((conversation_id(e.prompt_set.set_id, "dual_use_prompt"), "dual_use_prompt",
                          "intent_classification",
                          fill("intent_classification", release.templates["intent_classification"], prompt)))
    return await _ask_all(release, run, target, cases, PROBE_FILE, {"intent_classification": PROBE_MAX_TOKENS},
                          concurrency)


# ---------------------------------------------------------------- from records to the section
def set_exports(release: Release, run: RunFolder, judge_model: str, target_model: Optional[str] = None,
                probes: bool = True) -> list[SetExport]:
    """Every set with all 7 replies, scored from the records of ``judge_model`` (and the target's probe)."""
    got = replies(run)
    judged = [OsiJudgment.from_dict(r) for r in read_jsonl(run.path / JUDGMENTS_FILE)]
    probed = [OsiJudgment.from_dict(r) for r in read_jsonl(run.path / PROBE_FILE)] if probes else []
    records = {(j.conversation_id, j.metric): j for j in judged if j.model == judge_model}
    records.update({(j.conversation_id, j.metric): j for j in probed
                    if target_model is None or j.model == target_model})
    out = []
    for s in release.sets:
        ts = {n: got.get((s.set_id, n)) for n in PROMPT_NAMES}
        if any(t is None for t in ts.values()):
            continue

        def answer(name: str, metric: str) -> Optional[str]:
            j = records.get((conversation_id(s.set_id, name), metric))
            return None if j is None else j.raw
        probe = records.get((conversation_id(s.set_id, "dual_use_prompt"), "intent_classification"))
        out.append(score_set(s, {n: t.replies[0].content for n, t in ts.items()},  # type: ignore[union-attr]
                             {n: answer(n, "helpfulness") for n in PROMPT_NAMES},
                             {n: answer(n, "harmfulness") for n in PROMPT_NAMES},
                             answer("dual_use_prompt", "assistance_level"),
                             None if probe is None else (probe.raw if probe.raw is not None else ""),
                             None if probe is None else probe.error))
    return out


def section(release: Release, run: RunFolder, judge_model: str, n_resamples: int = 1000,
            target_model: Optional[str] = None) -> dict[str, Any]:
    """The results.json section ``opensafeintent``."""
    exports = set_exports(release, run, judge_model, target_model)
    out = summarize([e.scores for e in exports], n_resamples)
    out = {"reference": "OpenSafeIntent (Uppaal et al., 2026), reference implementation's definitions, 0-1 scale",
           "release": {"folder": str(release.folder), "layout": release.layout, "sets": len(release.sets),
                       "sha256": dict(release.hashes)},
           "model": target_model, "judge_model": judge_model, "deviates_from_reference": False, **out}
    return out


def export_run(release: Release, run: RunFolder, judge_model: str, target_model: str, out: Path) -> dict[str, Path]:
    return write_reference(out, target_model, set_exports(release, run, judge_model, target_model))


def hashes_now(release: Release) -> dict[str, str]:
    return {rel: sha256_file(release.folder / rel) for rel in release.hashes}


__all__ = ["CONDITION", "Job", "SCORERS", "cost", "cost_lines", "export_run", "generate", "judge_replies", "plan",
           "probe_intent", "section", "set_exports"]


def models_present(run: RunFolder, file: str) -> list[str]:
    return list(dict.fromkeys(str(r.get("model")) for r in read_jsonl(run.path / file)))


def pick_model(run: RunFolder, file: str, wanted: Optional[str], recorded: Optional[str], role: str) -> str:
    """The model whose records to read: the one asked for, else run.json's, else the only one in the file."""
    present = models_present(run, file)
    for name in (wanted, recorded):
        if name is not None and (name in present or not present):
            return name
    if wanted is None and len(present) == 1:
        return present[0]
    raise ValueError(f"{run.path / file}: no records of {role} {wanted or recorded!r}; "
                     f"it holds {', '.join(present) or 'none'} (name one with --judge)")
