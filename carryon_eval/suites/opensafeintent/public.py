"""OpenSafeIntent's public API: what another wing may use of it (the triplet wing plays the dataset's triplets on
this machinery; CarryOnBench's rubric utility fills the release's helpfulness rubric; CarryOnBench's inspect-ai scores leave
its replies out). Everything else in the wing is its own and may change without notice.

- the release: ``load_release``, ``Release``, ``PromptSet``, ``PROMPT_NAMES``, ``ReleaseError``;
- the judges' prompts and readings, the reference's way: ``fill`` (a template filled), ``read_score`` (a 1-4 /
  0-3 rubric answer read: first integer, range-checked, no re-ask), ``RUBRIC_MAX_TOKENS`` (the reference's cap of a
  rubric call);
- the loaded inputs of a run (``bench.extras``, written and read only here): ``Inputs``, ``inputs_of`` (KeyError
  when not loaded), ``inputs_or_none``;
- a run's jobs, probe and section, for a ``condition``: ``plan``, ``probe_intent``, ``probe_file``,
  ``probe_run_file``, ``load_probes``, ``section``, ``target_model``; ``parse_conversation_id`` (the set and prompt
  name of one of its transcripts, None for any other's);
- the section's records and their parts of compare: ``OpenSafeIntentSection`` (its fields ``HEADER`` first),
  ``OpenSafeIntentComparison``, ``comparison``, ``nothing_scored`` (its sets have replies, no metric is scored);
- the metrics and the section's rendering: ``HEADLINE``, ``ScoredSet``, ``summarize``, ``section_blocks``,
  ``compare_blocks``.

- the suite hooks the triplet wing shares (carryon_eval.suites.opensafeintent.hooks): ``load_as`` (the release's
  judges on the dataset's triplets, as a condition's inputs), ``is_dual_use``, ``count_sets``, ``judge_records``,
  ``run_intent_probe``, ``NEEDS`` (why a condition cannot run without the folder).

The suite record (the wing's ``suite.toml``, a declaration the registry reads without importing the wing) names
the hooks; importing this module imports the wing (and registers its judges), importing the package does not (its
``__init__`` is light).
"""
from carryon_eval.suites.opensafeintent.hooks import (NEEDS, count_sets, is_dual_use, judge_records, load_as,
                                                      run_intent_probe)
from carryon_eval.suites.opensafeintent.metrics import HEADLINE, ScoredSet, summarize
from carryon_eval.suites.opensafeintent.prompts import fill
from carryon_eval.suites.opensafeintent.readings import read_score
from carryon_eval.suites.opensafeintent.release import PROMPT_NAMES, PromptSet, Release, ReleaseError, load_release
from carryon_eval.suites.opensafeintent.section import (HEADER, OpenSafeIntentComparison, OpenSafeIntentSection,
                                                        comparison, nothing_scored)
from carryon_eval.suites.opensafeintent.report import compare_blocks, section_blocks
from carryon_eval.suites.opensafeintent.suite import (RUBRIC_MAX_TOKENS, Inputs, inputs_of, inputs_or_none, load_probes,
                                                      parse_conversation_id, plan, probe_file, probe_intent,
                                                      probe_run_file, section, target_model)

__all__ = ["HEADER", "OpenSafeIntentComparison", "OpenSafeIntentSection", "comparison", "nothing_scored", "HEADLINE", "NEEDS", "PROMPT_NAMES", "RUBRIC_MAX_TOKENS", "Inputs", "PromptSet", "Release", "ReleaseError",
           "ScoredSet", "compare_blocks", "count_sets", "fill", "inputs_of", "inputs_or_none",
           "is_dual_use", "judge_records", "load_as", "load_probes", "load_release", "parse_conversation_id", "plan",
           "probe_file", "probe_intent", "probe_run_file",
           "read_score", "run_intent_probe", "section", "section_blocks", "summarize", "target_model"]
