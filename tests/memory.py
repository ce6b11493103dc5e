"""Peak resident memory of the test process, measured from a reset point (Linux)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from benchmarks.bench_memory import peak_rss_kb

__all__ = ["peak_rss_kb", "reset_peak_rss_kb"]


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
