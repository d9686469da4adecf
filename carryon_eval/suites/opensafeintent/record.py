"""OpenSafeIntent's suite record: its inputs (a release folder), its jobs, its judges, its probe and its section.

    carryon-eval --conditions opensafeintent --opensafeintent DIR [--opensafeintent-sets triplets] [--limit N]

A light declaration: its name, condition, options, run file and rank (what the CLI and the registry read before a
run starts), its hooks named in carryon_eval.suites.opensafeintent.hooks (its section's rendering in .report) and
imported when a run first calls one (carryon_eval.suite.lazy). A run that neither names its condition nor gives
--opensafeintent imports nothing else of the wing: ``load`` reads no release without the folder.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from carryon_eval.run.folder import RunFile
from carryon_eval.suite import InspectPart, JudgeRole, Probe, ScorerUse, Suite, SuiteOption, SuiteReport, register_suite
from carryon_eval.suite.lazy import hooks_of

if TYPE_CHECKING:       # types only
    from carryon_eval.dataset.load import Benchmark
    from carryon_eval.suite import InputsRecord, SuiteOptions

CONDITION = "opensafeintent"
SETS = ("release", "triplets")
HOOKS = hooks_of("carryon_eval.suites.opensafeintent.hooks")
SECTION = hooks_of("carryon_eval.suites.opensafeintent.section")    # its section's record types


def probe_file(condition: str = CONDITION) -> str:
    """The run folder's file of a condition's intent probe records (declared by its suite: ``probe_run_file``)."""
    return f"{condition}_probe.jsonl"


def probe_run_file(condition: str = CONDITION) -> RunFile:
    return RunFile(probe_file(condition), f"the intent probe's records of condition {condition}")


def load(bench: "Benchmark", options: "SuiteOptions", recorded: Optional["InputsRecord"]) -> Optional["InputsRecord"]:
    """Suite.load: None without --opensafeintent (the wing is not imported), else the release (hooks.load)."""
    if options.get("opensafeintent") is None:
        return None
    return HOOKS.load(bench, options, recorded)


OPENSAFEINTENT = register_suite(Suite(
    name=CONDITION, conditions=(CONDITION,), default=False, plan=HOOKS.plan_sets, missing=HOOKS.missing, load=load,
    rank=20,
    options=(SuiteOption("--opensafeintent", metavar="DIR", path=True,
                         help="An OpenSafeIntent release folder (dataset.json and prompts/metrics/, e.g. a clone of "
                              "its repository) for condition opensafeintent; --limit N takes its first N prompt-sets."),
             SuiteOption("--opensafeintent-sets", choices=SETS, default="release",
                         help="Which prompt-sets condition opensafeintent plays: the release's dataset.json, or the "
                              "dataset's own triplets config (CarryOnBench's triplets under OpenSafeIntent's judges "
                              "and definitions).")),
    uses=(ScorerUse("osi_helpfulness"), ScorerUse("osi_harmfulness"),
          ScorerUse("osi_assistance_level", when=HOOKS.is_dual_use)),
    probes=(Probe("intent_probe", "target", up_to=HOOKS.count_sets, run=HOOKS.probe),), files=(probe_run_file(),),
    judge_roles=(JudgeRole("opensafeintent", "OpenSafeIntent (helpfulness, harmfulness, assistance level)",
                           ("osi_helpfulness", "osi_harmfulness", "osi_assistance_level")),),
    report=SuiteReport(section=CONDITION, record=SECTION.OpenSafeIntentSection, summarize=HOOKS.summarize,
                       blocks=HOOKS.blocks, compare=HOOKS.compare, compare_record=SECTION.OpenSafeIntentComparison,
                       compare_blocks=HOOKS.compare_part,
                       export=HOOKS.export, nothing_scored=HOOKS.nothing_scored,
                       # the prompt name of its transcripts and the triplet wing's in an inspect log
                       inspect=InspectPart(metadata=hooks_of("carryon_eval.suites.opensafeintent.suite").inspect_metadata)),
    description="OpenSafeIntent's release under its own judges and reference metrics (--opensafeintent DIR)"))
