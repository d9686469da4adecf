"""`carryon-build verify`: prove that a dataset folder is exactly the release its MANIFEST describes, and that
`datasets.load_dataset` reads every config its card declares with the documented columns (builder/declared.py)."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Optional

import pyarrow.parquet as pq

from carryon_eval.moves import flow_problems

from .dataset_folder import CONFIG_ORDER, parquet_name, rows_sha256
from .files import file_entry
from .declared import declaration_problems
from .flows import PER_LENGTH


def _read(path: Path) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


def verify_folder(folder: Path, manifest_path: Optional[Path] = None) -> tuple[list[str], dict[str, Any]]:
    """Every mismatch as one readable line (empty list = the folder is exactly the manifest's release)."""
    folder = Path(folder)
    own = folder / "MANIFEST.json"
    manifest_path = Path(manifest_path) if manifest_path else own
    if not folder.is_dir():
        return [f"{folder}: not a folder"], {}
    if not manifest_path.is_file():
        return [f"{manifest_path}: manifest not found"], {}
    manifest, why = _read_manifest(manifest_path)
    if manifest is None:
        return [f"{manifest_path}: not a CarryOnBench manifest ({why})"], {}
    problems: list[str] = []
    if manifest_path != own:
        if not own.is_file():
            problems.append(f"MANIFEST.json: missing from {folder}")
        elif _read_manifest(own)[0] != manifest:
            problems.append(f"MANIFEST.json: differs from {manifest_path}")
    problems += file_problems(folder, manifest)
    tables, read_problems = _read_tables(folder)
    problems += read_problems
    counts = manifest.get("counts", {})
    for config, rows in tables.items():
        if counts.get(config) != len(rows):
            problems.append(f"{parquet_name(config)}: {len(rows)} rows, manifest counts {counts.get(config)}")
    problems += check_references(tables, expect_all_flows_used=counts.get("flows_used") == counts.get("flows"))
    # every config the card declares loads with `datasets` (a file pyarrow cannot read is named once, above)
    unreadable = frozenset(c for c in CONFIG_ORDER if c not in tables and (folder / parquet_name(c)).is_file())
    problems += declaration_problems(folder, skip=unreadable)
    return problems, manifest


def release_words(manifest: dict[str, Any]) -> str:
    """What a manifest is, beside its release: its dataset name and the source it was built from (the public release
    it is exactly, when the manifest pins one), e.g. "carryonbench-open, built from dataset.json sha256
    ad9ed2e8f190... = Uppaal/OpenSafeIntent at commit 9706897bc9ff"."""
    source = manifest.get("source") if isinstance(manifest.get("source"), dict) else {}
    words = str(manifest.get("name", "carryonbench"))
    if source.get("file"):
        words += f", built from {source['file']} sha256 {str(source.get('sha256'))[:12]}..."
    upstream = source.get("release")
    if isinstance(upstream, dict) and upstream.get("repository"):
        words += f" = {upstream['repository']} at commit {str(upstream.get('commit'))[:12]}"
    return words


def release_claim(manifest: dict[str, Any], against: Optional[Path] = None) -> str:
    """What a folder that verified is: the release exactly, when checked against a release's manifest (``against``)
    or when its own MANIFEST.json is that release's frozen one (releases/NAME/MANIFEST.json); otherwise only a build
    that matches its own manifest (a build from an edited source keeps the release's name, not its bytes)."""
    from .changelog import RELEASES_DIR

    name, words = manifest.get("release"), release_words(manifest)
    if against is not None:
        return f"is release {name} exactly ({words}; matches {against})"
    frozen = RELEASES_DIR / str(name) / "MANIFEST.json"
    if frozen.is_file() and _read_manifest(frozen)[0] == manifest:
        return f"is release {name} exactly ({words}; its MANIFEST.json is the frozen releases/{name}/MANIFEST.json)"
    why = (f"its MANIFEST.json differs from the frozen releases/{name}/MANIFEST.json (built from another source, "
           "or with other options)" if frozen.is_file() else f"no release {name} is frozen in this package")
    return (f"matches its own MANIFEST.json ({words}), but is not release {name}: {why}; check a release with "
            f"--manifest releases/{name}/MANIFEST.json")


def _read_manifest(path: Path) -> tuple[Optional[dict[str, Any]], str]:
    """The manifest at `path`, or None and why it is not one (unreadable, not JSON, not the right shape)."""
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        return None, "'files' is not a mapping"
    if not all(isinstance(e, dict) and {"sha256", "size"} <= set(e) for e in manifest["files"].values()):
        return None, "a 'files' entry lacks its sha256 or size"
    if not isinstance(manifest.get("counts", {}), dict):
        return None, "'counts' is not a mapping"
    return manifest, ""


def file_problems(folder: Path, manifest: dict[str, Any]) -> list[str]:
    """The bytes of every pinned file; no file unaccounted for."""
    files: dict[str, dict[str, Any]] = manifest["files"]
    problems: list[str] = []
    for rel, want in sorted(files.items()):
        path = folder / rel
        if not path.is_file():
            problems.append(f"{rel}: missing")
            continue
        got = file_entry(path)
        if got != want:
            problems.append(f"{rel}: sha256/size mismatch: expected {want['sha256'][:16]}.../{want['size']} bytes, "
                            f"found {got['sha256'][:16]}.../{got['size']} bytes{_same_rows_hint(path, rel, manifest)}")
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_file() and rel != "MANIFEST.json" and rel not in files:
            problems.append(f"{rel}: not listed in the manifest")
    return problems


def _same_rows_hint(path: Path, rel: str, manifest: dict[str, Any]) -> str:
    config = rel.split("/")[1] if rel.startswith("data/") else None
    want = manifest.get("content_sha256", {}).get(config) if config else None
    if not want:
        return ""
    try:
        same = rows_sha256(_read(path)) == want
    except Exception:  # noqa: BLE001 - a damaged file simply gives no hint
        return ""
    return " (rows identical: re-encoded, e.g. by another pyarrow version)" if same else ""


def _read_tables(folder: Path) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """The rows of every config file present, and one line for each file pyarrow cannot read."""
    tables: dict[str, list[dict[str, Any]]] = {}
    problems: list[str] = []
    for config in CONFIG_ORDER:
        rel = parquet_name(config)
        if (folder / rel).is_file():
            try:
                tables[config] = _read(folder / rel)
            except Exception as exc:  # noqa: BLE001
                problems.append(f"{rel}: config {config!r}: unreadable Parquet "
                                f"({type(exc).__name__}: {str(exc).splitlines()[0]})")
    return tables, problems


def check_references(tables: dict[str, list[dict[str, Any]]], expect_all_flows_used: bool = False) -> list[str]:
    problems: list[str] = []
    flows = {f["flow_id"]: f for f in tables.get("flows", [])}
    queries = {q["query_id"] for q in tables.get("queries", [])}
    fl = parquet_name("flows")
    for f in flows.values():
        for p in flow_problems(list(f["moves"]), n_turns_given=f["n_turns"], condition_given=f["condition"]):
            problems.append(f"{fl}: flow {f['flow_id']}: {p}")
    cv = parquet_name("conversations")
    plan: dict[tuple[str, int], list[str]] = defaultdict(list)
    mc: dict[tuple[str, int], list[str]] = defaultdict(list)       # condition MC: a BC flow, malicious intent
    for c in tables.get("conversations", []):
        if c["query_id"] not in queries:
            problems.append(f"{cv}: conversation {c['conversation_id']}: unknown query_id {c['query_id']}")
        f = flows.get(c["flow_id"])
        if f is None:
            problems.append(f"{cv}: conversation {c['conversation_id']}: unknown flow_id {c['flow_id']}")
            continue
        (mc if c.get("condition") == "MC" else plan)[(c["query_id"], f["n_turns"])].append(c["flow_id"])
    for (q, turns), flow_ids in sorted(plan.items()):
        got = Counter(flows[x]["condition"] for x in flow_ids)
        if dict(got) != PER_LENGTH:
            problems.append(f"{cv}: query {q}, {turns} turns: {dict(got)} conversations, expected {PER_LENGTH}")
        if len(set(flow_ids)) != len(flow_ids):
            problems.append(f"{cv}: query {q}, {turns} turns: the same flow twice")
    for (q, turns), flow_ids in sorted(mc.items()):
        first_bc = next((x for x in plan.get((q, turns), []) if flows[x]["condition"] == "BC"), None)
        if flow_ids != [first_bc]:
            problems.append(f"{cv}: query {q}, {turns} turns: MC conversation(s) on {flow_ids}, expected one on the "
                            f"query's first BC flow of that length ({first_bc})")
    if expect_all_flows_used:
        unused = set(flows) - {x for ids in plan.values() for x in ids}
        if unused:
            problems.append(f"{fl}: {len(unused)} pool flows used by no conversation, e.g. {sorted(unused)[0]}")
    ck = parquet_name("checklists")
    for r in tables.get("checklists", []):
        if r["query_id"] not in queries:
            problems.append(f"{ck}: item {r['item_id']}: unknown query_id {r['query_id']}")
    return problems
