"""The run folder: what one evaluation run writes, and how a rerun picks up where it stopped.

    RUNDIR/
      run.json            settings, written once at the start (atomically); never holds an API key
      transcripts.jsonl   one schema.Transcript per FINISHED conversation, append-only, fsynced per line
      failures.jsonl      conversations that could not be finished, with the reason (retried on rerun)
      cache/              ResponseCache of every model call (target, user simulator, judges): one SQLite database
      ...                 judgments, results.json, report.html (written by the judge and report phases)

Every file name of a run folder is spelled here once (the constants below; ``RunFolder`` has a property
for each; a wing's own files are registered by the wing with ``register_file``), the judgment files are read
through one view per RunFolder (``RunFolder.judgments()``: each file parsed once while it is unchanged), and
every JSONL file of it is read through ``read_jsonl``: each line must be UTF-8 JSON of the
record type registered for the file (``register_record``) with its values in range, or the read stops
with a ``RunFileError`` naming the file and the line. A torn last line (a write cut short by a kill) is
not a record: it is skipped, and ``prepare`` cuts it off before the next append, saying so.

A rerun with the same settings resumes: conversations already in transcripts.jsonl are skipped,
and the cache makes the already generated turns of an unfinished conversation free.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import json
import logging
import os
import re
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Optional

import jsonlines

from carryon_eval.codec import Record
from carryon_eval.model.redact import redact
from carryon_eval.run.paths import local_path, shared_path
from carryon_eval.run.records import RUN_SCHEMA_VERSION, FileStamp, RunMeta
from carryon_eval.schema import JudgeAnswer, Transcript

log = logging.getLogger("carryon.run")

# ---------------------------------------------------------------- every file of a run folder
RUN_FILE = "run.json"
TRANSCRIPTS_FILE = "transcripts.jsonl"
FAILURES_FILE = "failures.jsonl"
CACHE_DIR = "cache"
USAGE_FILE = "usage.json"
LOCK_FILE = ".carryon.lock"      # held while a command writes the folder (carryon_eval.run.lock)
JUDGMENT_SUFFIX = "_judgments.jsonl"


def judgment_file(scorer: str) -> str:
    """The file name of one scorer's records in a run folder."""
    return f"{scorer}{JUDGMENT_SUFFIX}"


ANSWERS_SUFFIX = "_answers.jsonl"


def answers_file(scorer: str) -> str:
    """The file name of the raw answers of a scorer whose one answer gives several records (each stored once,
    its records naming theirs by ``answer``: carryon_eval.judge.scorer_file)."""
    return f"{scorer}{ANSWERS_SUFFIX}"


JUDGE_META_FILE = "judge.json"
RESULTS_FILE = "results.json"
TABLE_FILE = "table.md"
HTML_FILE = "report.html"
SCORES_FILE = "conversation_scores.jsonl"
PLOTS_DIR = "plots"
PAGES_DIR = "report_queries"         # report.html's transcripts, at most 20 pages of queries, beside it (large runs)
AGREEMENT_FILE = "agreement.json"
AGREEMENT_HTML = "agreement.html"


@dataclass(frozen=True)
class RunFile:
    """A file of a run folder: its name (a pattern with ``*`` for a family, e.g. one per condition), what it
    holds and who writes it. The stages' files are declared below; a wing declares its own in its suite
    record (``Suite.files``), and the registry records them here."""
    name: str
    holds: str
    owner: str = "carryon-eval"


_FILES: dict[str, RunFile] = {}


def register_file(file: RunFile) -> RunFile:
    """Declare a file of a run folder (once per name; a second owner of a name is an error)."""
    old = _FILES.get(file.name)
    if old is not None and old.owner != file.owner:
        raise ValueError(f"run file {file.name!r} is {old.owner}'s; {file.owner} cannot declare it again")
    _FILES[file.name] = file
    return file


def owner_of(name: str) -> Optional[RunFile]:
    """The declared file a name in a run folder is (None: not one carryon-eval writes)."""
    return _FILES.get(name) or next((f for f in _FILES.values() if fnmatch.fnmatchcase(name, f.name)), None)


