"""CarryOnBench's part of report.html: its section (the headline in Table 2's layout, Recovery%, the clarification
effect, the CIs, bounds and breakdowns) and its appendix (the agreement with people, when measured, and the
transcripts, each reply with its checklist chips and harm); every piece of model or user text is HTML-escaped."""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Optional, Sequence

from carryon_eval.suites.carryonbench.section import extra
from carryon_eval.dataset.load import Benchmark
from carryon_eval.suites.carryonbench.human.judges_vs_people import agreement_blocks
from carryon_eval.metrics.number import Number
from carryon_eval.report.blocks import Block, Details, Heading, Notes, Section, Shown, Span, Text
from carryon_eval.judge.scorers import make_scorer
from carryon_eval.moves import MOVE_GROUP
from carryon_eval.report.html import CSS, page_title
from carryon_eval.report.html import escape as _e
from carryon_eval.report.pages import QueryEntry, transcripts_section
from carryon_eval.report.tables import html_table as _html_table
from carryon_eval.run.results import Results
from carryon_eval.suites.carryonbench.settings import UTILITY_SCORERS
from carryon_eval.schema import Transcript
from carryon_eval.suites.carryonbench.conditions import CONDITIONS
from carryon_eval.suite import ReportPage
from carryon_eval.suites.carryonbench import intent_report as mc_report
from carryon_eval.suites.carryonbench.conversations import (BINS, VIOLATION_THRESHOLD, Conversation, Turn,
                                                            conversation_harm, conversation_utility, turn_utility)
from carryon_eval.suites.carryonbench.report import conversations, utility_items, utility_judge_note
from carryon_eval.suites.carryonbench.rubric_metrics import SECTION as RUBRIC_SECTION
from carryon_eval.suites.carryonbench.fidelity import fidelity_text
from carryon_eval.suites.carryonbench.power import run_power_line
from carryon_eval.suites.carryonbench.table import (_ci, _f, helpful_markdown, meaning_lines, scored_footnotes,
                                                    vs_nc_line, table_header, table_row, truncated_share, truncation_footnotes,
                                                    unplayed_footnotes, utility_label)


def _mode(results: Results) -> str:
    """The header's "; mode M" of a Ben-Util run (a rubric run has no Ben-Util mode)."""
    if results.utility_measure != "benutil":
        return ""
    return f"; mode {(results.judges.utility or {}).get('utility_judge') or 'per-item'}"


#: The transcripts' styling, carried by the appendix's section into report.html and onto its pages of queries
TRANSCRIPT_CSS = (
    ".query{border:1px solid #ddd;border-radius:4px;padding:.3em .8em;margin:.6em 0}.qid{font-weight:bold}"
    ".msg{white-space:pre-wrap;word-wrap:break-word;border-radius:4px;padding:.4em .7em;margin:.35em 0}"
    ".user{background:#eef4ff}.assistant{background:#f6f6f6}.shared{font-style:italic}"
    ".chip{display:inline-block;min-width:1.6em;text-align:center;border-radius:3px;margin:1px;font-size:11px;"
    "padding:0 2px}.hit{background:#2e8b57;color:#fff}.miss{background:#e4e4e4;color:#555}"
    ".unscored{background:#f0ad4e;color:#000}.harm4{color:#b00020;font-weight:bold}ol.items{font-size:12px;color:#333}")


def _chips(turn: Turn, items: Sequence[dict[str, Any]]) -> list[Span]:
    out = []
    for n, item in enumerate(items, start=1):
        v = turn.verdicts.get(item["item_id"])
        cls, mark = ("hit", "yes") if v else (("miss", "no") if v is False else ("unscored", "unscored"))
        out.append(Span(str(n), f"chip {cls}", title=f"{item['question']} ({mark})"))
    return out


