"""The evaluator in inspect-ai (the optional extra ``[inspect]``); a suite's own part (its task, its scores and
metrics in a log) is its record's ``SuiteReport.inspect``, which this folder asks for and never names.

- ``export``: a run folder as an inspect eval log (``carryon-eval export RUNDIR --format inspect --out F.eval``),
  for ``inspect view``: one sample per transcript, the suites' scores per reply, results.json's headline numbers
  as the log's metrics.
- ``endpoint``: an inspect model as a ``ChatEndpoint``, so that the project's user simulator and scorers run on
  any provider inspect reaches.
- ``task``: what a suite's inspect task is built of (e.g. ``inspect eval carryon_eval/carryonbench``, CarryOnBench's;
  every suite's task is registered through the ``inspect_ai`` entry point, ``_registry``).
- ``importer``: an inspect eval log of such a task back into a run folder (``carryon-eval import``), so that the
  numbers always come from the project's metric functions (``carryon-eval report``).

Nothing here is imported by the rest of the package; every module imports inspect_ai itself, and
``require_inspect`` turns its absence into one line.
"""
from __future__ import annotations

INSTALL_HINT = 'inspect-ai is not installed; pip install "carryonbench[inspect]"'


def require_inspect() -> None:
    """Raise ExportError (one line) when inspect-ai is not importable."""
    from carryon_eval.app.exporters import ExportError

    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        raise ExportError(INSTALL_HINT) from None
