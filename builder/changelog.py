"""The card's changelog: one row per release (release, date, builder version, what changed), filled from the
frozen manifests in releases/ up to the release being built, so rebuilding an old release gives its old card.

A frozen release is releases/vX.Y.Z/MANIFEST.json (written by `carryon-build freeze`) plus, written by hand when
the release is cut, releases/vX.Y.Z/RELEASE.json: {"date": "YYYY-MM-DD", "changes": "what changed, in words"}.
What the manifests themselves show changed (builder version, source, seed, counts, LLM stages) is added to the
words. builder/releases is a symlink to the repository's releases/ and its JSON files are package data, so a
build from a wheel writes the same card as one from the checkout.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Optional

RELEASES_DIR = Path(__file__).parent / "releases"        # -> ../releases (a symlink; package data)
NOTES_FILE = "RELEASE.json"
_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
# A release of another line is LINE-vX.Y.Z (e.g. open-v1.0.0, the OpenSafeIntent build's): its changelog lists its
# own line's releases only, and the CASE-Bench line (vX.Y.Z) never lists it.
_LINE_VERSION = re.compile(r"^(?:([a-z][a-z0-9]*)-)?v(\d+)\.(\d+)\.(\d+)$")
_COUNTED = ("queries", "checklists", "flows", "conversations")


def version_key(release: str) -> Optional[tuple[int, int, int]]:
    m = _VERSION.match(release)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def release_line(release: str) -> tuple[str, Optional[tuple[int, int, int]]]:
    """(line, version) of a release name: ("", (0, 1, 0)) for v0.1.0, ("open", (1, 0, 0)) for open-v1.0.0; a name
    of no line is ("", None)."""
    m = _LINE_VERSION.match(release)
    return (m.group(1) or "", (int(m.group(2)), int(m.group(3)), int(m.group(4)))) if m else ("", None)


def release_notes(release: str, releases_dir: Path = RELEASES_DIR) -> dict[str, str]:
    """The hand-written date and changes of a release ({} when it has none yet)."""
    path = Path(releases_dir) / release / NOTES_FILE
    if not path.is_file():
        return {}
    notes = json.loads(path.read_text(encoding="utf-8"))
    return {k: str(notes[k]) for k in ("date", "changes") if notes.get(k)}


def frozen_manifests(releases_dir: Path = RELEASES_DIR, line: str = "") -> list[dict[str, Any]]:
    """Every frozen release's manifest of one release line (the CASE-Bench line's vX.Y.Z by default), oldest first."""
    found = []
    for path in sorted(Path(releases_dir).glob("*/MANIFEST.json")):
        manifest = json.loads(path.read_text(encoding="utf-8"))
        own_line, key = release_line(str(manifest.get("release", "")))
        if key is not None and own_line == line:
            found.append(manifest)
    return sorted(found, key=lambda m: release_line(m["release"])[1])


def what_changed(previous: Optional[dict[str, Any]], current: dict[str, Any]) -> str:
    """What the manifests show changed since the previous release, in words."""
    if previous is None:
        return "first release"
    facts = []
    if previous.get("builder_version") != current.get("builder_version"):
        facts.append(f"builder {previous.get('builder_version')} -> {current.get('builder_version')}")
    if previous.get("source", {}).get("sha256") != current.get("source", {}).get("sha256"):
        facts.append("another source file")
    if previous.get("seed") != current.get("seed"):
        facts.append(f"seed {previous.get('seed')} -> {current.get('seed')}")
    if (previous.get("llm_stages") is None) != (current.get("llm_stages") is None):
        facts.append("LLM stages " + ("added" if current.get("llm_stages") is not None else "dropped"))
    before, after = previous.get("counts", {}), current.get("counts", {})
    facts += [f"{c} {before.get(c, 0):,} -> {after.get(c, 0):,}" for c in _COUNTED if before.get(c) != after.get(c)]
    return "; ".join(facts) or "same data"


def changelog_rows(current: dict[str, Any], releases_dir: Path = RELEASES_DIR) -> list[dict[str, str]]:
    """Rows for every frozen release before `current`, then `current` itself (its manifest as being built)."""
    line, key = release_line(str(current.get("release", "")))
    earlier = [m for m in frozen_manifests(releases_dir, line)
               if m["release"] != current.get("release") and (key is None or release_line(m["release"])[1] < key)]
    rows, previous = [], None
    for manifest in earlier + [current]:
        notes = release_notes(manifest["release"], releases_dir)
        derived = what_changed(previous, manifest)
        words = notes.get("changes", "")
        changes = f"{words} ({derived})" if words and derived != "first release" else (words or derived)
        rows.append({"release": manifest["release"], "date": notes.get("date", "not yet released"),
                     "builder": str(manifest.get("builder_version")), "changes": changes})
        previous = manifest
    return rows


def changelog_table(current: dict[str, Any], releases_dir: Path = RELEASES_DIR) -> str:
    lines = ["| release | date | builder version | what changed |", "|---|---|---|---|"]
    for row in reversed(changelog_rows(current, releases_dir)):          # newest first
        cells = [row[k].replace("|", "\\|").replace("\n", " ") for k in ("release", "date", "builder", "changes")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