for _file in (RunFile(RUN_FILE, "the run's settings (run.json)"),
              RunFile(TRANSCRIPTS_FILE, "one transcript per finished conversation"),
              RunFile(FAILURES_FILE, "conversations that could not be finished, with the reason"),
              RunFile(CACHE_DIR, "the response cache of every model call (one SQLite database, responses.sqlite3)"),
              RunFile(USAGE_FILE, "calls and tokens per stage and model"),
              RunFile(LOCK_FILE, "held while a command writes the folder: who (empty when none)"),
              RunFile(f"*{JUDGMENT_SUFFIX}", "one scorer's judgment records, of every judge model"),
              RunFile(f"*{ANSWERS_SUFFIX}", "the raw answers of a scorer whose one answer gives several records "
                      "(grouped Ben-Util), each once; its records name theirs by `answer`"),
              RunFile(JUDGE_META_FILE, "every judge's latest pass"),
              RunFile(RESULTS_FILE, "the run's numbers"),
              RunFile(TABLE_FILE, "the run's numbers as a Markdown table"),
              RunFile(HTML_FILE, "the run's report page"),
              RunFile(SCORES_FILE, "one scored record per conversation"),
              RunFile(PLOTS_DIR, "the report's plots as PNG"),
              RunFile(PAGES_DIR, "the report's transcripts, at most 20 pages of consecutive queries (large runs)"),
              RunFile(AGREEMENT_FILE, "judges against people (carryon-eval human)"),
              RunFile(AGREEMENT_HTML, "judges against people, as a page")):
    register_file(_file)


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
        fh.write(redact(json.dumps(obj, indent=2, ensure_ascii=False)) + "\n")


def _json_line(obj: Any) -> str:
    return redact(json.dumps(obj, ensure_ascii=False))


def json_line(obj: Any) -> bytes:
    """One record as the line ``jsonl_writer`` writes, newline included, as bytes (for a writer that needs to
    know where each of its lines is)."""
    return (_json_line(obj) + "\n").encode("utf-8")


def jsonl_writer(fh: IO[str]) -> jsonlines.Writer:
    """The one way run files are written as JSON lines: jsonlines' framing, every line key-masked (the caller
    owns the file: flushing, fsync, closing)."""
    return jsonlines.Writer(fh, dumps=_json_line)


def write_jsonl_atomic(path: Path, records: Iterable[dict[str, Any]]) -> None:
    with atomic_writer(path) as fh:
        jsonl_writer(fh).write_all(records)


def write_text_atomic(path: Path, text: str) -> None:
    with atomic_writer(path) as fh:
        fh.write(redact(text))


def _append_line(path: Path, obj: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        jsonl_writer(fh).write(obj)
        fh.flush()
        os.fsync(fh.fileno())


@dataclass
class UsageFile(Record):
    """RUNDIR/usage.json: calls and tokens per "stage/model" ({"calls": N, ...}) over every command run on the folder."""
    schema_version: int = 1
    usage: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)