def _turn_meta(turn: Turn, items: Sequence[dict[str, Any]], label: str = "Ben-Util") -> list[Block]:
    hits = [str(n) for n, it in enumerate(items, start=1) if turn.verdicts.get(it["item_id"])]
    harm = Span(f"harm {turn.harm if turn.harm is not None else 'unscored'}",
                "harm4" if turn.harm is not None and turn.harm >= VIOLATION_THRESHOLD else None)
    return [Text([f"turn {turn.turn} · {label} ", Shown(Number(turn_utility(turn))), "% · ", harm,
                  f" · items fulfilled: {', '.join(hits) or 'none'}"], cls="meta"),
            Text(_chips(turn, items), cls="meta")]


def _conversation(tr: Transcript, conv: Conversation, items: Sequence[dict[str, Any]],
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
    measured = bench.checklists if results is None or results.utility_measure == "benutil" else \
        utility_items(bench, make_scorer(UTILITY_SCORERS[results.utility_measure]))
    by_id = {c.conversation_id: c for c in convs}
    per_query: dict[str, list[Transcript]] = defaultdict(list)
    for tr in transcripts:
        per_query[tr.query_id].append(tr)
    order = {c: i for i, c in enumerate(CONDITIONS)}
    entries = {}
    for qid, trs in per_query.items():
        q = bench.queries.get(qid, {})
        items = measured.get(qid, [])
        shared = next((t.replies[0].content for t in trs if t.condition == "turn1" and t.replies), None)
        blocks: list[Block] = [
            Text(f"benign intent: {q.get('benign_intent') or ''}", cls="meta"),
            Details(f"checklist ({len(items)} items)", [Notes([it["question"] for it in items], "items", ordered=True)]),
            *(_conversation(tr, by_id[tr.conversation_id], items, shared, label)
              for tr in sorted(trs, key=lambda t: (order.get(t.condition, 9), t.conversation_id)))]
        summary = [Span(qid, "qid"), f" · {q.get('domain') or ''} · {q.get('query') or ''} ({len(trs)} conversations)"]
        entries[qid] = QueryEntry([Details(summary, blocks, cls="query")], q.get("domain"), q.get("query"), len(trs))
    return entries


def _clarification_html(results: Results) -> str:
    effect = results.clarification_effect or {}
    if not effect:
        return ""
    more = [fidelity_text(effect.get("fidelity")), vs_nc_line(results), run_power_line(extra(results, "power"))]
    return (f"<p>Clarification effect = BC util − NC util = <b>{_e(_f(effect.get('value')))}</b> "
            f"95% CI {_e(_ci(effect.get('ci95')))}, bounds {_e(_ci(effect.get('bounds')))}"
            f"{_e(' — null: ' + str(effect.get('reason')) if effect.get('value') is None else '')}</p>"
            + "".join(f'<p class="meta clarification-beside">{_e(line)}</p>' for line in more if line))


def section_html(results: Results) -> str:
    """SuiteReport.html: the run's headline in Table 2's layout, its footnotes, Recovery% and the clarification
    effect, the CIs and bounds, the intent contrasts, and the breakdowns by turn, turn-1 bin, move and domain."""
    c = results.conditions
    ci_rows = [[cond, b["n_conversations"], _f(b["utility"]), _ci(b["ci95"].get("utility")), _f(b["harm"], 2),
                _ci(b["ci95"].get("harm"), 2), _f(b["harm_mean_turns"], 2), _f(b["violation_rate"]),
                _ci(b["ci95"].get("violation_rate")), _f(b["harm5_rate"]), _f(b.get("redundancy")),
                _f(b["scored"]["utility_items"]), _f(b["scored"]["safety_turns"]), _f(truncated_share(b))]
               for cond, b in c.items()]
    bins = results.turn1_bins
    names = bins.get("labels") or {}
    bin_rows = [[names.get(b, b), cond, bins[b][cond]["n"], _f(bins[b][cond]["turn1_utility"]), _f(bins[b][cond]["utility"]),
                 _f(bins[b][cond]["turn1_harm"], 2), _f(bins[b][cond]["harm"], 2)]
                for b in BINS for cond in ("bc", "nc")]
    eff = results.move_effects
    move_rows = [[m, r["group"], r["n_turns"], _f(r["utility_dev"]), _f(r["harm_dev"], 2),
                  _f(r.get("utility_dev_followup")), _f(r.get("harm_dev_followup"), 2)]
                 for m, r in eff["moves"].items()]
    dom_rows = [[d, r["n_queries"]] + [_f(r[cond]["utility"]) for cond in CONDITIONS] +
                [_f(r["bc"]["utility_delta"]), _f(r["nc"]["utility_delta"])] +
                [_f(r[cond]["harm"], 2) for cond in CONDITIONS]
                for d, r in results.by_domain.items()]
    turn_rows = [[cond, r["turn"], r["n"], _f(r["utility"]), _f(r["cumulative_utility"]), _f(r["harm"], 2),
                  _f(r["cumulative_harm"], 2)] for cond in results.by_turn for r in results.by_turn[cond]]
    judges = results.judges
    rec = results.recovery
    sections = [
        f'<p class="meta">dataset {_e(results.dataset.source)} · {_e(results.n["queries"])} queries · '
        f'{_e(utility_label(results))} judge {_e(", ".join(judges.utility["models"]) or "none")} '
        f'({_e(", ".join(judges.utility["prompt_refs"]))}{_e(_mode(results))}) · safety judge '
        f'{_e(", ".join(judges.safety["models"]) or "none")} ({_e(", ".join(judges.safety["prompt_refs"]))}) · '
        f'{_e(results.generated.by)} · {_e(results.generated.at)}</p>',
        f'<p class="meta" id="ben-util-mode">{_e(utility_judge_note(judges.utility, results.utility_measure))}</p>',
        "<h2>Headline (Table 2 layout)</h2>", _html_table(table_header(results), [table_row(results, marked=True)]),
        "".join(f'<p class="meta footnote">{_e(n)}</p>'
                for n in scored_footnotes(results) + truncation_footnotes(results) + unplayed_footnotes(results)),
        f"<p>Recovery% = (BC util − T1 util) / oracle util × 100 = <b>{_e(_f(rec['value']))}</b> "
        f"95% CI {_e(_ci(rec['ci95']))}, bounds {_e(_ci(rec.get('bounds')))}"
        f"{_e(' — null: ' + rec['reason'] if rec['value'] is None else '')}</p>",
        _clarification_html(results),
        f"<p>{_e(helpful_markdown(results).strip())}</p>" if extra(results, RUBRIC_SECTION) else "",
        "".join(f'<p class="meta meaning">{_e(line)}.</p>' for line in meaning_lines(results)),
        _html_table(["condition", "n conv.", "util %", "95% CI", "harm (max)", "95% CI", "harm (mean)",
                     "% harm ≥ 4", "95% CI", "% harm 5", "redundancy %", "% items scored", "% harm scored",
                     "% replies cut (length)"], ci_rows),
        _html_table(["condition", "util % bounds", "harm bounds", "% harm ≥ 4 bounds", "Δ util bounds",
                     "Δ harm bounds"],
                    [[cond, _ci(b["bounds"].get("utility")), _ci(b["bounds"].get("harm"), 2),
                      _ci(b["bounds"].get("violation_rate")), _ci(b["bounds"].get("utility_delta")),
                      _ci(b["bounds"].get("harm_delta"), 2)] for cond, b in c.items()]),
        mc_report.intent_html(results),
        "<h2>By turn</h2>", _html_table(["condition", "turn", "n", "util %", "cumulative util %", "harm",
                                         "cumulative harm (max)"], turn_rows),
        "<h2>Turn-1 bins</h2>", _html_table(["bin", "condition", "n", "T1 util %", "conv. util %", "T1 harm",
                                             "conv. harm"], bin_rows),
        "<h2>User move effects (deviation from the model's mean)</h2>",
        f'<p class="meta">Baseline: {_e(eff.get("baseline"))}.</p>',
        _html_table(["move", "group", "n turns", "Δ util (points)", "Δ harm", "Δ util vs follow-up turns",
                     "Δ harm vs follow-up turns"], move_rows),
        "<h2>By domain</h2>", _html_table(["domain", "queries"] + [f"{c} util %" for c in CONDITIONS] +
                                          ["BC Δ util", "NC Δ util"] + [f"{c} harm" for c in CONDITIONS], dom_rows),
    ]
    return "".join(sections)


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
