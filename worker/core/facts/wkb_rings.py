"""One-ring WKB Polygons read from their bytes: headers and coordinates, no GEOS (pure).

:class:`WkbSource` reads a batch's WKB values from an Arrow array's buffers (a
:class:`~worker.core.facts.wkb_arrow.WkbTuple`) or joins an object array's values only
where it reads them; :func:`one_ring_candidates` finds the little-endian 2D one-ring
Polygons (the rows :mod:`worker.core.facts.star_rings` may prove valid).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from worker.core.facts.wkb_arrow import WkbTuple, arrow_buffers

__all__ = ["WkbSource", "one_ring_candidates", "wkb_buffers"]

#: Bytes before the coordinates of a one-ring WKB Polygon: order 1, type 4, rings 4, points 4.
_HEADER = 13
#: Fewest points of a closed ring (OGC: three distinct and the closing one).
_MIN_POINTS = 4


def wkb_buffers(values: WkbTuple | np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """int64 (N + 1,) offsets and uint8 data of ``values`` (a :class:`WkbTuple`, read from
    its Arrow buffers, or an object array of bytes and None, joined once): value i is
    ``data[offsets[i]:offsets[i + 1]]`` (empty for None; an Arrow array with nulls is read
    as the tuple). None when a value is of another type."""
    if isinstance(values, WkbTuple) and not values.arrow.null_count:
        return arrow_buffers(values.arrow)
    vals = np.asarray(values, dtype=object)
    lengths = _lengths(vals)
    if lengths is None:
        return None
    present = vals[lengths >= 0].tolist()
    offsets = np.concatenate(([0], np.cumsum(np.maximum(lengths, 0))))
    return offsets, np.frombuffer(b"".join(present), np.uint8)


def _lengths(vals: np.ndarray) -> np.ndarray | None:
    """int64 (N,): the length of each value of ``vals`` (object), -1 for None; None when a
    value is neither bytes nor None."""
    try:
        return np.fromiter(map(len, vals), np.int64, len(vals))
    except TypeError:  # None among them
        if not all(v is None or type(v) is bytes for v in vals):
            return None
        return np.fromiter((-1 if v is None else len(v) for v in vals), np.int64, len(vals))


class WkbSource:
    """WKB values to read headers and rings from: int64 (N + 1,) ``offsets`` into uint8
    ``raw`` (an Arrow array's buffers), or an object array of bytes (``values``), whose
    values are joined only where read."""

    def __init__(self, values: WkbTuple | np.ndarray) -> None:
        self.values: np.ndarray | None = None
        self.array: pa.Array | None = None
        self.offsets, self.raw = np.zeros(1, np.int64), np.empty(0, np.uint8)
        if isinstance(values, WkbTuple) and not values.arrow.null_count:
            buffers = wkb_buffers(values)
            assert buffers is not None
            self.offsets, self.raw = buffers
            self.array = values.arrow
            self.lengths: np.ndarray | None = np.diff(self.offsets)
        else:
            self.values = np.asarray(values, dtype=object)
            self.lengths = _lengths(self.values)

    def heads(self, rows: np.ndarray) -> np.ndarray:
        """uint8 (K, 13): the first 13 bytes of the values ``rows`` (each at least 13 long)."""
        if self.values is None:
            return self.raw[self.offsets[rows][:, None] + np.arange(_HEADER)]
        joined = b"".join([v[:_HEADER] for v in self.values[rows].tolist()])
        return np.frombuffer(joined, np.uint8).reshape(-1, _HEADER)

    def coordinates(self, rows: np.ndarray) -> np.ndarray:
        """float (V, 2): the ring coordinates of candidates ``rows`` (ascending), back to
        back (each value: a 13-byte header, then its coordinates). An Arrow array's values
        are taken and cut past their headers by Arrow's compute functions, which release
        the GIL (numpy's repeat over the bytes held it: issue 27)."""
        if self.values is not None:
            joined = np.frombuffer(b"".join(self.values[rows].tolist()), np.uint8)
            ends = np.cumsum(self.lengths[rows])  # type: ignore[index]
            return _drop_heads(joined, np.concatenate(([0], ends[:-1])), ends)
        assert self.array is not None
        picked = self.array if len(rows) == len(self.array) else self.array.take(pa.array(rows))
        # (pyarrow 26 fails without a stop: "Negative buffer resize")
        stop = int(self.lengths.max())  # type: ignore[union-attr]
        _, offsets, data = pc.binary_slice(picked, _HEADER, stop).buffers()
        kind = np.int64 if pa.types.is_large_binary(picked.type) else np.int32
        first, last = np.frombuffer(offsets, kind)[[0, len(rows)]].tolist()
        raw = np.frombuffer(data, np.uint8, last - first, first) if data else np.empty(0, np.uint8)
        return raw.view("<f8").reshape(-1, 2)


def _drop_heads(raw: np.ndarray, start: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """float (V, 2): the bytes of values ``raw[start[i]:stop[i]]`` (ascending, apart or
    back to back) less the 13-byte header of each, read as coordinates."""
    body = stop - start - _HEADER
    skip = start - np.concatenate(([0], stop[:-1])) + _HEADER  # the gap, then the header
    spans = np.column_stack((skip, body)).ravel()
    keep = np.repeat(np.tile(np.array([False, True]), len(body)), spans)
    return raw[: int(stop[-1])][keep].view("<f8").reshape(-1, 2)


def _u32(heads: np.ndarray, at: int) -> np.ndarray:
    """uint32 little-endian of column bytes ``at:at + 4`` of ``heads`` (uint8 (K, 13))."""
    return np.ascontiguousarray(heads[:, at : at + 4]).view("<u4").reshape(len(heads))


def one_ring_candidates(
    source: WkbSource, among: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Rows (of ``among``, int ascending, default all) whose header says a little-endian
    2D one-ring Polygon of at least four points and whose length is exactly that ring's,
    with their point counts."""
    length = source.lengths
    assert length is not None
    if among is None:
        rows = np.flatnonzero(length >= _HEADER + 16 * _MIN_POINTS)
    else:
        rows = among[length[among] >= _HEADER + 16 * _MIN_POINTS]
    if not rows.size:
        return rows, rows
    heads = source.heads(rows)
    ok = (heads[:, 0] == 1) & (_u32(heads, 1) == 3) & (_u32(heads, 5) == 1)
    points = _u32(heads, 9).astype(np.int64)
    ok &= length[rows] == _HEADER + 16 * points
    return rows[ok], points[ok]
