"""Start-up's objects kept out of the collector's passes (gate.startup.freeze_heap) and
given back at close (thaw_heap): what was alive is frozen, garbage of start-up is
collected first, and a cycle made after start-up is still collected."""

from __future__ import annotations

import gc
import weakref

from worker.gate.startup import freeze_heap, thaw_heap


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
