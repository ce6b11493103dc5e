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

from worker.core.facts.wkb_arrow import WkbTuple
from worker.core.facts.wkb_rings import WkbSource, one_ring_candidates

__all__ = ["StarRings", "star_rings"]

#: Relative margin of a turn's sign (see the module docstring).
_MARGIN = 1e-12
#: Evenly spaced rows of a batch of ``4 * _PROBE`` rows or more tested first, with one move
#: of the centre: fewer than half of them proven and the batch is left to GEOS before the
#: other rows' headers are read (every row's header cost 0.25 ms of an event of 1,000
#: countries, beside the probe's 0.42 ms: issue 27). The ``peers`` benchmark's rings: 45%
#: proven from the centroid, 85% after one move, 98% after three (the full test); Natural
#: Earth's countries (83% one-ring polygons): 23%, then 33%, then 37% of those.
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


class _Rings:
    """Closed rings back to back: float (V,) ``x`` and ``y``, int (R,) ``points`` (vertices
    of each ring, the closing one included), with each ring's first vertex (``starts``),
    closing vertex (``ends``), int (V,) ``ring``, the ring of each vertex, and bool (V,)
    ``edge``: the vertex starts an edge of its ring.

    Per-ring values are spread over the vertices by ``ring`` (numpy's take, which releases
    the GIL), not repeated (``np.repeat`` holds it: 9-11% of the GIL's time in a
    two-thread ``check`` of 1,000,000 polygons, issue 27); ``ring`` itself is one repeat
    of R small numbers."""

    def __init__(self, x: np.ndarray, y: np.ndarray, points: np.ndarray) -> None:
        self.x, self.y, self.points = x, y, points
        self.starts = np.concatenate(([0], np.cumsum(points)[:-1])).astype(np.int64)
        self.ends = self.starts + points - 1
        self.ring = np.repeat(np.arange(len(points)), points)
        self.edge = np.ones(len(x), dtype=bool)
        self.edge[self.ends] = False

    def spread(self, per_ring: np.ndarray) -> np.ndarray:
        """float (V,): each ring's value repeated over its vertices."""
        return per_ring[self.ring]

    def take(self, rows: np.ndarray) -> _Rings:
        """The rings ``rows`` (int, ascending) alone."""
        chosen = np.zeros(len(self.points), dtype=bool)
        chosen[rows] = True
        keep = chosen[self.ring]
        return _Rings(self.x[keep], self.y[keep], self.points[rows])


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
    # float counts: numpy holds the GIL through an integer add.reduceat
    once = np.add.reduceat(up.astype(np.float64), r.starts) == 1.0
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
    owner = r.ring[hit]
    first = hit[np.concatenate(([True], owner[1:] != owner[:-1]))]  # worst edge of each ring
    rows = owner[np.concatenate(([True], owner[1:] != owner[:-1]))]
    miss = np.minimum(depth[first], 0.0) / length2[first]  # distance / length, negative
    step = -1.5 * miss * inner[first]
    cx, cy = cx.copy(), cy.copy()
    cx[rows] -= step * ey[first]
    cy[rows] += step * ex[first]
    return cx, cy


def _signed_zeros(r: _Rings, bounds: np.ndarray) -> np.ndarray:
    """``bounds`` (float (R, 4)) with each zero bound signed as GEOS signs it: its envelope
    keeps the first of equal values (strict ``<`` and ``>``), so a zero bound is the ring's
    first zero in that coordinate, -0.0 or 0.0; numpy's ``minimum`` and ``maximum`` may
    return either zero (issue found in stop 36: ``-0.0`` in GEOS's extent, ``0.0`` here)."""
    zero = bounds == 0.0
    if not zero.any():
        return bounds
    index = np.arange(len(r.x))
    for columns, values in (((0, 2), r.x), ((1, 3), r.y)):
        rows = np.flatnonzero(zero[:, columns].any(axis=1))
        if not rows.size:
            continue
        first = np.minimum.reduceat(np.where(values == 0.0, index, len(r.x)), r.starts)[rows]
        sign = np.where(np.signbit(values[np.minimum(first, len(r.x) - 1)]), -0.0, 0.0)
        for column in columns:  # min and max both keep the first zero
            at = zero[rows, column]
            bounds[rows[at], column] = sign[at]
    return bounds


def _test_block(xy: np.ndarray, points: np.ndarray, relaxations: int = 3) -> tuple[np.ndarray, ...]:
    """(proven, bounds, ccw) of rings ``xy`` (float (V, 2), closed rings of ``points``
    vertices each, back to back): the centroid is tried, then moved toward the ring's
    kernel up to ``relaxations`` times for the rings not proven yet."""
    r = _Rings(np.ascontiguousarray(xy[:, 0]), np.ascontiguousarray(xy[:, 1]), points)
    with np.errstate(all="ignore"):
        low_x, low_y = np.minimum.reduceat(r.x, r.starts), np.minimum.reduceat(r.y, r.starts)
        high_x, high_y = np.maximum.reduceat(r.x, r.starts), np.maximum.reduceat(r.y, r.starts)
        bounds = _signed_zeros(r, np.column_stack((low_x, low_y, high_x, high_y)))
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


def _probe(source: WkbSource, n: int) -> int:
    """How many of ``_PROBE`` evenly spaced rows of the ``n`` of ``source`` are proven
    with one move of the centre (:func:`_test_block`)."""
    rows, points = one_ring_candidates(source, np.linspace(0, n - 1, _PROBE).astype(np.int64))
    if not rows.size:
        return 0
    return int(np.count_nonzero(_test_block(source.coordinates(rows), points, 1)[0]))


def star_rings(values: WkbTuple | np.ndarray, least: int) -> StarRings | None:
    """The rows of ``values`` (WKB: a :class:`~worker.core.facts.wkb_arrow.WkbTuple` or an
    object array, see :func:`~worker.core.facts.wkb_rings.wkb_buffers`) proven valid
    one-ring polygons (module docstring); None when fewer than ``least`` rows, or fewer
    than half of them, are (the batch then gains nothing from it)."""
    n = len(values)
    if n < max(least, 1):
        return None
    source = WkbSource(values)
    if source.lengths is None:
        return None
    if n >= 4 * _PROBE and 2 * _probe(source, n) < _PROBE:  # other rings (countries)
        return None
    rows, points = one_ring_candidates(source)
    if rows.size < least or 2 * rows.size < n:
        return None
    proven = np.zeros(rows.size, dtype=bool)
    bounds = np.empty((rows.size, 4))
    ccw = np.zeros(rows.size, dtype=bool)
    ends = np.cumsum(points)
    xy = source.coordinates(rows)  # every candidate's ring, back to back
    a = 0
    while a < rows.size:  # blocks of about _BLOCK_VERTICES vertices, at least one row
        z = max(a + 1, int(np.searchsorted(ends, ends[a] - points[a] + _BLOCK_VERTICES, "right")))
        v = ends[a] - points[a]
        proven[a:z], bounds[a:z], ccw[a:z] = _test_block(xy[v : ends[z - 1]], points[a:z])
        a = z
    if np.count_nonzero(proven) < least or 2 * np.count_nonzero(proven) < n:
        return None
    plain = np.zeros(n, dtype=bool)
    plain[rows[proven]] = True
    return StarRings(plain, bounds[proven], ccw[proven])
