"""CarryOnBench's part of table.md and report.html, read once from its section's records as blocks (the run's
headline in Table 2's layout, Recovery%, the clarification effect, the CIs and bounds, the intent contrasts, and in
report.html the breakdowns), and its appendix in report.html (the agreement with people, when measured, and the
transcripts, each reply with its checklist chips and harm, styled by the CSS that travels with them)."""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Optional, Sequence

from carryon_eval.dataset.load import Benchmark
from carryon_eval.dataset.rows import RowKeys, keys
from carryon_eval.judge.scorers import make_scorer
from carryon_eval.metrics.number import Number
from carryon_eval.moves import MOVE_GROUP
from carryon_eval.report.blocks import (BOUNDS, HTML, INTERVAL, MARKDOWN, Block, Details, Heading, Notes, Only,
                                        Section, Shown, Span, Table, Text)
from carryon_eval.report.html import CSS, page_title
from carryon_eval.report.pages import QueryEntry, transcripts_section
from carryon_eval.run.results import Results
from carryon_eval.schema import Transcript
from carryon_eval.suite import ReportPage
from carryon_eval.suites.carryonbench.conditions import CONDITIONS
from carryon_eval.suites.carryonbench.metrics.conversations import (BINS, VIOLATION_THRESHOLD, Conversation, Turn,
                                                            conversation_harm, conversation_utility, turn_utility)
from carryon_eval.suites.carryonbench.metrics.fidelity import fidelity_text
from carryon_eval.suites.carryonbench.human.judges_vs_people import agreement_blocks
from carryon_eval.suites.carryonbench.report.intent_blocks import intent_blocks
from carryon_eval.suites.carryonbench.metrics.power import run_power_line
from carryon_eval.suites.carryonbench.report.summarize import conversations, utility_items, utility_judge_note
from carryon_eval.suites.carryonbench.section import CarryOnBenchSection
from carryon_eval.suites.carryonbench.settings import UTILITY_SCORERS
from carryon_eval.suites.carryonbench.report.headline_blocks import (_both, bounds_rows, ci_table_html, ci_table_md, footnotes,
                                                    helpful_text, judges_line, meaning_lines, table_header, table_row,
                                                    utility_definition, utility_label, vs_nc_text)


def _mode(results: Results, sec: CarryOnBenchSection) -> str:
    """The header's "; mode M" of a Ben-Util run (a rubric run has no Ben-Util mode)."""
    if results.utility_measure != "benutil":
        return ""
    return f"; mode {sec.judges.utility.ben_util_mode}"


def _run_line(results: Results, sec: CarryOnBenchSection) -> str:
    """report.html's line of what the run stands on: its dataset, queries, judges and who wrote it when."""
    utility, safety = sec.judges.utility, sec.judges.safety
    return (f"dataset {results.dataset.source} · {sec.n.queries} queries · {utility_label(results)} judge "
            f"{', '.join(utility.model_names()) or 'none'} ({', '.join(utility.prompt_names())}"
            f"{_mode(results, sec)}) · safety judge {', '.join(safety.model_names()) or 'none'} "
            f"({', '.join(safety.prompt_names())}) · {results.generated.by} · {results.generated.at}")


def _headline_text(name: str, formula: str, rec: Any) -> Text:
    """Recovery% or the clarification effect: its formula, its value with its interval and bounds (or why null)."""
    n = rec.number
    return Text([f"{name} = {formula} = ", Shown(n), " 95% CI ", Shown(n, show=INTERVAL), ", bounds ",
                 Shown(n, show=BOUNDS), f" — null: {n.reason}" if n.value is None else ""])


def breakdown_blocks(sec: CarryOnBenchSection) -> list[Block]:
    """report.html's breakdowns: by turn, by turn-1 bin, by user move and by domain."""
    bins, eff = sec.turn1_bins, sec.move_effects
    by_turn = [[cond, str(r.turn), str(r.n), Shown(r.number("utility")), Shown(r.number("cumulative_utility")),
                Shown(r.number("harm"), 2), Shown(r.number("cumulative_harm"), 2)]
               for cond, rows in sec.by_turn.items() for r in rows]
    by_bin = [[bins.label(b) or b, cond, str(cell.n), Shown(cell.number("turn1_utility")), Shown(cell.number("utility")),
               Shown(cell.number("turn1_harm"), 2), Shown(cell.number("harm"), 2)]
              for b in BINS for cond in ("bc", "nc") for cell in [bins.bins[b][cond]]]
    by_move = [[m, e.group, str(e.n_turns), Shown(Number(e.utility_dev)), Shown(Number(e.harm_dev), 2),
                Shown(Number(e.utility_dev_followup)), Shown(Number(e.harm_dev_followup), 2)]
               for m, e in eff.moves_of().items()]
    by_domain = [[d, str(r.n_queries), *(Shown(r.cell(c).number("utility")) for c in CONDITIONS),
                  Shown(Number(r.cell("bc").utility_delta)), Shown(Number(r.cell("nc").utility_delta)),
                  *(Shown(r.cell(c).number("harm"), 2) for c in CONDITIONS)] for d, r in sec.by_domain.items()]
    return [Heading("By turn"),
            Table(["condition", "turn", "n", "util %", "cumulative util %", "harm", "cumulative harm (max)"], by_turn),
            Heading("Turn-1 bins"),
            Table(["bin", "condition", "n", "T1 util %", "conv. util %", "T1 harm", "conv. harm"], by_bin),
            Heading("User move effects (deviation from the model's mean)"),
            Text(f"Baseline: {eff.baseline or ''}.", cls="meta"),
            Table(["move", "group", "n turns", "Δ util (points)", "Δ harm", "Δ util vs follow-up turns",
                   "Δ harm vs follow-up turns"], by_move),
            Heading("By domain"),
            Table(["domain", "queries", *(f"{c} util %" for c in CONDITIONS), "BC Δ util", "NC Δ util",
                   *(f"{c} harm" for c in CONDITIONS)], by_domain)]


