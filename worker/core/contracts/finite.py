"""Every number in a contract is a finite double (docs/concepts-contracts.md, "Finite
numbers only"): YAML ``.inf``/``.nan``, a float literal beyond about 1.8e308 (``1.0e+400``
overflows to infinity) and an integer literal no double holds are refused at load."""

from __future__ import annotations

import math
from typing import Any

from worker.core.contracts.fixes import _FIXES, _fail

__all__ = ["_beyond_double", "_check_finite"]


def _beyond_double(value: Any) -> str | None:
    """Why ``value`` (a YAML number) is not a finite double: None when it is one (or not a
    number). An integer literal beyond about 1.8e308 has no float (``math.isfinite``
    raises OverflowError on it), 1.0e+400 and ``.inf`` are infinite, ``.nan`` NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        if math.isfinite(value):
            return None
    except OverflowError:
        digits = len(str(abs(value))) if abs(value) < 10**5000 else 5000
        return f"an integer of {digits} digits"
    return repr(value)


def _check_finite(value: Any, source: str, path: list[Any] | None = None) -> None:
    """Every number in the document is finite (JSON Schema lets NaN pass ``minimum`` and
    ``maximum``, and infinity pass ``minimum``). Region bboxes are left to
    :func:`_check_region`, which names the bound."""
    path = path or []
    if (why := _beyond_double(value)) is not None:
        raise _fail(
            source,
            path,
            f"{why} is not a finite number (YAML .inf/.nan, or a literal beyond about "
            "1.8e308 such as 1.0e+400, which overflows to infinity, or an integer no float "
            "holds)",
            _FIXES.get(next((p for p in reversed(path) if isinstance(p, str)), ""))
            or "write a finite number",
        )
    if isinstance(value, dict):
        for k, v in value.items():
            if k != "region":
                _check_finite(v, source, [*path, k])
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_finite(v, source, [*path, i])