def read_usage(run: "RunFolder") -> dict[str, dict[str, int]]:
    """RUNDIR/usage.json: calls and tokens per "stage/model" over every command run on the folder ({} when
    absent: older run folders did not record it). A file that is there but unreadable is a RunError: its
    totals would otherwise be silently restarted from zero."""
    path = run.usage_file
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        usage = UsageFile.from_json(data).usage if "usage" in data else None
        return {str(k): {str(f): int(n) for f, n in row.items()} for k, row in usage.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RunError(f"{path}: unreadable ({type(exc).__name__}); expected the JSON object carryon-eval writes, "
                       f"{{\"usage\": {{\"stage/model\": {{\"calls\": N, ...}}}}}}; restore it or delete it "
                       "(its call and token totals restart from zero)") from None


def add_usage(run: "RunFolder", snapshot: dict[str, dict[str, int]]) -> None:
    """Add one command's usage ledger (UsageLedger.snapshot) to RUNDIR/usage.json, atomically."""
    if not snapshot or not run.path.is_dir():
        return
    total = read_usage(run)
    for key, row in snapshot.items():
        mine = total.setdefault(key, {})
        for field, n in row.items():
            mine[field] = mine.get(field, 0) + int(n)
    write_json_atomic(run.usage_file, UsageFile(usage=dict(sorted(total.items()))).to_json())


class RunFileError(RunError):
    """A line of a run file that is not a record this version wrote: names the file and the line."""


@dataclass
class Failure(Record):
    """One line of failures.jsonl."""
    conversation_id: str
    reason: str


Check = Callable[[Any], Optional[str]]


@dataclass(frozen=True)
class _Registered:
    """A JSONL run file's record type, its pydantic validator and its range check."""
    record_type: type
    validator: Any
    check: Optional[Check]


_RECORDS: dict[str, _Registered] = {}      # file name -> its record type


_FIRST: dict[str, None] = {}      # judgment files whose judges are looked for first (Judgments.files)


def register_record(file: str, record_type: type, check: Optional[Check] = None, *, first: bool = False) -> None:
    """Declare the record type of a JSONL run file: ``read_jsonl`` validates every line of ``file`` as
    ``record_type`` (types strictly: a verdict "maybe" or a score "3" is wrong) and ``check(record)``
    (a reason when a value is out of range, else None). ``first``: a judgment file listed before the others
    (in registration order) wherever the judges of a run are looked for."""
    from pydantic import TypeAdapter

    _RECORDS[file] = _Registered(record_type, TypeAdapter(record_type), check)
    if first:
        _FIRST[file] = None


def record_type(file: str) -> Optional[type]:
    """The record type registered for a JSONL run file (None: none is)."""
    found = _RECORDS.get(file)
    return found.record_type if found is not None else None


def _check_transcript(t: Transcript) -> Optional[str]:
    if not t.condition:
        return "an empty condition"
    if not t.messages:
        return "a transcript without messages"
    for i, m in enumerate(t.messages):
        if m.role not in ("user", "assistant"):
            return f"messages[{i}].role {m.role!r} is neither 'user' nor 'assistant'"
        if m.turn < 1:
            return f"messages[{i}].turn {m.turn} is below 1"
    return None


register_record(TRANSCRIPTS_FILE, Transcript, _check_transcript)
register_record(FAILURES_FILE, Failure)


def _problem(error: Any) -> str:
    """One line out of a pydantic ValidationError: where and what."""
    first = error.errors()[0]
    if first["type"] == "json_invalid":
        return "not a JSON line"
    where = ".".join(str(p) for p in first["loc"])
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{where + ': ' if where else ''}{first['msg'][:1].lower()}{first['msg'][1:]}{more}"


def read_jsonl(path: Path, *, on_bad: Optional[Callable[[RunFileError], None]] = None) -> Iterator[dict[str, Any]]:
    """The records of a JSONL run file, as dicts, in file order. Every JSONL reader of a run folder goes
    through this one (or ``scan_jsonl``). A torn last line (killed mid-write, so without its newline) is
    skipped. Any other line that is not UTF-8, not JSON, not the file's record type or out of range raises
    RunFileError naming the file and line (or, with ``on_bad``, is handed to it and skipped: a phase that redoes it)."""
    return (row for row, _, _ in scan_jsonl(path, on_bad=on_bad))


def read_records(path: Path) -> Iterator[Any]:
    """The lines of a JSONL run file as the record type registered for it, one at a time (validated as
    ``read_jsonl`` validates them, a bad line one RunFileError naming it), each line parsed once, never into a dict
    first. For a reader that needs the records' own fields only; a file without a registered type is a RunError."""
    if Path(path).name not in _RECORDS:
        raise RunError(f"{path}: no record type is registered for this file (the wing of its scorer is not "
                       "loaded); it cannot be read as records")
    return (record for record, _, _ in scan_jsonl(path, as_record=True))


def scan_jsonl(path: Path, *, on_bad: Optional[Callable[[RunFileError], None]] = None, as_record: bool = False
               ) -> Iterator[tuple[Any, int, int]]:
    """``read_jsonl``'s records with where each line is in the file: (record, byte offset, length with its
    newline). The file is read a line at a time: memory does not grow with it. ``as_record``: each record as its
    registered type (``read_records``), not as a dict (a file without one: dicts)."""
    path = Path(path)
    if not path.is_file():               # absent (nothing yet), or not a regular file to read records from
        return
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return
    except OSError as exc:
        raise RunError(f"cannot read {path}: {exc.strerror or exc}") from None
    registered = _RECORDS.get(path.name)
    validator, check = (registered.validator, registered.check) if registered is not None else (None, None)
    as_record = as_record and validator is not None
    offset = 0
    with fh:
        for n, raw in enumerate(fh, start=1):
            start, offset = offset, offset + len(raw)
            if not raw.endswith(b"\n"):       # the torn last line
                return
            if not raw.strip():
                continue
            row, problem = _parse_line(raw, validator, check, as_record)
            if problem is not None:
                error = RunFileError(f"{path} line {n}: {problem}; this line was not written by carryon-eval "
                                     "(restore the file, or delete the line to redo what it held)")
                if on_bad is None:
                    raise error
                on_bad(error)
                continue
            yield row, start, offset - start


def _parse_line(raw: bytes, validator: Any, check: Optional[Check], as_record: bool = False
                ) -> tuple[Any, Optional[str]]:
    """(the line's record as a dict, or ``as_record`` as its registered type; None), or (None, what is wrong with
    it)."""
    from pydantic import ValidationError

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {exc.start + 1})"
    try:
        problem = None
        if validator is not None:
            record = validator.validate_json(text, strict=True)
            problem = check(record) if check is not None else None
            if as_record:
                return record, problem
        row = json.loads(text)
    except ValidationError as exc:
        return None, _problem(exc)
    except ValueError:
        return None, "not a JSON line"
    if problem is None and not isinstance(row, dict):
        problem = "not a JSON object"
    return row, problem