def section_blocks(section: CarryOnBenchSection) -> list[Block]:
    """SuiteReport.blocks: its part of table.md and report.html, read once for both: what the run stands on, the
    headline in Table 2's layout with its footnotes, Recovery% and the clarification effect, the lines beside them,
    the 95% CIs and bounds, the intent contrasts and (report.html) the breakdowns."""
    results = section.results
    assert results is not None            # placed in its results (its rows read the run's model and judges)
    sec = section
    meaning = meaning_lines(results)
    effect = sec.clarification_effect
    beside = [t for t in (fidelity_text(effect.fidelity), vs_nc_text(sec),
                          run_power_line(sec.power)) if t]
    helpful = helpful_text(sec)
    recovery = (("Recovery%", sec.recovery), ("Clarification effect (BC util - NC util)", effect))
    return [Section("carryonbench", [
        Only(MARKDOWN, [Text(f"{utility_definition(results)}; harm: 1-5, conversation max; Δ: change from turn 1; "
                             "BC − NC: against NC on the same queries and lengths; Recovery% = (BC util - T1 util) / "
                             "oracle util * 100; Clarif. effect = BC util - NC util."),
                        Text(judges_line(results)), Notes([f"{line}." for line in meaning], cls=None)]),
        Only(HTML, [Text(_run_line(results, sec), cls="meta"),
                    Text(utility_judge_note(sec.judges.utility, results.utility_measure), cls="meta", id="ben-util-mode"),
                    Heading("Headline (Table 2 layout)")]),
        Table(table_header(results), [table_row(results, marked=True)], footnotes=footnotes(sec)),
        Only(HTML, [_headline_text("Recovery%", "(BC util − T1 util) / oracle util × 100", sec.recovery),
                    *([_headline_text("Clarification effect", "BC util − NC util", effect)] if effect else []),
                    *(Text(line, cls="meta clarification-beside") for line in beside if effect),
                    *([helpful] if helpful else []),
                    *(Text(f"{line}.", cls="meta meaning") for line in meaning),
                    ci_table_html(sec),
                    Table(["condition", "util % bounds", "harm bounds", "% harm ≥ 4 bounds", "Δ util bounds",
                           "Δ harm bounds"], bounds_rows(sec))]),
        Only(MARKDOWN, [Text("95% confidence intervals (bootstrap over queries) and violation rates:"), ci_table_md(sec),
                        Text("Bounds (every unscored judgment read as no / harm 1 and as yes / harm 5; differences "
                             "and Recovery% over their terms' bounds):"),
                        Table(["Condition", "Util.", "Harm (max)", "% harm >= 4", "Δ util", "Δ harm"], bounds_rows(sec)),
                        *(Text([f"{name}: ", *_both(rec.number), ", bounds ", Shown(rec.number, show=BOUNDS),
                                f" (null: {rec.number.reason})" if rec.number.value is None else ""])
                          for name, rec in recovery if rec),
                        *(Text(line) for line in beside), *([helpful] if helpful else [])]),
        *intent_blocks(sec),
        Only(HTML, breakdown_blocks(sec))])]


#: The transcripts' styling, carried by the appendix's section into report.html and onto its pages of queries
TRANSCRIPT_CSS = (
    ".query{border:1px solid #ddd;border-radius:4px;padding:.3em .8em;margin:.6em 0}.qid{font-weight:bold}"
    ".msg{white-space:pre-wrap;word-wrap:break-word;border-radius:4px;padding:.4em .7em;margin:.35em 0}"
    ".user{background:#eef4ff}.assistant{background:#f6f6f6}.shared{font-style:italic}"
    ".chip{display:inline-block;min-width:1.6em;text-align:center;border-radius:3px;margin:1px;font-size:11px;"
    "padding:0 2px}.hit{background:#2e8b57;color:#fff}.miss{background:#e4e4e4;color:#555}"
    ".unscored{background:#f0ad4e;color:#000}.harm4{color:#b00020;font-weight:bold}ol.items{font-size:12px;color:#333}")


