"""report.html at full scale: one self-contained file for a small run; above a size threshold, the summary page
plus at most ``MAX_PAGES`` pages of transcripts, each holding the queries of one run of the query list.

With every transcript inline, the report of the full benchmark (6,150 conversations) grows to tens of MB and a
browser takes long to open it. So when the transcripts' HTML exceeds `INLINE_LIMIT` bytes, the queries' transcripts
go to pages of their own, RUNDIR/report_queries/queries-NN.html (inline CSS, no script, no external URL, a link
back), consecutive queries together and never more than ``MAX_PAGES`` pages whatever the run's size (a run folder
stays a few dozen files a researcher can copy: 410 queries make 20 pages of 20 or 21); report.html lists the
queries with a relative link to each one's place on its page. Pages no longer written are removed; a run that fits
inline again gets its report_queries/ folder removed.
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
MAX_PAGES = 20                  # pages of report_queries/, whatever the number of queries


@dataclass(frozen=True)
class QueryEntry:
    """One query of the index: its transcripts' HTML block and what the index row shows."""
    block: str
    domain: Optional[str]
    query: Optional[str]
    n_conversations: int


def anchor(query_id: str) -> str:
    """The id of the query's place on its page: the id where it is a safe name, else a slug plus a short hash."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", query_id).strip("._") or "query"
    if slug != query_id:
        slug += "-" + hashlib.sha256(query_id.encode()).hexdigest()[:8]
    return slug


def page_names(query_ids: list[str]) -> dict[str, str]:
    """query -> the name of its page: consecutive queries share one of at most MAX_PAGES pages."""
    per_page = max(1, -(-len(query_ids) // MAX_PAGES))
    return {qid: f"queries-{i // per_page + 1:02d}.html" for i, qid in enumerate(query_ids)}


def transcripts_section(run: RunFolder, entries: Mapping[str, QueryEntry], *, css: str, title: str,
                        limit: Optional[int] = None) -> str:
    """The transcripts part of report.html: the blocks themselves when they are small enough (``limit`` bytes,
    by default INLINE_LIMIT), else an index linking to the pages this writes."""
    pages = run.pages_dir
    if sum(len(e.block) for e in entries.values()) <= (INLINE_LIMIT if limit is None else limit):
        shutil.rmtree(pages, ignore_errors=True)           # a stale paged report of this run
        return "".join(e.block for e in entries.values())
    names = page_names(list(entries))
    on_page: dict[str, list[str]] = {}
    for qid, name in names.items():
        on_page.setdefault(name, []).append(qid)
    for name, qids in on_page.items():
        write_text_atomic(pages / name, _queries_page(qids, entries, css=css, title=title))
    for stale in pages.glob("*.html"):
        if stale.name not in on_page:
            stale.unlink(missing_ok=True)
    return _index(entries, names)


def _e(x: object) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _index(entries: Mapping[str, QueryEntry], names: Mapping[str, str]) -> str:
    rows = "".join(f'<tr><td><a href="{PAGES_DIR}/{quote(names[qid])}#{quote(anchor(qid))}">{_e(qid)}</a></td>'
                   f'<td>{_e(e.domain)}</td><td>{_e(e.query)}</td><td>{e.n_conversations}</td></tr>'
                   for qid, e in entries.items())
    n = sum(e.n_conversations for e in entries.values())
    return (f'<p class="meta">{n:,} conversations of {len(entries):,} queries: too many for one page, so the '
            f'transcripts are on {len(set(names.values()))} pages of consecutive queries (folder {PAGES_DIR}/ '
            f'beside this file).</p>'
            f'<table><thead><tr><th>query</th><th>domain</th><th>text</th><th>conversations</th></tr></thead>'
            f'<tbody>{rows}</tbody></table>')


def _queries_page(qids: list[str], entries: Mapping[str, QueryEntry], *, css: str, title: str) -> str:
    span = qids[0] if len(qids) == 1 else f"{qids[0]} – {qids[-1]}"
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)} · {_e(span)}</title><style>{css}</style></head><body>"
            f'<p class="meta"><a href="../{HTML_FILE}">← {_e(title)}</a></p>'
            f"<h1>Queries {_e(span)}</h1>"
            + "".join(f'<h2 id="{_e(anchor(qid))}">Query {_e(qid)}</h2>{_opened(entries[qid].block)}' for qid in qids)
            + "</body></html>\n")


def _opened(block: str) -> str:
    """The query's block shown open: on its page it is what there is to read."""
    return block.replace('<details class="query">', '<details class="query" open>', 1)
