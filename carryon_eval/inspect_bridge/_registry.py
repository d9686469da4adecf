"""What the ``inspect_ai`` entry point of this package registers: the carryonbench task."""
from carryon_eval.inspect_bridge.task import carryonbench  # noqa: F401
