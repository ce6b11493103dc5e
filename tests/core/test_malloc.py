"""worker.core._util.malloc: glibc's thresholds set once per process, where there is glibc."""

from __future__ import annotations

import platform
import resource
import subprocess
import sys

import pytest

from worker.core._util import malloc

_GLIBC = platform.libc_ver()[0] == "glibc"

#: A chunk's worth of arrays made and freed on a pool thread, as the measuring threads do;
#: prints the page faults it took. One thread: with two, glibc's dynamic thresholds depend
#: on how the threads' frees interleave (7,000 to 65,000 faults by default in one machine's
#: runs, 17 in another), with one the count is the same in every run.
_CHURN = """
import resource, sys
from concurrent.futures import ThreadPoolExecutor
import numpy as np
if sys.argv[1] == "tuned":
    from worker.core._util.malloc import keep_freed_memory
    assert keep_freed_memory()
def chunk(_):
    a = [np.ones(300_000) for _ in range(12)]  # 2.4 MB each
    return sum(float(x[-1]) for x in a)
with ThreadPoolExecutor(1) as pool:
    list(pool.map(chunk, range(4)))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    list(pool.map(chunk, range(60)))
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not _GLIBC, reason="mallopt is glibc's")
def test_thresholds_are_set_once_and_freed_arrays_are_reused_not_faulted_in_again() -> None:
    assert malloc.keep_freed_memory() is True
    assert malloc.keep_freed_memory() is True  # once: the first answer
    faults = {
        how: int(
            subprocess.run(
                [sys.executable, "-c", _CHURN, how], capture_output=True, text=True, check=True
            ).stdout
        )
        for how in ("default", "tuned")
    }
    # 60 chunks of 12 arrays of 2.4 MB (586 pages each): by default glibc trims the heap
    # after each chunk and faults every array in again (420,019 faults measured); kept,
    # they are reused (17)
    churned_pages = 60 * 12 * (300_000 * 8 // resource.getpagesize())
    assert faults["default"] > churned_pages / 2
    assert faults["tuned"] < churned_pages / 100
    assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt > 0


#: The child: no process may be started (ctypes.util.find_library starts ldconfig -p).
_NO_PROCESSES = """
import subprocess
def refuse(*args, **kwargs):
    raise AssertionError(f"a process started: {args!r}")
subprocess.Popen = refuse
from worker.core._util.malloc import keep_freed_memory
print(keep_freed_memory())
"""


@pytest.mark.skipif(not _GLIBC, reason="mallopt is glibc's")
def test_the_thresholds_are_set_without_starting_a_process() -> None:
    """Stop 38: ``mallopt`` is found among the process's symbols, on every command's start;
    ``find_library("c")`` ran ``ldconfig -p`` (about 2 ms of wall and 1 ms of a child's CPU)."""
    run = subprocess.run(
        [sys.executable, "-c", _NO_PROCESSES], capture_output=True, text=True, check=False
    )
    assert (run.returncode, run.stdout.strip()) == (0, "True"), run.stderr[-1500:]
