"""Rendering is blocks (simple-evals' one make_report): a suite says what its section shows once, as small frozen
records, and this module turns them into table.md's Markdown and report.html's HTML, with one number format.

    Section("opensafeintent", [Heading("OpenSafeIntent"), Text("410 prompt-sets."),
                               Table(["metric", "value", "95% CI"], [["ccs", Shown(n, 4), Shown(n, 4, INTERVAL)]])])

A table's cell is text or a ``Shown`` Number (carryon_eval.metrics.number): its value, its 95% interval, its bounds,
its value with its interval or its value as a p-value ("<.001" under the digits shown), at so many digits, signed or
not; a missing one reads "n/a" (with its reason where the table asks for it). ``Only`` keeps blocks to one output; a ``Section`` carries its suite's CSS, which the page
collects into its head (``css``). All text is HTML-escaped here: a suite hands plain text, never markup.
"""
from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence, Union

from carryon_eval.metrics.number import Interval, Number

VALUE, INTERVAL, BOUNDS, VALUE_CI = "value", "interval", "bounds", "value with interval"   # what a Shown shows
P_VALUE = "p-value"
MARKDOWN, HTML = "markdown", "html"                                                          # the two outputs
NA = "n/a"


@dataclass(frozen=True)
class Shown:
    """A Number as a cell shows it; ``reason``: n/a says why; ``unit``: written right after a shown value ("%");
    ``mark``: a footnote mark after it."""
    number: Number
    digits: int = 1
    show: str = VALUE
    signed: bool = False
    reason: bool = False
    mark: str = ""
    unit: str = ""


@dataclass(frozen=True)
class Span:
    """Inline text with a class and a title (a hover text), e.g. a checklist chip; ``href``: a link."""
    text: str
    cls: Optional[str] = None
    title: Optional[str] = None
    href: Optional[str] = None


Inline = Union[str, Shown, Span]
Cell = Union[Inline, Sequence[Inline]]


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2
    id: Optional[str] = None


@dataclass(frozen=True)
class Text:
    """A paragraph: text, Numbers and spans; ``footnotes`` follow it, one line each."""
    text: Cell
    cls: Optional[str] = None
    footnotes: Sequence[Cell] = ()
    id: Optional[str] = None


@dataclass(frozen=True)
class Table:
    """A table of text and shown Numbers; ``footnotes`` follow it, one line each (the marks its cells carry)."""
    header: Sequence[str]
    rows: Sequence[Sequence[Cell]]
    cls: Optional[str] = None
    footnotes: Sequence[Cell] = ()


@dataclass(frozen=True)
class Notes:
    """A bullet list (``ordered``: numbered)."""
    lines: Sequence[Cell]
    cls: Optional[str] = "notes"
    ordered: bool = False


@dataclass(frozen=True)
class Figure:
    """A PNG shown inline (report.html) or linked by its file (table.md)."""
    png: bytes
    alt: str
    caption: str = ""
    path: Optional[str] = None


@dataclass(frozen=True)
class Details:
    """A part a reader opens (report.html's <details>); in Markdown its summary and its blocks."""
    summary: Cell
    blocks: Sequence["Block"]
    cls: Optional[str] = None
    open: bool = False


@dataclass(frozen=True)
class Only:
    """Blocks of one output only (MARKDOWN or HTML)."""
    output: str
    blocks: Sequence["Block"]


@dataclass(frozen=True)
class Section:
    """A suite's part of the outputs: its blocks, in report.html a <section> with ``id``; ``css``: its own styling,
    which the page collects into its head."""
    id: str
    blocks: Sequence["Block"]
    css: str = ""


Block = Union[Heading, Text, Table, Notes, Figure, Details, Only, Section]


# ---------------------------------------------------------------- the one number format
def pair(interval: Interval, digits: int = 1) -> str:
    """An interval's text; an end that is None reads n/a (e.g. a mixed model's interval statsmodels left undefined)."""
    return NA if not interval else "[" + ", ".join(NA if x is None else f"{x:.{digits}f}" for x in interval) + "]"


def number_text(s: Shown) -> str:
    """The text of a shown Number, the same in every output: "61.3", "+4.0", "[55.0, 67.1]", "61.3 [55.0, 67.1]",
    "n/a" or "n/a (why)"; a p-value under what its digits show: "<.001"."""
    n = s.number
    if s.show in (INTERVAL, BOUNDS):
        return pair(n.ci95 if s.show == INTERVAL else n.bounds, s.digits)
    if n.value is None:
        return NA + (f" ({n.reason})" if s.reason and n.reason else "")
    if s.show == P_VALUE and n.value < 10 ** -s.digits:
        return "<." + "0" * (s.digits - 1) + "1"
    text = f"{n.value:{'+' if s.signed else ''}.{s.digits}f}" + s.unit + s.mark
    return text + (" " + pair(n.ci95, s.digits) if s.show == VALUE_CI and n.ci95 else "")


def shown(x: Optional[float], digits: int = 1, **kw: object) -> Shown:
    """A bare value (no interval) as a shown Number."""
    return Shown(Number(x), digits, **kw)  # type: ignore[arg-type]


def plain(cell: Cell) -> str:
    """A cell's text as a terminal shows it."""
    if isinstance(cell, Shown):
        return number_text(cell)
    if isinstance(cell, Span):
        return cell.text
    return cell if isinstance(cell, str) else "".join(map(plain, cell))


