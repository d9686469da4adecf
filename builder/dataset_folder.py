"""Write a dataset folder (Parquet per config, README.md card with YAML configs, LICENSE.md, MANIFEST.json)
atomically.

Byte-identical output for the same inputs: rows are written in a fixed order, Parquet with fixed
settings and no pandas metadata, YAML and JSON with fixed key order, no timestamps anywhere.

A config with no rows is neither written nor declared in the card's `configs`: `datasets` cannot load an
empty split (a Parquet file with one empty row group fails with pyarrow's "BatchSize must be greater than 0",
one with no row group with "Instruction 'test' corresponds to no data"). The card says why it is absent.

Rebuilding into an earlier build replaces only what that build wrote (the files its MANIFEST lists): any other
file there is the user's, so the build refuses (FileExistsError, one line) unless `force`, which keeps them.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Optional

import pyarrow as pa
import pyarrow.parquet as pq
import jinja2
import yaml

from .citation import CITATION_FILE
from .croissant import CROISSANT_FILE, croissant_json
from .files import file_entry
from .sources import Source

# The dataset's own terms, written beside the card as LICENSE.md (the card's `license_link`; the text is the
# source's license file, e.g. the package's dataset_license.md for CASE-Bench).
LICENSE_FILE = "LICENSE.md"

# Arrow schema of every config but `queries`, whose columns each source declares (Source.query_schema).
# Columns beyond schema.TABLE_COLUMNS are documented in the card.
SCHEMAS: dict[str, pa.Schema] = {
    "checklists": pa.schema([
        ("query_id", pa.string()), ("item_id", pa.string()), ("question", pa.string()), ("category", pa.string()),
    ]),
    "flows": pa.schema([
        ("flow_id", pa.string()), ("moves", pa.list_(pa.string())), ("n_turns", pa.int64()),
        ("condition", pa.string()), ("n_follow_ups", pa.int64()), ("n_benign_moves", pa.int64()),
    ]),
    "conversations": pa.schema([
        ("conversation_id", pa.string()), ("query_id", pa.string()), ("flow_id", pa.string()),
        ("n_turns", pa.int64()), ("condition", pa.string()),
    ]),
    "provenance": pa.schema([
        ("query_id", pa.string()), ("item_id", pa.string()), ("stage", pa.string()), ("decision", pa.string()),
        ("reason", pa.string()), ("detail", pa.string()),
    ]),
    "triplets": pa.schema([
        ("set_id", pa.string()), ("variant", pa.string()), ("paraphrase", pa.int64()), ("prompt", pa.string()),
        ("domain", pa.string()), ("category", pa.string()),
    ]),
}
CONFIG_ORDER = ("queries", "checklists", "flows", "conversations", "provenance", "triplets")
_HF_DTYPES = {pa.string(): "string", pa.float64(): "float64", pa.int64(): "int64"}


def parquet_name(config: str) -> str:
    return f"data/{config}/test.parquet"


def declared_configs(tables: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The configs a build writes and declares: those with at least one row, in CONFIG_ORDER."""
    return [c for c in CONFIG_ORDER if tables.get(c)]


def configs_note(tables: dict[str, list[dict[str, Any]]], absent_reasons: dict[str, str]) -> str:
    """The card's sentence on which configs this build declares and why the others are absent."""
    declared = declared_configs(tables)
    note = "This build declares " + ", ".join(
        f"`{c}`" + (" (the default)" if c == "conversations" else "") for c in declared) + "."
    absent = [absent_reasons.get(c, f"no {c}: it has no rows") for c in CONFIG_ORDER if c not in declared]
    if absent:
        note += (" Not in this build (a config with no rows is not declared: `datasets` cannot load an empty "
                 "split): " + "; ".join(absent) + ".")
    return note


def rows_sha256(rows: list[dict[str, Any]]) -> str:
    """Hash of the rows themselves (canonical JSON lines), independent of the Parquet encoding."""
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
    return h.hexdigest()


def schemas_of(source: Source, tables: Optional[dict[str, list[dict[str, Any]]]] = None) -> dict[str, pa.Schema]:
    """Every config's schema for a build of ``source``; an LLM build's queries also carry ``malicious_intent``
    (condition mc) when the source's schema lacks it: a `--no-llm` build keeps the schema it always had."""
    query = source.query_schema
    rows = (tables or {}).get("queries") or []
    if rows and "malicious_intent" in rows[0] and "malicious_intent" not in query.names:
        query = query.append(pa.field("malicious_intent", pa.string()))
    return {"queries": query, **SCHEMAS}


def write_parquet(path: Path, config: str, rows: list[dict[str, Any]], schema: pa.Schema) -> None:
    table = arrow_table(schema, rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd", compression_level=9, use_dictionary=True,
                   write_statistics=True, store_schema=False, row_group_size=1 << 20)


def hf_features(schema: pa.Schema) -> list[dict[str, Any]]:
    out = []
    for field in schema:
        if pa.types.is_list(field.type):
            out.append({"name": field.name, "list": _HF_DTYPES[field.type.value_type]})
        else:
            out.append({"name": field.name, "dtype": _HF_DTYPES[field.type]})
    return out


