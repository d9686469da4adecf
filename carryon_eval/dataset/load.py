"""Load a CarryOnBench dataset (a local folder or a Hub id) into plain records.

Any folder (or Hub repo) that `datasets.load_dataset(PATH, CONFIG, split="test")` reads and whose
configs have at least the columns of `schema.TABLE_COLUMNS` works, so researchers can bring their
own queries and checklists. Extra columns are kept. The `checklists` config may be left out (a build
without the LLM stages has none): its queries then have no checklist items.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from carryon_eval.codec import Record
from carryon_eval.dataset import fingerprint
from carryon_eval.dataset.rows import keys
from carryon_eval.moves import flow_problems, is_valid
from carryon_eval.dataset.configs import COLUMNS
from carryon_eval.schema import TABLE_COLUMNS

SAMPLE_DATASET = Path(__file__).parent / "sample_data"
SAMPLE = "builtin:sample"          # the source recorded for the built-in sample (never its install path)
# A Hub id is NAME or ORG/NAME; anything else that is not an existing folder is a folder that is missing.
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?")


class DatasetError(Exception):
    """A dataset that lacks a config, a column or a cross-reference; the message names what is missing."""


@dataclass
class Benchmark:
    source: str                                   # folder path or Hub id
    revision: Optional[str]
    queries: dict[str, dict[str, Any]]            # query_id -> row (in dataset order)
    checklists: dict[str, list[dict[str, Any]]]   # query_id -> items (in dataset order)
    flows: dict[str, dict[str, Any]]              # flow_id -> row
    conversations: list[dict[str, Any]]           # rows in dataset order
    manifest: Optional[dict[str, Any]] = None     # MANIFEST.json of a built release, if present
    notes: list[str] = field(default_factory=list)
    triplets: list[dict[str, Any]] = field(default_factory=list)   # the optional triplets config
    extras: dict[str, Any] = field(default_factory=dict)   # a suite's own inputs (carryon_eval.suite: Suite.load)
    kind: str = "folder"                          # what the source resolved to: "folder", "hub" or "sample"
    commit: Optional[str] = None                  # the Hub commit fetched (kind "hub")

    @property
    def query_ids(self) -> list[str]:
        return list(self.queries)

    def fingerprint(self) -> dict[str, str]:
        """A hash of the rows this benchmark holds, per config: run.json records it, and a resume on a
        dataset whose rows changed since (edited in place) is refused instead of mixing old and new."""
        mc = [c for c in self.conversations if _is_mc(c)]
        tables = {"queries": [{k: v for k, v in q.items() if k != "malicious_intent"} for q in self.queries.values()],
                  "checklists": [item for items in self.checklists.values() for item in items],
                  "flows": list(self.flows.values()),
                  "conversations": [_without_mc(c, "condition") for c in self.conversations if not _is_mc(c)]}
        out = {name: _rows_sha256(rows) for name, rows in tables.items()}
        intents = [{"query_id": q, "malicious_intent": keys(r).malicious_intent} for q, r in self.queries.items()
                   if keys(r).malicious_intent]
        if mc or intents:       # condition mc's rows: their own entry, so the others hash as they always did
            out["mc"] = _rows_sha256(mc + intents)
        return out

    def limited(self, n: Optional[int]) -> "Benchmark":
        """The first n queries (dataset order) with all their checklists and conversations."""
        if n is None:
            return self
        keep = list(self.queries)[:n]
        keep_set = set(keep)
        convs = [c for c in self.conversations if keys(c).query_id in keep_set]
        used_flows = {keys(c).flow_id for c in convs}
        return Benchmark(
            source=self.source, revision=self.revision,
            queries={q: self.queries[q] for q in keep},
            checklists={q: self.checklists.get(q, []) for q in keep},
            flows={f: r for f, r in self.flows.items() if f in used_flows},
            conversations=convs, manifest=self.manifest, notes=list(self.notes),
            triplets=[t for t in self.triplets if t["set_id"] in keep_set], extras=dict(self.extras),
            kind=self.kind, commit=self.commit,
        )


# A dataset may leave these out: a build without the LLM stages declares no checklists config (a config with
# no rows is never declared, since datasets cannot load an empty split); its queries then have no items.
OPTIONAL_CONFIGS = ("checklists", "triplets")
_COLUMNS = COLUMNS      # each config's columns: the release tables' and those the wings declare (dataset.configs)
# Fields that must hold a non-empty text in every row (ids, the query, the checklist question).
TEXT_FIELDS = {"queries": ("query_id", "query"), "checklists": ("query_id", "item_id", "question"),
               "flows": ("flow_id",), "conversations": ("conversation_id", "query_id", "flow_id")}


def _undeclared_optional(source: str, config: str, revision: Optional[str]) -> bool:
    """True when the dataset does not declare this optional config (then it has no rows)."""
    import datasets

    if config not in OPTIONAL_CONFIGS:
        return False
    try:
        return config not in datasets.get_dataset_config_names(source, revision=revision)
    except Exception:  # noqa: BLE001 - load_dataset below reports what is wrong, in one line
        return False


def _empty_local_config(source: str, config: str) -> bool:
    """True when a local folder has this config only as zero-row Parquet files, whatever their names (the
    card's data_files, or the builder's data/CONFIG/test.parquet); datasets cannot load those."""
    folder = Path(source)
    if not folder.is_dir():
        return False
    files = _declared_files(folder, config) or [p for p in [folder / "data" / config / "test.parquet"] if p.is_file()]
    if not files or any(p.suffix != ".parquet" for p in files):
        return False
    import pyarrow.parquet as pq

    try:
        return all(pq.ParquetFile(p).metadata.num_rows == 0 for p in files)
    except Exception:  # noqa: BLE001 - an unreadable file is reported by load_dataset, in one line
        return False


@dataclass
class _DataFiles(Record):
    """One entry of a card config's ``data_files``: a split and its file pattern(s)."""
    split: Any = "test"
    path: Any = None


