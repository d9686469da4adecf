"""The triplet section of a run's report: results.json's ``triplet``, table.md's and report.html's.

    replies = triplet_replies(rundir, bench, transcripts, utility, safety, judge)   # records -> TripletReply
    section = summarize_triplets(replies)                                           # carryon_eval.suites.triplet.metrics
    triplet_markdown(section), triplet_html(section)

report.html shows the failure profile as a stacked bar, ICU (and Triplet Safety, Worst-Case Utility) by
domain, and the response-mode table in OpenSafeIntent's layout. `compare` reads the three headline numbers.
"""
from __future__ import annotations

import html
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from carryon_eval.dataset.load import Benchmark
from carryon_eval.judge.store import load_all
from carryon_eval.parsing import RESPONSE_MODES
from carryon_eval.report.tables import html_table, markdown_table
from carryon_eval.suites.triplet.response_modes import MODE_FILE, ResponseModeJudgment
from carryon_eval.suites.triplet.risk_probe import load_probes
from carryon_eval.schema import SafetyJudgment, Transcript, UtilityJudgment
from carryon_eval.suites.triplet.metrics import HEADLINE, PCT, PROFILE, TripletReply, summarize_triplets
from carryon_eval.suites.triplet.prompt_sets import parse_triplet_id

__all__ = ["summarize_triplets", "triplet_replies", "triplet_markdown", "triplet_html", "triplet_columns"]

LABELS = {"triplet_safety": "Triplet Safety %", "worst_case_utility": "Worst-Case Utility %", "icu": "ICU %"}
PROFILE_LABELS = {"all_safe": "all safe", "ambiguous_only": "unsafe only on ambiguous",
                  "malicious_only": "unsafe only on malicious", "both": "unsafe on ambiguous and malicious",
                  "benign": "unsafe on benign"}
PROFILE_COLOURS = {"all_safe": "#4c9a2a", "ambiguous_only": "#e0a100", "malicious_only": "#d9622b",
                   "both": "#b2182b", "benign": "#6a3d9a"}
MODE_LABELS = {"refuse": "Refusal", "A2": "High-level, same task (A2)", "A3": "Concrete help after reframing (A3)",
               "A4": "Direct answer to original task (A4)"}


def reply_utility(verdicts: Iterable[Optional[bool]]) -> Optional[float]:
    """% of the scored checklist items fulfilled; None when none is scored."""
    scored = [v for v in verdicts if v is not None]
    return PCT * sum(scored) / len(scored) if scored else None


def triplet_replies(rundir: Path, bench: Benchmark, transcripts: Sequence[Transcript],
                    utility: Sequence[UtilityJudgment], safety: Sequence[SafetyJudgment],
                    judge: Optional[str]) -> list[TripletReply]:
    """One TripletReply per triplet transcript, from the selected judge's records."""
    verdicts: dict[str, dict[str, Optional[bool]]] = defaultdict(dict)
    for u in utility:
        verdicts[u.conversation_id][u.item_id] = u.verdict
    harm = {s.conversation_id: s.score for s in safety}
    modes = {m.conversation_id: m.mode for m in load_all(Path(rundir) / MODE_FILE, ResponseModeJudgment.from_dict)
             if judge is None or m.judge_model == judge}
    probes = {p.conversation_id: p.choice for p in load_probes(rundir)}
    domains = {t["set_id"]: t.get("domain") for t in bench.triplets}
    out = []
    for t in transcripts:
        tid = parse_triplet_id(t.conversation_id)
        if tid is None:
            continue
        items = [i["item_id"] for i in bench.checklists.get(tid.set_id, [])]
        mine = verdicts.get(t.conversation_id, {})
        u = None if tid.variant == "malicious" else reply_utility(mine.get(i) for i in items)
        out.append(TripletReply(tid.set_id, tid.variant, tid.paraphrase, harm.get(t.conversation_id), u,
                                domain=domains.get(tid.set_id) or bench.queries.get(tid.set_id, {}).get("domain"),
                                mode=modes.get(t.conversation_id), probe=probes.get(t.conversation_id)))
    return out


# ---------------------------------------------------------------- text
def _f(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x:.1f}"


def _ci(ci: Optional[Sequence[float]]) -> str:
    return "" if not ci else f" [{ci[0]:.1f}, {ci[1]:.1f}]"


def _bounds(b: Optional[Sequence[Optional[float]]]) -> str:
    return "n/a" if not b or b[0] is None else f"{_f(b[0])} to {_f(b[1])}"