def arrow_table(schema: pa.Schema, rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema) if rows else schema.empty_table()


def card_yaml(tables: dict[str, list[dict[str, Any]]], source: Source) -> str:
    """The card's YAML header: the source's license and gating fields, then the declared configs."""
    schemas = schemas_of(source, tables)
    header: dict[str, Any] = {
        **source.card.header,
        "configs": [
            {"config_name": c, "data_files": [{"split": "test", "path": parquet_name(c)}],
             **({"default": True} if c == "conversations" else {})}
            for c in declared_configs(tables)
        ],
        "dataset_info": [
            {"config_name": c, "features": hf_features(schemas[c]),
             "splits": [{"name": "test", "num_bytes": arrow_table(schemas[c], tables[c]).nbytes,
                         "num_examples": len(tables[c])}]}
            for c in declared_configs(tables)
        ],
    }
    return yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=100)


def _card_value(value: Any) -> Any:
    """How a value is written into the card: whole numbers with thousands separators (6,150), the rest as is."""
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else value


#: The card template is Jinja2 (``{{ name }}`` placeholders); an unknown placeholder is an error, not an empty
#: string (StrictUndefined: the card must stay true), and nothing is HTML-escaped (the card is Markdown).
_CARD_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False,
                               finalize=_card_value)


def render_card(template: str, values: dict[str, Any]) -> str:
    """The card from its Jinja2 template and the build's values; raises KeyError naming a placeholder that has no
    value."""
    try:
        return _CARD_ENV.from_string(template).render(values)
    except jinja2.UndefinedError as exc:
        raise KeyError(f"dataset card template: {exc.message}") from None


def foreign_files(out: Path) -> list[str]:
    """The files in `out` that no earlier build wrote (not listed in its MANIFEST.json), as relative paths."""
    listed: set[str] = set()
    try:
        manifest = json.loads((out / "MANIFEST.json").read_text(encoding="utf-8"))
        if isinstance(manifest, dict) and isinstance(manifest.get("files"), dict):
            listed = {"MANIFEST.json", *manifest["files"]}
    except (OSError, UnicodeDecodeError, ValueError):
        pass                                  # no usable manifest: nothing there is the builder's
    return sorted(rel for p in out.rglob("*") if p.is_file() and (rel := p.relative_to(out).as_posix()) not in listed)


def check_out_folder(out: Path, force: bool = False) -> list[str]:
    """Raise FileExistsError (one line) unless `out` can take a build; returns the user's files there, which
    a build with `force` keeps."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out}: exists and is not a folder; choose another --out")
    if not out.is_dir():
        return []
    others = foreign_files(out)
    if others and not force:
        raise FileExistsError(
            f"{out}: holds {len(others)} file(s) that no build wrote ({', '.join(others[:3])}"
            f"{', ...' if len(others) > 3 else ''}); move them, choose another "
            "--out, or pass --force to rebuild and keep them")
    return others


def _keep_user_files(old: Path, out: Path, others: list[str]) -> bool:
    """Move the user's files from the replaced build `old` into the new one; False if one could not be
    (then `old` stays, with it)."""
    kept = True
    for rel in others:
        dest = out / rel
        if dest.exists():                     # the new build writes this very path: the user's copy stays in old
            kept = False
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.rename(old / rel, dest)
    return kept


def write_dataset_folder(out: Path, tables: dict[str, list[dict[str, Any]]], card: str,
                         manifest: dict[str, Any], source: Source, force: bool = False,
                         citation: Optional[str] = None) -> dict[str, Any]:
    """Write everything into a temporary folder beside `out`, then swap it in, keeping any file of the user's
    (with `force`; without it such files refuse the build). Returns the manifest. ``citation``: the folder's
    CITATION.cff (None: none, as release v0.1.0 was frozen)."""
    out = Path(out)
    others = check_out_folder(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        schemas = schemas_of(source, tables)
        for config in declared_configs(tables):
            write_parquet(tmp / parquet_name(config), config, tables[config], schemas[config])
        (tmp / "README.md").write_text(card, encoding="utf-8")
        (tmp / LICENSE_FILE).write_bytes(source.card.license_bytes())
        if citation is not None:
            (tmp / CITATION_FILE).write_text(citation, encoding="utf-8")
        # croissant.json reads the Parquet files just written
        (tmp / CROISSANT_FILE).write_text(croissant_json(tmp, card, manifest, source.card.croissant), encoding="utf-8")
        manifest = dict(manifest)
        manifest["files"] = {p.relative_to(tmp).as_posix(): file_entry(p)
                             for p in sorted(tmp.rglob("*")) if p.is_file()}
        manifest["content_sha256"] = {c: rows_sha256(tables[c]) for c in CONFIG_ORDER if c in tables}
        (tmp / "MANIFEST.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
                                           encoding="utf-8")
        os.chmod(tmp, 0o755)
        old = None
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            out.rename(old)
        tmp.rename(out)
        if old is not None and _keep_user_files(old, out, others):
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest
