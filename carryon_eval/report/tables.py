"""The report's table helpers (Markdown and HTML), the house style of table.md and report.html. A leaf module: the
run report (writer), the triplet section and compare all use it, and it imports nothing of the package."""
from __future__ import annotations

import html
from typing import Any, Iterable, Sequence


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def escape(x: Any) -> str:
    """HTML text of a value (None is empty), quotes escaped too."""
    return html.escape("" if x is None else str(x), quote=True)


def html_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
