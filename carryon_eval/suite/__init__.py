"""The seam between the evaluator's stages and the benchmark suites: the suite records (records), the registry
(registry) and the typed inputs the suites' hooks receive (inputs). Stage folders and wings (carryon_eval/suites/)
both import from here; this package imports no wing and no stage above run/, judge/'s store and dataset/."""
from carryon_eval.suite.inputs import (BoardView, Cell, Column, ColumnSource, CompareInputs, DesignNote, DesignView,
                                       InputsRecord, ProbeContext,
                                       ReportInputs, RUN_FOLDER, RunEntry, Section, Stat, SuiteLeaderboard, SuiteOptions,
                                       SuitePlots, UnitRecord, UnitRule)
from carryon_eval.suite.records import (Configured, InspectPart, Job, JobGeneration, JudgeRole, PlanSettings, Probe, ReportPage, ScorerUse,
                                        SectionNotes, Skipped, Suite, SuiteError, SuiteOption, SuiteReport,
                                        headline_unscored)
from carryon_eval.suite.registry import (ALL, ENTRY_POINT_GROUP, WINGS, ScoringPlan, all_conditions, available,
                                         default_conditions, discover, exporters, check_options, checks, judge_options, judge_role_of, judge_roles,
                                         load_inputs, load_wings, load_wings_of, plan_jobs,
                                         refuse_missing, register_suite, resolve_conditions, run_judge_options, scorer_uses, selected,
                                         suite_of, suite_options, suites, unregister_suite, without_inputs)

__all__ = ["ALL", "ENTRY_POINT_GROUP", "WINGS", "BoardView", "Cell", "Column", "ColumnSource", "CompareInputs", "Configured",
           "DesignNote", "DesignView",
           "InputsRecord", "InspectPart", "Job", "JobGeneration", "JudgeRole", "PlanSettings", "Probe", "ProbeContext", "ReportInputs", "ReportPage",
           "RUN_FOLDER", "RunEntry", "ScorerUse", "ScoringPlan", "Section", "SectionNotes", "Skipped", "Stat", "Suite", "SuiteError",
           "SuiteLeaderboard", "SuiteOption", "SuiteOptions", "SuitePlots", "SuiteReport", "UnitRecord", "UnitRule",
           "all_conditions", "available",
           "default_conditions", "discover", "exporters", "check_options", "checks", "headline_unscored", "judge_options", "judge_role_of", "judge_roles",
           "load_inputs", "load_wings", "load_wings_of", "plan_jobs",
           "refuse_missing", "register_suite", "resolve_conditions", "run_judge_options", "scorer_uses", "selected", "suite_of",
           "suite_options", "suites", "unregister_suite", "without_inputs"]
