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
#: prints the page faults it took.
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
with ThreadPoolExecutor(2) as pool:
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
    # 60 chunks of 12 arrays of 2.4 MB (590 pages each): by default glibc returns many to
    # the kernel and faults them in again (21,000 to 96,000 faults measured); kept, they are
    # reused (600 to 1,200)
    assert faults["default"] > 10_000
    assert faults["tuned"] < faults["default"] / 10
    assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt > 0
