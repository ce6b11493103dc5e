"""WKB values read from one Arrow binary array, the array kept beside them (pure).

A reader builds a chunk's ``geometries_wkb`` from its geometry column as a
:class:`WkbTuple`: a sequence equal to the tuple of its bytes values, which keeps the
Arrow array they come from and builds them only when read. :func:`arrow_points_xy` then
reads a batch of plain 2D WKB Points from that array's offsets and data buffers: no length
taken of each value and no joined copy of them (on 1,000,000 points, 75 ms of the
measuring threads' CPU, holding the GIL). Any
tuple made from a :class:`WkbTuple` (a slice, a sample, ``tuple(...)``) is a plain tuple,
so the array never stands for other values than the ones it holds.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

import numpy as np
import pyarrow as pa

from worker.core.facts.wkb_header import POINT_WKB_BYTES, points_xy_of_records

__all__ = [
    "WkbTuple",
    "arrow_buffers",
    "arrow_heads",
    "arrow_lengths",
    "arrow_points_xy",
    "values_at",
    "wkb_bytes",
]


class WkbTuple(Sequence[bytes | None]):
    """The values of ``array`` (an Arrow ``binary`` or ``large_binary`` array, one chunk)
    as an immutable sequence of bytes (None for null), equal to, hashed and ordered as the
    tuple of them (``+`` and ``*`` give plain tuples; an index out of range raises the
    tuple's ``IndexError("tuple index out of range")``), with ``array`` kept as
    :attr:`arrow`.

    The bytes objects are built when first read, not by the reader: every one at the
    first iteration or slice (:attr:`values`, Arrow's conversion in C++), a single one by
    itself for an index, and the rows asked for alone by :meth:`take`. Most of a chunk of
    polygons is judged from the array's buffers (:mod:`~worker.core.facts.star_rings`),
    and building every value held the GIL on the reading thread for about 0.7 us a
    feature (0.6-0.8 s of a ``check`` of 1,000,000 polygons, issue 27).

    Raises
    ------
    TypeError
        ``array`` is of another type (the caller builds a plain tuple for it).
    """

    __slots__ = ("_values", "arrow")

    def __init__(self, array: pa.Array) -> None:
        if not (pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type)):
            raise TypeError(f"WkbTuple of an Arrow {array.type} array: binary wanted")
        self.arrow = array
        self._values: tuple[bytes | None, ...] | None = None

    @property
    def values(self) -> tuple[bytes | None, ...]:
        """Every value, as a tuple (built once; two threads may both build it)."""
        if self._values is None:
            # Arrow's conversion builds the bytes objects in C++: about 0.6 of to_pylist's
            # time, which wraps each value in a scalar first (both hold the GIL)
            self._values = tuple(self.arrow.to_numpy(zero_copy_only=False).tolist())
        return self._values

    @property
    def built(self) -> bool:
        """Every value's bytes object has been built (:attr:`values`)."""
        return self._values is not None

    def __len__(self) -> int:
        return len(self.arrow)

    @overload
    def __getitem__(self, index: int) -> bytes | None: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[bytes | None, ...]: ...
    def __getitem__(self, index: int | slice) -> bytes | tuple[bytes | None, ...] | None:
        if isinstance(index, slice):
            return self.values[index]
        if self._values is not None:
            return self._values[index]
        try:
            i = operator.index(index)
        except TypeError:
            raise TypeError(
                f"tuple indices must be integers or slices, not {type(index).__name__}"
            ) from None
        n = len(self.arrow)
        if not -n <= i < n:
            raise IndexError("tuple index out of range")  # (the tuple's words, built or not)
        value: bytes | None = self.arrow[i % n].as_py()
        return value

    def __iter__(self) -> Iterator[bytes | None]:
        return iter(self.values)

    def __reversed__(self) -> Iterator[bytes | None]:
        return reversed(self.values)

    def __contains__(self, value: object) -> bool:
        return value in self.values

    def index(self, value: object, start: int = 0, stop: int = sys.maxsize) -> int:
        """The first position of ``value`` in ``[start:stop]``, as ``tuple.index`` (whose
        ValueError it raises); :class:`Sequence`'s would build one value at a time."""
        return self.values.index(value, start, stop)

    def count(self, value: object) -> int:
        """How many values equal ``value``, as ``tuple.count``."""
        return self.values.count(value)

    def take(self, rows: Sequence[int]) -> tuple[bytes | None, ...]:
        """The values at ``rows`` (ints), in that order, as a tuple: built by Arrow for
        those rows alone while the others are not built."""
        if self._values is not None:
            return tuple(self._values[i] for i in rows)
        picked = self.arrow.take(pa.array(rows, type=pa.int64()))
        return tuple(picked.to_numpy(zero_copy_only=False).tolist())

    def __add__(self, other: object) -> tuple[bytes | None, ...]:
        if isinstance(other, WkbTuple):
            return self.values + other.values
        return self.values + other if isinstance(other, tuple) else NotImplemented

    def __radd__(self, other: object) -> tuple[bytes | None, ...]:
        return other + self.values if isinstance(other, tuple) else NotImplemented

    def __mul__(self, times: int) -> tuple[bytes | None, ...]:
        return self.values * times

    __rmul__ = __mul__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, WkbTuple):
            return self.values == other.values
        return self.values == other if isinstance(other, tuple) else NotImplemented

    # Ordered as the tuple of its values is (it stands where that tuple stood: a sort
    # key holding a chunk's values orders the same either way), against a tuple or
    # another WkbTuple; anything else is NotImplemented, as for a tuple.
    def __lt__(self, other: object) -> bool:
        return _compared(self, other, operator.lt)

    def __le__(self, other: object) -> bool:
        return _compared(self, other, operator.le)

    def __gt__(self, other: object) -> bool:
        return _compared(self, other, operator.gt)

    def __ge__(self, other: object) -> bool:
        return _compared(self, other, operator.ge)

    def __hash__(self) -> int:
        return hash(self.values)

    def __repr__(self) -> str:
        return f"WkbTuple({self.values!r})"

    def __reduce__(self) -> tuple[type[tuple[bytes | None, ...]], tuple[tuple[bytes | None, ...]]]:
        """A copy or a pickle is the plain tuple of the values (the array stays here)."""
        return tuple, (self.values,)


def _compared(values: WkbTuple, other: object, compare: Callable[[Any, Any], bool]) -> bool:
    """``compare(values.values, other)`` for a tuple or a WkbTuple ``other`` (its values),
    else NotImplemented (Python then tries the reflected method, then raises TypeError)."""
    if isinstance(other, WkbTuple):
        other = other.values
    return compare(values.values, other) if isinstance(other, tuple) else NotImplemented


def arrow_points_xy(values: WkbTuple) -> np.ndarray | None:
    """:func:`~worker.core.facts.wkb_header.simple_points_xy` of ``values``, read from its
    Arrow array: float (N, 2), x and y as stored, when every value is a 21-byte 2D WKB
    Point with finite coordinates (one byte order for all); None otherwise (a null, a value
    of another size or type, NaN or infinite coordinates)."""
    array = values.arrow
    n = len(array)
    if not n or array.null_count:
        return None
    offsets, data = arrow_buffers(array)
    if not bool((np.diff(offsets) == POINT_WKB_BYTES).all()):
        return None
    start = int(offsets[0])  # the values lie back to back from here (every length is 21)
    return points_xy_of_records(data[start : start + n * POINT_WKB_BYTES], n)


def arrow_buffers(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """int64 (N + 1,) value offsets and uint8 data of ``array`` (binary or large_binary,
    one chunk, sliced or not): value i is ``data[offsets[i]:offsets[i + 1]]`` (a null's
    span is empty or to be ignored)."""
    _, offsets_buffer, data = array.buffers()
    kind = np.int64 if pa.types.is_large_binary(array.type) else np.int32
    offsets = np.frombuffer(offsets_buffer, dtype=kind)[
        array.offset : array.offset + len(array) + 1
    ]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.empty(0, np.uint8)
    return offsets.astype(np.int64), raw


def _valid(array: pa.Array) -> np.ndarray:
    """bool (N,): the value is not null."""
    return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def arrow_lengths(values: WkbTuple) -> np.ndarray:
    """int64 (N,): the length of each value of ``values``, -1 for null, read from its
    Arrow offsets (no Python per value)."""
    array = values.arrow
    out = np.diff(arrow_buffers(array)[0])
    if array.null_count:
        out[~_valid(array)] = -1
    return out


def arrow_heads(values: WkbTuple, size: int) -> np.ndarray:
    """uint8 (N, ``size``): the first ``size`` bytes of each value of ``values``, zero-padded
    past a shorter value's end and for null (as numpy's ``astype("S<size>")`` pads), read
    from its Arrow buffers."""
    array = values.arrow
    offsets, raw = arrow_buffers(array)
    at = offsets[:-1, None] + np.arange(size)
    inside = at < offsets[1:, None]  # past a value's end: the next value's bytes, or none
    if array.null_count:
        inside &= _valid(array)[:, None]
    out = np.zeros((len(array), size), dtype=np.uint8)
    out[inside] = raw[at[inside]]
    return out


def wkb_bytes(values: Sequence[bytes | None]) -> int:
    """The bytes of the WKB values ``values`` (None counts 0): a :class:`WkbTuple`'s read
    from its Arrow offsets, without building its values."""
    if isinstance(values, WkbTuple):
        return int(np.maximum(arrow_lengths(values), 0).sum())
    return sum(len(w) for w in values if w)


def values_at(values: Sequence[bytes | None], rows: Sequence[int]) -> tuple[bytes | None, ...]:
    """The WKB values at ``rows`` (ints), in that order: a :class:`WkbTuple`'s built for
    those rows alone (:meth:`WkbTuple.take`), not one Arrow scalar at a time."""
    if isinstance(values, WkbTuple):
        return values.take(rows)
    return tuple(values[i] for i in rows)