# ---------------------------------------------------------------- Markdown
def _inline_md(cell: Cell) -> str:
    if isinstance(cell, Shown):
        return number_text(cell)
    if isinstance(cell, Span):
        return f"[{cell.text}]({cell.href})" if cell.href else cell.text
    if isinstance(cell, str):
        return cell
    return "".join(map(_inline_md, cell))


def _cell_md(cell: Cell) -> str:
    return _inline_md(cell).replace("|", "\\|").replace("\n", " ")


def _md(block: Block) -> Iterator[str]:
    if isinstance(block, Heading):
        yield "#" * block.level + " " + block.text
    elif isinstance(block, Text):
        yield _inline_md(block.text)
        yield from _footnotes_md(block.footnotes)
    elif isinstance(block, Table):
        lines = ["| " + " | ".join(map(_cell_md, block.header)) + " |", "|" + "|".join(["---"] * len(block.header)) + "|"]
        yield "\n".join(lines + ["| " + " | ".join(map(_cell_md, row)) + " |" for row in block.rows])
        yield from _footnotes_md(block.footnotes)
    elif isinstance(block, Notes):
        yield "\n".join(f"{f'{i}.' if block.ordered else '-'} {_inline_md(line)}" for i, line in enumerate(block.lines, 1))
    elif isinstance(block, Figure):
        yield f"![{block.alt}]({block.path})" if block.path else block.caption
    elif isinstance(block, Details):
        yield _inline_md(block.summary)
        for b in block.blocks:
            yield from _md(b)
    elif isinstance(block, (Only, Section)):
        if not isinstance(block, Only) or block.output == MARKDOWN:
            for b in block.blocks:
                yield from _md(b)
    else:
        raise TypeError(f"not a block: {block!r}")


def _footnotes_md(lines: Sequence[Cell]) -> Iterator[str]:
    """Footnotes: one paragraph, a line each (Markdown's hard line breaks)."""
    if lines:
        yield "\n".join(_inline_md(line) + "  " for line in lines)


def to_markdown(blocks: Sequence[Block]) -> str:
    """The blocks as Markdown: one paragraph each, a blank line between, a newline at the end."""
    parts = [p for b in blocks for p in _md(b)]
    return "\n\n".join(parts) + "\n" if parts else ""


# ---------------------------------------------------------------- HTML
def escape(x: object) -> str:
    """HTML text of a value (None is empty), quotes escaped too (text and attribute values alike)."""
    return html.escape("" if x is None else str(x), quote=True)


def _attr(name: str, value: Optional[str]) -> str:
    return f' {name}="{escape(value)}"' if value else ""


def _inline_html(cell: Cell) -> str:
    if isinstance(cell, Shown):
        return escape(number_text(cell))
    if isinstance(cell, Span) and not (cell.href or cell.cls or cell.title):
        return escape(cell.text)
    if isinstance(cell, Span):
        tag = "a" if cell.href else "span"
        return f"<{tag}{_attr('href', cell.href)}{_attr('class', cell.cls)}{_attr('title', cell.title)}>" \
               f"{escape(cell.text)}</{tag}>"
    if isinstance(cell, str):
        return escape(cell)
    return "".join(map(_inline_html, cell))


def _html(block: Block) -> str:
    if isinstance(block, Heading):
        return f"<h{block.level}{_attr('id', block.id)}>{escape(block.text)}</h{block.level}>"
    if isinstance(block, Text):
        return f"<p{_attr('id', block.id)}{_attr('class', block.cls)}>{_inline_html(block.text)}</p>" + \
            _footnotes_html(block.footnotes)
    if isinstance(block, Table):
        head = "".join(f"<th>{_inline_html(h)}</th>" for h in block.header)
        body = "".join("<tr>" + "".join(f"<td>{_inline_html(c)}</td>" for c in row) + "</tr>" for row in block.rows)
        return f"<table{_attr('class', block.cls)}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>" + \
            _footnotes_html(block.footnotes)
    if isinstance(block, Notes):
        tag = "ol" if block.ordered else "ul"
        return f"<{tag}{_attr('class', block.cls)}>" + "".join(f"<li>{_inline_html(x)}</li>" for x in block.lines) \
            + f"</{tag}>"
    if isinstance(block, Figure):
        src = "data:image/png;base64," + base64.b64encode(block.png).decode("ascii")
        return (f'<figure><img{_attr("alt", block.alt)} src="{src}">'
                f'<figcaption class="meta">{escape(block.caption)}</figcaption></figure>')
    if isinstance(block, Details):
        return (f"<details{_attr('class', block.cls)}{' open' if block.open else ''}>"
                f"<summary>{_inline_html(block.summary)}</summary>{to_html(block.blocks)}</details>")
    if isinstance(block, Only):
        return to_html(block.blocks) if block.output == HTML else ""
    if isinstance(block, Section):
        return f'<section{_attr("id", block.id)}>{to_html(block.blocks)}</section>'
    raise TypeError(f"not a block: {block!r}")


def _footnotes_html(lines: Sequence[Cell]) -> str:
    return "".join(f'<p class="meta footnote">{_inline_html(line)}</p>' for line in lines)


def to_html(blocks: Sequence[Block]) -> str:
    return "".join(_html(b) for b in blocks)


def css(blocks: Sequence[Block]) -> str:
    """The styling the sections among ``blocks`` carry (nested ones too), each once, in their order."""
    found: dict[str, None] = {}

    def visit(bs: Sequence[Block]) -> None:
        for b in bs:
            if isinstance(b, Section) and b.css:
                found[b.css] = None
            if isinstance(b, (Section, Details, Only)):
                visit(b.blocks)

    visit(blocks)
    return "".join(found)
