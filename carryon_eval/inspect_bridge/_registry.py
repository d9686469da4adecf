"""What the ``inspect_ai`` entry point of this package registers: the carryonbench task."""
from .task import carryonbench  # noqa: F401
