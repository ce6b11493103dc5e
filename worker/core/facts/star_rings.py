"""Single-ring polygons whose validity is proven from their coordinates (pure, vectorized).

GEOS's ``IsValidOp`` was 71% of the gate's CPU on 1,000,000 20-80-vertex polygons, and
``from_wkb``, which holds the GIL, most of the rest (issue 27: the gate at 1.5x DuckDB
spatial's time). Most polygons in the field (buildings, parcels, footprints, cells, buffers)
are *star-shaped*: some point sees every edge. For those, simplicity follows from signs:

A closed ring P0..Pn (Pn = P0) is simple when, for a point c, every turn
``cross(Pi - c, Pi+1 - c)`` has the same strict sign and the ring winds once around c.
Each edge then lies in its own angular sector around c (the sectors of a single winding
partition the turn), so two non-adjacent edges never meet and adjacent ones meet only at
their shared vertex. That is a simple ring, so GEOS finds the polygon valid (OGC Simple
Features 1.2.1, 6.1.11.1: a polygon of one simple closed ring of at least four points,
finite coordinates; IsValidOp checks nothing else for a polygon without holes).

Signs are taken with a margin: a turn counts only when ``|cross| > 1e-12 * (|ax| + |ay|) *
(|bx| + |by|)`` (the rounding of the differences and of the product is below 6e-16 of the
same bound), so a ring that floating point cannot decide is left to GEOS. c is the mean of
the distinct vertices; the winding is the count of upward crossings of the ray from c
along +x (each at a positive x when every turn is counterclockwise; mirrored for
clockwise rings). A ring that fails any test is not judged here: GEOS judges it.

Only 2D little-endian WKB Polygons of exactly one ring, at least four points, closed and
finite are read (:func:`star_rings`); anything else (holes, Z or M, EWKB, big-endian,
MultiPolygons, odd lengths) goes to GEOS as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from worker.core.facts.wkb_arrow import WkbTuple

__all__ = ["StarRings", "star_rings", "wkb_buffers"]

#: Bytes before the coordinates of a one-ring WKB Polygon: order 1, type 4, rings 4, points 4.
_HEADER = 13
#: Fewest points of a closed ring (OGC: three distinct and the closing one).
_MIN_POINTS = 4
#: Relative margin of a turn's sign (see the module docstring).
_MARGIN = 1e-12
#: Evenly spaced candidates tested first, with one move of the centre: fewer than half of
#: the batch proven among them and it is left to GEOS before the others are read. The
#: ``peers`` benchmark's rings: 45% proven from the centroid, 85% after one move, 98% after
#: three (the full test); Natural Earth's countries: 23%, then 33%, then 37%.
_PROBE = 64
#: Most vertices tested at once (bounds the temporaries: about 40 bytes per vertex each).
_BLOCK_VERTICES = 1 << 16


@dataclass(frozen=True)
class StarRings:
    """The rows of a batch proven valid one-ring polygons.

    ``plain``: bool (N,), the rows proven; ``bounds``: float (M, 4), minx, miny, maxx, maxy
    as stored of the M plain rows (in row order); ``ccw``: bool (M,), their ring is
    counterclockwise as stored (x east, y north on the page)."""

    plain: np.ndarray
    bounds: np.ndarray
    ccw: np.ndarray


def wkb_buffers(values: WkbTuple | np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """int64 (N + 1,) offsets and uint8 data of ``values`` (a :class:`WkbTuple`, read from
    its Arrow buffers, or an object array of bytes and None, joined once): value i is
    ``data[offsets[i]:offsets[i + 1]]`` (empty for None; an Arrow array with nulls is read
    as the tuple). None when a value is of another type."""
    if isinstance(values, WkbTuple) and not values.arrow.null_count:
        array = values.arrow
        n = len(array)
        _, offsets_buffer, data = array.buffers()
        kind = np.int64 if pa.types.is_large_binary(array.type) else np.int32
        offsets = np.frombuffer(offsets_buffer, dtype=kind)[array.offset : array.offset + n + 1]
        raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.empty(0, np.uint8)
        return offsets.astype(np.int64), raw
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


class _Source:
    """WKB values to read headers and rings from: int64 (N + 1,) ``offsets`` into uint8
    ``raw`` (an Arrow array's buffers), or an object array of bytes (``values``), whose
    values are joined only where read."""

    def __init__(self, values: WkbTuple | np.ndarray) -> None:
        self.values: np.ndarray | None = None
        self.offsets, self.raw = np.zeros(1, np.int64), np.empty(0, np.uint8)
        if isinstance(values, WkbTuple) and not values.arrow.null_count:
            buffers = wkb_buffers(values)
            assert buffers is not None
            self.offsets, self.raw = buffers
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
        back (each value: a 13-byte header, then its coordinates)."""
        if self.values is not None:
            joined = np.frombuffer(b"".join(self.values[rows].tolist()), np.uint8)
            ends = np.cumsum(self.lengths[rows])  # type: ignore[index]
            return _drop_heads(joined, np.concatenate(([0], ends[:-1])), ends)
        start, stop = self.offsets[rows], self.offsets[rows + 1]
        if int(stop[-1] - start[0]) <= 2 * int((stop - start).sum()):  # dense: one pass
            return _drop_heads(self.raw[int(start[0]) :], start - start[0], stop - start[0])
        body = start + _HEADER  # sparse (a probe): gather the bodies alone
        sizes = stop - body
        at = np.repeat(body - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
        return self.raw[at + np.arange(int(sizes.sum()))].view("<f8").reshape(-1, 2)


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


def _candidates(source: _Source) -> tuple[np.ndarray, np.ndarray]:
    """Rows whose header says a little-endian 2D one-ring Polygon of at least four points
    and whose length is exactly that ring's, with their point counts."""
    length = source.lengths
    assert length is not None
    rows = np.flatnonzero(length >= _HEADER + 16 * _MIN_POINTS)
    if not rows.size:
        return rows, rows
    heads = source.heads(rows)
    ok = (heads[:, 0] == 1) & (_u32(heads, 1) == 3) & (_u32(heads, 5) == 1)
    points = _u32(heads, 9).astype(np.int64)
    ok &= length[rows] == _HEADER + 16 * points
    return rows[ok], points[ok]


class _Rings:
    """Closed rings back to back: float (V,) ``x`` and ``y``, int (R,) ``points`` (vertices
    of each ring, the closing one included), with each ring's first vertex (``starts``),
    closing vertex (``ends``) and bool (V,) ``edge``: the vertex starts an edge of its ring."""

    def __init__(self, x: np.ndarray, y: np.ndarray, points: np.ndarray) -> None:
        self.x, self.y, self.points = x, y, points
        self.starts = np.concatenate(([0], np.cumsum(points)[:-1])).astype(np.int64)
        self.ends = self.starts + points - 1
        self.edge = np.ones(len(x), dtype=bool)
        self.edge[self.ends] = False

    def spread(self, per_ring: np.ndarray) -> np.ndarray:
        """float (V,): each ring's value repeated over its vertices."""
        return np.repeat(per_ring, self.points)

    def take(self, rows: np.ndarray) -> _Rings:
        """The rings ``rows`` (int, ascending) alone."""
        sizes = self.points[rows]
        shift = self.starts[rows] - np.concatenate(([0], np.cumsum(sizes)[:-1]))
        at = np.repeat(shift, sizes) + np.arange(int(sizes.sum()))
        return _Rings(self.x[at], self.y[at], sizes)


def _centroids(r: _Rings, bounds: np.ndarray) -> tuple[np.ndarray, ...]:
    """(cx, cy, area2): float (R,) area centroids of rings ``r`` and twice their signed
    areas (shoelace, taken from each envelope's centre for precision)."""
    ox, oy = (bounds[:, 0] + bounds[:, 2]) / 2, (bounds[:, 1] + bounds[:, 3]) / 2
    qx, qy = r.x - r.spread(ox), r.y - r.spread(oy)
    turn = np.zeros(len(qx))
    turn[:-1] = qx[:-1] * qy[1:]
    turn[:-1] -= qx[1:] * qy[:-1]
    turn[~r.edge] = 0.0
    area2 = np.add.reduceat(turn, r.starts)
    sx, sy = np.zeros(len(qx)), np.zeros(len(qx))
    sx[:-1], sy[:-1] = (qx[:-1] + qx[1:]) * turn[:-1], (qy[:-1] + qy[1:]) * turn[:-1]
    mx, my = np.add.reduceat(sx, r.starts), np.add.reduceat(sy, r.starts)
    return mx / (3.0 * area2) + ox, my / (3.0 * area2) + oy, area2


def _star(r: _Rings, cx: np.ndarray, cy: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, ...]:
    """(proven, ccw) of rings ``r`` seen from ``cx``, ``cy`` (float (R,)): every turn
    strictly one way, past the margin, and one winding (module docstring); and the ring
    runs counterclockwise. ``bounds``: float (R, 4), the rings' envelopes."""
    reach_x = np.maximum(np.abs(bounds[:, 0] - cx), np.abs(bounds[:, 2] - cx))
    reach_y = np.maximum(np.abs(bounds[:, 1] - cy), np.abs(bounds[:, 3] - cy))
    margin = r.spread(_MARGIN * (reach_x + reach_y) ** 2)[:-1]  # >= each product's bound
    dx, dy = r.x - r.spread(cx), r.y - r.spread(cy)
    cross = dx[:-1] * dy[1:]
    cross -= dy[:-1] * dx[1:]
    left, right = np.ones(len(dx), dtype=bool), np.ones(len(dx), dtype=bool)
    np.greater(cross, margin, out=left[:-1])
    np.less(cross, -margin, out=right[:-1])
    left |= ~r.edge
    right |= ~r.edge
    below = dy < 0
    up = np.zeros(len(dx), dtype=bool)
    np.greater(below[:-1], below[1:], out=up[:-1])  # below, then not: once per turn
    up &= r.edge
    ccw = np.logical_and.reduceat(left, r.starts)
    once = np.add.reduceat(up.view(np.uint8), r.starts, dtype=np.int64) == 1
    return (ccw | np.logical_and.reduceat(right, r.starts)) & once, ccw


def _relax(r: _Rings, cx: np.ndarray, cy: np.ndarray, area2: np.ndarray) -> tuple[np.ndarray, ...]:
    """``cx``, ``cy`` moved across the edge whose inner side they miss most, by 1.5 times
    the miss (Motzkin's relaxation for a point of the ring's kernel, the intersection of
    the inner half-planes of its edges; any point :func:`_star` proves will do)."""
    inner = r.spread(np.sign(area2))[:-1]
    ex, ey = r.x[1:] - r.x[:-1], r.y[1:] - r.y[:-1]
    px, py = r.x[:-1] - r.spread(cx)[:-1], r.y[:-1] - r.spread(cy)[:-1]
    length2 = ex * ex + ey * ey
    depth = inner * (px * ey - py * ex)  # how deep inside the edge's side, times its length
    side = np.full(len(r.x), np.inf)
    side[:-1] = depth * np.abs(depth) / length2  # ordered as the signed distance
    side[~r.edge | ~np.isfinite(side)] = np.inf  # a zero-length edge is no side
    worst = np.minimum.reduceat(side, r.starts)
    hit = np.flatnonzero(side == r.spread(worst))
    if not hit.size:
        return cx, cy
    ring = np.repeat(np.arange(len(r.points)), r.points)
    owner = ring[hit]
    first = hit[np.concatenate(([True], owner[1:] != owner[:-1]))]  # worst edge of each ring
    rows = ring[first]
    miss = np.minimum(depth[first], 0.0) / length2[first]  # distance / length, negative
    step = -1.5 * miss * inner[first]
    cx, cy = cx.copy(), cy.copy()
    cx[rows] -= step * ey[first]
    cy[rows] += step * ex[first]
    return cx, cy


def _test_block(xy: np.ndarray, points: np.ndarray, relaxations: int = 3) -> tuple[np.ndarray, ...]:
    """(proven, bounds, ccw) of rings ``xy`` (float (V, 2), closed rings of ``points``
    vertices each, back to back): the centroid is tried, then moved toward the ring's
    kernel up to ``relaxations`` times for the rings not proven yet."""
    r = _Rings(np.ascontiguousarray(xy[:, 0]), np.ascontiguousarray(xy[:, 1]), points)
    with np.errstate(all="ignore"):
        low_x, low_y = np.minimum.reduceat(r.x, r.starts), np.minimum.reduceat(r.y, r.starts)
        high_x, high_y = np.maximum.reduceat(r.x, r.starts), np.maximum.reduceat(r.y, r.starts)
        bounds = np.column_stack((low_x, low_y, high_x, high_y))
        # NaN and inf reach the envelope (min and max propagate NaN)
        ok = np.isfinite(bounds).all(axis=1)
        ok &= (r.x[r.starts] == r.x[r.ends]) & (r.y[r.starts] == r.y[r.ends])
        cx, cy, area2 = _centroids(r, bounds)
        proven, ccw = _star(r, cx, cy, bounds)
        proven &= ok
        todo = np.flatnonzero(~proven & ok & (area2 != 0) & np.isfinite(area2))
        sub = r.take(todo)
        for _ in range(relaxations):
            if not todo.size:
                break
            cx[todo], cy[todo] = _relax(sub, cx[todo], cy[todo], area2[todo])
            now, now_ccw = _star(sub, cx[todo], cy[todo], bounds[todo])
            proven[todo], ccw[todo] = now, now_ccw
            left = np.flatnonzero(~now)
            sub, todo = sub.take(left), todo[left]
    return proven, bounds, ccw


def star_rings(values: WkbTuple | np.ndarray, least: int) -> StarRings | None:
    """The rows of ``values`` (WKB, see :func:`wkb_buffers`) proven valid one-ring polygons
    (module docstring); None when fewer than ``least`` rows, or fewer than half of them,
    are (the batch then gains nothing from it)."""
    n = len(values)
    if n < max(least, 1):
        return None
    source = _Source(values)
    if source.lengths is None:
        return None
    rows, points = _candidates(source)
    if rows.size < least or 2 * rows.size < n:
        return None
    if rows.size >= 4 * _PROBE:  # a batch of other rings (countries) is told by a probe
        probe = np.linspace(0, rows.size - 1, _PROBE).astype(np.int64)
        xy = source.coordinates(rows[probe])
        share = np.count_nonzero(_test_block(xy, points[probe], 1)[0]) / _PROBE
        if 2 * share * rows.size < n:
            return None
    proven = np.zeros(rows.size, dtype=bool)
    bounds = np.empty((rows.size, 4))
    ccw = np.zeros(rows.size, dtype=bool)
    ends = np.cumsum(points)
    a = 0
    while a < rows.size:  # blocks of about _BLOCK_VERTICES vertices, at least one row
        z = max(a + 1, int(np.searchsorted(ends, ends[a] - points[a] + _BLOCK_VERTICES, "right")))
        xy = source.coordinates(rows[a:z])
        proven[a:z], bounds[a:z], ccw[a:z] = _test_block(xy, points[a:z])
        a = z
    if np.count_nonzero(proven) < least or 2 * np.count_nonzero(proven) < n:
        return None
    plain = np.zeros(n, dtype=bool)
    plain[rows[proven]] = True
    return StarRings(plain, bounds[proven], ccw[proven])
