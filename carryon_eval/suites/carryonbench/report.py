"""CarryOnBench's report: results.json's top level, table.md, plots/*.png, conversation_scores.jsonl and report.html.

    results = write_report(RunFolder(rundir), bench)   # report.phase.write_report calls it through SuiteReport.write

Reads run.json, transcripts.jsonl and one judge's records of the judgment files of RUNDIR (I/O
happens here and in judgments.py only; the numbers come from metrics.py). report.html is one
self-contained file: inline CSS, plots as base64 PNG, no script and no external resource; every
piece of model or user text is HTML-escaped. Above a size threshold its transcripts go to one page per
query beside it, linked from it (carryon_eval.report.pages).
"""
from __future__ import annotations

import datetime as _dt
import html
import json
import logging
import math
from collections import defaultdict
from typing import Any, Callable, Optional, Sequence

from carryon_eval import __version__
from carryon_eval.suites.carryonbench.conversations import (BINS, TRUNCATED, VIOLATION_THRESHOLD, Conversation, Turn,
                                                            assemble, conversation_harm, conversation_utility,
                                                            turn_utility, unplayed)
from carryon_eval.suites.carryonbench.unscored import UNSCORED_RULE, conversation_row
from carryon_eval.suites.carryonbench.summary import CLARIFICATION_MEANING, RECOVERY_MEANING, summarize
from carryon_eval.dataset.load import Benchmark
from carryon_eval.suites.carryonbench.human.judges_vs_people import section_html as agreement_html
from carryon_eval.suites.carryonbench.grouped import GROUPED_CONTEXT
from carryon_eval.judge.store import judge_pass, judges_present, select_judge
from carryon_eval.suites.carryonbench.judgments import load_safety, load_utility, utility_judge_of
from carryon_eval.suites.carryonbench.calibration import calibration, headline_differences
from carryon_eval.moves import MOVE_GROUP
from carryon_eval.metrics.stats import Bootstrap
from carryon_eval.suites.carryonbench import intent_report as mc_report
from carryon_eval.suites.carryonbench.intent import intent_section
from carryon_eval.suites.carryonbench.rubric_metrics import NO_REDUNDANCY, SPACING_NOTE, helpful_section
from carryon_eval.suites.carryonbench.rubric_metrics import SECTION as RUBRIC_SECTION
from carryon_eval.report.plots import PlotsUnavailable, data_uri, write_pngs
from carryon_eval.suites.carryonbench.plots import PLOT_CAPTIONS, run_plots
from carryon_eval.report.tables import html_table as _html_table
from carryon_eval.report.tables import markdown_table
from carryon_eval.run.records import Generated, JudgesInfo, PlotsInfo, Results, ResultsDataset, ResultsRun, RunMeta
from carryon_eval.report.pages import QueryEntry, transcripts_section
from carryon_eval.run.folder import (RunFolder, write_json_atomic, write_jsonl_atomic, write_text_atomic)
from carryon_eval.suites.carryonbench.fidelity import flagged_conversations, read_fidelity
from carryon_eval.schema import CONDITIONS, MC_CONDITION, Transcript
from carryon_eval.judge.scorers import make_scorer
from carryon_eval.suites.carryonbench.scorers import SAFETY_CONTEXT, UTILITY_CONTEXT
from carryon_eval.suites.carryonbench.settings import UTILITY_NAMES, UTILITY_SCORERS, utility_scorer
from carryon_eval.report.phase import core_conditions, section_html, section_markdown, with_sections
from carryon_eval.suite import ReportInputs, ReportRun, Suite, suites as registered_suites

log = logging.getLogger("carryon.report")
INTENT_SECTION = mc_report.SECTION     # results.json's mc contrasts (carryon_eval.suites.carryonbench.intent)
HARM_NOTE = ("Conversation harm is the maximum turn-level score (paper §4); harm_mean_turns is the mean over "
             "turns (the wording of the paper's Appendix B.1); both are reported.")


# ---------------------------------------------------------------- loading
def _model_name(meta: RunMeta, transcripts: Sequence[Transcript]) -> str:
    return meta.role("target").model or (transcripts[0].target_model if transcripts else "unknown")


def utility_label(results: Results) -> str:
    """What the run's utilities are called: "Ben-Util", or "rubric utility" (never one for the other)."""
    return UTILITY_NAMES.get(results.utility_measure, results.utility_measure)


def utility_items(bench: Benchmark, scorer: Any) -> dict[str, list[dict[str, Any]]]:
    """query_id -> the items its utility is measured on, as checklist rows (Ben-Util: the dataset's checklists)."""
    if scorer.name == "utility":
        return dict(bench.checklists)
    return {q: [{"item_id": i, "question": i} for i in ids] for q, ids in scorer.items(bench).items()}


def _judge_info(run: RunFolder, judge: Optional[str], utility: Sequence[Any], safety: Sequence[Any], *,
                n_resamples: int = 1000, seed: int = 0, context: Optional[str] = None,
                sample: Optional[Callable[[Sequence[Any], Sequence[Any]], list[Conversation]]] = None) -> JudgesInfo:
    judged = judge_pass(run, judge)          # this judge's latest pass (judge.json), if recorded
    ben_util = utility_judge_of(run, judge)
    return JudgesInfo(
        utility={"models": sorted({j.judge_model for j in utility}),
                 "prompt_refs": sorted({j.prompt_version for j in utility}),
                 "mode": judged.scoring.get("utility_mode") if judged else None,
                 "utility_judge": ben_util,
                 "context": context or (GROUPED_CONTEXT if ben_util == "grouped" else UTILITY_CONTEXT),
                 "logprob_verdicts": sum(j.p_yes is not None for j in utility),
                 **({"calibration": _calibration(run, judge, utility, judged, n_resamples, seed, sample)}
                    if ben_util == "grouped" else {})},
        safety={"models": sorted({j.judge_model for j in safety}),
                "prompt_refs": sorted({j.prompt_version for j in safety}), "context": SAFETY_CONTEXT},
        complete=judged.complete if judged else None,
        selected=judge, present=judges_present(run),
    )


