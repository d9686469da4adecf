"""report.html's frame: one self-contained page (inline CSS, plots as base64 PNG, no script and no external
resource) holding the title, the run's status lines, each reported suite's section (``SuiteReport.blocks``), the
notes, the plots, and each suite's appendix (``SuiteReport.appendix``, e.g. its transcripts). Every piece of model
or user text is HTML-escaped, here and in the blocks (carryon_eval.report.blocks). The frame's CSS styles the frame
and the blocks; a suite's own classes come with its sections' CSS."""
from __future__ import annotations

import html
from typing import Any, Mapping, Optional, Sequence

from carryon_eval.report.plots import data_uri
from carryon_eval.run.results import PlotsInfo, Results

__all__ = ["CSS", "document", "escape", "page_title", "plots_html", "render_page"]

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ddd}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.8em 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
.notice{background:#fff6d6;border:1px solid #e6c200;padding:.6em 1em;border-radius:4px}
.notes li{margin:.2em 0}.plots img{max-width:100%;border:1px solid #eee;margin:.4em 0}
details{margin:.3em 0}details>summary{cursor:pointer}.meta{font-size:12px;color:#555}
"""


def escape(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def page_title(results: Results) -> str:
    return f"CarryOnBench report: {results.model}"


def plots_html(plots: Optional[PlotsInfo], images: Mapping[str, bytes], captions: Mapping[str, str]) -> str:
    """The figures as inline PNGs, then one line per plot that was not drawn and why."""
    plots = plots or PlotsInfo()
    if plots.note:
        return f'<p>{escape(plots.note)}</p>'
    figures = "".join(f'<figure><img alt="{escape(name)}" src="{data_uri(png)}">'
                      f'<figcaption class="meta">{escape(captions.get(name, name.replace("_", " ")))}</figcaption>'
                      f'</figure>' for name, png in images.items())
    skipped = "".join(f'<li>{escape(captions.get(name, name))}: not drawn, {escape(reason)}.</li>'
                      for name, reason in plots.skipped.items())
    return figures + (f'<p>Plots not drawn (their data is all null):</p><ul class="notes">{skipped}</ul>'
                      if skipped else "")


def render_page(results: Results, sections: Sequence[str], images: Mapping[str, bytes], captions: Mapping[str, str],
                appendices: Sequence[str] = (), css: str = "") -> str:
    """report.html: the title and the status lines, the suites' sections, the notes, the plots, the appendices;
    ``css``: the suites' own styling, after the frame's."""
    notice_html = "".join(f'<p class="notice">{escape(line)}</p>' for line in results.status_lines())
    notice = results.run.notice
    notice_html += f'<p class="notice">{escape(notice)}</p>' if notice else ""
    parts = [f"<h1>{escape(page_title(results))}</h1>", notice_html, *sections,
             "<h2>Notes</h2><ul class=\"notes\">" + "".join(f"<li>{escape(n)}</li>" for n in results.notes) + "</ul>",
             '<h2>Plots</h2><div class="plots">' + plots_html(results.plots, images, captions) + "</div>",
             *appendices]
    return document(page_title(results), "".join(parts), CSS + css)


def document(title: str, body: str, css: str) -> str:
    """A self-contained HTML page: its title, its styling inline, its body."""
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{escape(title)}</title><style>{css}</style></head><body>{body}</body></html>\n")
