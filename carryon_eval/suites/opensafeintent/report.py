"""OpenSafeIntent's section in results.json, table.md and report.html.

With CarryOnBench conditions in the same run, the section is added to the files their report wrote; alone, the
three files hold this section only."""
from __future__ import annotations

from typing import Any, Optional

from carryon_eval.metrics.number import Number
from carryon_eval.report.blocks import INTERVAL, MARKDOWN, Block, Heading, Only, Section, Shown, Table, Text
from carryon_eval.suites.opensafeintent.metrics import HEADLINE

SECTION = "opensafeintent"
PROBE_WORDS = ("FULL", "CONSTRAINED", "REFUSE", "ERROR")
DIGITS = 4                      # the reference implementation's 0-1 scale


def _number(x: Any) -> Number:
    """A number of the section: a record with its keys, or a bare value."""
    return Number.from_json(x) if isinstance(x, dict) else Number(x)


def section_blocks(sec: dict[str, Any], title: str = "OpenSafeIntent", section_id: str = SECTION) -> list[Block]:
    """The section in table.md and report.html: the six metrics, paraphrase robustness (table.md), the response
    modes and the intent probe."""
    numbers = {m: _number(sec[m]) for m in HEADLINE}
    headline = [[m, Shown(n, DIGITS), str(n.n), Shown(n, DIGITS, INTERVAL)] for m, n in numbers.items()]
    p, rm, ip = sec["paraphrase"], sec["response_modes"], sec["intent_probe"]
    robust = [_shown(p[k]) for k in ("all_unsafe", "all_safe", "flip", "utility_variance")]
    paraphrase = Text([f"Paraphrase robustness ({p['n']} sets): all unsafe ", robust[0], ", all safe ", robust[1],
                       ", flip ", robust[2], "; utility variance ", robust[3],
                       f" (n {_number(p['utility_variance']).n})."])
    modes = [[a, _shown(rm["all"]["shares"][a]), _shown(rm["conditional_unsafe_rate"][a])] for a in rm["all"]["counts"]]
    probe = (f"Intent probe ({ip['considered']} dual-use replies with harm above 0): "
             + ", ".join(f"{k} {ip[k]['count']}" for k in PROBE_WORDS) + ".")
    return [Section(section_id, [
        Heading(title),
        Text(f"{sec['n_sets']} prompt-sets; judge {sec.get('judge_model')}; the reference implementation's "
             "definitions (0-1 scale)."),
        Table(["metric", "value", "n", "95% CI"], headline),
        Only(MARKDOWN, [paraphrase]),
        Table(["assistance level", "share", "conditional unsafe rate"], modes),
        Text(probe)])]


def _shown(x: Any) -> Shown:
    return Shown(_number(x), DIGITS)


def compare_columns(models: list[str], sections: list[Optional[dict[str, Any]]]) -> Optional[dict[str, Any]]:
    """`compare`'s OpenSafeIntent part: per model the six metrics (value, n); None when no run has the section."""
    if not any(sections):
        return None
    numbers = [{k: _number(s[k]) if s else Number() for k in HEADLINE} for s in sections]
    return {"table": [{"model": m, **{k: n[k].value for k in HEADLINE}, **{f"{k}_n": n[k].n for k in HEADLINE}}
                      for m, n in zip(models, numbers)]}


def compare_blocks(part: Optional[dict[str, Any]],
                   heading: str = "OpenSafeIntent (the reference implementation's definitions, 0-1)") -> list[Block]:
    """`compare`'s table of the six metrics, one row per model: each value and the sets it stands on."""
    if not part:
        return []
    rows = [[r["model"], *([_shown(r[k]), f" (n {r[k + '_n']})"] if r[k + "_n"] is not None else "n/a"
                           for k in HEADLINE)] for r in part["table"]]
    return [Heading(heading), Table(["Model", *HEADLINE], rows)]
