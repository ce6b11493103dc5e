"""Start-up's objects kept out of the collector's passes (gate.startup.freeze_heap) and
given back at close (thaw_heap): what was alive is frozen, garbage of start-up is
collected first, and a cycle made after start-up is still collected."""

from __future__ import annotations

import gc
import weakref

from worker.gate.startup import YOUNG_THRESHOLD, freeze_heap, thaw_heap


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_freeze_keeps_what_lives_and_collects_what_does_not() -> None:
    alive = _Node()
    dead = weakref.ref(_Node())  # garbage in a cycle, left by "start-up"
    assert dead() is not None
    try:
        freeze_heap()
        assert dead() is None  # collected before the freeze, not frozen for good
        assert gc.get_freeze_count() > 0
        later = weakref.ref(_Node())  # a cycle made after start-up
        gc.collect()
        assert later() is None
    finally:
        thaw_heap()
    assert gc.get_freeze_count() == 0
    del alive


def test_a_cycle_frozen_at_start_is_freed_after_thaw() -> None:
    node = _Node()
    ref = weakref.ref(node)
    try:
        freeze_heap()
        del node
        gc.collect()
        assert ref() is not None  # frozen: the collector's passes do not look at it
    finally:
        thaw_heap()
    gc.collect()
    assert ref() is None


def test_the_young_threshold_is_raised_while_frozen_and_given_back_at_thaw() -> None:
    before = gc.get_threshold()
    gc.set_threshold(700, *before[1:])
    try:
        freeze_heap()
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
        freeze_heap()  # a second worker's start keeps the first one's thresholds to restore
        thaw_heap()
        assert gc.get_threshold() == (700, *before[1:])
        gc.set_threshold(50_000, *before[1:])  # set higher by the application: left alone
        freeze_heap()
        assert gc.get_threshold() == (50_000, *before[1:])
        thaw_heap()
        assert gc.get_threshold() == (50_000, *before[1:])
    finally:
        thaw_heap()
        gc.set_threshold(*before)