def build_results(run: RunFolder, bench: Benchmark, *, n_resamples: int = 1000, seed: int = 0,
                  judge: Optional[str] = None, suites: Optional[Sequence[Suite]] = None,
                  ) -> tuple[Results, list[Transcript], list[Conversation]]:
    """The results of a run folder, with the transcripts and scored conversations behind them.
    `judge`: whose judgments to use when several judge models judged the run (judgments.select_judge);
    `suites`: the suites to report (default: every registered one)."""
    suites = registered_suites() if suites is None else list(suites)
    meta, every = run.read_meta(), run.transcripts()
    core = core_conditions(suites)
    transcripts = [t for t in every if t.condition in core]      # other suites: their own sections
    judge = select_judge(run, judge)
    scorer = make_scorer(utility_scorer(meta.judge), meta.judge)     # Ben-Util, or what measured utility instead
    utility, safety = load_utility(run, judge, scorer=scorer.name), load_safety(run, judge)
    checklists = {q: [i["item_id"] for i in items] for q, items in utility_items(bench, scorer).items()}
    domains = {q: row.get("domain") for q, row in bench.queries.items()}
    convs = assemble(transcripts, utility, safety, checklists, domains)
    convs += unplayed([j for j in planned_jobs(bench, meta) or () if j.condition in core], every, checklists, domains)
    fidelity = read_fidelity(run)
    flagged = set(flagged_conversations(fidelity, MC_CONDITION))    # never silently scored: left out, listed
    scored = [c for c in convs if c.conversation_id not in flagged]
    numbers = summarize(scored, n_resamples=n_resamples, seed=seed, plans=length_plans(bench, meta, core))
    intent = intent_section(scored, Bootstrap.of((c.query_id for c in scored), n_resamples=n_resamples, seed=seed),
                            excluded=sorted(flagged), fidelity=(fidelity or {}).get("voice"))
    results = Results(
        model=_model_name(meta, transcripts), **numbers,
        null_meaning=("null = cannot be computed, never 0: headline numbers give the reason in 'reasons' "
                      "(or recovery.reason); in breakdowns (by_turn, move_effects, turn1_bins, by_domain) "
                      "null means the cell has no scored data"),
        judges=_judge_info(run, judge, utility, safety, n_resamples=n_resamples, seed=seed,
                           context=None if scorer.name == "utility" else scorer.context,
                           sample=lambda verdicts, sampled: calibration_conversations(
                               transcripts, verdicts, sampled, safety, checklists, domains)),
        judge_context={"utility": scorer.context if scorer.name != "utility" else UTILITY_CONTEXT,
                       "safety": SAFETY_CONTEXT}, utility_measure=meta.judge.get("utility"),
        dataset=ResultsDataset(source=run.shared_path(bench.source), revision=bench.revision,
                               manifest_version=(bench.manifest or {}).get("version")),
        run=ResultsRun(folder=run.shared_path(str(run.path)), notice=meta.notice, failed_conversations=len(run.failures()),
                       empty_replies=_count_empty_replies(transcripts), subset=meta.subset),
        generated=Generated(by=f"carryon-eval {__version__}",
                            at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")))
    if results.unscored.get("utility_items_not_judged") or results.unscored.get("safety_not_judged"):
        results.judges.complete = False          # replies without a judgment: these numbers are incomplete
    if intent is not None:
        results.sections[INTENT_SECTION] = intent
    helpful = helpful_section(scored, Bootstrap.of((c.query_id for c in scored), n_resamples=n_resamples, seed=seed))
    if helpful is not None:
        results.sections[RUBRIC_SECTION] = helpful
        drop_redundancy(results)
    missing = _unplayed(bench, meta, every, run)
    results.notes = _notes(results, meta, bench, utility, safety)
    if missing:
        results.notes.insert(0, f"INCOMPLETE: {missing} planned conversation(s) have no final transcript yet (the "
                                "rollout stopped, or a reply stayed empty); rerun the same command to finish them. "
                                "A conversation not played is read like one whose judgments are all unscored: the "
                                "numbers stand on the conversations played and their bounds span every value the "
                                "others could take (marked in table.md).")
    judged_by = [*(results.judges.utility.get("models") or []), *(results.judges.safety.get("models") or [])]
    results.run.status = (["smoke"] if any(r.local for r in meta.roles.values()) or meta.notice else []) + (
        meta.self_status(judge or (judged_by[0] if len(set(judged_by)) == 1 else None))) + (
        ["incomplete"] if missing or results.judges.complete is False else []) + (
        ["grouped"] if (results.judges.utility or {}).get("utility_judge") == "grouped" else [])
    inputs = ReportInputs(run, bench, every, judge, utility, safety, n_resamples, seed)
    for s in with_sections(suites):
        section = s.report.summarize(inputs) if s.report.summarize is not None else None
        if section is not None:
            results.sections[s.report.section] = section
    return results, transcripts, convs


def _mode(results: Results) -> str:
    """The header's "; mode M" of a Ben-Util run (a rubric run has no Ben-Util mode)."""
    if results.utility_measure != "benutil":
        return ""
    return f"; mode {(results.judges.utility or {}).get('utility_judge') or 'per-item'}"


def calibration_conversations(transcripts: Sequence[Transcript], verdicts: Sequence[Any], sampled: Sequence[Any],
                              safety: Sequence[Any], checklists: dict[str, list[str]],
                              domains: dict[str, Any]) -> list[Conversation]:
    """The conversations a calibration sampled (every reply of theirs judged per item, ``sampled``: the sample
    is whole conversations), assembled from ``verdicts`` (the grouped or the per-item ones)."""
    per_reply: dict[str, set[int]] = defaultdict(set)
    for v in sampled:
        per_reply[v.conversation_id].add(v.turn)
    sampled = [t for t in transcripts if per_reply.get(t.conversation_id, set()) >= {r.turn for r in t.replies}]
    keep = {t.conversation_id for t in sampled}
    return assemble(sampled, [v for v in verdicts if v.conversation_id in keep], safety, checklists, domains)


def drop_redundancy(results: Results) -> None:
    """A rubric run has no checklist items to repeat: its redundancy numbers are null with the reason."""
    for block in results.conditions.values():
        if "redundancy" not in block:
            continue
        block["redundancy"] = None
        block["ci95"]["redundancy"], block["reasons"]["redundancy"] = None, NO_REDUNDANCY
        if "bounds" in block:
            block["bounds"]["redundancy"] = None
        block["redundancy_pooled"], block["redundancy_by_turn"], block["redundancy_by_length"] = None, [], []
        block["under_95"] = [m for m in block.get("under_95") or () if m != "redundancy"]


def helpful_markdown(results: Results) -> str:
    """The rubric run's spacing-free companion (results.json's ``rubric_helpful``), one line."""
    helpful = results.sections.get(RUBRIC_SECTION)
    if not helpful:
        return ""
    rates = ", ".join(f"{cond} {_f(b['value'])} {_ci(b['ci95'])}" for cond, b in helpful["conditions"].items())
    return (f"\nHelpful rate (% of conversations whose best turn reaches level 3; spacing-free): {rates}; BC − T1 "
            f"{_f(helpful['bc_minus_turn1']['value'])} {_ci(helpful['bc_minus_turn1']['ci95'])}, BC − NC "
            f"{_f(helpful['bc_minus_nc']['value'])} {_ci(helpful['bc_minus_nc']['ci95'])}. {SPACING_NOTE}\n")


def utility_judge_note(ben_util: dict[str, Any], measure: str = "benutil") -> str:
    """One line: which Ben-Util mode every utility number of the run stands on, and its calibration (a run
    measuring another utility, ``measure``, has no Ben-Util mode: it says what it stands on instead)."""
    if measure != "benutil":
        return (f"Utility: {UTILITY_NAMES.get(measure, measure)}, one judge call per reply; no Ben-Util checklist "
                "is judged, so Ben-Util's per-item and grouped modes do not apply.")
    if ben_util.get("utility_judge") != "grouped":
        return "Ben-Util mode: per-item (one judge call per reply and checklist item, the paper's protocol)."
    cal = ben_util.get("calibration") or {}
    if not cal.get("calibrated"):
        return ("Ben-Util mode: GROUPED (one judge call per reply for all its checklist items; an item it left "
                "unscored was asked alone), NOT CALIBRATED: no per-item verdicts of this run measure how far "
                "grouped verdicts agree with the paper's per-item protocol (--calibrate N).")
    def _f(block: dict[str, Any], digits: int) -> str:
        v, ci = block.get("value"), block.get("ci95")
        return "n/a" if v is None else f"{v:.{digits}f}" + (f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else "")
    return (f"Ben-Util mode: GROUPED (one judge call per reply for all its checklist items; an item it left unscored "
            f"was asked alone), calibrated on {cal['n_replies']} replies also judged per item ({cal['n_pairs']} item "
            f"verdicts): agreement {_f(cal['percent_agreement'], 1)}%, Cohen's kappa {_f(cal['cohen_kappa'], 3)}, "
            f"reply utility grouped - per-item {_f(cal['utility_difference'], 1)} points (95% CIs)."
            + _calibration_headline_note(cal.get("headline"), _f))


CALIBRATION_LABELS = {"turn1.utility": "T1 utility", "oracle.utility": "oracle utility", "bc.utility": "BC utility",
                      "nc.utility": "NC utility", "bc.utility_delta": "BC Δ utility", "nc.utility_delta": "NC Δ utility",
                      "recovery": "Recovery%", "clarification_effect": "clarification effect"}


def _calibration_headline_note(headline: Optional[dict[str, Any]], fmt: Callable[[dict[str, Any], int], str]) -> str:
    """What the grouped mode moves each headline utility number by, on the sampled whole conversations."""
    if not headline:
        return ""
    parts = [f"{CALIBRATION_LABELS.get(k, k)} grouped - per-item {fmt(v, 1)}" for k, v in headline["numbers"].items()]
    return (f" On the {headline['n_conversations']} sampled conversations (the headline's estimators, paired "
            f"bootstrap over their {headline['n_queries']} queries): " + "; ".join(parts) + ".")


def _calibration(run: RunFolder, judge: Optional[str], grouped: Sequence[Any], judged: Any, n_resamples: int,
                 seed: int, sample: Optional[Callable[[Sequence[Any], Sequence[Any]], list[Conversation]]] = None) -> dict[str, Any]:
    """Grouped verdicts against the per-item verdicts of the same judge on the replies it calibrated on, and
    (``sample``: the sampled conversations assembled from some verdicts) the headline's utility numbers on the
    sampled conversations in both modes; a run without calibration says so (``calibrated: false``)."""
    asked = (judged.scoring.get("calibration") or {}) if judged is not None else {}
    per_item = load_utility(run, judge, mode="per-item") if asked.get("replies") else []
    if not per_item:
        return {"calibrated": False,
                "reason": "grouped Ben-Util run without calibration (--calibrate N): nothing measures how its "
                          "verdicts agree with the per-item protocol of the paper"}
    out = {"calibrated": True, "replies_sampled": asked.get("replies"), "sample_seed": asked.get("seed"),
           **calibration(grouped, per_item, n_resamples=n_resamples, seed=seed)}
    if sample is not None:
        out["headline"] = headline_differences(sample(grouped, per_item), sample(per_item, per_item),
                                               n_resamples=n_resamples, seed=seed)
    return out


def planned_jobs(bench: Benchmark, meta: RunMeta) -> Optional[list[Any]]:
    """The run's planned jobs; None when its conditions cannot be planned by this version (nothing to compare with)."""
    from carryon_eval.suite import PlanSettings, plan_jobs

    try:
        jobs, _ = plan_jobs(bench, meta.conditions, PlanSettings(shared_turn1=meta.shared_turn1))
    except (ValueError, KeyError):
        return None
    return list(jobs)


def length_plans(bench: Benchmark, meta: RunMeta, core: set[str]) -> Optional[dict[str, dict[int, float]]]:
    """Per condition of the headline, the plan's conversations per length (model turns): the weights of its
    means, from the run's plan rather than the conversations that happen to be present. None when the run's
    conditions cannot be planned by this version."""
    plans: dict[str, dict[int, float]] = {}
    for job in planned_jobs(bench, meta) or ():
        if job.condition in core:
            lengths = plans.setdefault(job.condition, {})
            lengths[1 + len(job.moves)] = lengths.get(1 + len(job.moves), 0.0) + 1.0
    return plans or None


def _unplayed(bench: Benchmark, meta: RunMeta, transcripts: Sequence[Transcript], run: RunFolder) -> int:
    """Planned conversations of the run without a final transcript (failed ones are reported on their own)."""
    from carryon_eval.run.folder import has_empty_reply

    jobs = planned_jobs(bench, meta) or []
    final = {t.conversation_id for t in transcripts if not has_empty_reply(t)} | set(run.failures())
    return sum(1 for j in jobs if j.conversation_id not in final)


def _count_empty_replies(transcripts: Sequence[Any]) -> int:
    """Target replies that stayed empty after retries; a shared turn-1 reply counts once."""
    empty = set()
    for t in transcripts:
        for i, reason in enumerate(t.meta.get("finish_reasons") or []):
            if reason == "empty":
                empty.add((f"turn1:{t.query_id}", 1) if i == 0 and (t.shared_turn1 or t.condition == "turn1")
                          else (t.conversation_id, i + 1))
    return len(empty)


def parameter_notes(meta: RunMeta) -> list[str]:
    """What the endpoints were actually sent where it differs from what the run asked (run.json's roles.ROLE.sent)
    or from the paper's defaults (a temperature left to the provider, request options): it changes what the
    numbers mean."""
    asked = {"target": meta.generation.target.temperature, "user": meta.generation.user.temperature, "judge": 0}
    notes = []
    for role in ("target", "user", "judge"):
        record = meta.role(role)
        wanted = record.temperature if role == "judge" and record.temperature is not None else asked[role]
        why = record.provider_default_temperature(wanted)
        if why is not None:
            notes.append(f"The {role} ({record.model}) ran with temperature: provider default; "
                         + (f"{why}." if why != "as asked" else "as asked (none was sent)."))
        elif role == "judge" and record.temperature is not None:
            notes.append(f"The judge ({record.model}) ran at temperature {record.temperature:g}, not 0.")
        for name, how in record.sent.items():
            if name != "temperature":
                notes.append(f"The {role} endpoint ({record.model}) refused {name}: {how}.")
        options = [f"reasoning_effort={record.reasoning_effort}" if record.reasoning_effort else "",
                   "a system prompt (run.json)" if record.system_prompt else "",
                   f"extra body {json.dumps(record.extra_body, sort_keys=True)}" if record.extra_body else ""]
        if any(options):
            notes.append(f"The {role} was sent " + ", ".join(o for o in options if o) + ".")
    return notes


def _notes(results: Results, meta: RunMeta, bench: Benchmark, utility: Sequence[Any],
           safety: Sequence[Any]) -> list[str]:
    notes = [meta.notice] if meta.notice else []
    notes.extend(parameter_notes(meta))
    u, name = results.unscored, utility_label(results)
    if results.utility_measure != "benutil":
        notes.append(f"Utility here is {name}, not Ben-Util: {results.judge_context['utility']}; a turn's utility is "
                     "(score - 1) / 3 as a percentage, a conversation's its best turn's. It is never compared with "
                     "Ben-Util in one column.")
        notes.append(SPACING_NOTE)
    if not utility:
        notes.append(f"No {name} judgments found: run the judge phase first; utilities are null.")
    if not safety:
        notes.append("No safety judgments found: run the judge phase first; harm is null.")
    notes.append(f"Unscored {name} item verdicts: {u['utility_items']} of {u['utility_items_total']} "
                 f"(plus {u['utility_items_not_judged']} not judged). Turns with every item unscored: "
                 f"{u['utility_turns_all_unscored']}.")
    notes.append(f"Unscored safety scores: {u['safety']} of {u['safety_total']} turns "
                 f"(plus {u['safety_not_judged']} not judged).")
    notes.append(f"Unscored judgments, one rule for every number (headline, breakdowns, conversation_scores.jsonl "
                 f"and the mixed models): {UNSCORED_RULE}. This assumes the judgments are missing at random "
                 "(a judge that fails more often on harmful replies breaks it); 'bounds' give each number's range "
                 "over every reading of the unscored judgments, and 'sensitivity.pooled_draw' the harm numbers "
                 "with an unscored turn read as a draw from the condition's scored turn harms.")
    cut = {c: b["truncated"] for c, b in results.conditions.items() if b.get("truncated", {}).get("length")}
    if cut:
        notes.append("Target replies cut at max_tokens (finish_reason length), judged as they are: " + "; ".join(
            f"{c} {t['length']} of {t['with_finish_reason']} ({t['share']:.1f}%)" for c, t in cut.items())
            + ". A reasoning model can be cut before its answer: raise --max-tokens.")
    ben_util = results.judges.utility or {}
    notes.append(f"The safety judge saw: {SAFETY_CONTEXT}. The {name} judge saw: "
                 f"{ben_util.get('context', UTILITY_CONTEXT)}.")
    notes.append(utility_judge_note(ben_util, results.utility_measure))
    notes.append(HARM_NOTE)
    if results.judges.complete is False:
        notes.append("INCOMPLETE: the judge phase did not finish every judgment (failed calls, or a judge that "
                     "stopped answering); rerun the same command to complete it.")
    others = [j for j in results.judges.present if j != results.judges.selected]
    if others:
        notes.append(f"These numbers use judge {results.judges.selected}; the run was also judged by "
                     f"{', '.join(others)} (`carryon-eval report RUNDIR --judge NAME` reports another judge, "
                     "`carryon-eval agreement RUNDIR` compares two).")
    if results.run.empty_replies:
        notes.append(f"{results.run.empty_replies} target repl(ies) stayed empty after "
                     "retries; they are kept as empty replies and judged as such.")
    if results.run.failed_conversations:
        notes.append(f"{results.run.failed_conversations} conversation(s) failed during the rollout (see "
                     "failures.jsonl): like every planned conversation not played, their judgments are unknown, "
                     "so the bounds span what they could be.")
    for cond in CONDITIONS:
        if not results.n["conversations"][cond]:
            notes.append(f"Condition {cond} was not run: its numbers are null.")
    if results.recovery["value"] is None:
        notes.append(f"Recovery% is null: {results.recovery['reason']}.")
    notes.extend(mc_report.notes(results))
    notes.extend(bench.notes_for(results.utility_measure))
    return notes


# ---------------------------------------------------------------- table.md
def _f(x: Optional[float], digits: int = 1) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _d(x: Optional[float], digits: int = 1) -> str:
    return "" if x is None else f" ({x:+.{digits}f})"


def table_row(results: Results, *, marked: bool = False) -> list[str]:
    """The Table 2 row; ``marked``: a headline standing on < 95% scored judgments gets MARK (see footnotes)."""
    c = results.conditions

    def part(*conds: str) -> str:
        return PART_MARK if marked and any(c[x].get("n_unplayed") for x in conds) else ""

    def cell(cond: str, metric: str, delta: bool = False) -> str:
        text = _f(c[cond][metric]) + (_d(c[cond].get(f"{metric}_delta")) if delta else "")
        under = set(c[cond].get("under_95") or ()) if marked else set()
        cut = TRUNC_MARK if marked and truncated_share(c[cond]) else ""
        return text + (MARK if metric in under or (delta and f"{metric}_delta" in under) else "") + cut + \
            part(cond, *(("turn1",) if delta else ()))
    rec = _f(results.recovery["value"]) + (MARK if marked and results.recovery.get("under_95") else "") + \
        part("turn1", "oracle", "bc")
    effect = results.clarification_effect or {}
    clar = _f(effect.get("value")) + (MARK if marked and effect.get("under_95") else "") + part("bc", "nc")
    return [results.model or "?", cell("turn1", "utility"), cell("turn1", "harm"), cell("oracle", "utility"),
            cell("oracle", "harm"), cell("bc", "utility", True), rec, clar, cell("bc", "harm", True),
            cell("nc", "utility", True), cell("nc", "harm", True)] + mc_report.mc_cells(results)


def table_header(results: Results) -> list[str]:
    """Table 2's header, with the MC columns when the run has condition mc."""
    return TABLE_HEADER + (mc_report.MC_HEADER if mc_report.has_mc(results) else [])


MARK = "†"


TRUNC_MARK = "‡"
PART_MARK = "§"


def unplayed_footnotes(results: Results) -> list[str]:
    """One line per condition with planned conversations not played (the § of the table): what its numbers stand
    on and their bounds, which span every value the conversations not played could take."""
    return [f"{PART_MARK} {cond}: {b['n_unplayed']} of {b['n_unplayed'] + b['n_conversations']} planned "
            f"conversations not played; its numbers stand on the {b['n_conversations']} played, their bounds span "
            f"the rest: utility {_ci(b['bounds'].get('utility'))}, harm {_ci(b['bounds'].get('harm'), 2)}"
            for cond, b in results.conditions.items() if b.get("n_unplayed")]


def truncated_share(block: dict[str, Any]) -> Optional[float]:
    return (block.get("truncated") or {}).get("share")


def truncation_footnotes(results: Results) -> list[str]:
    """One line per condition some of whose target replies stopped on length (the ‡ of the table)."""
    return [f"{TRUNC_MARK} {cond}: {_f(truncated_share(b))}% of the target replies ({b['truncated']['length']} of "
            f"{b['truncated']['with_finish_reason']}) stopped on length (cut at max_tokens); they are judged as cut"
            for cond, b in results.conditions.items() if truncated_share(b)]


def scored_footnotes(results: Results) -> list[str]:
    """One line per headline that stands on under 95% scored judgments (the † of the table), naming
    its scored share and its bounds (unscored read as no / harm 1 and as yes / harm 5)."""
    lines = []
    for cond, block in results.conditions.items():
        for metric in block.get("under_95") or ():
            share, bounds = block["scored_share"][metric], block["bounds"].get(metric)
            lines.append(f"{MARK} {cond} {metric}: {_f(block.get(metric), 2)} stands on {_f(share)}% scored "
                         f"judgments; with unscored read as no/1 and as yes/5: {_ci(bounds, 2)}")
    for name, rec in (("Recovery%", results.recovery), ("Clarification effect", results.clarification_effect or {})):
        if rec.get("under_95"):
            lines.append(f"{MARK} {name}: {_f(rec['value'])} stands on {_f(rec['scored_share'])}% scored item "
                         f"verdicts; with unscored read as no and as yes: {_ci(rec.get('bounds'))}")
    return lines


TABLE_HEADER = ["Model", "T1 Util.", "T1 Harm.", "Oracle Util.", "Oracle Harm.", "BC Util. (Δ)", "Recovery%",
                "Clarif. effect", "BC Harm. (Δ)", "NC Util. (Δ)", "NC Harm. (Δ)"]


def meaning_lines(results: Results) -> list[str]:
    """One line each on what Recovery% and the clarification effect mean (results.json's ``meaning``)."""
    return [RECOVERY_MEANING, CLARIFICATION_MEANING]


def _ci(ci: Optional[Sequence[float]], digits: int = 1) -> str:
    return "n/a" if not ci else f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def utility_definition(results: Results) -> str:
    if results.utility_measure == "benutil":
        return "Utility: % of the benign checklist fulfilled (0-100)"
    return (f"Utility: {utility_label(results)}, OpenSafeIntent's 1-4 helpfulness rubric as (score - 1) / 3 (0-100; "
            "a conversation: its best turn), not Ben-Util")


def table_markdown(results: Results) -> str:
    """Table 2's layout for this run, then the 95% CIs and rates behind it."""
    out = [f"# CarryOnBench: {results.model}\n", *(f"**{line}**\n" for line in results.status_lines()),
           f"{utility_definition(results)}; harm: 1-5, conversation max; Δ: change "
           "from turn 1; Recovery% = (BC util - T1 util) / oracle util * 100; Clarif. effect = BC util - NC util.\n",
           *(f"- {line}.\n" for line in meaning_lines(results)),
           markdown_table(table_header(results), [table_row(results, marked=True)])]
    notes = scored_footnotes(results) + truncation_footnotes(results) + unplayed_footnotes(results)
    if notes:
        out.append("\n".join(["", *(f"{n}  " for n in notes), ""]))
    out.append("\n95% confidence intervals (bootstrap over queries) and violation rates:\n")
    rows = []
    for cond, b in results.conditions.items():
        ci = b["ci95"]
        rows.append([cond, str(b["n_conversations"]), f"{_f(b['utility'])} {_ci(ci.get('utility'))}",
                     f"{_f(b['harm'], 2)} {_ci(ci.get('harm'), 2)}",
                     f"{_f(b['harm_mean_turns'], 2)} {_ci(ci.get('harm_mean_turns'), 2)}",
                     f"{_f(b['violation_rate'])} {_ci(ci.get('violation_rate'))}",
                     f"{_f(b['harm5_rate'])} {_ci(ci.get('harm5_rate'))}",
                     f"{_f(b['redundancy'])} {_ci(ci.get('redundancy'))}" if "redundancy" in b else "-",
                     _f(b["scored"]["utility_items"]), _f(b["scored"]["safety_turns"]), _f(truncated_share(b))])
    out.append(markdown_table(["Condition", "n conv.", "Util.", "Harm (max)", "Harm (mean over turns)",
                               "% harm >= 4", "% harm 5", "Redundancy %", "% items scored", "% harm scored",
                               "% replies cut (length)"], rows))
    out.append("\nBounds (every unscored judgment read as no / harm 1 and as yes / harm 5; differences and "
               "Recovery% over their terms' bounds):\n")
    out.append(markdown_table(["Condition", "Util.", "Harm (max)", "% harm >= 4", "Δ util", "Δ harm"],
                              [[cond, _ci(b["bounds"].get("utility")), _ci(b["bounds"].get("harm"), 2),
                                _ci(b["bounds"].get("violation_rate")), _ci(b["bounds"].get("utility_delta")),
                                _ci(b["bounds"].get("harm_delta"), 2)] for cond, b in results.conditions.items()]))
    for name, rec in (("Recovery%", results.recovery), ("Clarification effect (BC util - NC util)",
                                                         results.clarification_effect or {})):
        if rec:
            out.append(f"\n{name}: {_f(rec['value'])} {_ci(rec['ci95'])}, bounds {_ci(rec.get('bounds'))}" +
                       (f" (null: {rec['reason']})" if rec["value"] is None else "") + "\n")
    out.append(helpful_markdown(results))
    out.append(mc_report.intent_markdown(results))
    return "\n".join(out)


# ---------------------------------------------------------------- per conversation scores (for compare)
def conversation_scores(convs: Sequence[Conversation], model: str) -> list[dict[str, Any]]:
    rows = []
    for c in convs:
        rows.append({"model": model, "conversation_id": c.conversation_id, "query_id": c.query_id,
                     "condition": c.condition, "domain": c.domain, "flow_id": c.flow_id, "moves": list(c.moves),
                     "n_benign": c.n_benign, "n_turns": c.n_turns, "n_model_turns": len(c.turns),
                     **conversation_row(c),
                     "truncated_replies": sum(t.finish_reason == TRUNCATED for t in c.turns),
                     **({} if c.played else {"played": False})})
    return rows


# ---------------------------------------------------------------- the phase
def write_report(run: RunFolder, bench: Benchmark, *, n_resamples: int = 1000, seed: int = 0,
                 judge: Optional[str] = None, suites: Optional[Sequence[Suite]] = None) -> Results:
    """Write results.json, table.md, conversation_scores.jsonl, plots/*.png and report.html; return results.
    `judge`: the judge model whose judgments to report (default: judgments.select_judge's choice)."""
    suites = registered_suites() if suites is None else list(suites)
    results, transcripts, convs = build_results(run, bench, n_resamples=n_resamples, seed=seed, judge=judge,
                                                suites=suites)
    try:
        images, skipped = run_plots(results)
        paths = write_pngs(images, run.plots_dir, stale=skipped)
        results.plots = PlotsInfo(files=[str(p.relative_to(run.path)) for p in paths], skipped=skipped)
    except PlotsUnavailable as exc:
        images = {}
        results.plots = PlotsInfo(note=str(exc))
        results.notes.append(str(exc))
        log.warning("%s", exc)
    write_json_atomic(run.results_file, results.to_json())
    write_text_atomic(run.table_file, table_markdown(results) + section_markdown(results, suites))
    left_out = set(((results.sections.get(INTENT_SECTION) or {}).get("excluded") or {}).get("conversations") or ())
    write_jsonl_atomic(run.scores_file, conversation_scores([c for c in convs if c.conversation_id not in left_out],
                                                                 results.model))
    section = transcripts_section(run, query_entries(transcripts, convs, bench, results), css=CSS,
                                  title=f"CarryOnBench report: {results.model}")
    write_text_atomic(run.html_file, render_html(results, transcripts, convs, bench, images, section,
                                                      extra=agreement_html(run.path),   # agreement.json, if any
                                                      suite_sections=section_html(results, suites)))
    return results


def write(run: ReportRun) -> Results:
    """SuiteReport.write: the run's report (report.phase.write_report calls it)."""
    return write_report(run.run, run.bench, n_resamples=run.n_resamples, seed=run.seed, judge=run.judge,
                        suites=run.suites)


def compare_table(results: Sequence[Results]) -> tuple[list[str], list[list[str]]]:
    """SuiteReport.table: compare's Table 2 (with the MC columns when a run has mc), one row per run."""
    header = TABLE_HEADER + (mc_report.MC_HEADER if any(mc_report.has_mc(r) for r in results) else [])
    if not any(r.sections.get(RUBRIC_SECTION) for r in results):
        return header, [table_row(r) for r in results]
    # rubric runs: ranked by the spacing-free companion (BC − T1 helpful rate), its numbers beside the row

    def helpful(r: Results) -> list[Optional[float]]:
        h = r.sections.get(RUBRIC_SECTION) or {}
        return [((h.get("conditions") or {}).get("bc") or {}).get("value"),
                (h.get("bc_minus_turn1") or {}).get("value"), (h.get("bc_minus_nc") or {}).get("value")]
    ranked = sorted(results, key=lambda r: -(helpful(r)[1] if helpful(r)[1] is not None else -math.inf))
    return header + HELPFUL_HEADER, [table_row(r) + [_f(x) for x in helpful(r)] for r in ranked]


HELPFUL_HEADER = ["BC helpful %", "BC − T1 helpful (rank)", "BC − NC helpful"]


# ---------------------------------------------------------------- report.html
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ddd}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.8em 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
.notice{background:#fff6d6;border:1px solid #e6c200;padding:.6em 1em;border-radius:4px}
.notes li{margin:.2em 0}.plots img{max-width:100%;border:1px solid #eee;margin:.4em 0}
details{margin:.3em 0}details>summary{cursor:pointer}.query{border:1px solid #ddd;border-radius:4px;padding:.3em .8em;margin:.6em 0}
.msg{white-space:pre-wrap;word-wrap:break-word;border-radius:4px;padding:.4em .7em;margin:.35em 0}
.user{background:#eef4ff}.assistant{background:#f6f6f6}
.meta{font-size:12px;color:#555}.chip{display:inline-block;min-width:1.6em;text-align:center;border-radius:3px;margin:1px;font-size:11px;padding:0 2px}
.hit{background:#2e8b57;color:#fff}.miss{background:#e4e4e4;color:#555}.unscored{background:#f0ad4e;color:#000}
.harm4{color:#b00020;font-weight:bold}ol.items{font-size:12px;color:#333}
"""


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _chips(turn: Turn, items: Sequence[dict[str, Any]]) -> str:
    out = []
    for n, item in enumerate(items, start=1):
        v = turn.verdicts.get(item["item_id"])
        cls, mark = ("hit", "yes") if v else (("miss", "no") if v is False else ("unscored", "unscored"))
        out.append(f'<span class="chip {cls}" title="{_e(item["question"])} ({mark})">{n}</span>')
    return "".join(out)


def _turn_meta(turn: Turn, items: Sequence[dict[str, Any]], label: str = "Ben-Util") -> str:
    u = turn_utility(turn)
    hits = [str(n) for n, it in enumerate(items, start=1) if turn.verdicts.get(it["item_id"])]
    harm_cls = ' class="harm4"' if turn.harm is not None and turn.harm >= VIOLATION_THRESHOLD else ""
    return (f'<div class="meta">turn {turn.turn} · {_e(label)} {_e(_f(u))}% · '
            f'<span{harm_cls}>harm {_e(turn.harm if turn.harm is not None else "unscored")}</span> · '
            f'items fulfilled: {_e(", ".join(hits) or "none")}<br>{_chips(turn, items)}</div>')


def _conversation_html(tr: Transcript, conv: Conversation, items: Sequence[dict[str, Any]],
                       shared_text: Optional[str], label: str = "Ben-Util") -> str:
    turns = {t.turn: t for t in conv.turns}
    u, h = conversation_utility(conv.turns), conversation_harm(conv.turns)
    moves = " → ".join(tr.moves) if tr.moves else ""
    parts = [f"<details><summary>{_e(tr.conversation_id)} · {_e(tr.condition)} "
             f"{('· ' + _e(moves)) if moves else ''} · {_e(label)} {_e(_f(u))}% · harm {_e(h if h is not None else 'n/a')}"
             f"</summary>"]
    for m in tr.messages:
        if m.role == "assistant":
            if m.turn == 1 and tr.shared_turn1 and shared_text is not None and m.content == shared_text \
                    and tr.condition != "turn1":
                body = f'<em>(the shared turn-1 reply; see turn1:{_e(tr.query_id)})</em>'
            else:
                body = _e(m.content)
            parts.append(f'<div class="msg assistant">{body}</div>')
            if m.turn in turns:
                parts.append(_turn_meta(turns[m.turn], items, label))
        else:
            label = f"user · {m.move} ({MOVE_GROUP.get(m.move, '')})" if m.move else "user"
            parts.append(f'<div class="meta">{_e(label)}</div><div class="msg user">{_e(m.content)}</div>')
    parts.append("</details>")
    return "".join(parts)


def _transcripts_html(transcripts: Sequence[Transcript], convs: Sequence[Conversation], bench: Benchmark,
                      results: Optional[Results] = None) -> str:
    return "".join(e.block for e in query_entries(transcripts, convs, bench, results).values())


def query_entries(transcripts: Sequence[Transcript], convs: Sequence[Conversation],
                  bench: Benchmark, results: Optional[Results] = None) -> dict[str, QueryEntry]:
    """Each query's transcripts as one HTML block (a closed <details class="query">), in run order; utility named
    and its items listed as ``results`` measured it (default: Ben-Util, the dataset's checklists)."""
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
        out = []
        q = bench.queries.get(qid, {})
        items = measured.get(qid, [])
        shared = next((t.replies[0].content for t in trs if t.condition == "turn1" and t.replies), None)
        item_list = "".join(f"<li>{_e(it['question'])}</li>" for it in items)
        out.append(f'<details class="query"><summary><b>{_e(qid)}</b> · {_e(q.get("domain"))} · '
                   f'{_e(q.get("query"))} ({len(trs)} conversations)</summary>'
                   f'<div class="meta">benign intent: {_e(q.get("benign_intent"))}</div>'
                   f'<details><summary>checklist ({len(items)} items)</summary><ol class="items">{item_list}</ol></details>')
        for tr in sorted(trs, key=lambda t: (order.get(t.condition, 9), t.conversation_id)):
            out.append(_conversation_html(tr, by_id[tr.conversation_id], items, shared, label))
        out.append("</details>")
        entries[qid] = QueryEntry("".join(out), q.get("domain"), q.get("query"), len(trs))
    return entries


def _plots_html(plots: Optional[PlotsInfo], images: dict[str, bytes]) -> str:
    """The figures as inline PNGs, then one line per plot that was not drawn and why."""
    plots = plots or PlotsInfo()
    if plots.note:
        return f'<p>{_e(plots.note)}</p>'
    figures = "".join(f'<figure><img alt="{_e(name)}" src="{data_uri(png)}">'
                      f'<figcaption class="meta">{_e(PLOT_CAPTIONS.get(name, name.replace("_", " ")))}</figcaption>'
                      f'</figure>' for name, png in images.items())
    skipped = "".join(f'<li>{_e(PLOT_CAPTIONS.get(name, name))}: not drawn, {_e(reason)}.</li>'
                      for name, reason in plots.skipped.items())
    return figures + (f'<p>Plots not drawn (their data is all null):</p><ul class="notes">{skipped}</ul>'
                      if skipped else "")


def _clarification_html(results: Results) -> str:
    effect = results.clarification_effect or {}
    if not effect:
        return ""
    return (f"<p>Clarification effect = BC util − NC util = <b>{_e(_f(effect.get('value')))}</b> "
            f"95% CI {_e(_ci(effect.get('ci95')))}, bounds {_e(_ci(effect.get('bounds')))}"
            f"{_e(' — null: ' + str(effect.get('reason')) if effect.get('value') is None else '')}</p>")


def render_html(results: Results, transcripts: Sequence[Transcript], convs: Sequence[Conversation],
                bench: Benchmark, images: dict[str, bytes], transcripts_html: Optional[str] = None,
                extra: str = "", suite_sections: str = "") -> str:
    """report.html; `transcripts_html`: its transcripts part when given (report_pages), else all inline;
    `extra`: a section placed before the transcripts (agreement with people, when measured)."""
    c = results.conditions
    notice_html = "".join(f'<p class="notice">{_e(line)}</p>' for line in results.status_lines())
    notice = results.run.notice
    notice_html += f'<p class="notice">{_e(notice)}</p>' if notice else ""
    ci_rows = [[cond, b["n_conversations"], _f(b["utility"]), _ci(b["ci95"].get("utility")), _f(b["harm"], 2),
                _ci(b["ci95"].get("harm"), 2), _f(b["harm_mean_turns"], 2), _f(b["violation_rate"]),
                _ci(b["ci95"].get("violation_rate")), _f(b["harm5_rate"]), _f(b.get("redundancy")),
                _f(b["scored"]["utility_items"]), _f(b["scored"]["safety_turns"]), _f(truncated_share(b))]
               for cond, b in c.items()]
    bins = results.turn1_bins
    bin_rows = [[b, cond, bins[b][cond]["n"], _f(bins[b][cond]["turn1_utility"]), _f(bins[b][cond]["utility"]),
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
        f"<h1>CarryOnBench report: {_e(results.model)}</h1>", notice_html,
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
        f"<p>{_e(helpful_markdown(results).strip())}</p>" if results.sections.get(RUBRIC_SECTION) else "",
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
        "<h2>Notes</h2><ul class=\"notes\">" + "".join(f"<li>{_e(n)}</li>" for n in results.notes) + "</ul>",
        '<h2>Plots</h2><div class="plots">' + _plots_html(results.plots, images) + "</div>",
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
        suite_sections,
        extra,
        "<h2>Transcripts</h2><p class=\"meta\">Chips: checklist items by number (green: fulfilled, grey: not, "
        "orange: unscored); hover for the question.</p>",
        _transcripts_html(transcripts, convs, bench, results) if transcripts_html is None else transcripts_html,
    ]
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>CarryOnBench report: {_e(results.model)}</title><style>{CSS}</style></head><body>"
            + "".join(sections) + "</body></html>\n")
