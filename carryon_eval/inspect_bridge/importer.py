"""`carryon-eval import RUN.eval --out RUNDIR`: an inspect-ai log of the carryonbench task as a run folder.

The folder is what `carryon-eval` itself writes (run.json, transcripts.jsonl, failures.jsonl, the judgment files,
judge.json, usage.json), so `carryon-eval report RUNDIR` computes every number with the project's metric
functions. run.json is the task's own (its metadata) with the log's models as roles; transcripts come from the
samples' stores, judgments from the scores' metadata, in plan order. The folder is written beside its final
place and renamed into it: a failed import leaves nothing.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from carryon_eval.app.exporters import ExportError
from carryon_eval.codec import Record
from carryon_eval.judge.store import record_pass
from carryon_eval.run.records import PASS_FIELDS, JudgePass, RoleRecord, RunMeta, ScorerTally
from carryon_eval.run.folder import Failure, RunFolder, add_usage, write_jsonl_atomic
from carryon_eval.schema import Transcript
from carryon_eval.judge.scorers import reply_scorers, reply_shape
from carryon_eval.judge.store import judgment_file
from carryon_eval.inspect_bridge.export import PlayedMeta
from carryon_eval.inspect_bridge.task import FAILURE_KEY, GRADER_ROLE, RUN_KEY, TRANSCRIPT_KEY, USER_ROLE, ScoreMetadata

SCORER_NAME = "carryon_judges"


@dataclass
class Stamp(Record):
    """Who gave a stored judgment record and how (every scorer's record carries them: judge.scorer_file.record_row)."""
    judge_model: str
    via: Optional[str] = None


def _read(path: Path) -> Any:
    from inspect_ai.log import read_eval_log

    if not path.is_file():
        raise ExportError(f"{path}: no such inspect log")
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # noqa: BLE001 - whatever inspect cannot read: one line
        raise ExportError(f"{path}: not an inspect eval log inspect-ai reads ({type(exc).__name__}: {exc})") from None
    if RUN_KEY not in (log.eval.metadata or {}) and RUN_KEY not in (log.eval.task_attribs or {}):
        raise ExportError(f"{path}: not a log of the carryonbench task (no {RUN_KEY} in its metadata)")
    if not log.samples:
        raise ExportError(f"{path}: the log has no samples")
    return log


def _server_name(model: Optional[str]) -> str:
    """inspect's "provider/[service/]model" as the model name a run.json records (the last part)."""
    return (model or "unknown").rsplit("/", 1)[-1]


def _role(config: Any, name: Optional[str] = None) -> RoleRecord:
    return RoleRecord(base_url=getattr(config, "base_url", None) or "", model=name or _server_name(config.model),
                      api_key_env="(inspect provider)")


def run_meta(log: Any, transcripts: list[dict[str, Any]], judge_model: Optional[str]) -> RunMeta:
    meta = RunMeta.from_json((log.eval.metadata or {}).get(RUN_KEY) or log.eval.task_attribs[RUN_KEY])
    roles = log.eval.model_roles or {}
    played = [Transcript.from_dict(t) for t in transcripts]
    target = played[0].target_model if played else _server_name(log.eval.model)
    users = [u for t in played for u in [PlayedMeta.from_json(t.meta).user_model] if u]
    meta.roles = {"target": RoleRecord(base_url=log.eval.model_base_url or "", model=target,
                                       api_key_env="(inspect provider)")}
    if USER_ROLE in roles:
        meta.roles.update(user=_role(roles[USER_ROLE], users[0] if users else None))
    if GRADER_ROLE in roles:
        meta.roles.update(judge=_role(roles[GRADER_ROLE], judge_model))
    return meta


def _judge_pass(records: dict[str, list[dict[str, Any]]], meta: RunMeta, judge_model: str,
                failed: int) -> JudgePass:
    made = {s.name: s for s in reply_scorers(list(records), meta.judge)}
    tallies = {}
    for name, rows in records.items():
        field = reply_shape(made[name]).value_field
        tallies[name] = ScorerTally(records_total=len(rows), records_written=len(rows),
                                    unscored=sum(r.get(field) is None for r in rows), judged=len(rows),
                                    via=dict(Counter(str(Stamp.from_json(r).via) for r in rows)))
    return JudgePass(judge_model=judge_model, judge={"model": judge_model, "via": "inspect-ai"},
                     scoring={n: v for n, v in meta.judge.pass_fields().items() if PASS_FIELDS[n]},   # its leading ones
                     generation={"temperature": 0.0, "max_tokens": meta.judge.max_tokens},
                     prompts={n: ref for s in made.values() for n, ref in s.prompt_refs().items()},
                     context={s.name: reply_shape(s).context for s in made.values()}, seconds=0.0, tallies=tallies,
                     complete=failed == 0, judge_format=meta.judge.judge_format)


def _usage(log: Any) -> dict[str, dict[str, int]]:
    """The log's usage per role as usage-ledger rows (role/model -> tokens)."""
    rows: dict[str, dict[str, int]] = {}
    stage_of = {"target": "target", "user": "user_simulator", "grader": "judge"}
    for role, u in (log.stats.role_usage or {}).items():
        rows[f"{stage_of.get(role, role)}/{role}"] = {"prompt_tokens": int(u.input_tokens),
                                                      "completion_tokens": int(u.output_tokens)}
    if "target" not in log.stats.role_usage and log.stats.model_usage:
        target = log.stats.model_usage.get(log.eval.model)
        if target is not None:
            rows["target/target"] = {"prompt_tokens": int(target.input_tokens),
                                     "completion_tokens": int(target.output_tokens)}
    return rows


def import_log(path: Path, out: Path) -> str:
    """Write the run folder of inspect log ``path`` into ``out`` (new or empty); returns the summary line."""
    log = _read(Path(path))
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"{out} exists and is not an empty folder; import into a new folder")
    order = [s for s in log.samples]
    transcripts, failures = [], []
    records: dict[str, list[dict[str, Any]]] = {}
    failed = 0
    for sample in order:
        data = sample.store.get(TRANSCRIPT_KEY)
        if data is None:
            failures.append(Failure(str(sample.id), sample.store.get(FAILURE_KEY)
                                    or (sample.error.message if sample.error else "not played")).to_json())
            continue
        transcripts.append(data)
        score = (sample.scores or {}).get(SCORER_NAME)
        if score is None:
            raise ExportError(f"{path}: sample {sample.id} has no {SCORER_NAME} score")
        info = ScoreMetadata.of(score)
        for name, rows in info.records.items():
            records.setdefault(name, []).extend(rows)
        failed += len(info.failed or [])
    judges = sorted({Stamp.from_json(r).judge_model for rows in records.values() for r in rows})
    if len(judges) > 1:
        raise ExportError(f"{path}: judged by several models ({', '.join(judges)}); expected one grader")
    judge_model = judges[0] if judges else None
    meta = run_meta(log, transcripts, judge_model)

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    run = RunFolder(tmp)
    try:
        run.write_meta(meta)
        write_jsonl_atomic(run.transcripts_file, transcripts)
        if failures:
            write_jsonl_atomic(run.failures_file, failures)
        for name, rows in records.items():
            write_jsonl_atomic(run / judgment_file(name), rows)
        if judge_model is not None:
            record_pass(run, _judge_pass(records, meta, judge_model, failed))
        run.cache_dir.mkdir()
        add_usage(run, _usage(log))
        os.chmod(tmp, 0o755)
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return (f"import: {len(transcripts)} conversations ({len(failures)} not played), "
            f"{sum(map(len, records.values()))} judgments -> {out}; next: carryon-eval report {out}")
