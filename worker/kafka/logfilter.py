"""Rate limit for librdkafka's own log lines (they reach the ``librdkafka`` logger).

librdkafka repeats a failing connection's error on every retry: a SASL handshake refused by
the broker gave 196 near-identical ERROR lines in 40 s. :class:`RepeatFilter` lets the first
line of a kind through, drops its repeats for ``every_s`` seconds, and then lets one
through again saying how many were dropped. A *kind* is the message with its digits
removed (retry counters, durations and thread ids vary between repeats).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable

__all__ = ["RepeatFilter", "install"]

_DIGITS = re.compile(r"\d+")


class RepeatFilter(logging.Filter):
    """Drop repeats of a log line's kind within ``every_s`` seconds (thread-safe)."""

    def __init__(self, every_s: float = 30.0, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.every_s = every_s
        self._clock = clock
        self._last: dict[str, float] = {}
        self._dropped: dict[str, int] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        kind = _DIGITS.sub("#", record.getMessage())[:200]
        now = self._clock()
        with self._lock:
            last = self._last.get(kind)
            if last is not None and now - last < self.every_s:
                self._dropped[kind] = self._dropped.get(kind, 0) + 1
                return False
            self._last[kind] = now
            dropped = self._dropped.pop(kind, 0)
            if len(self._last) > 1000:  # bounded: forget the oldest kinds
                for old in sorted(self._last, key=self._last.__getitem__)[:500]:
                    self._last.pop(old, None)
        if dropped:
            record.msg = f"{record.getMessage()} ({dropped} similar lines dropped)"
            record.args = None
        return True


_INSTALLED = False


def install(logger_name: str = "librdkafka") -> None:
    """Attach one :class:`RepeatFilter` to ``logger_name`` (idempotent)."""
    global _INSTALLED
    if not _INSTALLED:
        logging.getLogger(logger_name).addFilter(RepeatFilter())
        _INSTALLED = True
