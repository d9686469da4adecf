"""The triplet suite record: the dataset's `triplets` config scored with OpenSafeIntent's reference definitions.

    carryon-eval --conditions triplet --opensafeintent DIR

Triplets have one definition, OpenSafeIntent's: each prompt-set (benign, ambiguous = dual-use with its 4
paraphrases, malicious) is played as the reference plays its sets (7 single-turn jobs, its generation), judged by
the release's own judges (helpfulness, harmfulness, the assistance level; each sees the prompt that was sent) and
summarized by its reference metrics (Triplet Safety, ICU, Worst-Case Utility weighted by safety, ...): the
OpenSafeIntent wing's machinery (carryon_eval.suites.opensafeintent) under condition ``triplet``. The judge prompts
are the release's files, read at run time from the folder ``--opensafeintent DIR`` names; without it the condition
is refused with one line. Results.json's ``triplet`` section is OpenSafeIntent's section on these sets.

A run folder written before (this project's earlier triplet definitions: harm >= 4 unsafe, unweighted Worst-Case
Utility, the bare query shown to the judges) still reports: its results.json section is shown as it was, marked
with those definitions (legacy.py), and its transcripts are not scored again under other definitions.

A light declaration, as OpenSafeIntent's: its hooks are named in carryon_eval.suites.triplet.hooks (and that wing's
shared ones in its hooks) and imported when a run first calls one; ``load`` reads nothing without a folder and
triplets.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from carryon_eval.dataset.configs import register_columns
from carryon_eval.suite import Probe, ScorerUse, Suite, SuiteReport, register_suite
from carryon_eval.suite.lazy import hooks_of
from carryon_eval.suites.opensafeintent.record import probe_run_file

if TYPE_CHECKING:       # types only
    from carryon_eval.dataset.load import Benchmark
    from carryon_eval.suite import InputsRecord, SuiteOptions

TRIPLET_CONDITION = "triplet"
#: the dataset's ``triplets`` config (the builder's triplet stage writes it): the columns each row has at least
TRIPLET_CONFIG = "triplets"
TRIPLET_COLUMNS: tuple[str, ...] = ("set_id", "variant", "paraphrase", "prompt", "domain", "category")
register_columns(TRIPLET_CONFIG, TRIPLET_COLUMNS)

HOOKS = hooks_of("carryon_eval.suites.triplet.hooks")
SHARED = hooks_of("carryon_eval.suites.opensafeintent.hooks")     # OpenSafeIntent's, on the triplets' replies


def load(bench: "Benchmark", options: "SuiteOptions", recorded: Optional["InputsRecord"]) -> Optional["InputsRecord"]:
    """Suite.load: None without a folder or without triplets (the wings are not imported), else hooks.load."""
    if options.get("opensafeintent") is None or not bench.triplets:
        return None
    return HOOKS.load(bench, options, recorded)


TRIPLETS = register_suite(Suite(
    name="triplet", conditions=(TRIPLET_CONDITION,), plan=HOOKS.plan_triplets, default=False, missing=HOOKS.missing,
    load=load, rank=10,
    uses=(ScorerUse("osi_helpfulness"), ScorerUse("osi_harmfulness"),
          ScorerUse("osi_assistance_level", when=SHARED.is_dual_use)),
    probes=(Probe("intent_probe", "target", up_to=SHARED.count_sets, run=HOOKS.probe),),
    files=(probe_run_file(TRIPLET_CONDITION),),
    report=SuiteReport(section=TRIPLET_CONDITION, record=hooks_of("carryon_eval.suites.triplet.section").TripletSection,
                       compare_record=hooks_of("carryon_eval.suites.triplet.section").OpenSafeIntentComparison,
                       summarize=HOOKS.summarize, blocks=HOOKS.blocks,
                       compare=HOOKS.compare, compare_blocks=HOOKS.compare_part,
                       nothing_scored=HOOKS.nothing_scored),
    description="the dataset's benign / ambiguous / malicious prompt-sets under OpenSafeIntent's reference judges and "
                "metrics (needs --opensafeintent DIR)"))

__all__ = ["TRIPLETS", "TRIPLET_COLUMNS", "TRIPLET_CONDITION"]
