"""CarryOnBench's own options of `carryon-eval` (its judge settings, carryon_eval.suites.carryonbench.settings):
how the Ben-Util judge answers, what utility is measured with, per-item or grouped Ben-Util calls, the group size
and the calibration of a grouped run. The option table (carryon_eval.app.options) puts them in their place of
`carryon-eval --help` when the wing is registered (``Suite.judge_options``); the `judge` subcommand takes the
same ones with "the run's" as default (``RUN_OPTIONS``)."""
from __future__ import annotations

from carryon_eval.suites.carryonbench.settings import DEFAULT_GROUP_SIZE
from carryon_eval.option import Option
from carryon_eval.run.records import setting_reader

UTILITY_MODE = Option("--utility-mode", default="text", choices=("text", "logprob", "logprobs"),
                      read=setting_reader("utility_mode"),
                      help="How the utility judge answers: yes/no text, or P(yes) from logprobs.")
UTILITY = Option("--utility", default=None, choices=("benutil", "rubric"), read=setting_reader("utility"),
                 help="What utility is measured with: Ben-Util (the dataset's checklists), or, for datasets without "
                      "checklists, OpenSafeIntent's 1-4 helpfulness rubric (needs --opensafeintent DIR; reported as "
                      "rubric utility, (score - 1) / 3, never as Ben-Util) [default: the first the dataset supports: "
                      "Ben-Util when it has checklists, else the one its build records, e.g. rubric for an "
                      "OpenSafeIntent build; the run says which].")
UTILITY_JUDGE = Option("--utility-judge", default="per-item", choices=("per-item", "grouped"),
                       help="Ben-Util calls: one per (reply, item) as in the paper, or grouped: one per reply "
                            "returning a verdict per item (an item it leaves unscored is asked alone).")
UTILITY_GROUP_SIZE = Option("--utility-group-size", kind="count", default=DEFAULT_GROUP_SIZE,
                            beside=("utility_judge", "grouped"),
                            help="Grouped: at most this many checklist items per call.")


def _replies(value: int) -> int:
    if value < 0:
        raise ValueError(f"expected a number of replies >= 0 (0: no calibration), got {value}")
    return value


CALIBRATE = Option("--calibrate", kind="int", default=0, metavar="N", read=_replies,
                   beside=("utility_judge", "grouped"),
                   help="Grouped: also judge N replies, drawn at random (seeded), per item; the report gives the "
                        "agreement of the two modes.")

#: `carryon-eval [OPTIONS]`'s, in --help's order (after --fidelity)
OPTIONS = (UTILITY_MODE, UTILITY, UTILITY_JUDGE, UTILITY_GROUP_SIZE, CALIBRATE)
#: `carryon-eval judge RUNDIR`'s, in --help's order (before --judge-max-tokens)
RUN_OPTIONS = (UTILITY_MODE.of_run(help="[default: the run's]"),
               UTILITY_JUDGE.of_run(help="per-item | grouped [default: the run's]"),
               UTILITY_GROUP_SIZE.of_run(help="[default: the run's]"),
               CALIBRATE.of_run(help="[default: the run's]"))
