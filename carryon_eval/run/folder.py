"""The run folder: what one evaluation run writes, and how a rerun picks up where it stopped.

    RUNDIR/
      run.json            settings, written once at the start (atomically); never holds an API key
      transcripts.jsonl   one schema.Transcript per FINISHED conversation, append-only, fsynced per line
      failures.jsonl      conversations that could not be finished, with the reason (retried on rerun)
      cache/              ResponseCache of every model call (target, user simulator, judges)
      ...                 judgments, results.json, report.html (written by the judge and report phases)

A rerun with the same settings resumes: conversations already in transcripts.jsonl are skipped,
and the cache makes the already generated turns of an unfinished conversation free.
"""
from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Optional

import jsonlines

from carryon_eval.run.records import RunMeta
from carryon_eval.schema import Transcript

RUN_FILE = "run.json"
TRANSCRIPTS_FILE = "transcripts.jsonl"
FAILURES_FILE = "failures.jsonl"
CACHE_DIR = "cache"

class RunError(Exception):
    """An unusable run folder; the message says why and what to do."""


@contextlib.contextmanager
def atomic_writer(path: Path) -> Iterator[IO[str]]:
    """A text file handle whose content replaces `path` only once it is complete and on disk: a crash
    leaves the old file or nothing, never half a file. Every file of a run folder is written this way."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)               # mkstemp makes 0600; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, obj: Any) -> None:
    with atomic_writer(path) as fh:
        json.dump(obj, fh, indent=2, ensure_ascii=False)
        fh.write("\n")


def write_jsonl_atomic(path: Path, records: Iterable[dict[str, Any]]) -> None:
    with atomic_writer(path) as fh, jsonlines.Writer(fh) as writer:
        writer.write_all(records)


def write_text_atomic(path: Path, text: str) -> None:
    with atomic_writer(path) as fh:
        fh.write(text)


def jsonl_text(records: Iterable[Any]) -> str:
    """Records as JSON lines, as every JSONL file of the package writes them (jsonlines' default form:
    UTF-8 text, not ASCII-escaped, one object and a newline per record)."""
    buffer = io.StringIO()
    with jsonlines.Writer(buffer) as writer:
        writer.write_all(records)
    return buffer.getvalue()


def _append_line(path: Path, obj: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as fh, jsonlines.Writer(fh) as writer:
        writer.write(obj)
        fh.flush()
        os.fsync(fh.fileno())


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The complete JSON object lines of an append-only file: a torn last line (killed mid-write, so
    without its newline) is ignored, and so is a corrupt or non-object line. Every JSONL reader of a run
    folder goes through this one."""
    if not path.is_file():
        return
    with open(path, encoding="utf-8") as fh:
        complete = itertools.takewhile(lambda line: line.endswith("\n"), fh)
        with jsonlines.Reader(complete) as reader:
            yield from reader.iter(type=dict, skip_invalid=True, skip_empty=True)


def _repair_tail(path: Path) -> None:
    """Cut a torn last line so that the next append starts on a fresh line."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    with open(path, "r+b") as fh:
        fh.truncate(data.rfind(b"\n") + 1)
        fh.flush()
        os.fsync(fh.fileno())


class RunFolder:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    @property
    def run_file(self) -> Path:
        return self.path / RUN_FILE

    @property
    def transcripts_file(self) -> Path:
        return self.path / TRANSCRIPTS_FILE

    @property
    def failures_file(self) -> Path:
        return self.path / FAILURES_FILE

    @property
    def cache_dir(self) -> Path:
        return self.path / CACHE_DIR

    # ------------------------------------------------------------ run.json
    def exists(self) -> bool:
        return self.run_file.is_file()

    def read_meta(self) -> RunMeta:
        if not self.path.is_dir():
            raise RunError(f"{self.path} is not a run folder (it does not exist)")
        if not self.exists():
            raise RunError(f"{self.path} is not a run folder (no {RUN_FILE})")
        try:
            meta = json.loads(self.run_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RunError(f"{self.run_file} is unreadable: {exc}") from None
        if not isinstance(meta, dict):
            raise RunError(f"{self.run_file} is not a JSON object")
        try:
            return RunMeta.from_json(meta)
        except (TypeError, ValueError, AttributeError) as exc:
            raise RunError(f"{self.run_file} is not a run.json this version reads: {exc}") from None

    def check(self, meta: RunMeta) -> None:
        """Raise RunError unless `meta` can start a new run here or resume the one already here."""
        if self.path.exists() and not self.path.is_dir():
            raise RunError(f"{self.path} exists and is not a folder")
        if self.exists():
            old, new = self.read_meta().compatibility(), meta.compatibility()
            for name, value in old.items():
                if value != new[name]:
                    raise RunError(
                        f"{self.path} holds a run with other settings ({name}: "
                        f"{json.dumps(value)} there, {json.dumps(new[name])} now); "
                        "use another --out folder, or the same settings to resume")
            self.check_dataset(self.read_meta(), meta.dataset.content_sha256)
        elif self.path.is_dir() and any(self.path.iterdir()):
            raise RunError(f"{self.path} is not empty and has no {RUN_FILE}; use an empty or new --out folder")

    def check_dataset(self, meta: RunMeta, fingerprint: Optional[dict[str, str]]) -> None:
        """Raise RunError when the dataset's rows (`fingerprint`, Benchmark.fingerprint) are not those this
        run started on: transcripts of the old and the new rows must never be mixed."""
        changed = meta.dataset.changed_configs(fingerprint)
        if changed:
            raise RunError(f"{self.path} was started on other rows of dataset {meta.dataset.source}: its "
                           f"{', '.join(changed)} changed since; restore that dataset to resume, or use another "
                           "--out folder for the new one")

    def start(self, meta: RunMeta) -> RunMeta:
        """Create the run with `meta` as run.json, or resume the compatible run already here.

        Returns the run.json in force (the existing one when resuming)."""
        self.check(meta)
        if self.exists():
            meta = self.read_meta()
        else:
            try:
                write_json_atomic(self.run_file, meta.to_json())
            except OSError as exc:
                raise RunError(f"cannot write {self.run_file}: {exc.strerror or exc}") from None
        self.prepare()
        return meta

    def prepare(self) -> None:
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            _repair_tail(self.transcripts_file)
            _repair_tail(self.failures_file)
        except OSError as exc:
            raise RunError(f"cannot use run folder {self.path}: {exc.strerror or exc}") from None

    # ------------------------------------------------------------ transcripts
    def transcripts(self) -> list[Transcript]:
        return [Transcript.from_dict(d) for d in read_jsonl(self.transcripts_file)]

    def finished_ids(self) -> set[str]:
        return {d["conversation_id"] for d in read_jsonl(self.transcripts_file)}

    def append(self, transcript: Transcript) -> None:
        _append_line(self.transcripts_file, transcript.to_dict())

    # ------------------------------------------------------------ failures
    def record_failure(self, conversation_id: str, reason: str) -> None:
        _append_line(self.failures_file, {"conversation_id": conversation_id, "reason": reason})

    def failures(self) -> dict[str, str]:
        """Conversations that failed and were not finished by a later rerun: id -> latest reason."""
        done = self.finished_ids()
        return {d["conversation_id"]: d["reason"] for d in read_jsonl(self.failures_file)
                if d["conversation_id"] not in done}
