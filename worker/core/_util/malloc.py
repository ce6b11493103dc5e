"""glibc's malloc told to keep freed memory for the next allocations (pure, process-wide).

Evaluating a batch chunk by chunk allocates and frees the same large numpy arrays over and
over (a chunk's coordinates, its star-ring tests, its facts). glibc's malloc starts by
giving every allocation of 128 KiB or more its own ``mmap`` and trims its heaps whenever
more than twice that lies free at their top, adjusting both thresholds upward only as
mapped chunks are freed (``mallopt(3)``). Each freed array was returned to the kernel and
each new one faulted in again, page by page: 670,000 page faults and 3.5-4.3 s of system
time in a ``check`` of 1,000,000 polygons (issue 27), against 56,000 and 1.2 s with the
thresholds below, which are where glibc's own adjustment stops (32 MiB, twice that), set
from the start. The freeing happens where the arrays die, mostly holding the GIL. Peak RSS
stayed within 305-320 MiB either way (the memory is reused, not added).

ctypes is imported only here, when called: a Python built without it (no libffi) runs
every command, with malloc's defaults. ``mallopt`` is looked up among the symbols the
process has loaded (glibc's, where the process uses glibc), not through
``ctypes.util.find_library``, which starts ``ldconfig -p`` (about 2 ms and a process on
every command's start) and on other systems a compiler.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["MMAP_THRESHOLD_BYTES", "TRIM_THRESHOLD_BYTES", "keep_freed_memory"]

#: Allocations below this come from malloc's heaps (glibc's largest dynamic threshold).
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
#: Free memory at a heap's top beyond this is returned to the kernel (twice the above).
TRIM_THRESHOLD_BYTES = 2 * MMAP_THRESHOLD_BYTES
#: ``mallopt`` parameters (glibc's ``malloc.h``).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

_done: list[bool] = []


def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds (module docstring), once per process; True
    when set, False where the C library has no ``mallopt`` (not glibc) or refused."""
    if _done:
        return _done[0]
    ok = False
    mallopt = _mallopt()
    if mallopt is not None:
        ok = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
        ok = bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)) and ok
    _done.append(ok)
    return ok


def _mallopt() -> Callable[[int, int], Any] | None:
    """The C library's ``int mallopt(int, int)`` among the process's symbols, or None (no
    ctypes, no such function)."""
    try:
        import ctypes  # optional: absent from a Python built without libffi
    except ImportError:
        return None
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt
