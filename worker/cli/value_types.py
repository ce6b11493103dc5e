"""Typed values of command-line options: times, whole numbers in a range, finite seconds,
hours and fractions, each an argparse ``type`` that refuses a bad value with
:class:`argparse.ArgumentTypeError` (exit 2, the option named), never another exception.

Every typed option of the tree is fed hostile values by ``tests/cli/test_argument_values.py``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

__all__ = [
    "MAX_HOURS",
    "MAX_SECONDS",
    "bounded_int",
    "fraction",
    "hours",
    "non_negative_seconds",
    "parse_time",
    "positive_int",
    "positive_seconds",
]


def parse_time(text: str) -> datetime:
    """An ISO 8601 date-time with a UTC offset (``2026-11-29T06:00:00Z``), as aware UTC.

    A bare date (``2026-11-29``) is refused with the full form to write, never read as a
    local or UTC midnight silently: freshness depends on the hour.
    """
    example = "2026-11-29T06:00:00Z"
    day = text.strip().rstrip("Zz")
    if len(day) == 10 and day[4:5] == "-" and day[7:8] == "-" and day.replace("-", "").isdigit():
        raise argparse.ArgumentTypeError(
            f"{text!r} is a date without a time; write the time and its offset, e.g. "
            f"{day}T00:00:00Z"
        )
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 date-time; write e.g. {example}"
        ) from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} has no UTC offset; add one, e.g. {text}Z or {text}+00:00"
        )
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:  # 0001-01-01T00:00:00+14:00 is before year 1 in UTC
        raise argparse.ArgumentTypeError(
            f"{text!r} is outside the dates a time can hold in UTC (years 1 to 9999); "
            f"write e.g. {example}"
        ) from None


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return value


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high`` inclusive."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside {low}..{high}")
        return value

    return parse


#: The longest wait a seconds option takes (one week): a deadline, a grace period or a
#: page's lifetime beyond it is a typo, and ``1e300`` s overflowed the timers (OverflowError
#: in a thread: the demo then ran with no deadline at all).
MAX_SECONDS = 7 * 24 * 3600.0
#: The longest horizon in hours (ten years): ``now - horizon`` stays a date.
MAX_HOURS = 10 * 365 * 24.0


def _finite(text: str, what: str, low: float, high: float, *, low_ok: bool = False) -> float:
    """``text`` as a finite float in ``(low, high]`` (``[low, high]`` with ``low_ok``), else
    an :class:`argparse.ArgumentTypeError` saying it is not ``what`` and the range."""
    bound = ">=" if low_ok else ">"
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value >= low if low_ok else value > low) or not value <= high:  # NaN fails both
        raise argparse.ArgumentTypeError(
            f"{text!r} is not {what}: write a number {bound} {low:g} and at most {high:g}"
        )
    return value


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds, > 0 and at most :data:`MAX_SECONDS`."""
    return _finite(text, "a number of seconds", 0.0, MAX_SECONDS)


def non_negative_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds, >= 0 and at most :data:`MAX_SECONDS`."""
    return _finite(text, "a number of seconds", 0.0, MAX_SECONDS, low_ok=True)


def hours(text: str) -> timedelta:
    """An argparse type: a number of hours (``168``, ``0.5``), > 0 and at most
    :data:`MAX_HOURS`, as a :class:`timedelta`. (A horizon <= 0 made every declaration of a
    group not yet started stale: not counted, so a retirement gate could open.)"""
    return timedelta(hours=_finite(text, "a number of hours", 0.0, MAX_HOURS))


def fraction(text: str) -> float:
    """An argparse type: a fraction ``0 < value <= 1`` (``0.99``)."""
    return _finite(text, "a fraction such as 0.99", 0.0, 1.0)
