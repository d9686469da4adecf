"""OpenSafeIntent's section in results.json, table.md and report.html.

With CarryOnBench conditions in the same run, the section is added to the files their report wrote; alone, the
three files hold this section only."""
from __future__ import annotations

import html
from typing import Any, Optional

from carryon_eval.suites.opensafeintent.metrics import HEADLINE

SECTION = "opensafeintent"
MARK = "<!-- opensafeintent -->"


def _f(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def _ci(c: Optional[list[float]]) -> str:
    return "" if not c else f"[{c[0]:.4f}, {c[1]:.4f}]"


def rows(sec: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(m, _f(sec[m]["value"]), str(sec[m]["n"]), _ci(sec[m]["ci95"])) for m in HEADLINE]


def render_markdown(sec: dict[str, Any], title: str = "OpenSafeIntent") -> str:
    lines = [f"## {title}", "", f"{sec['n_sets']} prompt-sets; judge {sec.get('judge_model')}; "
             "the reference implementation's definitions (0-1 scale).", "",
             "| metric | value | n | 95% CI |", "|---|---|---|---|"]
    lines += [f"| {m} | {v} | {n} | {c} |" for m, v, n, c in rows(sec)]
    p = sec["paraphrase"]
    lines += ["", f"Paraphrase robustness ({p['n']} sets): all unsafe {_f(p['all_unsafe']['value'])}, all safe "
              f"{_f(p['all_safe']['value'])}, flip {_f(p['flip']['value'])}; utility variance "
              f"{_f(p['utility_variance']['value'])} (n {p['utility_variance']['n']})."]
    rm = sec["response_modes"]
    lines += ["", "| assistance level | share | conditional unsafe rate |", "|---|---|---|"]
    lines += [f"| {a} | {_f(rm['all']['shares'][a])} | {_f(rm['conditional_unsafe_rate'][a]['value'])} |"
              for a in rm["all"]["counts"]]
    ip = sec["intent_probe"]
    lines += ["", f"Intent probe ({ip['considered']} dual-use replies with harm above 0): "
              + ", ".join(f"{k} {ip[k]['count']}" for k in ("FULL", "CONSTRAINED", "REFUSE", "ERROR")) + "."]
    return "\n".join(lines) + "\n"


def render_html(sec: dict[str, Any], title: str = "OpenSafeIntent", section_id: str = SECTION) -> str:
    e = html.escape
    body = [MARK, f'<section id="{section_id}"><h2>{e(title)}</h2>',
            f"<p>{sec['n_sets']} prompt-sets; judge {e(str(sec.get('judge_model')))}; the reference "
            "implementation's definitions (0-1 scale).</p>",
            "<table><tr><th>metric</th><th>value</th><th>n</th><th>95% CI</th></tr>"]
    body += [f"<tr><td>{e(m)}</td><td>{v}</td><td>{n}</td><td>{c}</td></tr>" for m, v, n, c in rows(sec)]
    body.append("</table>")
    rm = sec["response_modes"]
    body.append("<table><tr><th>assistance level</th><th>share</th><th>conditional unsafe rate</th></tr>")
    body += [f"<tr><td>{a}</td><td>{_f(rm['all']['shares'][a])}</td>"
             f"<td>{_f(rm['conditional_unsafe_rate'][a]['value'])}</td></tr>" for a in rm["all"]["counts"]]
    body.append("</table>")
    ip = sec["intent_probe"]
    body.append(f"<p>Intent probe ({ip['considered']} dual-use replies with harm above 0): "
                + ", ".join(f"{k} {ip[k]['count']}" for k in ("FULL", "CONSTRAINED", "REFUSE", "ERROR")) + "</p>")
    body.append("</section>")
    return "\n".join(body)


def compare_columns(models: list[str], sections: list[Optional[dict[str, Any]]]) -> Optional[dict[str, Any]]:
    """`compare`'s OpenSafeIntent part: per model the six metrics (value, n); None when no run has the section."""
    if not any(sections):
        return None
    return {"table": [{"model": m, **{k: (s[k]["value"] if s else None) for k in HEADLINE},
                       **{f"{k}_n": (s[k]["n"] if s else None) for k in HEADLINE}}
                      for m, s in zip(models, sections)]}


def compare_markdown(part: Optional[dict[str, Any]],
                     heading: str = "OpenSafeIntent (the reference implementation's definitions, 0-1)") -> str:
    if not part:
        return ""
    head = "| Model | " + " | ".join(HEADLINE) + " |"
    lines = ["", f"## {heading}", "", head,
             "|" + "---|" * (len(HEADLINE) + 1)]
    lines += ["| " + " | ".join([r["model"], *(f"{_f(r[k])} (n {r[k + '_n']})" if r[k + "_n"] is not None
                                             else "n/a" for k in HEADLINE)]) + " |" for r in part["table"]]
    return "\n".join(lines) + "\n"
