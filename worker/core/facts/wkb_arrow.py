"""WKB values read from one Arrow binary array, the array kept beside them (pure).

A reader builds a chunk's ``geometries_wkb`` from its geometry column as a
:class:`WkbTuple`: the same tuple of bytes values, which also keeps the Arrow array they
came from. :func:`arrow_points_xy` then reads a batch of plain 2D WKB Points from that
array's offsets and data buffers: no length taken of each value and no joined copy of
them (on 1,000,000 points, 75 ms of the measuring threads' CPU, holding the GIL). Any
tuple made from a :class:`WkbTuple` (a slice, a sample, ``tuple(...)``) is a plain tuple,
so the array never stands for other values than the ones it holds.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from worker.core.facts.wkb_header import POINT_WKB_BYTES, points_xy_of_records

__all__ = ["WkbTuple", "arrow_buffers", "arrow_heads", "arrow_lengths", "arrow_points_xy"]


class WkbTuple(tuple[bytes | None, ...]):
    """The values of ``array`` (an Arrow ``binary`` or ``large_binary`` array, one chunk)
    as a tuple of bytes (None for null), with ``array`` kept as :attr:`arrow`.

    Raises
    ------
    TypeError
        ``array`` is of another type (the caller builds a plain tuple for it).
    """

    arrow: pa.Array

    def __new__(cls, array: pa.Array) -> WkbTuple:
        if not (pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type)):
            raise TypeError(f"WkbTuple of an Arrow {array.type} array: binary wanted")
        # Arrow's conversion builds the bytes objects in C++: about 0.6 of to_pylist's
        # time, which wraps each value in a scalar first (both hold the GIL: 6% of its time
        # in a two-thread check of 1,000,000 polygons, issue 27)
        self = super().__new__(cls, array.to_numpy(zero_copy_only=False).tolist())
        self.arrow = array
        return self

    def __reduce__(self) -> tuple[type[tuple[bytes | None, ...]], tuple[tuple[bytes | None, ...]]]:
        """A copy or a pickle is the plain tuple of the values (the array stays here)."""
        return tuple, (tuple(self),)


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
