"""ISO 8601 durations (``PT4H``, ``P1D``, ``P1W``, ``PT0.5S``) to seconds.

Only exact units are accepted: weeks (7 days), days (24 hours), hours, minutes, seconds.
Years and months have no fixed length, so ``P1Y`` / ``P1M`` are rejected with a message
that suggests days instead (``P365D``, ``P30D``); ``PT1M`` (one minute) is fine.
"""

from __future__ import annotations

import functools
import re

__all__ = ["MAX_DURATION_S", "parse_duration_s"]

#: The longest duration a contract takes: 100 years of 365.25 days (``P36525D``). A
#: longer one is a typo or an attempt to overflow what is computed from it
#: (``P99999999999999D`` was accepted and printed as ``8639999999999913984 s``).
MAX_DURATION_S = 36525 * 86400.0

_NUM = r"(\d+(?:[.,]\d+)?)"
_DURATION = re.compile(
    rf"^P(?:{_NUM}Y)?(?:{_NUM}M)?(?:{_NUM}W)?(?:{_NUM}D)?"
    rf"(?:T(?:{_NUM}H)?(?:{_NUM}M)?(?:{_NUM}S)?)?$"
)
_FACTORS_S = (None, None, 604800.0, 86400.0, 3600.0, 60.0, 1.0)


@functools.lru_cache(maxsize=1024)
def parse_duration_s(text: str) -> float:
    """Parse an ISO 8601 duration ``P[nW][nD][T[nH][nM][nS]]`` into seconds.

    Parameters
    ----------
    text : str
        E.g. ``"PT4H"`` (14400.0), ``"P1D"`` (86400.0), ``"P1DT30M"``, ``"PT0.25S"``. Any
        component may be fractional (``.`` or ``,`` as decimal mark). No sign is allowed.

    Returns
    -------
    float
        The duration in seconds (>= 0).

    Raises
    ------
    ValueError
        The text is not an ISO 8601 duration, has no component (``"P"``, ``"PT"``), uses
        years or months (calendar units of no fixed length), or is longer than
        :data:`MAX_DURATION_S` (100 years). The message names the text.
    """
    if not isinstance(text, str):
        raise ValueError(f"duration {text!r} must be an ISO 8601 string such as 'PT4H'")
    s = text.strip().upper()
    m = _DURATION.match(s)
    if m is None or s in ("P", "PT") or s.endswith("T"):
        raise ValueError(
            f"duration {text!r} is not an ISO 8601 duration; write e.g. 'PT4H', 'P1D', "
            "'P1DT12H' or 'PT30M'"
        )
    groups = m.groups()
    if groups[0] is not None or groups[1] is not None:
        raise ValueError(
            f"duration {text!r} uses years or months, which have no fixed length; "
            "write days instead (e.g. 'P30D' or 'P365D')"
        )
    total = 0.0
    for value, factor in zip(groups, _FACTORS_S, strict=True):
        if value is not None and factor is not None:
            total += float(value.replace(",", ".")) * factor
    if not total <= MAX_DURATION_S:  # inf too (a number of 400 digits)
        raise ValueError(
            f"duration {text[:40]!r}{'...' if len(text) > 40 else ''} is longer than 100 years "
            "(P36525D), the longest a contract takes"
        )
    return total


def readable_duration(seconds: float) -> str:
    """A span for messages: ``"26 s"``, ``"14 min"``, ``"6.0 h"``, ``"2.5 days"`` (seconds
    below one minute, whole minutes below one hour, hours with one decimal below two
    days, then days with one decimal)."""
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"