@dataclass
class _CardConfig(Record):
    """One of the card's YAML ``configs``."""
    config_name: Any = None
    data_files: Any = None


@dataclass
class _Card(Record):
    """The dataset card's YAML header, the part read here."""
    configs: Optional[list[_CardConfig]] = None


def _declared_files(folder: Path, config: str) -> list[Path]:
    """The files the card's YAML `configs` give this config's test split (empty if the card says nothing)."""
    import yaml

    card = folder / "README.md"
    try:
        text = card.read_text(encoding="utf-8")
        header = yaml.safe_load(text.split("---")[1]) if text.startswith("---") else None
    except Exception:  # noqa: BLE001 - no usable card: no declared files
        return []
    listed = _Card.from_json(header).configs if isinstance(header, dict) else None
    entries = [c for c in listed or [] if isinstance(c, _CardConfig) and c.config_name == config]
    patterns: list[str] = []
    for entry in entries:
        data_files = entry.data_files
        for item in data_files if isinstance(data_files, list) else [data_files]:
            if isinstance(item, str):
                patterns.append(item)
            elif isinstance(item, dict) and (files := _DataFiles.from_json(item)).split == "test":
                path = files.path
                patterns += [path] if isinstance(path, str) else [p for p in path or [] if isinstance(p, str)]
    return sorted({p for pattern in patterns for p in folder.glob(pattern) if p.is_file()})


def _rows(source: str, config: str, revision: Optional[str]) -> list[dict[str, Any]]:
    import datasets

    datasets.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    if _empty_local_config(source, config) or _undeclared_optional(source, config, revision):
        return []
    # datasets caches a local folder by its name only: a local folder is prepared in a cache folder of
    # its content's fingerprint, so it is prepared again only when its files change (carryon_eval.dataset.fingerprint).
    try:
        cache = str(fingerprint.cache_dir(Path(source))) if Path(source).exists() else None
    except OSError as exc:             # a file of the folder that cannot be read: name it, whatever config is read
        raise DatasetError(f"dataset {source}: cannot read {exc.filename or 'one of its files'} "
                           f"({exc.strerror or exc})") from None
    try:
        ds = datasets.load_dataset(source, config, split="test", revision=revision, cache_dir=cache)
    except ValueError as exc:  # unknown config name
        raise DatasetError(f"dataset {source}: cannot load config {config!r} with split 'test' ({_first_line(exc)})") from None
    except FileNotFoundError as exc:
        raise DatasetError(f"dataset {source}: not found ({_first_line(exc)})") from None
    except Exception as exc:  # noqa: BLE001 - datasets raises many types; the user needs one line
        raise DatasetError(f"dataset {source}: cannot load config {config!r}: {type(exc).__name__}: {_first_line(exc)}") from None
    missing = [c for c in _COLUMNS[config] if c not in ds.column_names]
    if missing:
        raise DatasetError(
            f"dataset {source}: config {config!r} lacks column(s) {missing}; "
            f"expected at least {list(_COLUMNS[config])}")
    return ds.to_list()


def _is_mc(conv: dict[str, Any]) -> bool:
    return str(keys(conv).condition or "").upper() == "MC"


