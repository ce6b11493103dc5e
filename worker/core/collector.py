"""CPython's cyclic garbage collector paused while a batch's geometries live (pure).

shapely 2 geometries are objects the collector tracks. Building the 100,000 geometries of
a batch at once (``shapely.from_wkb``, a reprojection, an axis swap) counts as 100,000
allocations: the collector runs about 140 young passes over them and, as they survive,
full passes over every tracked object of the process. Measured in the benchmark process
(which holds 200,000 other geometries), that was 30 to 150 ms of a 230 ms evaluation of
100,000 polygons; a per-feature loop, which frees each geometry before building the next,
never triggers it. The geometries and arrays built while evaluating hold no references to
other objects, so they form no reference cycles: collection is only deferred until the
block ends, where the geometries are freed by reference counting.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["collector_paused"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Disable the cyclic collector for the block, if it is enabled, and enable it again
    at the end (also on an exception). A block entered while the collector is disabled
    (nested, another thread's block, or an application that disabled it) leaves it
    alone, so the collector ends as the outermost block found it."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
