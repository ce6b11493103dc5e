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
import threading
from collections.abc import Iterator

__all__ = ["collector_paused"]

_lock = threading.Lock()
#: Blocks open in any thread, and whether the outermost one found the collector enabled.
_open = 0
_resume = False


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Disable the cyclic collector for the block, if it is enabled, and enable it again
    when the last open block ends (also on an exception).

    The collector is one switch for the whole process, and the worker routes large events
    on two threads at once (:class:`worker.gate.route_group.RouteAhead`): blocks are counted
    across threads, so a thread's block that ends while another thread's is still open leaves the
    collector paused, and the last block to end enables it again, exactly when the first
    found it enabled. A block entered while the collector was disabled by someone else
    (an application) leaves it alone."""
    global _open, _resume
    with _lock:
        if _open == 0:
            _resume = gc.isenabled()
            if _resume:
                gc.disable()
        _open += 1
    try:
        yield
    finally:
        with _lock:
            _open -= 1
            if _open == 0 and _resume:
                gc.enable()