def _without_mc(row: dict[str, Any], column: str) -> dict[str, Any]:
    """The row without condition mc's optional column when it holds nothing (a null filled in by the loader for
    rows that lack it): a dataset's other rows hash as they did before the column existed. (The malicious
    intents are hashed in the "mc" part, so the queries part leaves them out.)"""
    return {k: v for k, v in row.items() if not (k == column and v is None)} if column in row else row


def _rows_sha256(rows: list[dict[str, Any]]) -> str:
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(row, sort_keys=True, ensure_ascii=False, default=str).encode() + b"\n")
    return h.hexdigest()


def _read_manifest(source: str) -> Optional[dict[str, Any]]:
    """MANIFEST.json of a built dataset folder, if there is one; a malformed one is a DatasetError."""
    path = Path(source) / "MANIFEST.json"
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DatasetError(f"dataset {source}: MANIFEST.json is unreadable ({_first_line(exc)}); "
                           "restore it or remove it") from None
    if not isinstance(manifest, dict):
        raise DatasetError(f"dataset {source}: MANIFEST.json is not a JSON object; restore it or remove it")
    return manifest


def _flow_moves(source: str, i: int, row: dict[str, Any]) -> list[str]:
    moves = keys(row).moves
    if not isinstance(moves, (list, tuple)) or not all(isinstance(m, str) for m in moves):
        raise DatasetError(f"dataset {source}: flows row {i}: flow {keys(row).flow_id}: 'moves' must be a list "
                           f"of move names, got {json.dumps(moves, default=str)[:60]}")
    return list(moves)


def conversation_condition(conv: dict[str, Any], flow: dict[str, Any]) -> str:
    """A conversation row's condition (lower case): "mc" when its own optional ``condition`` says MC (a BC flow
    voiced with the malicious intent), else its flow's ("bc" / "nc")."""
    own = str(keys(conv).condition or "").lower()
    return "mc" if own == "mc" else str(keys(flow).condition).lower()


def _conversation_condition_problem(row: dict[str, Any], flow: dict[str, Any], query: dict[str, Any]) -> Optional[str]:
    """What is wrong with a conversation row's optional ``condition`` (None: nothing): BC/NC must be its flow's;
    MC (the BC moves voiced with the malicious intent) needs a BC flow and a query with a malicious_intent."""
    given = keys(row).condition
    if given is None:
        return None
    flow_keys, intent = keys(flow), keys(query).malicious_intent
    flow_cond = str(flow_keys.condition).upper()
    if not isinstance(given, str) or given.upper() not in ("BC", "NC", "MC"):
        return f"field 'condition' is {json.dumps(given, default=str)[:40]}; expected BC, NC or MC"
    if given.upper() == "MC":
        if flow_cond != "BC":
            return f"condition MC needs a BC flow (its moves are BC's), but flow {flow_keys.flow_id} is {flow_cond}"
        if not isinstance(intent, str) or not intent.strip():
            return (f"condition MC needs the query's 'malicious_intent' text, and query {keys(row).query_id} "
                    "has none")
    elif given.upper() != flow_cond:
        return f"field 'condition' is {given!r}, but flow {flow_keys.flow_id} is {flow_cond}"
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@dataclass(frozen=True)
class ResolvedSource:
    """What a dataset argument names: exactly one folder to read, and how it was found."""
    folder: Path
    source: str                # as recorded: the folder's path, the Hub id, or SAMPLE
    kind: str                  # "folder", "hub" or "sample"
    commit: Optional[str] = None


def resolve_source(source: Optional[str | os.PathLike], revision: Optional[str]) -> ResolvedSource:
    """A local folder when one exists at that path, else a Hub id downloaded at `revision` (its exact files,
    by commit); never the `datasets` cache's copy of something else of the same name."""
    text = SAMPLE if source is None else str(source)
    if text == SAMPLE:
        if revision is not None:
            raise DatasetError(f"--revision {revision}: the built-in sample has no revisions; "
                               "give --dataset a Hub id to fetch a revision")
        return ResolvedSource(SAMPLE_DATASET, SAMPLE, "sample")
    path = Path(text).expanduser()
    if path.exists():
        problem = _source_problem(path, text)
        if problem:
            raise DatasetError(problem)
        if not path.is_dir():
            raise DatasetError(f"dataset {text}: is a file, not a dataset folder")
        if revision is not None:
            raise DatasetError(f"--revision {revision}: dataset {text} is a local folder, which has no revisions; "
                               "leave --revision out, or give a Hub id")
        return ResolvedSource(path.resolve(), str(path.resolve()), "folder")
    if not _HUB_ID.fullmatch(text) or text.startswith("."):
        raise DatasetError(f"dataset {text}: no such folder")
    return _fetch_hub(text, revision)


