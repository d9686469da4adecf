"""A triplet section written before triplets had one definition (this project's earlier triplet definitions:
harm >= 4 on 1-5 unsafe, Worst-Case Utility not weighted by safety, the judges shown the bare query, a set kept
only when its outcome was decided). Those metrics are no longer computed; a run folder written with them still
reports: its results.json section is shown as it was, marked with the definitions it used."""
from __future__ import annotations

import html
import json
from typing import Any, Optional, Sequence

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


def _f(x: Any) -> str:
    return "n/a" if x is None else f"{x:.1f}"


def legacy_markdown(sec: dict[str, Any]) -> str:
    lines = ["## Triplet evaluation (this project's earlier definitions)", "", f"Definitions: {sec.get('definitions', EARLIER)}."]
    if sec.get("note"):
        return "\n".join(lines + ["", f"{sec['n_replies']} replies: {sec['note']}."]) + "\n"
    lines += ["", f"{sec.get('n_sets')} prompt-sets, as reported when the run was written.", "",
              "| metric | value % |", "|---|---|"]
    lines += [f"| {m} | {_f(sec.get(m))} |" for m in HEADLINE]
    return "\n".join(lines) + "\n"


def legacy_html(sec: dict[str, Any]) -> str:
    e = html.escape
    body = ['<section id="triplet"><h2>Triplet evaluation (this project\'s earlier definitions)</h2>',
            f"<p>Definitions: {e(str(sec.get('definitions', EARLIER)))}.</p>"]
    if sec.get("note"):
        body.append(f"<p>{sec['n_replies']} replies: {e(sec['note'])}.</p>")
    else:
        body.append("<table><tr><th>metric</th><th>value %</th></tr>")
        body += [f"<tr><td>{m}</td><td>{_f(sec.get(m))}</td></tr>" for m in HEADLINE]
        body.append("</table>")
    body.append("</section>")
    return "\n".join(body)
