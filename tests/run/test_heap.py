"""The collector settings while calls are in flight (carryon_eval.run.heap): raised and frozen inside, the
interpreter's own back once the last of overlapping phases ends."""
from __future__ import annotations

import asyncio
import gc

from carryon_eval.run.heap import GEN0_THRESHOLD, many_calls


def test_inside_the_threshold_is_raised_and_the_loaded_heap_frozen_then_both_come_back():
    before = gc.get_threshold()
    kept = [object() for _ in range(10)]          # something loaded before the phase
    with many_calls():
        assert gc.get_threshold()[0] == max(GEN0_THRESHOLD, before[0])
        assert gc.get_threshold()[1:] == before[1:]
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    assert len(kept) == 10


def test_overlapping_phases_restore_only_when_the_last_one_ends():
    before = gc.get_threshold()
    seen = []

    async def phase(seconds: float) -> None:
        with many_calls():
            await asyncio.sleep(seconds)
            seen.append(gc.get_threshold()[0])

    async def both() -> None:
        await asyncio.gather(phase(0.01), phase(0.05))    # the short one ends while the long one runs

    asyncio.run(both())
    assert seen == [max(GEN0_THRESHOLD, before[0])] * 2
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_an_error_inside_restores_the_settings():
    before = gc.get_threshold()
    try:
        with many_calls():
            raise RuntimeError("the phase failed")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