def _looks_casebench(path: Path) -> bool:
    """A JSON file whose first row has CASE-Bench's fields (its head only)."""
    try:
        head = path.open("rb").read(4096).decode("utf-8", "replace")
    except OSError:
        return False
    return head.lstrip().startswith("[") and '"context_intended_to_be_safe"' in head


def _source_problem(path: Path, text: str) -> Optional[str]:
    """Why ``path`` is one of the builder's sources (CASE-Bench's JSON, an OpenSafeIntent release), not a built
    dataset, and what to do with it; None for anything else (a folder with configs of its own is a dataset)."""
    build = "build a dataset from it first: carryon-build build --source {} --out DIR"
    if path.is_file():
        if path.suffix == ".json" and _looks_casebench(path):
            return f"dataset {text}: CASE-Bench's source file, not a built dataset folder; {build.format(text)}"
        return None
    if any(path.glob("queries*")) or any(path.glob("data/queries*")) or _declared_files(path, "queries"):
        return None
    if (path / "run.json").is_file():
        return (f"dataset {text}: a run folder (it has run.json), not a dataset; give --dataset the dataset folder "
                "the run read (run.json's dataset.source names it, relative to the run folder)")
    if (path / "dataset.json").is_file() and (path / "prompts").is_dir():
        return (f"dataset {text}: an OpenSafeIntent release folder (dataset.json, prompts/), not a built dataset "
                f"(no queries or conversations); evaluate the release with --conditions opensafeintent "
                f"--opensafeintent {text}, or {build.format(text)} --no-llm")
    found = next((p for p in sorted(path.glob("*.json")) if _looks_casebench(p)), None)
    if found is not None:
        return (f"dataset {text}: a folder with CASE-Bench's source file {found.name}, not a built dataset (no "
                f"queries or conversations); {build.format(path / found.name)}")
    if path.is_dir():
        return (f"dataset {text}: not a dataset folder (no queries config: no queries.* file, no data/queries/ "
                "and no README.md whose configs name one); give the folder carryon-build wrote, or a Hub id")
    return None


def _fetch_hub(repo_id: str, revision: Optional[str]) -> ResolvedSource:
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(repo_id, repo_type="dataset", revision=revision))
    except Exception as exc:  # noqa: BLE001 - huggingface_hub raises many types; the user needs one line
        raise DatasetError(f"dataset {repo_id}: no folder of that name here, and the Hub dataset {repo_id} at "
                           f"revision {revision or 'main'} could not be fetched ({type(exc).__name__}: "
                           f"{_first_line(exc)})") from None
    return ResolvedSource(folder, repo_id, "hub", commit=folder.name)


def load_benchmark(source: Optional[str | os.PathLike] = None, revision: Optional[str] = None) -> Benchmark:
    """Load all four configs and check their cross-references. source=None (or SAMPLE) loads the built-in
    sample; see resolve_source for what a source names."""
    resolved = resolve_source(source, revision)
    bench = _load_folder(str(resolved.folder), resolved.source)
    bench.revision, bench.kind, bench.commit = revision, resolved.kind, resolved.commit
    return bench


def _load_folder(folder: str, source: str) -> Benchmark:
    """The benchmark in a local folder; messages name `source` (what the user gave)."""
    try:
        return _read_tables(folder, source)
    except DatasetError as exc:
        raise DatasetError(str(exc).replace(f"dataset {folder}", f"dataset {source}")) from None


def _read_tables(source: str, label: str) -> Benchmark:
    revision = None
    tables = {name: _rows(source, name, revision) for name in TABLE_COLUMNS}
    query_rows, item_rows, flow_rows, conversations = (tables[n] for n in ("queries", "checklists", "flows",
                                                                           "conversations"))
    if not query_rows or not conversations:
        raise DatasetError(f"dataset {source}: the dataset has no queries/conversations to run")
    _check_text_fields(source, tables)
    queries = _index_queries(source, query_rows)
    checklists = _index_checklists(source, item_rows, queries)
    flows = _index_flows(source, flow_rows)
    _check_conversations(source, conversations, queries, flows)

    manifest = _read_manifest(source)
    triplets = _rows(source, "triplets", revision)
    bench = Benchmark(source=label, revision=revision, queries=queries, checklists=checklists,
                      flows=flows, conversations=conversations, manifest=manifest, triplets=list(triplets))
    if not any(keys(r).benign_intent for r in queries.values()):
        bench.notes.append("no query has a benign_intent: the oracle condition and benign clarification moves "
                           "cannot be run on this dataset")
    logging.getLogger("carryon.dataset").info("loaded %s: %d queries, %d conversations", label,
                                              len(queries), len(conversations))
    return bench


