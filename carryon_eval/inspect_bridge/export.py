"""A run folder as an inspect-ai eval log: `carryon-eval export RUNDIR --format inspect --out RUN.eval`.

Any past run folder (run.json, transcripts, the judgment files, results.json from `carryon-eval report`)
becomes one ``EvalLog`` written with inspect's own ``write_eval_log``, so ``inspect view`` lists it:

- one sample per transcript, id = its conversation id; its messages with their turn, move, author model and
  prompt version in each message's metadata; query, condition, flow, moves and domain in the sample metadata;
- the judges' scores of its replies (those of the judge results.json reports), as its suite gives them (e.g.
  CarryOnBench's per reply and per conversation, with every verdict in the score's metadata); an unscored judgment
  (or a number it leaves undetermined) is None, never 0;
- results.json's headline numbers as the log's metrics, as the suites give them (each metric with its 95% CI and
  unscored bounds in its metadata); a number that is null in results.json is not a metric (inspect metrics are
  numbers) and its reason is in the score's metadata under ``null``;
- usage per role (target, user, grader) where the run folder recorded it (usage.json), the model roles of
  run.json (model names and base URLs; never a key), and metadata saying the log was exported.

Metric values are copied from results.json, never recomputed: the report's metric functions stay the one
source of the numbers. The scores, the metrics and what a sample's metadata adds are the suites' (each suite
record's ``SuiteReport.inspect``, an InspectPart: e.g. carryon_eval.suites.carryonbench.inspect_eval.scores); this
module writes the log and knows no suite.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from carryon_eval import __version__
from carryon_eval.codec import Record
from carryon_eval.dataset.load import Benchmark, DatasetError
from carryon_eval.app.exporters import ExportError
from carryon_eval.judge.store import JudgeError, select_judge
from carryon_eval.model.endpoint import Tokens
from carryon_eval.run.records import RunMeta
from carryon_eval.run.results import Results
from carryon_eval.run.folder import RunError, RunFolder, read_usage
from carryon_eval.run.paths import shared_local, shared_path
from carryon_eval.schema import Message, Transcript
from carryon_eval.suite import InspectPart, ReportInputs, suites
from carryon_eval.inspect_bridge import require_inspect
from carryon_eval.progress import role_of as project_role

TASK_NAME = "carryonbench"
#: The project's roles -> inspect model roles (the target is inspect's evaluated model; the judges are "grader").
INSPECT_ROLES = {"target": "target", "user": "user"}
GRADER = "grader"


def role_of(stage: str) -> str:
    """The inspect role of a ledger stage: its model's role (carryon_eval.progress.role_of: a probe that asks the
    target is the target's), the judge's and any other as "grader"."""
    return INSPECT_ROLES.get(project_role(stage), GRADER)


# ---------------------------------------------------------------- reading the run folder
def _read_results(run: RunFolder) -> Results:
    path = run.results_file
    try:
        return Results.from_json(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise ExportError(f"{path} is missing; run `carryon-eval report {run.path}` first") from None
    except (OSError, ValueError, TypeError) as exc:
        raise ExportError(f"{path} is unreadable: {exc}") from None


def _open(run: RunFolder) -> tuple[RunMeta, Benchmark]:
    from carryon_eval.app.config import load_bench

    try:
        meta = run.read_meta()
        bench = load_bench(run.dataset_source(meta), meta.dataset.commit or meta.dataset.revision, meta.limit, meta.subset)
        run.check_dataset(meta, bench.fingerprint())
    except (RunError, DatasetError) as exc:
        raise ExportError(str(exc)) from None
    return meta, bench


# ---------------------------------------------------------------- samples
def _message(m: Message) -> Any:
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser

    meta = {"turn": m.turn, "move": m.move, "model": m.model, "prompt_version": m.prompt_version}
    if m.role == "assistant":
        return ChatMessageAssistant(content=m.content, model=m.model, metadata=meta, source="generate")
    return ChatMessageUser(content=m.content, metadata=meta)


def inspect_parts() -> list[InspectPart]:
    """The registered suites' parts of an inspect log, in their rank order."""
    return [s.report.inspect for s in sorted(suites(), key=lambda s: s.rank)
            if s.report is not None and s.report.inspect is not None]


@dataclass
class QueryColumns(Record):
    """The columns of a query's dataset row that a sample's metadata shows (None where the row lacks one)."""
    query: Any = None
    domain: Any = None
    category: Any = None


@dataclass
class PlayedMeta(Record):
    """What the rollout recorded in a transcript's ``meta`` that a sample's metadata shows."""
    finish_reasons: Any = None
    user_model: Any = None


def sample_metadata(t: Transcript, bench: Benchmark) -> dict[str, Any]:
    q, played = QueryColumns.from_json(bench.queries.get(t.query_id, {})), PlayedMeta.from_json(t.meta)
    meta = {"query_id": t.query_id, "query": q.query, "condition": t.condition, "flow_id": t.flow_id,
            "moves": list(t.moves), "domain": q.domain, "category": q.category,
            "shared_turn1": t.shared_turn1, "target_model": t.target_model,
            "finish_reasons": played.finish_reasons, "user_model": played.user_model}
    for part in inspect_parts():
        if part.metadata is not None:
            meta.update(part.metadata(t))
    return meta


def build_sample(t: Transcript, bench: Benchmark, scores: dict[str, Any]) -> Any:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput

    messages = [_message(m) for m in t.messages]
    last = t.replies[-1].content if t.replies else ""
    return EvalSample(id=t.conversation_id, epoch=1, input=t.messages[0].content if t.messages else "",
                      target="", messages=messages, output=ModelOutput.from_content(t.target_model, last),
                      scores=scores, metadata=sample_metadata(t, bench))