def _repair_tail(path: Path) -> None:
    """Cut a torn last line so that the next append starts on a fresh line, and say so."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    keep = data.rfind(b"\n") + 1
    with open(path, "r+b") as fh:
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
    log.warning("%s line %d was cut short (the run was killed while writing it); removed, it is redone",
                path, data.count(b"\n", 0, keep) + 1)


def has_empty_reply(transcript: Transcript) -> bool:
    """A reply of the target stayed empty: the transcript is kept (and counted unscored) but not final, the
    next rollout asks that conversation again."""
    return any(m.role == "assistant" and not m.content for m in transcript.messages)


@dataclass
class _Source(Record):
    source: Any = None


@dataclass
class _Model(Record):
    model: Any = None


@dataclass
class _Roles(Record):
    target: Optional[_Model] = None


@dataclass
class _Readable(Record):
    """What a run.json must hold for this version to read it, each field as the file has it (a record where the
    file has an object)."""
    schema_version: Any = 1
    dataset: Optional[_Source] = None
    roles: Optional[_Roles] = None
    conditions: Any = None


def _text(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def _meta_problem(meta: dict[str, Any]) -> Optional[str]:
    """Why a run.json cannot be read by this version (None when it can): a newer schema, or lost fields."""
    read = _Readable.from_json(meta)
    version = read.schema_version
    if not isinstance(version, int) or isinstance(version, bool):
        return f"has schema_version {json.dumps(version)}, not a number"
    if version > RUN_SCHEMA_VERSION:
        return (f"has schema_version {version}, newer than this carryon-eval reads ({RUN_SCHEMA_VERSION}); "
                "upgrade carryonbench to read it")
    target, conditions = read.roles.target if isinstance(read.roles, _Roles) else None, read.conditions
    lost = [name for name, ok in (
        ("dataset.source", isinstance(read.dataset, _Source) and _text(read.dataset.source)),
        ("roles.target.model", isinstance(target, _Model) and _text(target.model)),
        ("conditions", isinstance(conditions, list) and bool(conditions) and all(map(_text, conditions)))) if not ok]
    if lost:
        return (f"lacks {', '.join(lost)} (or holds something else there); it is not a run.json this version "
                "wrote: restore it, or start the run again in a new --out folder")
    return None


Stamp = tuple[int, int, int]


class Judgments:
    """The judgment files of one run folder (``*_judgments.jsonl``, judge.json), read through this one view: a
    file is parsed once while it is unchanged (same inode, size and modification time), however many readers
    of a command ask for it; one the judge phase has appended to since is parsed again. ``parses`` counts the
    parses per file name. A judgment file's records come as the record type registered for it (its scorer
    declares it: carryon_eval.judge.scorers.register), each line parsed straight into one: readers read fields."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.parses: Counter[str] = Counter()
        self._cache: dict[str, tuple[Stamp, Any]] = {}
        self._judges: dict[str, tuple[Stamp, list[str]]] = {}

    def _stamp(self, name: str) -> Optional[Stamp]:
        try:
            st = (self.folder / name).stat()
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _read(self, name: str, parse: Callable[[Path], Any], absent: Any) -> Any:
        stamp = self._stamp(name)
        if stamp is None:
            return absent
        cached = self._cache.get(name)
        if cached is None or cached[0] != stamp:
            cached = (stamp, parse(self.folder / name))
            self._cache[name] = cached
            self.parses[name] += 1
        return cached[1]

    def files(self) -> list[str]:
        """The judgment files present: those registered ``first`` (in their order), then the others by name."""
        first = list(_FIRST)
        others = sorted(p.name for p in self.folder.glob(f"*{JUDGMENT_SUFFIX}") if p.name not in first)
        return [*first, *others]

    def records(self, name: str, judge: Optional[str] = None) -> list[Any]:
        """The records of one judgment file (``judgment_file(scorer)``), of every judge or ``judge``'s only, as the
        record type registered for the file (``register_record``: its scorer's, carryon_eval.judge.scorers.register),
        each line parsed once, straight into it ([] when absent); a raw answer stored once (``answer``) put back in
        its records' ``raw``. The records are shared by the readers of the view: they read them, never change them."""
        records = self._read(name, self._parse_records, [])
        return list(records) if judge is None else [r for r in records if r.judge_model == judge]

    def _parse_records(self, path: Path) -> list[Any]:
        records = list(read_records(path))
        if "answer" in getattr(record_type(path.name), "__dataclass_fields__", {}):
            named = [r for r in records if r.raw is None and r.answer is not None]
            texts = self.answers(path.name[:-len(JUDGMENT_SUFFIX)]) if named else {}
            for r in named:
                r.raw = texts.get(r.answer)
        return records

    def answers(self, scorer: str) -> dict[str, str]:
        """{answer id: raw answer} of a scorer whose records name their answers ({} without its answers file)."""
        return self._read(answers_file(scorer), _answer_texts, {})

    def judges(self, name: str, recorded: Optional[FileStamp] = None) -> list[str]:
        """The judge models with records in one judgment file, in order of first appearance, without parsing it:
        as ``recorded`` says (judge.json's record of the file as the last pass left it) while the file is that one, as the judge phase that wrote it in this command said (``know_judges``), or found
        by a byte search of its ``"judge_model": "..."`` fields (a file written otherwise is parsed); once per
        version of the file."""
        stamp = self._stamp(name)
        if stamp is None:
            return []
        known = self._judges.get(name)
        if known is None or known[0] != stamp:
            if recorded is not None and (recorded.bytes, recorded.mtime_ns) == stamp[1:]:
                known = (stamp, [str(j) for j in recorded.judges])
            else:
                known = (stamp, _judges_in(self.folder / name))
            self._judges[name] = known
        return list(known[1])

    def know_judges(self, name: str, judges: Iterable[str]) -> None:
        """The judges of a judgment file as its writer just wrote it (no search needed while it is unchanged)."""
        stamp = self._stamp(name)
        if stamp is not None:
            self._judges[name] = (stamp, list(judges))

    def known(self) -> dict[str, FileStamp]:
        """The judgment files whose judges this view knows as they are now, by name (what judge.json records of
        them: ``judges``' ``recorded``)."""
        return {name: FileStamp(list(judges), stamp[1], stamp[2])
                for name, (stamp, judges) in sorted(self._judges.items()) if self._stamp(name) == stamp}

    def of(self, scorer: str, judge: Optional[str] = None) -> list[Any]:
        """One scorer's records (``judge``'s only, when given), of the record type registered for its file."""
        return self.records(judgment_file(scorer), judge)

    def meta(self, parse: Callable[[Path], Any]) -> Any:
        """judge.json parsed by ``parse`` (None when absent)."""
        return self._read(JUDGE_META_FILE, parse, None)


