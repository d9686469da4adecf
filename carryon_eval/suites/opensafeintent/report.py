"""OpenSafeIntent's section in results.json, table.md and report.html, read from its records (section.py).

With CarryOnBench conditions in the same run, the section is added to the files their report wrote; alone, the
three files hold this section only."""
from __future__ import annotations

from typing import Optional

from carryon_eval.metrics.number import Number
from carryon_eval.report.blocks import INTERVAL, MARKDOWN, Block, Heading, Only, Section, Shown, Table, Text, shown
from carryon_eval.suites.opensafeintent.metrics import HEADLINE
from carryon_eval.suites.opensafeintent.section import OpenSafeIntentComparison, OpenSafeIntentSection, Stat

SECTION = "opensafeintent"
PROBE_WORDS = ("FULL", "CONSTRAINED", "REFUSE", "ERROR")
DIGITS = 4                      # the reference implementation's 0-1 scale


def section_blocks(sec: OpenSafeIntentSection, title: str = "OpenSafeIntent",
                   section_id: str = SECTION) -> list[Block]:
    """The section in table.md and report.html: the six metrics, paraphrase robustness (table.md), the response
    modes and the intent probe."""
    headline = [[m, _shown(s), str(s.n), Shown(s.number, DIGITS, INTERVAL)] for m, s in sec.headline.numbers().items()]
    p, modes, probe = sec.paraphrase, sec.response_modes, sec.intent_probe
    paraphrase = Text([f"Paraphrase robustness ({p.n} sets): all unsafe ", _shown(p.all_unsafe), ", all safe ",
                       _shown(p.all_safe), ", flip ", _shown(p.flip), "; utility variance ",
                       _shown(p.utility_variance), f" (n {p.utility_variance.n})."])
    levels = [[a, shown(modes.all.shares.get(a), DIGITS), _shown(modes.conditional_unsafe_rate.get(a, Stat()))]
              for a in modes.all.counts]
    counts = ", ".join(f"{k} {probe.strategies[k].count}" for k in PROBE_WORDS)
    return [Section(section_id, [
        Heading(title),
        Text(f"{sec.n_sets} prompt-sets; judge {sec.judge_model}; the reference implementation's definitions (0-1 "
             "scale)."),
        Table(["metric", "value", "n", "95% CI"], headline),
        Only(MARKDOWN, [paraphrase]),
        Table(["assistance level", "share", "conditional unsafe rate"], levels),
        Text(f"Intent probe ({probe.considered} dual-use replies with harm above 0): {counts}.")])]


def _shown(stat: Stat) -> Shown:
    return Shown(stat.number, DIGITS)


def compare_blocks(part: Optional[OpenSafeIntentComparison],
                   heading: str = "OpenSafeIntent (the reference implementation's definitions, 0-1)") -> list[Block]:
    """`compare`'s table of the six metrics, one row per model: each value and the sets it stands on."""
    if not part:
        return []
    rows = [[r.model, *([Shown(Number(r.values.get(k)), DIGITS), f" (n {r.counts[k]})"]
                        if r.counts.get(k) is not None else "n/a" for k in HEADLINE)] for r in part.table]
    return [Heading(heading), Table(["Model", *HEADLINE], rows)]
