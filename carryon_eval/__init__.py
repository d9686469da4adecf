"""CarryOnBench evaluator: rollout -> judge -> metrics -> report against any OpenAI-compatible endpoint.

``from carryon_eval import evaluate`` is the Python API (carryon_eval.api); it is imported on first use, so
``import carryon_eval`` itself stays light.
"""

import os
from typing import Any

# The evaluator's matrices are small (a thousand bootstrap draws times a few hundred queries): more than one BLAS
# thread per product only waits, and on a shared machine multiplies the CPU time many fold (bench/README.md). One
# thread, unless the environment says otherwise; it holds where numpy is imported after this package (the CLI, a
# report's worker process).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"

_LAZY = {"evaluate": "api", "evaluate_async": "api"}   # name -> submodule that defines it

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
