"""Batch judging: the judge's requests as OpenAI Batch API files, and their results back into the cache.

    carryon-eval judge RUNDIR --batch-export DIR      # every judge request not in the cache -> DIR/*.jsonl
    (run the files: OpenAI's Batch API, or `vllm run-batch -i DIR/requests-0001.jsonl -o out-0001.jsonl ...`)
    carryon-eval judge RUNDIR --batch-import out-0001.jsonl ...   # fill the cache, then judge (no live call)

Export. The judge phase's plan (carryon_eval.judge.phase.plan_tasks: what is not judged yet, deduplicated) is
played against ``ExportingEndpoint``, a ChatEndpoint that answers from the run's response cache and
records every request the cache cannot answer instead of sending it. Each becomes one line of the
OpenAI Batch input format,

    {"custom_id": <response cache key>, "method": "POST", "url": "/v1/chat/completions", "body": {...}}

with the body the live client would send (model, messages, temperature, max_tokens, seed, logprobs). Files
are split at 50,000 requests or 200 MB (the Batch API's limits) and listed in ``manifest.json``. Only
first questions can be exported: the retry of an unparseable answer depends on that answer, so after an
import it is asked live (or exported by the next ``--batch-export``).

Import. Each line of a result file in the OpenAI Batch output format,

    {"id": ..., "custom_id": <key>, "response": {"status_code": 200, "request_id": ..., "body": <chat
     completion>}, "error": null}

is parsed like a live reply (carryon_eval.model.client) and stored under its custom_id in the response cache.
A line with an error, a non-200 status, an empty or unparseable reply is counted as failed and stored
nowhere, so the judge asks it again (live, or in the next export). The judge phase then runs as usual and
finds every answer in the cache.
"""
from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from carryon_eval.codec import Record
from carryon_eval.model.cache import ResponseCache, check_key, lookup
from carryon_eval.dataset.load import Benchmark
from carryon_eval.model.endpoint import ChatResult, EndpointConfig, UsageLedger, keyed_request
from carryon_eval.model.wire import parse_completion, request_body
from carryon_eval.judge.phase import plan_tasks, scoring_of
from carryon_eval.judge.scorer_file import ScorerRecords
from carryon_eval.run.folder import RunFolder, write_json_atomic
from carryon_eval.run.paths import shared_local
from carryon_eval.run.records import JudgeSettings
from carryon_eval.judge.scorers import pick_replies, reply_scorers

MAX_REQUESTS = 50_000
MAX_BYTES = 200 * 1024 * 1024
URL = "/v1/chat/completions"
MANIFEST = "manifest.json"


class BatchError(Exception):
    """An unusable batch folder or result file; one line."""


class Deferred(Exception):
    """The request went into the batch export instead of to a server. Not an EndpointError on purpose:
    a scorer's fallbacks (text after a refused schema, text after refused logprobs) must not take it
    for the endpoint's refusal, or the export would hold requests the live judge never sends."""