def _answer_texts(path: Path) -> dict[str, str]:
    """{answer id: raw answer} of an answers file."""
    return {a.answer: a.raw for a in map(JudgeAnswer.from_json, read_jsonl(path))}


_JUDGE_FIELD = re.compile(rb'"judge_model": ("(?:[^"\\]|\\.)*")')
_CHUNK = 1 << 24


def _judges_in(path: Path) -> list[str]:
    """The judge models of a judgment file in order of first appearance: each line carryon-eval writes holds
    ``"judge_model": "NAME"`` once, which a JSON string value cannot (its quotes are escaped), so a byte search
    finds them; a file where some line has no such field (written otherwise, or a record without a judge) is
    parsed instead."""
    seen: dict[str, None] = {}
    try:
        with open(path, "rb") as fh:
            while True:
                chunk = fh.read(_CHUNK)
                if not chunk:
                    break
                chunk += fh.readline()                 # whole lines only
                found = _JUDGE_FIELD.findall(chunk)
                if len(found) != chunk.count(b"\n"):
                    return _judges_parsed(path)
                for name in dict.fromkeys(found):
                    try:
                        seen.setdefault(json.loads(name), None)
                    except ValueError:                 # not UTF-8 JSON: the parse names the line
                        return _judges_parsed(path)
    except OSError as exc:
        raise RunError(f"cannot read {path}: {exc.strerror or exc}") from None
    return list(seen)


