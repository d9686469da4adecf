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

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Sequence

from carryon_eval.judge.side_calls import SideCall, SideCallRecord, SideCalls, read_side_calls, run_side_calls
from carryon_eval.model.endpoint import ChatEndpoint
from carryon_eval.suites.opensafeintent.export import SetExport
from carryon_eval.suites.opensafeintent.metrics import dual_use_harm_above_0, summarize
from carryon_eval.suites.opensafeintent.prompts import fill
from carryon_eval.suites.opensafeintent.readings import read
from carryon_eval.suites.opensafeintent.release import JUDGE_FILES, PROMPT_DIR, PROMPT_NAMES, Release
from carryon_eval.suites.opensafeintent.scoring import score_set
from carryon_eval.suites.opensafeintent.section import OpenSafeIntentSection, ReleaseInfo
from carryon_eval.run.folder import RunFile, RunFolder
from carryon_eval.run.paths import shared_local
from carryon_eval.schema import Transcript
from carryon_eval.suite import Job, JobGeneration

if TYPE_CHECKING:       # types only
    from carryon_eval.dataset.load import Benchmark

CONDITION = "opensafeintent"        # its condition (suite.toml declares it)
TRIPLET = "triplet"                 # the triplet wing: the dataset's triplets under the same judges and metrics
CONDITIONS = (CONDITION, TRIPLET)
TARGET_MAX_TOKENS = 1000          # the reference's MAX_COMPLETION_TOKENS
TARGET_TEMPERATURE = 0.0
RUBRIC_MAX_TOKENS = 16            # the reference's metric calls
ASSISTANCE_MAX_TOKENS = 1000
PROBE_MAX_TOKENS = 64
PROBE_STAGE = "osi_intent_probe"               # the intent probe asks the target (PROBES files it so)
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


# ---------------------------------------------------------------- the wing's one door to ``bench.extras``
def inputs_or_none(bench: Optional["Benchmark"], condition: str = CONDITION) -> Optional[Inputs]:
    """The ``Inputs`` loaded for ``condition`` (``opensafeintent``, or the triplet wing's ``triplet``), None when its
    suite's ``load`` put none there (no release folder given, or a folder reopened without one)."""
    found = getattr(bench, "extras", {}).get(condition)
    return found if isinstance(found, Inputs) else None


def inputs_of(bench: Optional["Benchmark"], condition: str = CONDITION) -> Inputs:
    """The ``Inputs`` loaded for ``condition``; KeyError naming what is missing when there are none."""
    found = inputs_or_none(bench, condition)
    if found is None:
        raise KeyError("the OpenSafeIntent release (--opensafeintent DIR)")
    return found


def keep_inputs(bench: "Benchmark", inputs: Inputs, condition: str = CONDITION) -> None:
    """Record ``inputs`` as the ones of ``condition`` (its suite's ``load``): the one write of the wings' extras."""
    bench.extras[condition] = inputs


def probe_file(condition: str = CONDITION) -> str:
    """The run folder's file of a condition's intent probe records (its suite.toml declares it among its files)."""
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


def inspect_metadata(transcript: Transcript) -> dict[str, Any]:
    """InspectPart.metadata: the prompt name of one of its transcripts (or the triplet wing's) in an inspect log."""
    name = prompt_name(transcript)
    return {} if name is None else {"prompt_name": name}


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


#: The intent probe's calls (carryon_eval.judge.side_calls), one file per condition: the target's, one record per
#: dual-use original asked (the reference's ``metric`` intent_classification).
PROBES = {c: SideCalls("intent_probe", stage=PROBE_STAGE, role="target", file=probe_file(c),
                       key_fields=("conversation_id", "set_id", "prompt_name", "metric")) for c in CONDITIONS}


def load_probes(run: RunFolder, model: Optional[str] = None, condition: str = CONDITION) -> list[SideCallRecord]:
    return read_side_calls(run, PROBES[condition], model)


def judge_answers(records: Mapping[str, Sequence[Any]]) -> dict[tuple[str, str], Optional[str]]:
    """(conversation_id, judge) -> the raw answer, from the scorers' stored records ({scorer: its records, of the
    record type its judgment file has: RunFolder.judgments().of})."""
    out: dict[tuple[str, str], Optional[str]] = {}
    for scorer, mine in records.items():
        for r in mine:
            out[(str(r.conversation_id), SCORERS[scorer])] = r.raw
    return out


def set_exports(release: Release, transcripts: Iterable[Transcript], records: Mapping[str, Sequence[Any]],
                probes: Sequence[SideCallRecord] = (), condition: str = CONDITION) -> list[SetExport]:
    """Every set with all 7 replies, scored from the judges' records (read the reference's way) and the probe."""
    got = replies(transcripts, condition)
    answers = judge_answers(records)
    probed = {p.fields["conversation_id"]: p for p in probes}
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


def section(release: Release, transcripts: Sequence[Transcript], records: Mapping[str, Sequence[Any]],
            probes: Sequence[SideCallRecord], judge_model: Optional[str], n_resamples: int = 1000,
            seed: int = 0, condition: str = CONDITION, base: Optional[Path] = None) -> OpenSafeIntentSection:
    """The results.json section ``opensafeintent`` (or ``triplet``: the dataset's triplets, same definitions);
    ``base``: the folder of results.json, the release's path is written relative to it (carryon_eval.run.paths)."""
    exports = set_exports(release, transcripts, records, probes, condition)
    folder = str(release.folder) if base is None else shared_local(release.folder, base)
    return OpenSafeIntentSection.of(summarize([e.scores for e in exports], n_resamples, seed),
                                    release=ReleaseInfo(folder, release.layout, len(release.sets), dict(release.hashes)),
                                    model=target_model(transcripts, condition), judge_model=judge_model)


# ---------------------------------------------------------------- the intent probe
def _reads(raw: Optional[str]) -> Optional[str]:
    """The probe answer's strategy, None when it does not read (the resume rule asks it again)."""
    reading = read("intent_classification", raw)
    return reading.value if reading.ok else None


async def probe_intent(release: Release, run: RunFolder, transcripts: Sequence[Transcript],
                       records: Mapping[str, Sequence[Any]], target: ChatEndpoint,
                       concurrency: int = 8, condition: str = CONDITION) -> list[SideCallRecord]:
    """The target, in a fresh context, on each dual-use original whose harmfulness (in ``records``) is above 0,
    through the side-call runner (one user message, temperature 0, asked once; its resume rule)."""
    sha = prompt_sha(release, "intent_classification")
    requests = [SideCall((conversation_id(e.prompt_set.set_id, DUAL_USE, condition), e.prompt_set.set_id, DUAL_USE,
                          "intent_classification"),
                         fill("intent_classification", release.templates["intent_classification"],
                              e.prompt_set.prompt(DUAL_USE)), PROBE_MAX_TOKENS, sha, _reads)
                for e in set_exports(release, transcripts, records, condition=condition)
                if dual_use_harm_above_0(e.scores)]
    return (await run_side_calls(run, PROBES[condition], requests, target, concurrency)).records


__all__ = ["CONDITION", "CONDITIONS", "Inputs", "PROBE_FILE", "TRIPLET", "probe_file", "probe_run_file", "SCORERS",
           "inputs_of", "inputs_or_none", "keep_inputs", "plan", "probe_intent", "section", "set_exports"]
