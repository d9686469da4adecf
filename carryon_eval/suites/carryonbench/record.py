"""The CarryOnBench suite: the paper's four conditions (§4) as one suite record.

- turn1: the query alone; oracle: the query and its benign intent in one prompt (prompts/target/oracle.txt);
- bc / nc: the dataset's conversations, a flow of k moves giving 1 + k target replies, each follow-up user turn
  rendered by the user simulator;
- mc (not in the default set; ``all`` has it): the dataset's conversations marked ``condition: MC``, each a BC
  flow whose clarification moves the simulator voices with the query's ``malicious_intent`` (the malicious
  purpose is said openly, never behind a cover story); paired with the BC conversation of the same query and flow.
With ``shared_turn1`` a query's turn-1 reply is generated once: it is the turn1 transcript's reply and the first
reply of all the query's bc/nc/mc conversations (they share the key ``turn1:<query_id>``).

Every reply is judged by Ben-Util (each checklist item) and the 1-5 safety judge; the numbers are its section of
results.json (a CarryOnBenchSection, section.py, which results.json's serializer holds at its top level;
metrics/headline.py through report/summarize.py's
``summarize_run``); its parts of table.md and report.html (report/section_blocks.py), compare (Table 2 through
``table``, report/compare.py) and the leaderboard (whose paired differences read its conversation_scores.jsonl rows back through its
leaderboard's ``units``) are its SuiteReport's hooks, as every suite's.
"""
from __future__ import annotations

from typing import Sequence

from carryon_eval.dataset.load import Benchmark, conversation_condition
from carryon_eval.moves import BC_MOVES
from carryon_eval.suites.carryonbench.metrics.fidelity import FIDELITY, FIDELITY_CALLS_RUN_FILE, fidelity_check   # (and registers the fidelity judges)
from carryon_eval.suites.carryonbench.judging import rubric  # noqa: F401 - registers the rubric utility judge
from carryon_eval.suites.carryonbench.judging import grouped  # noqa: F401 - registers the Ben-Util (per item, grouped) and safety scorers, their judgment files with them
import carryon_eval.suites.carryonbench.settings  # noqa: F401 - registers the judge settings
from carryon_eval.suites.carryonbench import cost  # noqa: F401 - registers Ben-Util's two modes in the cost table
from carryon_eval.suites.carryonbench.metrics.measure import configure
from carryon_eval.suites.carryonbench.dataset_support import why_unplayable
from carryon_eval.suites.carryonbench.options import OPTIONS, RUN_OPTIONS
from carryon_eval.suites.carryonbench.metrics.power import design_note
from carryon_eval.prompts import load_prompt, prompt_hashes
from carryon_eval.rollout.simulator import MALICIOUS, MALICIOUS_GROUP
from carryon_eval.suites.carryonbench.conditions import CONDITIONS, MALICIOUS_INTENT, MC_CONDITION
from carryon_eval.suites.carryonbench.metrics.condition import known
from carryon_eval.suites.carryonbench.section import SECTION, CarryOnBenchSection
from carryon_eval.suite.lazy import hooks_of
from carryon_eval.suite import (InspectPart, Job, JudgeRole, PlanSettings, Probe, ScorerUse, Skipped, Suite, SuitePlots,
                                SuiteReport, register_suite)
from carryon_eval.suites.carryonbench.report.board_figures import BOARD_CAPTIONS, BOARD_PLOTS, BOARD_WHEN
from carryon_eval.suites.carryonbench.report.compare import (CarryOnBenchComparison, compare_blocks, comparison,
                                                      incomparable)
from carryon_eval.suites.carryonbench.report.compare_figures import COMPARE_PLOTS
from carryon_eval.suites.carryonbench.report.leaderboard import LEADERBOARD
from carryon_eval.suites.carryonbench.judging.scorers import GROUPED_SCORER
from carryon_eval.suites.carryonbench.report.paper_rows import paper_entries
from carryon_eval.suites.carryonbench.report.figures import PLOT_CAPTIONS, RUN_PLOTS
from carryon_eval.suites.carryonbench.report.section_blocks import appendix, section_blocks
from carryon_eval.suites.carryonbench.report.summarize import notes, scores, status, summarize_run
from carryon_eval.suites.carryonbench.report.headline_blocks import compare_table

ORACLE_PROMPT = "target/oracle"
#: its inspect-ai part (the extra [inspect]), imported when inspect asks for it
INSPECT_TASK = hooks_of("carryon_eval.suites.carryonbench.inspect_eval.task")
INSPECT_SCORES = hooks_of("carryon_eval.suites.carryonbench.inspect_eval.scores")
SHARED_TURN1 = ("turn1", "bc", "nc", MC_CONDITION)   # the conditions whose first reply is the query's turn-1 reply


def turn1_key(query_id: str) -> str:
    return f"turn1:{query_id}"


