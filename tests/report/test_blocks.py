"""Rendering is blocks: one number format in both outputs, all text escaped, n/a with its reason, blocks of one
output only, and a suite's styling carried by its section."""
from __future__ import annotations

import re

from carryon_eval.metrics.number import Number
from carryon_eval.report.blocks import (BOUNDS, HTML, INTERVAL, MARKDOWN, P_VALUE, VALUE_CI, Details, Heading, Notes, Only,
                                        Section, Shown, Span, Table, Text, css, number_text, to_html, to_markdown)

N = Number(61.25, ci95=[55.0, 67.125], bounds=[58.2, 64.04], scored_share=97.5, n=410)
MISSING = Number(reason="condition not run")


def cells_of_html(page: str) -> list[str]:
    return re.findall(r"<td>(.*?)</td>", page)


def cells_of_markdown(text: str) -> list[str]:
    rows = [line for line in text.splitlines() if line.startswith("| ")][1:]          # the header's row left out
    return [c.strip() for row in rows for c in row.strip("|").split(" | ")]


def test_a_table_of_numbers_shows_the_same_text_in_markdown_and_html():
    table = Table(["what", "value", "95% CI", "bounds", "both", "signed"],
                  [["a", Shown(N), Shown(N, show=INTERVAL), Shown(N, 2, BOUNDS), Shown(N, show=VALUE_CI),
                    Shown(Number(4.0), signed=True)],
                   ["b", Shown(MISSING), Shown(MISSING, show=INTERVAL), Shown(MISSING, show=BOUNDS),
                    Shown(MISSING, reason=True), Shown(Number(-0.5), signed=True)]])
    expected = ["a", "61.2", "[55.0, 67.1]", "[58.20, 64.04]", "61.2 [55.0, 67.1]", "+4.0",
                "b", "n/a", "n/a", "n/a", "n/a (condition not run)", "-0.5"]
    assert cells_of_markdown(to_markdown([table])) == expected
    assert cells_of_html(to_html([table])) == expected


def test_the_one_format_digits_and_marks():
    assert number_text(Shown(N, 4)) == "61.2500"
    assert number_text(Shown(N, mark="†")) == "61.2†"
    assert number_text(Shown(Number(0.0), 3, signed=True)) == "+0.000"
    assert number_text(Shown(MISSING, mark="†")) == "n/a"               # a mark belongs to a value
    assert number_text(Shown(N, unit="%", mark="†")) == "61.2%†"          # a unit right after the value
    assert number_text(Shown(MISSING, unit="%")) == "n/a"


def test_a_p_value_and_an_interval_with_an_undefined_end():
    p = [number_text(Shown(Number(x), 3, P_VALUE)) for x in (0.0004, 0.001, 0.04567, None)]
    assert p == ["<.001", "0.001", "0.046", "n/a"]
    assert number_text(Shown(Number(0.004), 2, P_VALUE)) == "<.01"
    assert number_text(Shown(Number(ci95=[0.25, None]), 3, INTERVAL)) == "[0.250, n/a]"     # statsmodels left it out


def test_every_text_is_escaped_in_html():
    evil = '<script>alert("x")</script>'
    page = to_html([Section("s", [Heading(evil), Text([evil, Span(evil, "chip", title=evil)]),
                                  Table([evil], [[evil]]), Notes([evil]), Details(evil, [Text(evil)], cls="query")])])
    assert "<script>" not in page and page.count("&lt;script&gt;") == 9
    assert 'title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"' in page


def test_a_pipe_in_a_markdown_cell_does_not_split_it():
    assert cells_of_markdown(to_markdown([Table(["h"], [["a|b"]])])) == ["a\\|b"]


def test_a_block_of_one_output_is_only_in_that_one():
    blocks = [Text("both"), Only(MARKDOWN, [Text("table.md only")]), Only(HTML, [Text("report.html only")])]
    md, page = to_markdown(blocks), to_html(blocks)
    assert md == "both\n\ntable.md only\n"
    assert page == "<p>both</p><p>report.html only</p>"


def test_a_sections_css_is_collected_once_in_order():
    inner = Section("inner", [Text("x", cls="chip")], css=".chip{color:red}")
    blocks = [Section("a", [Details("open me", [inner])], css=".msg{white-space:pre-wrap}"), inner]
    assert css(blocks) == ".msg{white-space:pre-wrap}.chip{color:red}"


def test_the_frames_css_names_no_suites_class():
    from carryon_eval.report.html import CSS
    frame_classes = set(re.findall(r"\.([a-z][a-z0-9_-]*)\s*[{,]", CSS))
    assert frame_classes and frame_classes.isdisjoint(
        {"msg", "user", "assistant", "chip", "hit", "miss", "unscored", "harm4", "items", "query"}), frame_classes


def test_a_tables_footnotes_follow_it_in_both_outputs():
    table = Table(["h"], [[Shown(N, mark="†")]], footnotes=[["† stands on ", Shown(Number(90.04)), "% scored"]])
    assert to_markdown([table]).endswith("| 61.2† |\n\n† stands on 90.0% scored  \n")
    assert to_html([table]).endswith('</table><p class="meta footnote">† stands on 90.0% scored</p>')
