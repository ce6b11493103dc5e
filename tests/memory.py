"""Peak resident memory of the test process, measured from a reset point (Linux)."""

from __future__ import annotations

import contextlib
import resource
from pathlib import Path


def reset_peak_rss_kb() -> int:
    """Reset this process's resident high-water mark; return it afterwards, KiB.

    Writes ``5`` to ``/proc/self/clear_refs`` (Linux >= 4.0), so a later
    :func:`peak_rss_kb` measures only what happened since, even in a test runner whose
    earlier tests peaked far higher. Where that is impossible, the current peak is
    returned and a later delta is a lower bound.
    """
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")
    return peak_rss_kb()


def peak_rss_kb() -> int:
    """High-water mark of this process's resident set, KiB (``VmHWM``, else ``ru_maxrss``)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