def _chips(turn: Turn, items: Sequence[RowKeys]) -> list[Span]:
    out = []
    for n, item in enumerate(items, start=1):
        v = turn.verdicts.get(item.item_id)
        cls, mark = ("hit", "yes") if v else (("miss", "no") if v is False else ("unscored", "unscored"))
        out.append(Span(str(n), f"chip {cls}", title=f"{item.question} ({mark})"))
    return out


def _turn_meta(turn: Turn, items: Sequence[RowKeys], label: str = "Ben-Util") -> list[Block]:
    hits = [str(n) for n, it in enumerate(items, start=1) if turn.verdicts.get(it.item_id)]
    harm = Span(f"harm {turn.harm if turn.harm is not None else 'unscored'}",
                "harm4" if turn.harm is not None and turn.harm >= VIOLATION_THRESHOLD else None)
    return [Text([f"turn {turn.turn} · {label} ", Shown(Number(turn_utility(turn))), "% · ", harm,
                  f" · items fulfilled: {', '.join(hits) or 'none'}"], cls="meta"),
            Text(_chips(turn, items), cls="meta")]


def _conversation(tr: Transcript, conv: Conversation, items: Sequence[RowKeys],
                  shared_text: Optional[str], label: str = "Ben-Util") -> Details:
    turns = {t.turn: t for t in conv.turns}
    h = conversation_harm(conv.turns)
    moves = f"· {' → '.join(tr.moves)} " if tr.moves else ""
    summary = [f"{tr.conversation_id} · {tr.condition} {moves}· {label} ", Shown(Number(conversation_utility(conv.turns))),
               f"% · harm {h if h is not None else 'n/a'}"]
    blocks: list[Block] = []
    for m in tr.messages:
        if m.role == "assistant":
            shared = m.turn == 1 and tr.shared_turn1 and shared_text is not None and m.content == shared_text \
                and tr.condition != "turn1"
            blocks.append(Text(Span(f"(the shared turn-1 reply; see turn1:{tr.query_id})", "shared") if shared
                               else m.content, cls="msg assistant"))
            if m.turn in turns:
                blocks += _turn_meta(turns[m.turn], items, label)
        else:
            who = f"user · {m.move} ({MOVE_GROUP.get(m.move, '')})" if m.move else "user"
            blocks += [Text(who, cls="meta"), Text(m.content, cls="msg user")]
    return Details(summary, blocks)


def query_entries(transcripts: Sequence[Transcript], convs: Sequence[Conversation],
                  bench: Benchmark, results: Optional[Results] = None) -> dict[str, QueryEntry]:
    """Each query's transcripts as one closed Details of class "query", in run order; utility named and its items
    listed as ``results`` measured it (default: Ben-Util, the dataset's checklists)."""
    label = "Ben-Util" if results is None else utility_label(results)
    scorer = make_scorer(UTILITY_SCORERS["benutil" if results is None else results.utility_measure])
    measured = utility_items(bench, scorer)
    by_id = {c.conversation_id: c for c in convs}
    per_query: dict[str, list[Transcript]] = defaultdict(list)
    for tr in transcripts:
        per_query[tr.query_id].append(tr)
    order = {c: i for i, c in enumerate(CONDITIONS)}
    entries = {}
    for qid, trs in per_query.items():
        q = keys(bench.queries.get(qid, {}))
        items = measured.get(qid, [])
        shared = next((t.replies[0].content for t in trs if t.condition == "turn1" and t.replies), None)
        blocks: list[Block] = [
            Text(f"benign intent: {q.benign_intent or ''}", cls="meta"),
            Details(f"checklist ({len(items)} items)", [Notes([it.question for it in items], "items", ordered=True)]),
            *(_conversation(tr, by_id[tr.conversation_id], items, shared, label)
              for tr in sorted(trs, key=lambda t: (order.get(t.condition, 9), t.conversation_id)))]
        summary = [Span(qid, "qid"), f" · {q.domain or ''} · {q.query or ''} ({len(trs)} conversations)"]
        entries[qid] = QueryEntry([Details(summary, blocks, cls="query")], q.domain, q.query, len(trs))
    return entries


def appendix(page: ReportPage) -> list[Block]:
    """SuiteReport.appendix: the agreement with people (agreement.json, when measured) and the transcripts (at most
    20 pages of queries beside report.html above a size threshold: carryon_eval.report.pages), with their styling."""
    run, results = page.inputs.run, page.results
    transcripts, convs = conversations(page.inputs)
    entries = query_entries(transcripts, convs, page.inputs.bench, results)
    agreement = agreement_blocks(run.path)
    return [*([Section("agreement", agreement)] if agreement else []), Section("transcripts", [
        Heading("Transcripts"),
        Text("Chips: checklist items by number (green: fulfilled, grey: not, orange: unscored); hover for the question.",
             cls="meta"),
        *transcripts_section(run, entries, css=CSS + TRANSCRIPT_CSS, title=page_title(results))], css=TRANSCRIPT_CSS)]