def _judges_parsed(path: Path) -> list[str]:
    seen: dict[str, None] = {}
    for row in read_jsonl(path):
        if row.get("judge_model") is not None:
            seen.setdefault(str(row["judge_model"]), None)
    return list(seen)


class RunFolder:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._judgments: Optional[Judgments] = None

    def judgments(self) -> Judgments:
        """The view every reader of this folder's judgments goes through (one per RunFolder: a command opens
        its run folder once and hands this object down)."""
        if self._judgments is None:
            self._judgments = Judgments(self.path)
        return self._judgments

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

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    judge_file = property(lambda self: self.path / JUDGE_META_FILE)
    results_file = property(lambda self: self.path / RESULTS_FILE)
    table_file = property(lambda self: self.path / TABLE_FILE)
    html_file = property(lambda self: self.path / HTML_FILE)
    scores_file = property(lambda self: self.path / SCORES_FILE)
    plots_dir = property(lambda self: self.path / PLOTS_DIR)
    pages_dir = property(lambda self: self.path / PAGES_DIR)
    usage_file = property(lambda self: self.path / USAGE_FILE)

    # ------------------------------------------------------------ run.json
    def exists(self) -> bool:
        return self.run_file.is_file()

    def read_meta(self) -> RunMeta:
        if self.path.exists() and not self.path.is_dir():
            raise RunError(f"{self.path} is a file, not a run folder; give the folder a run wrote (with its {RUN_FILE})")
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
        problem = _meta_problem(meta)
        if problem is not None:
            raise RunError(f"{self.run_file} {problem}")
        try:
            return RunMeta.from_json(meta)
        except (TypeError, ValueError, AttributeError) as exc:
            raise RunError(f"{self.run_file} is not a run.json this version reads: {exc}") from None

    def check(self, meta: RunMeta) -> None:
        """Raise RunError unless `meta` can start a new run here or resume the one already here."""
        if self.path.exists() and not self.path.is_dir():
            raise RunError(f"{self.path} exists and is not a folder")
        if self.exists():
            recorded = self.read_meta()
            old, new = recorded.compatibility(), meta.compatibility()
            for settings in (old, new):
                source = local_path(settings["dataset.source"], self.path)
                # a folder whose rows are pinned by their hashes (check_dataset) is the same dataset wherever it
                # was moved or copied: its path is not a setting
                pinned = recorded.dataset.content_sha256 and source is not None and os.path.isabs(source)
                settings["dataset.source"] = "a local folder" if pinned else source
            for name, value in old.items():
                if value != new[name]:
                    raise RunError(
                        f"{self.path} holds a run with other settings ({name}: "
                        f"{json.dumps(value)} there, {json.dumps(new[name])} now); "
                        "use another --out folder, or the same settings to resume")
            self.check_dataset(self.read_meta(), meta.dataset.content_sha256)
        elif self.path.is_dir() and any(p.name != LOCK_FILE for p in self.path.iterdir()):
            raise RunError(f"{self.path} is not empty and has no {RUN_FILE}; use an empty or new --out folder")

    def check_dataset(self, meta: RunMeta, fingerprint: Optional[dict[str, str]]) -> None:
        """Raise RunError when the dataset's rows (`fingerprint`, Benchmark.fingerprint) are not those this
        run started on: transcripts of the old and the new rows must never be mixed."""
        changed = meta.dataset.changed_configs(fingerprint)
        if changed:
            raise RunError(f"{self.path} was started on other rows of dataset {self.dataset_source(meta)}: its "
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
                meta = self.write_meta(meta)
            except OSError as exc:
                raise RunError(f"cannot write {self.run_file}: {exc.strerror or exc}") from None
        self.prepare()
        return meta

    def write_meta(self, meta: RunMeta) -> RunMeta:
        """Write run.json; its dataset's path relative to this folder (carryon_eval.run.paths), never the
        machine's. Returns what was written."""
        meta = dataclasses.replace(meta, dataset=dataclasses.replace(
            meta.dataset, source=shared_path(meta.dataset.source, self.path)))
        write_json_atomic(self.run_file, meta.to_json())
        return meta

    def dataset_source(self, meta: RunMeta) -> Optional[str]:
        """The dataset run.json names, as this machine reads it (a folder's path resolved against this folder)."""
        return local_path(meta.dataset.source, self.path)

    def shared_path(self, path: Optional[str]) -> Optional[str]:
        """``path`` as a file of this run folder records it (relative to the folder)."""
        return shared_path(path, self.path)

    def prepare(self) -> None:
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            _repair_tail(self.transcripts_file)
            _repair_tail(self.failures_file)
        except OSError as exc:
            raise RunError(f"cannot use run folder {self.path}: {exc.strerror or exc}") from None

    # ------------------------------------------------------------ transcripts
    def transcripts(self) -> list[Transcript]:
        """Every conversation's latest transcript (a conversation played again after an empty reply has a
        later line), in order of first appearance."""
        latest: dict[str, Transcript] = {}
        for t in map(Transcript.from_dict, read_jsonl(self.transcripts_file)):
            latest[t.conversation_id] = t
        return list(latest.values())

    def finished_ids(self) -> set[str]:
        """Conversations that are done: in transcripts.jsonl without an empty reply (one is asked again)."""
        return {t.conversation_id for t in self.transcripts() if not has_empty_reply(t)}

    def append(self, transcript: Transcript) -> None:
        _append_line(self.transcripts_file, transcript.to_dict())

    # ------------------------------------------------------------ failures
    def record_failure(self, conversation_id: str, reason: str) -> None:
        _append_line(self.failures_file, Failure(conversation_id, reason).to_json())

    def failures(self) -> dict[str, str]:
        """Conversations that failed and were not finished by a later rerun: id -> latest reason."""
        done = self.finished_ids()
        failed = map(Failure.from_json, read_jsonl(self.failures_file))
        return {f.conversation_id: f.reason for f in failed if f.conversation_id not in done}