def _check_text_fields(source: str, tables: dict[str, list[dict[str, Any]]]) -> None:
    """DatasetError naming the first row whose required text field is missing or blank."""
    for config, fields in TEXT_FIELDS.items():
        for i, row in enumerate(tables[config]):
            for name in fields:
                if not isinstance(row.get(name), str) or not row[name].strip():
                    raise DatasetError(f"dataset {source}: {config} row {i}: field {name!r} must be a non-empty "
                                       f"text, got {json.dumps(row.get(name), default=str)[:60]}")


def _index_queries(source: str, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """query_id -> its row; a duplicate id is refused."""
    queries: dict[str, dict[str, Any]] = {}
    for i, row in enumerate(rows):
        query_id = keys(row).query_id
        if query_id in queries:
            raise DatasetError(f"dataset {source}: queries row {i}: duplicate query_id {query_id!r}")
        queries[query_id] = row
    return queries


def _index_checklists(source: str, rows: list[dict[str, Any]],
                      queries: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """query_id -> its checklist items (every query, [] without any); an unknown query or a duplicate item refused."""
    checklists: dict[str, list[dict[str, Any]]] = {q: [] for q in queries}
    seen_items: set[tuple[str, str]] = set()
    for i, row in enumerate(rows):
        item = keys(row)
        if item.query_id not in queries:
            raise DatasetError(f"dataset {source}: checklists row {i}: unknown query_id {item.query_id!r}")
        key = (item.query_id, item.item_id)
        if key in seen_items:
            raise DatasetError(f"dataset {source}: checklists row {i}: duplicate item_id {item.item_id!r}")
        seen_items.add(key)
        checklists[item.query_id].append(row)
    return checklists


def _index_flows(source: str, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """flow_id -> its row; an invalid flow, a duplicate id or a wrong ``n_turns`` refused."""
    flows: dict[str, dict[str, Any]] = {}
    for i, row in enumerate(rows):
        # the condition is checked case-insensitively: "bc"/"nc" in a researcher's own dataset is fine
        moves, flow = _flow_moves(source, i, row), keys(row)
        problems = flow_problems(moves, condition_given=str(flow.condition).upper())
        if problems:
            what = "has " if is_valid(moves) else "is invalid: "
            raise DatasetError(f"dataset {source}: flows row {i}: flow {flow.flow_id} {what}{'; '.join(problems)}")
        if flow.flow_id in flows:
            raise DatasetError(f"dataset {source}: flows row {i}: duplicate flow_id {flow.flow_id!r}")
        n_turns = flow.n_turns
        if n_turns is not None and n_turns != 2 * (1 + len(moves)):
            raise DatasetError(f"dataset {source}: flows row {i}: field 'n_turns' is {json.dumps(n_turns, default=str)}"
                               f" but flow {flow.flow_id} has {len(moves)} move(s), so {2 * (1 + len(moves))} "
                               "messages (n_turns = 2 x (1 + moves))")
        flows[flow.flow_id] = row
    return flows


def _check_conversations(source: str, rows: list[dict[str, Any]], queries: dict[str, dict[str, Any]],
                         flows: dict[str, dict[str, Any]]) -> None:
    """DatasetError naming the first conversation that is a duplicate, names an unknown query or flow, or whose
    condition disagrees with its flow's."""
    seen_conversations: set[str] = set()
    for i, row in enumerate(rows):
        conv = keys(row)
        if conv.conversation_id in seen_conversations:
            raise DatasetError(f"dataset {source}: conversations row {i}: duplicate conversation_id "
                               f"{conv.conversation_id!r}")
        seen_conversations.add(conv.conversation_id)
        if conv.query_id not in queries:
            raise DatasetError(f"dataset {source}: conversations row {i}: unknown query_id {conv.query_id!r}")
        if conv.flow_id not in flows:
            raise DatasetError(f"dataset {source}: conversations row {i}: unknown flow_id {conv.flow_id!r}")
        problem = _conversation_condition_problem(row, flows[conv.flow_id], queries[conv.query_id])
        if problem:
            raise DatasetError(f"dataset {source}: conversations row {i}: {problem}")