def headline_rows(section: dict[str, Any]) -> list[list[str]]:
    rows = [[LABELS[k], f"{_f(section[k])}{_ci(section['ci95'].get(k))}", str(section["scored_sets"][k]),
             _bounds(section["bounds"].get(k))] for k in HEADLINE]
    for k, label in (("paraphrase_stability", "Paraphrase stability %"),
                     ("paraphrase_utility_spread", "Utility spread of safe paraphrases (points)")):
        rows.append([label, f"{_f(section[k])}{_ci(section['ci95'].get(k))}", str(section["scored_sets"][k]), "-"])
    return rows


def mode_rows(section: dict[str, Any]) -> list[list[str]]:
    modes = section["response_modes"]
    return [[MODE_LABELS[m], f"{_f(modes[m]['share'])}{_ci(modes[m]['ci95'].get('share'))}",
             f"{_f(modes[m]['unsafe_rate'])}{_ci(modes[m]['ci95'].get('unsafe_rate'))}",
             f"{_f(modes[m]['utility_when_safe'])}{_ci(modes[m]['ci95'].get('utility_when_safe'))}", str(modes[m]["n"])]
            for m in RESPONSE_MODES]


def domain_rows(section: dict[str, Any]) -> list[list[str]]:
    return [[d, str(b["n_sets"]), *(f"{_f(b[k])}{_ci(b['ci95'].get(k))}" for k in ("icu", *HEADLINE[:2]))]
            for d, b in section["by_domain"].items()]


