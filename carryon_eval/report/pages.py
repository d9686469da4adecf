"""report.html at full scale: one self-contained file for a small run; above a size threshold, the summary page
plus one page per query.

With every transcript inline, the report of the full benchmark (6,150 conversations) grows to tens of MB and a
browser takes long to open it. So when the transcripts' HTML exceeds `INLINE_LIMIT` bytes, each query's
transcripts go to a page of their own, RUNDIR/report_queries/<query>.html (inline CSS, no script, no external
URL, a link back), and report.html lists the queries with a relative link to each. Pages of queries no longer
in the run are removed; a run that fits inline again gets its report_queries/ folder removed.
"""
from __future__ import annotations

import hashlib
import html
import re
import shutil
from dataclasses import dataclass
from typing import Mapping, Optional
from urllib.parse import quote

from carryon_eval.run.folder import HTML_FILE, PAGES_DIR, RunFolder, write_text_atomic

INLINE_LIMIT = 2_000_000        # bytes of transcript HTML that still open at once inside report.html


@dataclass(frozen=True)
class QueryEntry:
    """One query of the index: its transcripts' HTML block and what the index row shows."""
    block: str
    domain: Optional[str]
    query: Optional[str]
    n_conversations: int


def page_name(query_id: str) -> str:
    """A file name for the query's page: the id where it is a safe name, else a slug plus a short hash."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", query_id).strip("._") or "query"
    if slug != query_id:
        slug += "-" + hashlib.sha256(query_id.encode()).hexdigest()[:8]
    return f"{slug}.html"


def transcripts_section(run: RunFolder, entries: Mapping[str, QueryEntry], *, css: str, title: str,
                        limit: int = INLINE_LIMIT) -> str:
    """The transcripts part of report.html: the blocks themselves when they are small enough, else an
    index linking to the per-query pages this writes."""
    pages = run.pages_dir
    if sum(len(e.block) for e in entries.values()) <= limit:
        shutil.rmtree(pages, ignore_errors=True)           # a stale paged report of this run
        return "".join(e.block for e in entries.values())
    names = {qid: page_name(qid) for qid in entries}
    for qid, entry in entries.items():
        write_text_atomic(pages / names[qid], _query_page(qid, entry, css=css, title=title))
    for stale in pages.glob("*.html"):
        if stale.name not in set(names.values()):
            stale.unlink(missing_ok=True)
    return _index(entries, names)


def _e(x: object) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _index(entries: Mapping[str, QueryEntry], names: Mapping[str, str]) -> str:
    rows = "".join(f'<tr><td><a href="{PAGES_DIR}/{quote(names[qid])}">{_e(qid)}</a></td><td>{_e(e.domain)}</td>'
                   f'<td>{_e(e.query)}</td><td>{e.n_conversations}</td></tr>' for qid, e in entries.items())
    n = sum(e.n_conversations for e in entries.values())
    return (f'<p class="meta">{n:,} conversations of {len(entries):,} queries: too many for one page, so each '
            f'query\'s transcripts are on a page of their own (folder {PAGES_DIR}/ beside this file).</p>'
            f'<table><thead><tr><th>query</th><th>domain</th><th>text</th><th>conversations</th></tr></thead>'
            f'<tbody>{rows}</tbody></table>')


def _query_page(qid: str, entry: QueryEntry, *, css: str, title: str) -> str:
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)} · {_e(qid)}</title><style>{css}</style></head><body>"
            f'<p class="meta"><a href="../{HTML_FILE}">← {_e(title)}</a></p>'
            f"<h1>Query {_e(qid)}</h1>{_opened(entry.block)}</body></html>\n")


def _opened(block: str) -> str:
    """The query's block shown open: on its own page it is all there is to read."""
    return block.replace('<details class="query">', '<details class="query" open>', 1)
