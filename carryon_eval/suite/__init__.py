"""The seam between the evaluator's stages and the benchmark suites: the suite records (records) and the registry
(registry). Stage folders and wings (carryon_eval/suites/) both import from here; this package imports neither."""
from carryon_eval.suite.records import (Job, JobGeneration, PlanSettings, Probe, ScorerUse, Skipped, Suite,
                                        SuiteError, SuiteOption, SuiteReport, headline_unscored)
from carryon_eval.suite.registry import (ALL, BUILTIN_SUITE_MODULES, ScoringPlan, all_conditions, available,
                                         default_conditions, exporters, load_inputs, plan_jobs, refuse_missing,
                                         register_suite, resolve_conditions, scorer_uses, selected, suite_of,
                                         suite_options, suites, unregister_suite, without_inputs)

__all__ = ["ALL", "BUILTIN_SUITE_MODULES", "Job", "JobGeneration", "PlanSettings", "Probe", "ScorerUse",
           "ScoringPlan", "Skipped", "Suite", "SuiteError", "SuiteOption", "SuiteReport", "all_conditions", "headline_unscored",
           "available", "default_conditions", "exporters", "load_inputs", "plan_jobs", "refuse_missing",
           "register_suite", "resolve_conditions", "scorer_uses", "selected", "suite_of", "suite_options",
           "suites", "unregister_suite", "without_inputs"]
