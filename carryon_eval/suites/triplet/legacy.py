"""A triplet section written before triplets had one definition (this project's earlier triplet definitions:
harm >= 4 on 1-5 unsafe, Worst-Case Utility not weighted by safety, the judges shown the bare query, a set kept
only when its outcome was decided). Those metrics are no longer computed; a run folder written with them still
reports: its results.json section is shown as it was, marked with the definitions it used."""
from __future__ import annotations

import json
from typing import Any, Optional, Sequence

from carryon_eval.metrics.number import Number
from carryon_eval.report.blocks import MARKDOWN, Block, Heading, Only, Section, Shown, Table, Text
from carryon_eval.run.folder import RunFolder

EARLIER = ("this project's earlier triplet definitions (harm >= 4 on 1-5 unsafe, Worst-Case Utility not weighted "
           "by safety, judges shown the bare query); not OpenSafeIntent's")
HEADLINE = ("triplet_safety", "worst_case_utility", "icu")


def is_legacy(sec: dict[str, Any]) -> bool:
    """A section of the earlier definitions: none of OpenSafeIntent's reference fields."""
    return "reference" not in sec


def legacy_section(run: RunFolder, transcripts: Sequence[Any]) -> dict[str, Any]:
    """The folder's earlier triplet section (its results.json) marked with its definitions; without one, the count
    of its triplet replies and why they are not scored."""
    old: Optional[dict[str, Any]] = None
    try:
        old = json.loads(run.results_file.read_text(encoding="utf-8")).get("triplet")
    except (OSError, ValueError, AttributeError):
        old = None
    if isinstance(old, dict) and is_legacy(old):
        return {**old, "definitions": EARLIER}
    return {"definitions": EARLIER, "n_sets": None, "n_replies": len(transcripts),
            "note": "triplet replies of a run written before triplets took OpenSafeIntent's definitions; not scored "
                    "again (re-run --conditions triplet --opensafeintent DIR into a new folder)"}


def legacy_blocks(sec: dict[str, Any]) -> list[Block]:
    """The earlier section as it was reported, marked with its definitions; or why its replies are not scored."""
    blocks: list[Block] = [Heading("Triplet evaluation (this project's earlier definitions)"),
                           Text(f"Definitions: {sec.get('definitions', EARLIER)}.")]
    if sec.get("note"):
        blocks.append(Text(f"{sec['n_replies']} replies: {sec['note']}."))
    else:
        blocks += [Only(MARKDOWN, [Text(f"{sec.get('n_sets')} prompt-sets, as reported when the run was written.")]),
                   Table(["metric", "value %"], [[m, Shown(Number(sec.get(m)))] for m in HEADLINE])]
    return [Section("triplet", blocks)]
