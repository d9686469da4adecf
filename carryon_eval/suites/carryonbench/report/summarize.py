"""CarryOnBench's section of the report: its numbers (results.json's top level, by the layout of its serializer),
the judges' record, its notes and status word, and its rows of conversation_scores.jsonl.

Reads the run's transcripts and one judge's records through the report inputs (report/ reads them; the numbers
come from metrics/headline.py); its table.md and report.html part is section_blocks.py's.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from carryon_eval.codec import Record
from carryon_eval.suites.carryonbench.section import (GROUPED, PER_ITEM, CarryOnBenchSection, JudgeKind,
                                                     SectionJudges, UtilityJudges, read)
from carryon_eval.dataset.load import Benchmark
from carryon_eval.dataset.rows import RowKeys, keys
from carryon_eval.judge.scorers import make_scorer
from carryon_eval.judge.store import default_judge, judge_pass
from carryon_eval.metrics.stats import Bootstrap
from carryon_eval.report.results_file import planned_jobs
from carryon_eval.run.folder import RunFolder
from carryon_eval.run.records import RunMeta
from carryon_eval.schema import Transcript
from carryon_eval.suites.carryonbench.conditions import CONDITIONS, MC_CONDITION
from carryon_eval.suites.carryonbench.dataset_support import dataset_notes
from carryon_eval.suite import ReportInputs, ReportPage, Section, SectionNotes
from carryon_eval.metrics.number import HasNumber
from carryon_eval.report.blocks import VALUE_CI, Shown, number_text
from carryon_eval.suites.carryonbench.report import intent_blocks as mc_report
from carryon_eval.suites.carryonbench.metrics.calibration import (Calibration, CalibrationSample, HeadlineDifferences,
                                                                 calibration, headline_differences, not_calibrated)
from carryon_eval.suites.carryonbench.metrics.conversations import TRUNCATED, Conversation, assemble, unplayed
from carryon_eval.suites.carryonbench.metrics.fidelity import clarification_fidelity, flagged_conversations, read_fidelity
from carryon_eval.suites.carryonbench.judging.grouped import GROUPED_CONTEXT
from carryon_eval.suites.carryonbench.metrics.condition import known
from carryon_eval.suites.carryonbench.metrics.intent import intent_record
from carryon_eval.suites.carryonbench.judging.judged import Judged, read_judged
from carryon_eval.suites.carryonbench.judging.judgments import load_utility, utility_judge_of
from carryon_eval.suites.carryonbench.metrics.rubric_helpful import NO_REDUNDANCY, SPACING_NOTE, helpful_record
from carryon_eval.suites.carryonbench.judging.scorers import SAFETY_CONTEXT, UTILITY_CONTEXT
from carryon_eval.suites.carryonbench.settings import UTILITY_NAMES, utility_scorer
from carryon_eval.suites.carryonbench.metrics.headline import summarize_records
from carryon_eval.suites.carryonbench.report.headline_blocks import utility_label
from carryon_eval.suites.carryonbench.metrics.unscored import UNSCORED_RULE, conversation_row

CORE = frozenset(CONDITIONS + (MC_CONDITION,))      # its conditions (the suite record's)
NULL_MEANING = ("null = cannot be computed, never 0: headline numbers give the reason in 'reasons' (or "
                "recovery.reason); in breakdowns (by_turn, move_effects, turn1_bins, by_domain) null means the cell "
                "has no scored data")
HARM_NOTE = ("Conversation harm is the maximum turn-level score (paper §4); harm_mean_turns is the mean over "
             "turns (the wording of the paper's Appendix B.1); both are reported.")


def utility_items(bench: Benchmark, scorer: Any) -> dict[str, list[RowKeys]]:
    """query_id -> the items its utility is measured on, as checklist rows (Ben-Util: the dataset's checklists)."""
    if scorer.name == "utility":
        return {q: [keys(i) for i in items] for q, items in bench.checklists.items()}
    return {q: [RowKeys(item_id=i, question=i) for i in ids] for q, ids in scorer.items(bench).items()}


def _domains(bench: Benchmark) -> dict[str, Any]:
    """query_id -> its domain (None where the dataset has none)."""
    return {q: keys(row).domain for q, row in bench.queries.items()}


def conversations(inputs: ReportInputs) -> tuple[list[Transcript], list[Conversation]]:
    """Its transcripts of the run and its conversations assembled from them and the judgments (every planned one:
    a conversation not played is read like one whose judgments are all unscored); made once per report."""
    if "carryonbench.conversations" not in inputs.memo:
        meta, bench = inputs.run.read_meta(), inputs.bench
        transcripts = _transcripts(inputs)
        checklists, domains = _checklists(bench, meta), _domains(bench)
        table = judged(inputs)
        convs = assemble(transcripts, table, table, checklists, domains)
        convs += unplayed([j for j in planned_jobs(bench, meta) or () if j.condition in CORE], inputs.transcripts,
                          checklists, domains)
        inputs.memo["carryonbench.conversations"] = (transcripts, convs)
    return inputs.memo["carryonbench.conversations"]


def _transcripts(inputs: ReportInputs) -> list[Transcript]:
    return [t for t in inputs.transcripts if t.condition in CORE]      # other suites: their own sections


def judged(inputs: ReportInputs) -> Judged:
    """The selected judge's utility verdicts (of the scorer that measured this run's utility) and safety scores
    over the replies of its transcripts, streamed once per report into one compact table (shared by its hooks
    through the inputs' memo)."""
    if "carryonbench.judged" not in inputs.memo:
        meta = inputs.run.read_meta()
        inputs.memo["carryonbench.judged"] = read_judged(inputs.run, inputs.judge, _transcripts(inputs),
                                                         _checklists(inputs.bench, meta),
                                                         scorer=utility_scorer(meta.judge))
    return inputs.memo["carryonbench.judged"]


def _checklists(bench: Benchmark, meta: RunMeta) -> dict[str, list[str]]:
    scorer = make_scorer(utility_scorer(meta.judge), meta.judge)     # Ben-Util, or what measured utility instead
    return {q: [i.item_id for i in items] for q, items in utility_items(bench, scorer).items()}


def summarize_run(inputs: ReportInputs) -> Optional[CarryOnBenchSection]:
    """SuiteReport.summarize: the conditions' numbers (results.json's top level), the judges' part of ``judges``,
    and the intent contrasts and the rubric run's companion (sections of their own); None when the run plans
    none of its conversations."""
    run, bench, meta = inputs.run, inputs.bench, inputs.run.read_meta()
    transcripts, convs = conversations(inputs)
    if not convs:
        return None
    scorer = make_scorer(utility_scorer(meta.judge), meta.judge)
    checklists, domains = _checklists(bench, meta), _domains(bench)
    fidelity = read_fidelity(run)
    flagged = set(flagged_conversations(fidelity, MC_CONDITION))    # never silently scored: left out, listed
    scored = [c for c in convs if c.conversation_id not in flagged]
    n_resamples, seed = inputs.n_resamples, inputs.seed
    section = CarryOnBenchSection(**summarize_records(scored, n_resamples=n_resamples, seed=seed,
                                                      plans=length_plans(bench, meta, CORE)))
    if section.clarification_effect:
        section.clarification_effect.fidelity = clarification_fidelity(fidelity)
    section.null_meaning = NULL_MEANING
    table = judged(inputs)
    section.judges = judge_info(run, inputs.judge, table, n_resamples=n_resamples,
                                seed=seed, context=None if scorer.name == "utility" else scorer.context,
                                sample=lambda verdicts, sampled: calibration_conversations(
                                    transcripts, verdicts, sampled, table, checklists, domains))
    section.judge_context = {"utility": scorer.context if scorer.name != "utility" else UTILITY_CONTEXT,
                             "safety": SAFETY_CONTEXT}
    section.utility_measure = meta.judge.get("utility")
    if section.unscored.not_judged:
        section.judges.complete = False      # replies without a judgment: these numbers are incomplete
    boot = Bootstrap.of((c.query_id for c in scored), n_resamples=n_resamples, seed=seed)
    section.intent = intent_record(scored, boot, excluded=sorted(flagged),
                                   fidelity=known(fidelity.voice) if fidelity else None)
    section.rubric_helpful = helpful_record(scored, boot)
    if section.rubric_helpful is not None:
        drop_redundancy(section)
    return section


def status(page: ReportPage) -> list[str]:
    """SuiteReport.status: "grouped" when its utilities come from the grouped Ben-Util judge."""
    grouped = read(page.results).judges.utility.ben_util_mode == GROUPED
    return [GROUPED] if grouped else []


def scores(page: ReportPage) -> list[dict[str, Any]]:
    """SuiteReport.scores: one conversation_scores.jsonl row per conversation (those the intent contrasts
    left out excepted)."""
    _, convs = conversations(page.inputs)
    intent = read(page.results).intent
    left_out = set(intent.excluded_ids() if intent is not None else ())
    return conversation_scores([c for c in convs if c.conversation_id not in left_out], page.results.model)


@dataclass
class PassFields(Record):
    """Its fields of a judge pass (judge.json, settings.py's ``register_pass_field``): the utility judge's answer
    form, Ben-Util's mode and, grouped, the sample it also judged per item."""
    utility_mode: Optional[str] = None
    utility_judge: Optional[str] = None
    calibration: Optional[CalibrationSample] = None


def judge_info(run: RunFolder, judge: Optional[str], table: Judged, *,
               n_resamples: int = 1000, seed: int = 0, context: Optional[str] = None,
               sample: Optional[Callable[[Any, Sequence[Any]], list[Conversation]]] = None) -> SectionJudges:
    """results.json's judges.utility and judges.safety: who judged, with which prompts, in which mode (and the
    grouped mode's calibration), from the records ``table`` streamed (its tallies). ``judge``: the judge of both
    (None: each one's own, judge.store.default_judge)."""
    judge = judge if judge is not None else default_judge(run, "utility")     # Ben-Util's judge
    judged = judge_pass(run, judge)          # this judge's latest pass (judge.json), if recorded
    fields = PassFields.from_json(judged.scoring) if judged else PassFields()
    ben_util = utility_judge_of(run, judge)
    utility = UtilityJudges(sorted(table.utility.models), sorted(table.utility.prompts), fields.utility_mode,
                            ben_util, context or (GROUPED_CONTEXT if ben_util == GROUPED else UTILITY_CONTEXT),
                            table.utility.logprobs)
    if ben_util == GROUPED:
        utility.calibration = _calibration(run, judge, table, fields.calibration, n_resamples, seed, sample)
    return SectionJudges(utility, JudgeKind(sorted(table.safety.models), sorted(table.safety.prompts), SAFETY_CONTEXT))


def calibration_conversations(transcripts: Sequence[Transcript], verdicts: Any, sampled: Sequence[Any],
                              safety: Any, checklists: dict[str, list[str]],
                              domains: dict[str, Any]) -> list[Conversation]:
    """The conversations a calibration sampled (every reply of theirs judged per item, ``sampled``: the sample
    is whole queries), assembled from ``verdicts`` (the grouped or the per-item ones: records, or the table the
    report streamed) and ``safety`` (records or that table)."""
    per_reply: dict[str, set[int]] = defaultdict(set)
    for v in sampled:
        per_reply[v.conversation_id].add(v.turn)
    sampled = [t for t in transcripts if per_reply.get(t.conversation_id, set()) >= {r.turn for r in t.replies}]
    return assemble(sampled, verdicts, safety, checklists, domains)     # only the sampled replies are looked up


def drop_redundancy(section: CarryOnBenchSection) -> None:
    """A rubric run has no checklist items to repeat: its redundancy numbers are null with the reason."""
    for block in section.conditions.values():
        if "redundancy" not in block.metrics.values:
            continue
        block.metrics.withhold("redundancy", NO_REDUNDANCY)
        block.redundancy_pooled, block.redundancy_by_turn, block.redundancy_by_length = None, [], []
        block.under_95 = [m for m in block.under_95 or () if m != "redundancy"]


def utility_judge_note(ben_util: UtilityJudges, measure: str = "benutil") -> str:
    """One line: which Ben-Util mode every utility number of the run stands on, and its calibration (a run
    measuring another utility, ``measure``, has no Ben-Util mode: it says what it stands on instead)."""
    if measure != "benutil":
        return (f"Utility: {UTILITY_NAMES.get(measure, measure)}, one judge call per reply; no Ben-Util checklist "
                "is judged, so Ben-Util's per-item and grouped modes do not apply.")
    if ben_util.ben_util_mode != GROUPED:
        return "Ben-Util mode: per-item (one judge call per reply and checklist item, the paper's protocol)."
    cal = ben_util.calibration or Calibration()
    if not cal.calibrated:
        return ("Ben-Util mode: GROUPED (one judge call per reply for all its checklist items; an item it left "
                "unscored was asked alone), NOT CALIBRATED: no per-item verdicts of this run measure how far "
                "grouped verdicts agree with the paper's per-item protocol (--calibrate N).")
    def _f(n: HasNumber, digits: int) -> str:       # the one number format, with its interval
        return number_text(Shown(n.number, digits, VALUE_CI))
    return (f"Ben-Util mode: GROUPED (one judge call per reply for all its checklist items; an item it left unscored "
            f"was asked alone), calibrated on {cal.n_replies} replies of whole queries also judged per item "
            f"({cal.n_pairs} item verdicts)." + _calibration_headline_note(cal.headline or None, _f)
            + f" Reply by reply: agreement {_f(cal.percent_agreement, 1)}%, Cohen's kappa "
            f"{_f(cal.cohen_kappa, 3)}, reply utility grouped - per-item {_f(cal.utility_difference, 1)} points "
            "(95% intervals, the headline's method).")


CALIBRATION_LABELS = {"turn1.utility": "T1 utility", "oracle.utility": "oracle utility", "bc.utility": "BC utility",
                      "nc.utility": "NC utility", "bc.utility_delta": "BC Δ utility", "nc.utility_delta": "NC Δ utility",
                      "recovery": "Recovery%", "clarification_effect": "clarification effect"}


def _calibration_headline_note(headline: Optional[HeadlineDifferences], fmt: Callable[[HasNumber, int], str]) -> str:
    """What the grouped mode moves each headline utility number by, on the sampled whole queries."""
    if not headline:
        return ""
    parts = [f"{CALIBRATION_LABELS.get(k, k)} grouped - per-item {fmt(v, 1)}" for k, v in headline.numbers.items()]
    return (f" What it moves the headline by, on the {headline.n_conversations} sampled conversations of "
            f"{headline.n_queries} whole queries (the headline's estimators and interval, paired over the queries): "
            + "; ".join(parts) + ".")


def _calibration(run: RunFolder, judge: Optional[str], grouped: Judged, asked: Optional[CalibrationSample],
                 n_resamples: int, seed: int,
                 sample: Optional[Callable[[Any, Sequence[Any]], list[Conversation]]] = None) -> Calibration:
    """Grouped verdicts against the per-item verdicts of the same judge on the replies it calibrated on (``asked``:
    judge.json's record of its sample), and (``sample``: the sampled conversations assembled from some verdicts)
    the headline's utility numbers on the sampled conversations in both modes; a run without calibration says so
    (``calibrated: false``)."""
    per_item = load_utility(run, judge, mode=PER_ITEM) if asked is not None and asked.replies else []
    if asked is None or not per_item:
        return not_calibrated("grouped Ben-Util run without calibration (--calibrate N): nothing measures how its "
                              "verdicts agree with the per-item protocol of the paper")
    out = calibration(grouped.verdict_records((r.conversation_id, r.turn, r.item_id) for r in per_item), per_item,
                      n_resamples=n_resamples, seed=seed)
    out.replies_sampled, out.sample_seed = asked.replies, asked.seed
    if sample is not None:
        out.headline = headline_differences(sample(grouped, per_item), sample(per_item, per_item),
                                            n_resamples=n_resamples, seed=seed)
    return out


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


def notes(page: ReportPage) -> SectionNotes:
    """SuiteReport.notes: what its numbers stand on (the utility measure, the unscored judgments, the replies cut,
    what the judges saw, the Ben-Util mode, the harm estimator), then what the run lacks (conditions not run,
    Recovery% null, the intent contrasts' notes, the dataset's notes)."""
    table, results = judged(page.inputs), page.results
    section = read(results)
    notes: list[str] = []
    u, name = section.unscored, utility_label(results)
    if section.utility_measure != "benutil":
        notes.append(f"Utility here is {name}, not Ben-Util: {section.judge_context.get('utility')}; a turn's utility is "
                     "(score - 1) / 3 as a percentage, a conversation's its best turn's. It is never compared with "
                     "Ben-Util in one column.")
        notes.append(SPACING_NOTE)
    if not table.utility.records:
        notes.append(f"No {name} judgments found: run the judge phase first; utilities are null.")
    if not table.safety.records:
        notes.append("No safety judgments found: run the judge phase first; harm is null.")
    notes.append(f"Unscored {name} item verdicts: {u.utility_items} of {u.utility_items_total} "
                 f"(plus {u.utility_items_not_judged} not judged). Turns with every item unscored: "
                 f"{u.utility_turns_all_unscored}.")
    notes.append(f"Unscored safety scores: {u.safety} of {u.safety_total} turns "
                 f"(plus {u.safety_not_judged} not judged).")
    notes.append(f"Unscored judgments, one rule for every number (headline, breakdowns, conversation_scores.jsonl "
                 f"and the mixed models): {UNSCORED_RULE}. This assumes the judgments are missing at random "
                 "(a judge that fails more often on harmful replies breaks it); 'bounds' give each number's range "
                 "over every reading of the unscored judgments, and 'sensitivity.pooled_draw' the harm numbers "
                 "with an unscored turn read as a draw from the condition's scored turn harms.")
    cut = {c: b.truncation() for c, b in section.conditions.items() if b.truncation().length}
    if cut:
        notes.append("Target replies cut at max_tokens (finish_reason length), judged as they are: " + "; ".join(
            f"{c} {t.length} of {t.with_finish_reason} ({t.share:.1f}%)" for c, t in cut.items())
            + ". A reasoning model can be cut before its answer: raise --max-tokens.")
    ben_util = section.judges.utility
    notes.append(f"The safety judge saw: {SAFETY_CONTEXT}. The {name} judge saw: "
                 f"{ben_util.context or UTILITY_CONTEXT}.")
    notes.append(utility_judge_note(ben_util, results.utility_measure))
    notes.append(HARM_NOTE)
    after: list[str] = []
    after += [f"Condition {cond} was not run: its numbers are null." for cond in CONDITIONS
              if not section.n.conversations_of(cond)]
    recovery = section.recovery.number
    if recovery.value is None:
        after.append(f"Recovery% is null: {recovery.reason}.")
    after.extend(mc_report.notes(results))
    after.extend(dataset_notes(page.inputs.bench, results.utility_measure))
    return SectionNotes(notes, after)



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
