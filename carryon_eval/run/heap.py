"""The garbage collector while a phase has many model calls in flight.

    with many_calls():
        await asyncio.gather(*workers)

Every call in flight holds a few hundred short-lived objects (request, response, parsed JSON, futures), and
with the interpreter's default thresholds (700 allocations) the cyclic collector runs thousands of times per
phase, each young collection walking every in-flight call's objects again; a profile of the judge phase put a
sixth of its CPU in the collector. Inside ``many_calls()`` what was loaded before it (modules, the dataset) is
frozen out of the collector's walks (``gc.freeze``) and a young collection runs after ``GEN0_THRESHOLD``
allocations. Reference counting still frees everything that is not a cycle at once; cycles wait a little longer.
The interpreter's own settings come back when the last phase inside it ends (phases may overlap: rollout and
judge in one event loop). See bench/README.md for the measurement.
"""
from __future__ import annotations

import contextlib
import gc
from typing import Iterator, Optional

GEN0_THRESHOLD = 20_000

_depth = 0
_saved: Optional[tuple[int, ...]] = None


@contextlib.contextmanager
def many_calls() -> Iterator[None]:
    global _depth, _saved
    if _depth == 0:
        _saved = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(max(GEN0_THRESHOLD, _saved[0]), *_saved[1:])
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _saved is not None:
            gc.set_threshold(*_saved)
            gc.unfreeze()
            _saved = None