def plan_conditions(bench: Benchmark, conditions: Sequence[str],
                    settings: PlanSettings) -> tuple[list[Job], list[Skipped]]:
    """turn1 and oracle per query (dataset order), then the dataset's bc/nc conversations."""
    jobs: list[Job] = []
    skipped: list[Skipped] = []
    oracle = load_prompt(ORACLE_PROMPT)

    def shares(qid: str) -> str | None:
        return turn1_key(qid) if settings.shared_turn1 else None

    for qid, q in bench.queries.items():
        if "turn1" in conditions:
            jobs.append(Job(turn1_key(qid), qid, "turn1", prompt=q["query"], shares=shares(qid)))
        if "oracle" in conditions:
            if q.get("benign_intent"):
                jobs.append(Job(f"oracle:{qid}", qid, "oracle",
                                prompt=oracle.render(query=q["query"], benign_intent=q["benign_intent"]),
                                meta=(("prompt", oracle.ref),)))
            else:
                skipped.append(Skipped(f"oracle:{qid}", "oracle",
                                       "query has no benign_intent (the oracle prompt needs it)"))
    for conv in bench.conversations:
        flow = bench.flows[conv["flow_id"]]
        moves = tuple(flow["moves"])
        cond = conversation_condition(conv, flow)
        if cond not in conditions:
            continue
        q = bench.queries[conv["query_id"]]
        slot = MALICIOUS_INTENT if cond == MC_CONDITION else "benign_intent"
        if any(m in BC_MOVES for m in moves) and not q.get(slot):
            skipped.append(Skipped(conv["conversation_id"], cond,
                                   f"query has no {slot} (its clarification moves need it)"))
            continue
        intent = {"intent": MALICIOUS} if cond == MC_CONDITION else {}
        jobs.append(Job(conv["conversation_id"], conv["query_id"], cond, prompt=q["query"], flow_id=flow["flow_id"],
                        moves=moves, shares=shares(conv["query_id"]), **intent))
    if MC_CONDITION in conditions and not any(j.condition == MC_CONDITION for j in jobs + skipped):
        skipped.append(Skipped(MC_CONDITION, MC_CONDITION, "the dataset has no mc conversations (a build with "
                               "the LLM stages writes them; a `--no-llm` build has none)"))
    return jobs, skipped


def conditions_without_numbers(section: CarryOnBenchSection) -> list[str]:
    """Exit 3's rule (SuiteReport.nothing_scored of its section): the conditions that ran (conversations > 0) whose
    headline numbers are all None."""
    return [name for name, block in section.conditions.items() if known(block.n_conversations)
            and all(block.value(m) is None for m in ("utility", "harm", "harm_mean_turns", "violation_rate"))]


def judgments_missing(section: CarryOnBenchSection) -> int:
    """Exit 4's count (SuiteReport.not_judged of its section): its unscored counts of Ben-Util items and harm
    scores that have no judgment record at all."""
    return section.unscored.not_judged


#: The move-fidelity check's help: of a run's --fidelity and of `carryon-eval fidelity RUNDIR`
FIDELITY_HELP = ("the move-fidelity check (fidelity.json): does every simulated user turn realise its move, "
                 "and do NC turns leak the intent?")
#: Its scorers' judges of their own (the paper: Gemini-2.5-Flash for Ben-Util, gpt-5.2 for safety)
JUDGE_ROLES = (JudgeRole("ben_util", "Ben-Util", ("utility", GROUPED_SCORER)), JudgeRole("safety", "safety", ("safety",)),
               JudgeRole("rubric", "rubric utility", ("rubric_utility",)),
               JudgeRole("fidelity", "move fidelity", ("fidelity", "intent_leak", "voiced_purpose")))

CARRYONBENCH = register_suite(Suite(
    name="carryonbench", conditions=CONDITIONS + (MC_CONDITION,), optional=(MC_CONDITION,), plan=plan_conditions,
    rank=0, uses=(ScorerUse("utility"), ScorerUse("safety")), unplayable=why_unplayable,
    judge_options=OPTIONS, run_judge_options=RUN_OPTIONS, configure=configure, design=design_note,
    report=SuiteReport(section=SECTION, record=CarryOnBenchSection, summarize=summarize_run,
                       blocks=section_blocks, notes=notes, status=status, scores=scores, appendix=appendix,
                       table=compare_table, leaderboard=LEADERBOARD, reported=paper_entries,
                       compare=comparison, compare_record=CarryOnBenchComparison, compare_blocks=compare_blocks,
                       incomparable=incomparable, nothing_scored=conditions_without_numbers,
                       not_judged=judgments_missing,
                       plots=SuitePlots(run=RUN_PLOTS, compare=COMPARE_PLOTS, board=BOARD_PLOTS, board_when=BOARD_WHEN,
                                        captions={**PLOT_CAPTIONS, **BOARD_CAPTIONS}),
                       inspect=InspectPart(task=INSPECT_TASK.carryonbench, samples=INSPECT_SCORES.transcript_scores,
                                           metrics=INSPECT_SCORES.headline_scores)),
    judge_roles=JUDGE_ROLES,
    checks=(Probe("fidelity", "judge", up_to=lambda jobs: 0, run=fidelity_check, help=FIDELITY_HELP),), files=(FIDELITY, FIDELITY_CALLS_RUN_FILE),
    prompts=lambda: {**prompt_hashes("user_simulator"), **prompt_hashes(MALICIOUS_GROUP),
                     ORACLE_PROMPT: load_prompt(ORACLE_PROMPT).ref},
    description="the paper's conditions: turn 1, oracle, conversations with (bc) and without (nc) clarification; "
                "mc: the bc moves with a malicious intent"))
