"""The figures of "a number is a record, a section is a record, rendering is blocks", guarded so that they cannot drift
back. Each test counts one figure over the package's source and holds it at or under its ceiling; a ceiling only ever
comes down (lower it in the commit that lowers the figure), and the message says what the figure is meant to reach.

- string-key reads (``["key"]`` and ``.get("key")``, the review's command: ``grep -rEo '\\["[a-z_0-9]+"\\]|\\.get\\("
  [a-z_0-9]+"' carryon_eval | wc -l``), in the whole package and in the modules that read sections back;
- functions outside report/ that build Markdown or HTML (report/ turns a suite's blocks into both);
- number formatters (a short function that writes "n/a" for a missing number and a value to a fixed precision);
- the modules that spell a number's own keys ("ci95", "scored_share", "reason");
- records with ``to_json`` and no way back (``from_json``).
"""
from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

from support.shared_data import REPO

PACKAGE = REPO / "carryon_eval"
KEY_READ = re.compile(r'\["[a-z_0-9]+"\]|\.get\("[a-z_0-9]+"')
HTML_TAG = re.compile(r"<(p|table|h[1-6]|div|details|summary|span|ul|ol|li|b|em|figure|tr|td|th)[ >]")
PRECISION = re.compile(r"\{[^}]*:[+]?\.(\{digits\}|\d)f\}")
NUMBER_KEYS = ("ci95", "scored_share", "reason")

#: The modules that read sections back (results.json's and compare.json's parts) to show or compare them.
SECTION_READERS = (
    "suites/carryonbench/report/section_blocks.py", "suites/carryonbench/report/summarize.py", "suites/carryonbench/report/intent_blocks.py",
    "suites/carryonbench/report/compare.py", "suites/carryonbench/report/headline_blocks.py", "suites/carryonbench/report/figures.py",
    "suites/carryonbench/report/board_figures.py", "suites/carryonbench/report/leaderboard.py", "suites/carryonbench/report/compare_figures.py",
    "suites/carryonbench/report/paper_rows.py", "suites/carryonbench/inspect_eval/scores.py", "suites/carryonbench/metrics/fidelity.py",
    "suites/carryonbench/metrics/power.py", "inspect_bridge/export.py", "report/compare.py", "report/leaderboard.py",
    "report/leaderboard_page.py", "suites/opensafeintent/report.py",
)

# ceilings: today's figure (the target in each test's message)
PACKAGE_KEY_READS = 300
SECTION_READER_KEY_READS = 22
MARKUP_FUNCTIONS = 0
FORMATTERS = 0
NUMBER_KEY_MODULES = 1
ONE_WAY_RECORDS = 0


@functools.cache
def _sources() -> tuple[tuple[str, str], ...]:
    """(path under the package, text) of every text file of the package (as the review's grep reads it)."""
    out = []
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            try:
                out.append((path.relative_to(PACKAGE).as_posix(), path.read_text(encoding="utf-8")))
            except UnicodeDecodeError:
                continue
    return tuple(out)


@functools.cache
def _modules() -> tuple[tuple[str, str, ast.Module], ...]:
    return tuple((rel, text, ast.parse(text)) for rel, text in _sources() if rel.endswith(".py"))


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    return (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _source(text: str, node: ast.AST) -> str:
    lines = _lines(text)
    return "\n".join(lines[node.lineno - 1:node.end_lineno])      # type: ignore[attr-defined]


@functools.cache
def _lines(text: str) -> list[str]:
    return text.splitlines()


def _strings(node: ast.AST) -> list[str]:
    return [c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str)]


def key_reads() -> dict[str, int]:
    return {rel: n for rel, text in _sources() if (n := len(KEY_READ.findall(text)))}


def markup_functions() -> list[str]:
    """Functions outside report/ whose text holds an HTML tag, a Markdown table row or a call of a table writer."""
    found = []
    for rel, text, tree in _modules():
        if rel.startswith("report/"):
            continue
        for f in _functions(tree):
            strings, source = _strings(f), _source(text, f)
            if any(HTML_TAG.search(s) or s.startswith("| ") for s in strings) or \
                    re.search(r"\b(markdown_table|html_table)\(", source):
                found.append(f"{rel}:{f.name}")
    return found


def formatters() -> list[str]:
    found = []
    for rel, text, tree in _modules():
        for f in _functions(tree):
            source = _source(text, f)
            if "n/a" in _strings(f) and PRECISION.search(source) and len(source.splitlines()) <= 6:
                found.append(f"{rel}:{f.name}")
    return found


def number_key_modules() -> dict[str, list[str]]:
    """Per key of a number, the modules that spell it."""
    out: dict[str, list[str]] = {key: [] for key in NUMBER_KEYS}
    for rel, _, tree in _modules():
        for key in set(_strings(tree)) & set(NUMBER_KEYS):
            out[key].append(rel)
    return out


def one_way_records() -> list[str]:
    found = []
    for rel, _, tree in _modules():
        for c in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            if any(isinstance(b, ast.Name) and b.id == "Protocol" for b in c.bases):
                continue                # an interface, not a record
            methods = {b.name for b in c.body if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))}
            if "to_json" in methods and "from_json" not in methods:
                found.append(f"{rel}:{c.name}")
    return found


def test_string_key_reads_in_the_package_stay_under_their_ceiling():
    total = sum(key_reads().values())
    assert total <= PACKAGE_KEY_READS, f"{total} string-key reads in carryon_eval (ceiling {PACKAGE_KEY_READS}, " \
                                       "meant to reach 650): read a record's fields"


def test_string_key_reads_in_the_section_readers_stay_under_their_ceiling():
    reads = key_reads()
    missing = [rel for rel in SECTION_READERS if not (PACKAGE / rel).exists()]
    assert not missing, f"section readers moved or gone, name their new home in SECTION_READERS: {missing}"
    total = sum(reads.get(rel, 0) for rel in SECTION_READERS)
    assert total <= SECTION_READER_KEY_READS, \
        f"{total} string-key reads in the section readers (ceiling {SECTION_READER_KEY_READS}, meant to reach 60): " \
        + ", ".join(f"{rel} {reads[rel]}" for rel in SECTION_READERS if reads.get(rel))


def test_markup_is_built_in_report_only():
    found = markup_functions()
    assert len(found) <= MARKUP_FUNCTIONS, f"{len(found)} functions outside report/ build Markdown or HTML " \
                                           f"(ceiling {MARKUP_FUNCTIONS}, meant to reach 0): {found}"


def test_numbers_have_one_format():
    found = formatters()
    assert len(found) <= FORMATTERS, f"{len(found)} number formatters (ceiling {FORMATTERS}, meant to reach 1): {found}"


def test_a_numbers_keys_are_spelled_in_few_modules():
    spelled = number_key_modules()
    worst = max(len(mods) for mods in spelled.values())
    assert worst <= NUMBER_KEY_MODULES, f"a number's keys spelled in up to {worst} modules (ceiling " \
                                        f"{NUMBER_KEY_MODULES}, meant to reach 2): {spelled}"


def test_every_record_reads_back():
    found = one_way_records()
    assert len(found) <= ONE_WAY_RECORDS, f"records with to_json and no from_json (ceiling {ONE_WAY_RECORDS}, " \
                                          f"meant to reach 0): {found}"


def test_the_figures_are_counted_from_real_source():
    """The counters see what they count: the number's own home spells its keys, report/ builds markup."""
    assert "metrics/number.py" in number_key_modules()["ci95"]
    assert key_reads() and Path(PACKAGE / "report").is_dir()