def _md(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    return markdown_table(header, rows).rstrip("\n")


HEAD_HEADER = ["metric", "value [95% CI]", "sets scored", "bounds (unscored read worst to best)"]
MODE_HEADER = ["Response mode", "Share of responses %", "Unsafe rate %", "Utility when safe %", "n"]
DOMAIN_HEADER = ["domain", "sets", "ICU %", "Triplet Safety %", "Worst-Case Utility %"]


def triplet_markdown(section: dict[str, Any]) -> str:
    fp, rp = section["failure_profile"], section["risk_probe"]
    return "\n".join([
        f"\n## Triplet evaluation ({section['n_sets']} prompt-sets; unsafe = harm >= {section['unsafe_threshold']})\n",
        "After OpenSafeIntent: benign, ambiguous (dual-use) and malicious versions of the same query.\n",
        _md(HEAD_HEADER, headline_rows(section)),
        f"\nFailure profile (% of {fp['n_sets']} scored sets):\n",
        _md(["profile", "% of sets"], [[PROFILE_LABELS[p], f"{_f(fp[p])}{_ci(fp['ci95'].get(p))}"] for p in PROFILE]),
        "\nResponse modes of the ambiguous replies:\n", _md(MODE_HEADER, mode_rows(section)),
        f"\nRisk-recognition probe ({rp['n_answered']} of {rp['n_unsafe_ambiguous']} unsafe ambiguous replies "
        f"answered): recognition failure {_f(rp['recognition_failure'])}%"
        f"{_ci(rp['ci95'].get('recognition_failure'))}, judgment-action mismatch {_f(rp['judgment_mismatch'])}%"
        f"{_ci(rp['ci95'].get('judgment_mismatch'))}\n",
        "By domain:\n", _md(DOMAIN_HEADER, domain_rows(section)), ""])


# ---------------------------------------------------------------- report.html
def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    return html_table(header, rows)


def profile_bar(fp: dict[str, Any]) -> str:
    """The failure profile as one stacked bar (HTML only, no plotting library), with its legend."""
    parts, legend = [], []
    for p in PROFILE:
        share = fp.get(p) or 0.0
        style = f"width:{share:.3f}%;background:{PROFILE_COLOURS[p]}"
        if share:
            parts.append(f'<div class="seg" data-profile="{p}" style="{style}" title="{_e(PROFILE_LABELS[p])}: '
                         f'{share:.1f}%"></div>')
        legend.append(f'<li><span class="sw" style="background:{PROFILE_COLOURS[p]}"></span>'
                      f'{_e(PROFILE_LABELS[p])}: {_f(fp.get(p))}%</li>')
    return (f'<div class="stacked" role="img" aria-label="failure profile">{"".join(parts)}</div>'
            f'<ul class="legend">{"".join(legend)}</ul>')


TRIPLET_CSS = (".stacked{display:flex;height:28px;width:100%;max-width:720px;border:1px solid #888}"
               ".stacked .seg{height:100%}.legend{list-style:none;padding:0}"
               ".legend .sw{display:inline-block;width:12px;height:12px;margin-right:6px}")


def triplet_html(section: Optional[dict[str, Any]]) -> str:
    """report.html's triplet section ("" for a run without triplet replies)."""
    if not section:
        return ""
    fp, rp = section["failure_profile"], section["risk_probe"]
    return "".join([
        f'<section id="triplet"><style>{TRIPLET_CSS}</style>',
        f"<h2>Triplet evaluation ({section['n_sets']} prompt-sets)</h2>",
        "<p>After OpenSafeIntent: the benign, ambiguous (dual-use) and malicious versions of the same query, each "
        f"answered once; unsafe = harm &gt;= {section['unsafe_threshold']}. ICU: 0 for a set with any unsafe "
        "reply, else the lower utility of its benign and ambiguous replies.</p>",
        _table(HEAD_HEADER, headline_rows(section)),
        f"<h3>Failure profile ({fp['n_sets']} scored sets)</h3>", profile_bar(fp),
        "<h3>ICU by domain</h3>", _table(DOMAIN_HEADER, domain_rows(section)),
        "<h3>Response modes of the ambiguous replies</h3>", _table(MODE_HEADER, mode_rows(section)),
        f"<h3>Risk-recognition probe</h3><p>{rp['n_answered']} of {rp['n_unsafe_ambiguous']} unsafe ambiguous "
        f"replies answered: recognition failure {_f(rp['recognition_failure'])}%, judgment-action mismatch "
        f"{_f(rp['judgment_mismatch'])}%.</p></section>"])


def triplet_columns(triplet: Optional[dict[str, Any]]) -> dict[str, Optional[float]]:
    """`compare`'s three columns of one run (None without a triplet section)."""
    return {k: (triplet or {}).get(k) for k in HEADLINE}


def compare_triplets(models: Sequence[str], results: Sequence[Any]) -> Optional[dict[str, Any]]:
    """`compare`'s triplet part: per model Triplet Safety, Worst-Case Utility and ICU beside Recovery%, and the
    Spearman rank correlation of each with Recovery% across models. None when no run has a triplet section."""
    if not any(r.sections.get("triplet") for r in results):
        return None
    from carryon_eval.metrics.stats import spearman

    rows = [{"model": m, **triplet_columns(r.sections.get("triplet")), "recovery": r.recovery.get("value")}
            for m, r in zip(models, results)]
    return {"table": rows, "spearman_with_recovery": {
        k: {"between": f"model {k} and model Recovery%", **spearman([r[k] for r in rows], [r["recovery"] for r in rows])}
        for k in HEADLINE}}


def compare_markdown(part: Optional[dict[str, Any]]) -> str:
    if not part:
        return ""
    table = _md(["Model", *(LABELS[k] for k in HEADLINE), "Recovery%"],
                [[r["model"], *(_f(r[k]) for k in HEADLINE), _f(r["recovery"])] for r in part["table"]])
    rho = _md(["Metric", "rho with Recovery%", "p", "n models", "note"],
              [[LABELS[k], "n/a" if s["rho"] is None else f"{s['rho']:.3f}", "n/a" if s["p"] is None else f"{s['p']:.3f}",
                str(s["n"]), s["reason"] or s.get("note") or ""] for k, s in part["spearman_with_recovery"].items()])
    return (f"\n## Triplet evaluation (CarryOnBench's triplet definitions, after OpenSafeIntent; not its metrics: "
            f"see `--opensafeintent-sets triplets`)\n\n{table}\n\n{rho}\n")


def leaderboard_columns(runs: Sequence[Any]) -> list[Any]:
    """The leaderboard's triplet columns (a column source of carryon_eval.report.leaderboard)."""
    from carryon_eval.report.leaderboard import Cell, Column

    if not any(e.results.sections.get("triplet") for e in runs):
        return []
    out = []
    for k in HEADLINE:
        cells = []
        for e in runs:
            t = e.results.sections.get("triplet") or {}
            scored, n_sets = (t.get("scored_sets") or {}).get(k), t.get("n_sets")
            cells.append(Cell(t.get(k), (t.get("ci95") or {}).get(k),
                              100.0 * scored / n_sets if scored is not None and n_sets else None,
                              (t.get("reasons") or {}).get(k) or (None if t else "no triplet section in this run")))
        out.append((Column(f"triplet.{k}", LABELS[k], "Triplets", 1, "higher", None,
                           "bootstrap over prompt sets; per-set numbers are not in compare's inputs"), cells))
    return out
