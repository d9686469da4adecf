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
import re
import shutil
from dataclasses import dataclass, replace
from typing import Mapping, Optional, Sequence
from urllib.parse import quote

from carryon_eval.report.blocks import Block, Details, Heading, Span, Table, Text, to_html
from carryon_eval.report.html import document
from carryon_eval.run.folder import HTML_FILE, PAGES_DIR, RunFolder, write_text_atomic

INLINE_LIMIT = 2_000_000        # bytes of transcript HTML that still open at once inside report.html
MAX_PAGES = 20                  # pages of report_queries/, whatever the number of queries


@dataclass(frozen=True)
class QueryEntry:
    """One query of the index: its transcripts' blocks (a closed Details of class "query") and what the index row
    shows."""
    blocks: Sequence[Block]
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
                        limit: Optional[int] = None) -> list[Block]:
    """The transcripts part of report.html: the blocks themselves when they are small enough (``limit`` bytes of
    HTML, by default INLINE_LIMIT), else an index linking to the pages this writes (``css``: their styling)."""
    pages = run.pages_dir
    if sum(len(to_html(e.blocks)) for e in entries.values()) <= (INLINE_LIMIT if limit is None else limit):
        shutil.rmtree(pages, ignore_errors=True)           # a stale paged report of this run
        return [b for e in entries.values() for b in e.blocks]
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


def _index(entries: Mapping[str, QueryEntry], names: Mapping[str, str]) -> list[Block]:
    rows = [[Span(qid, href=f"{PAGES_DIR}/{quote(names[qid])}#{quote(anchor(qid))}"), e.domain or "", e.query or "",
             str(e.n_conversations)] for qid, e in entries.items()]
    n = sum(e.n_conversations for e in entries.values())
    return [Text(f"{n:,} conversations of {len(entries):,} queries: too many for one page, so the transcripts are on "
                 f"{len(set(names.values()))} pages of consecutive queries (folder {PAGES_DIR}/ beside this file).",
                 cls="meta"),
            Table(["query", "domain", "text", "conversations"], rows)]


def _queries_page(qids: list[str], entries: Mapping[str, QueryEntry], *, css: str, title: str) -> str:
    span = qids[0] if len(qids) == 1 else f"{qids[0]} – {qids[-1]}"
    body: list[Block] = [Text(Span(f"← {title}", href=f"../{HTML_FILE}"), cls="meta"), Heading(f"Queries {span}", 1)]
    for qid in qids:
        body += [Heading(f"Query {qid}", 2, id=anchor(qid)), *map(_opened, entries[qid].blocks)]
    return document(f"{title} · {span}", to_html(body), css)


def _opened(block: Block) -> Block:
    """The query's block shown open: on its page it is what there is to read."""
    return replace(block, open=True) if isinstance(block, Details) else block
