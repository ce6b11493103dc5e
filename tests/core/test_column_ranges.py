"""Inline column values beyond their Arrow type (stop 39, a new user's attempts).

An event's ``date`` column is days since the epoch in an Avro long, read into Arrow's
``date32`` (int32 days): a value of 2^62 made the event "not a usable BatchArrival:
ArrowInvalid: Value 4611686018427387904 too large to fit in C integer type", naming neither
the column nor the row. Every logical type with an Arrow type is fed the extremes an Avro
value can hold: each is read, or refused naming the column, the row and the range.
"""

from __future__ import annotations

import pytest

from worker.core.columns import typed_column
from worker.core.errors import DecodeError

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
#: Every logical type read into Arrow, with the extreme values an Avro event may carry.
EXTREMES = {
    "integer": [LONG_MIN, LONG_MAX],
    "timestamp": [LONG_MIN, LONG_MAX],
    "date": [LONG_MIN, -(2**31) - 1, -(2**31), 2**31 - 1, 2**31, 2**62, LONG_MAX],
    "double": [-1.8e308, 1.8e308, float("inf"), float("nan")],
    "boolean": [True, False],
    "string": ["", "x" * 100_000],
    "binary": [b"", b"\x00" * 1000],
}
DATE32 = (-(2**31), 2**31 - 1)


@pytest.mark.parametrize(("logical", "value"), [(k, v) for k, vs in EXTREMES.items() for v in vs])
def test_each_extreme_is_read_or_refused_naming_column_row_and_range(
    logical: str, value: object
) -> None:
    values = [None, value]
    if logical == "date" and not DATE32[0] <= value <= DATE32[1]:  # type: ignore[operator]
        with pytest.raises(DecodeError) as info:
            typed_column("when", logical, values, 2)
        assert str(info.value) == (
            f"column 'when' of type date holds {value} at row 1, beyond its int32 range"
        )
        return
    _, arr = typed_column("when", logical, values, 2)
    assert len(arr) == 2 and arr.null_count == 1