def transcript_scores(inputs: ReportInputs) -> dict[str, dict[str, Any]]:
    """Every transcript's scores, as the suites give them (conversation_id -> score name -> Score)."""
    out: dict[str, dict[str, Any]] = {}
    for part in inspect_parts():
        if part.samples is not None:
            for cid, scores in part.samples(inputs).items():
                out.setdefault(cid, {}).update(scores)
    return out


# ---------------------------------------------------------------- usage and roles
def role_usage(usage: dict[str, dict[str, int]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(per role, per model) inspect ModelUsage from the run's usage ledger rows ("stage/model" -> counts)."""
    from inspect_ai.model import ModelUsage

    roles: dict[str, Any] = {}
    models: dict[str, Any] = {}
    for key, row in usage.items():
        stage, _, model = key.partition("/")
        tokens = Tokens.from_json(row)
        prompt, completion = int(tokens.prompt_tokens), int(tokens.completion_tokens)
        u = ModelUsage(input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion)
        role = role_of(stage)
        roles[role] = roles[role] + u if role in roles else u
        models[model] = models[model] + u if model in models else u
    return roles, models


def model_roles(meta: RunMeta) -> dict[str, Any]:
    from inspect_ai.model import ModelConfig

    names = {"target": "target", "user": "user", "judge": GRADER}
    return {names.get(role, role): ModelConfig(model=rec.model or "unknown", base_url=rec.base_url or None)
            for role, rec in meta.roles.items()}


# ---------------------------------------------------------------- the log
def build_log(run: RunFolder, judge: Optional[str] = None, base: Optional[Path] = None) -> Any:
    """The EvalLog of a run folder (see the module docstring); ``judge`` must be the judge results.json reports;
    ``base``: the folder the log is written in (the paths it names are relative to it)."""
    require_inspect()
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalPlan, EvalResults, EvalSpec, EvalStats

    meta, bench = _open(run)
    results = _read_results(run)
    if judge is not None and judge != results.judges.selected:
        raise ExportError(f"{run.results_file} reports judge {results.judges.selected}, not {judge}; run "
                          f"`carryon-eval report {run.path} --judge {judge}` first")
    transcripts = run.transcripts()
    try:
        judge = select_judge(run, results.judges.selected)
        scores = transcript_scores(ReportInputs(run, bench, transcripts, judge, n_resamples=0, seed=0))
    except JudgeError as exc:
        raise ExportError(str(exc)) from None
    samples = [build_sample(t, bench, scores.get(t.conversation_id, {})) for t in transcripts]
    roles, models = role_usage(read_usage(run))
    target = meta.role("target")
    # the paths it names relative to the log's folder ``base`` (carryon_eval.run.paths), never the machine's
    here = Path.cwd() if base is None else base
    dataset = shared_path(bench.source, here)
    spec = EvalSpec(
        created=_iso(meta.created), task=TASK_NAME, task_version=__version__,
        dataset=EvalDataset(name=dataset, location=dataset, samples=len(samples),
                            sample_ids=[s.id for s in samples]),
        model=target.model or results.model, model_base_url=target.base_url or None,
        model_roles=model_roles(meta), config=EvalConfig(),
        task_args={"dataset": dataset, "revision": meta.dataset.revision,
                   "conditions": list(meta.conditions), "subset": meta.subset, "limit": meta.limit},
        packages={"carryonbench": __version__},
        metadata={"exported_from": "carryon-eval", "carryonbench_version": __version__, "run_folder": shared_local(run.path, here),
                  "status": results.status(), "status_lines": results.status_lines(),
                  "judge_model": judge, "note": "exported from a CarryOnBench run folder; numbers are "
                                                "results.json's, not recomputed by inspect"})
    return EvalLog(status="success", eval=spec, plan=EvalPlan(),
                   results=EvalResults(total_samples=len(samples), completed_samples=len(samples),
                                       scores=[m for part in inspect_parts() if part.metrics is not None
                                               for m in part.metrics(results)],
                                       metadata={"results_json": shared_local(run.results_file, here)}),
                   stats=EvalStats(started_at=_iso(meta.created), completed_at=_iso(results.generated.at),
                                   role_usage=roles, model_usage=models),
                   samples=samples)


def _iso(stamp: Optional[str]) -> str:
    """run.json's "2026-12-01T10:00:00+0000" as inspect's ISO form (an empty string when unknown)."""
    import datetime as dt

    if not stamp:
        return ""
    for fmt in ("%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S"):
        try:
            return dt.datetime.strptime(stamp, fmt).isoformat()
        except ValueError:
            continue
    try:
        return dt.datetime.fromisoformat(stamp).isoformat()
    except ValueError:
        return ""


def write_log(log: Any, out: Path) -> None:
    """write_eval_log into a temporary file beside ``out``, then rename: never half a log under its name."""
    from inspect_ai.log import write_eval_log

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.stem}.", suffix=out.suffix or ".eval")
    os.close(fd)
    try:
        write_eval_log(log, tmp, format="eval" if out.suffix != ".json" else "json")
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


async def export(run: RunFolder, out: Path, output: Any, judge: Optional[str] = None) -> None:
    """The ``inspect`` export format (carryon_eval.app.exporters)."""
    log = build_log(run, judge, Path(out).parent)
    write_log(log, out)
    output.info(f"export: {len(log.samples or [])} samples, {len(log.results.scores)} metric groups -> {out}")