class ExportingEndpoint:
    """A ChatEndpoint that answers from the cache and collects every other request (then raises Deferred)."""

    def __init__(self, config: EndpointConfig, cache: ResponseCache) -> None:
        self.config, self.cache = config, cache
        self.usage: Optional[UsageLedger] = None
        self.requests: dict[str, dict[str, Any]] = {}        # custom_id -> Batch API request line

    async def chat(self, messages: list[dict], *, stage: str, **given: Any) -> ChatResult:
        key, params, hit = lookup(self.cache, self.config, messages, given)
        if hit is not None:
            return hit
        _, sent, _ = keyed_request(self.config, messages, params)   # the role's system prompt, as the client
        self.requests.setdefault(key, {"custom_id": key, "method": "POST", "url": URL,
                                       "body": request_body(self.config.model, sent, params)})
        raise Deferred("exported to the batch")

    async def check(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


# ---------------------------------------------------------------- export
@dataclass
class Exported:
    folder: Path
    requests: int
    files: list[str] = field(default_factory=list)


async def export_requests(run: RunFolder, bench: Benchmark, model: str, out: Path, *,
                          settings: JudgeSettings = JudgeSettings(),
                          scorers: Optional[Sequence[str]] = None, config: Optional[EndpointConfig] = None,
                          jobs: Optional[Sequence[Any]] = None) -> Exported:
    """Write every judge request of RUNDIR that the cache cannot answer to OUT (see the module docstring);
    the scorers are the suites' (as the judge phase's), or ``scorers`` on every reply. ``config``: the judge
    role's endpoint config, whose request options (temperature, reasoning effort, system prompt, extra body)
    the exported requests carry, keyed and sent as the live client would."""
    pending = await pending_requests(run, bench, model, settings=settings, scorers=scorers, config=config,
                                     jobs=jobs)
    return write_batch_files(out, list(pending.values()), model=model, run=run)


async def pending_requests(run: RunFolder, bench: Benchmark, model: str, *, settings: JudgeSettings = JudgeSettings(),
                           scorers: Optional[Sequence[str]] = None,
                           config: Optional[EndpointConfig] = None,
                           jobs: Optional[Sequence[Any]] = None) -> dict[str, dict[str, Any]]:
    """The first judge request of every case of RUNDIR not judged yet that the cache cannot answer, by
    custom_id (the Batch API request lines an export writes). A scorer asking several calls for one case asks
    its first, and once that answer is in the cache, the next ones; ``jobs``: the run's plan, for a scorer that
    judges only some of its replies (its ``pick`` hook)."""
    transcripts = run.transcripts()
    if not transcripts:
        raise BatchError(f"{run.path} has no transcripts (transcripts.jsonl); run the rollout first")
    scoring = scoring_of(transcripts, scorers, settings)
    made = reply_scorers(scoring.scorers, settings)
    pick_replies(made, jobs)
    done = {s.name: set(ScorerRecords(run, s, model).kept) for s in made}
    plan = plan_tasks(transcripts, bench, made, done, scoring)
    exporter = ExportingEndpoint(dataclasses.replace(config, base_url="batch", model=model) if config is not None
                                 else EndpointConfig(base_url="batch", model=model), ResponseCache(run.cache_dir))
    for scorer in made:
        for task in plan.tasks[scorer.name]:
            try:
                await scorer.score(exporter, task.case)
            except Deferred:
                pass
    return exporter.requests


def write_batch_files(out: Path, lines: list[dict[str, Any]], *, model: str, run: RunFolder) -> Exported:
    out.mkdir(parents=True, exist_ok=True)
    if any(out.glob("requests-*.jsonl")):
        raise BatchError(f"{out} already holds batch files; export into an empty folder")
    chunks: list[list[bytes]] = [[]]
    size = 0
    for line in lines:
        data = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")
        if chunks[-1] and (len(chunks[-1]) >= MAX_REQUESTS or size + len(data) > MAX_BYTES):
            chunks.append([])
            size = 0
        chunks[-1].append(data)
        size += len(data)
    exported = Exported(out, len(lines))
    files = []
    for i, chunk in enumerate(c for c in chunks if c):
        name = f"requests-{i + 1:04d}.jsonl"
        tmp = out / f".{name}.tmp"
        tmp.write_bytes(b"".join(chunk))
        tmp.replace(out / name)
        files.append({"file": name, "requests": len(chunk), "bytes": sum(map(len, chunk))})
        exported.files.append(name)
    where = shared_local(run.path, out)          # relative to the manifest's folder, never the machine's path
    write_json_atomic(out / MANIFEST, {
        "format": "OpenAI Batch API input (JSONL), endpoint /v1/chat/completions",
        "custom_id": "the response cache key of the request (carryon_eval.model.endpoint.cache_key)",
        "model": model, "run": where, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "requests": len(lines), "files": files,
        "import": f"carryon-eval judge {where} --batch-import <result file>... (run from this folder)"})
    return exported


# ---------------------------------------------------------------- import
@dataclass
class Imported:
    stored: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class _Response(Record):
    status_code: Any = None
    body: Any = None


@dataclass
class ResultLine(Record):
    """One line of an OpenAI Batch output file, the fields read from it (each as the file has it)."""
    custom_id: Any = None
    error: Any = None
    response: Optional[_Response] = None


def parse_result_line(row: dict[str, Any]) -> tuple[Optional[str], Optional[ChatResult], Optional[str]]:
    """(custom_id, result, problem) of one OpenAI Batch output line; result None when it failed."""
    from openai.types.chat import ChatCompletion

    line = ResultLine.from_json(row)
    key = line.custom_id
    if line.error:
        return key, None, f"error: {json.dumps(line.error)[:200]}"
    response = line.response or _Response()
    if response.status_code != 200:
        return key, None, f"HTTP {response.status_code}"
    body = response.body or {}
    try:
        ChatCompletion.model_validate(body)   # the whole shape, as the Batch API documents it
        result = parse_completion(body, want_logprobs=True)
    except Exception as exc:  # noqa: BLE001 - a malformed line is one failure, not the end of the import
        return key, None, f"unparseable reply ({type(exc).__name__})"
    if not result.text:
        return key, None, "empty reply"
    return key, result, None


def import_results(files: Sequence[Path], cache: ResponseCache, expected: Optional[set[str]] = None) -> Imported:
    """Store every successful line of the result files in the cache; count the rest as failed. Every file
    is checked whole before anything is stored: an empty file, a request file (the export given by mistake),
    a line that is not a Batch API result, or (with ``expected``, the custom_ids this run asks for) an id of
    another run is a BatchError naming the file and line."""
    rows: list[tuple[Path, int, dict[str, Any]]] = []
    for path in files:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except IsADirectoryError:
            raise BatchError(f"{path} is a folder; give the batch result file(s) (JSONL) the batch run wrote") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise BatchError(f"cannot read batch result file {path}: {getattr(exc, 'strerror', None) or exc}") from None
        found = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
        if not found:
            raise BatchError(f"{path} is empty; expected the OpenAI Batch API result lines of the exported requests")
        for n, line in found:
            try:
                row = json.loads(line)
            except ValueError:
                row = None
            if isinstance(row, dict) and "body" in row and "method" in row and "response" not in row:
                raise BatchError(f"{path} line {n} is a batch request line (the exported requests file), not a "
                                 "result; give the output file the batch run wrote")
            key = ResultLine.from_json(row).custom_id if isinstance(row, dict) else None
            if not (isinstance(key, str) and ("response" in row or "error" in row)):
                raise BatchError(f"{path} line {n} is not an OpenAI batch result line")
            try:
                check_key(key)                       # a custom_id that is not a cache key is not ours
            except (ValueError, TypeError, AttributeError):
                raise BatchError(f"{path} line {n} is not an OpenAI batch result line") from None
            if expected is not None and key not in expected and key not in cache:
                raise BatchError(f"{path} line {n}: custom_id {key[:12]}... is not a judge request of this run "
                                 "(a result file of another run or judge?); import the results of this run's "
                                 "--batch-export")
            rows.append((path, n, row))
    done = Imported()
    for path, n, row in rows:
        try:
            key, result, problem = parse_result_line(row)
        except (ValueError, TypeError, AttributeError):
            raise BatchError(f"{path} line {n} is not an OpenAI batch result line") from None
        if result is None:
            done.failed += 1
            done.errors.append(f"{key}: {problem}")
            continue
        cache.put(str(key), result.to_payload())
        done.stored += 1
    return done
