"""What the ``inspect_ai`` entry point of this package registers: every registered suite's inspect task (its
``SuiteReport.inspect.task``; e.g. ``carryon_eval/carryonbench``), imported so that its ``@task`` registers it."""
from carryon_eval.suite import suites

for _suite in suites():
    if _suite.report is not None and _suite.report.inspect is not None and _suite.report.inspect.task is not None:
        _suite.report.inspect.task.resolve()
