"""Batches of mostly 2D points with a few other values: the points read without geometries.

A batch of plain 2D points (:func:`~worker.core.facts.wkb_header.simple_points_xy`) is
judged on its coordinates, without a geometry object. One MultiPoint, POINT EMPTY, NaN
point or missing value used to send the whole batch down the general path (GEOS parse,
validity, bounds of every feature: issue 27, the points at 0.33 of the floor). Here the
plain points (:func:`plain_points_xy`, vectorized) keep their known facts (a valid,
non-empty Point without Z or M whose envelope is its coordinates) and only the other rows
are a batch of their own, judged by the general path; each fact is the two scattered back
into batch order (:class:`MixedPoints`), value for value the general path's on the whole.
Geometries are built for the whole batch only when a clause asks for them (a region other
than a rectangle, a reprojection): the points then from their coordinates.

Only batches with planar edges whose plain points are at least half of the features take
this path (:func:`mixed_points`); a batch of spherical edges decides its edges on every
coordinate first, and a few points among polygons gain nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import shapely

from worker.core.facts.plain_rows import PlainRows
from worker.core.facts.wkb_arrow import WkbTuple, arrow_lengths
from worker.core.facts.wkb_header import POINT_WKB_BYTES

if TYPE_CHECKING:
    from worker.core.facts.parse import ParsedFacts

__all__ = ["MixedPoints", "mixed_points", "plain_points_xy"]


def _lengths(values: np.ndarray) -> np.ndarray:
    """int (N,): the length of each bytes value, -1 for None or any other object."""
    try:
        return np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    except TypeError:  # None among them
        lengths = (len(v) if isinstance(v, bytes) else -1 for v in values)
        return np.fromiter(lengths, dtype=np.int64, count=len(values))


def _words(raw: np.ndarray, start: int, stop: int, dtype: str, big: np.ndarray) -> np.ndarray:
    """Column bytes ``start:stop`` of ``raw`` (uint8 (M, 21)) as ``dtype`` (little-endian),
    byte-swapped in the rows written big-endian (``big``)."""
    col = np.ascontiguousarray(raw[:, start:stop]).view(dtype).reshape(len(raw))
    return np.where(big, col.byteswap(), col)


def plain_points_xy(
    values: np.ndarray, least: int, lengths: np.ndarray | None = None
) -> np.ndarray | None:
    """float (N, 2): x, y as stored of each value that is a finite 2D WKB Point (21 bytes,
    either byte order, type code 1: no Z, M or SRID; as
    :func:`~worker.core.facts.wkb_header.simple_points_xy`, row by row), NaN in the other
    rows; None when fewer than ``least`` rows or fewer than half of them are such points.
    One length pass and one concatenation of the 21-byte values, read with numpy."""
    n = len(values)
    lengths = _lengths(values) if lengths is None else lengths  # given: from Arrow offsets
    candidates = np.flatnonzero(lengths == POINT_WKB_BYTES)
    if candidates.size < max(least, 1) or 2 * candidates.size < n:
        return None
    try:
        joined = b"".join(values[candidates].tolist())
    except TypeError:  # a value of 21 characters that is not bytes
        return None
    raw = np.frombuffer(joined, dtype=np.uint8).reshape(-1, POINT_WKB_BYTES)
    flag = raw[:, 0]
    big = flag == 0
    code = _words(raw, 1, 5, "<u4", big)
    x, y = _words(raw, 5, 13, "<f8", big), _words(raw, 13, 21, "<f8", big)
    with np.errstate(invalid="ignore", over="ignore"):
        ok = (flag <= 1) & (code == 1) & np.isfinite(x) & np.isfinite(y)
    rows = candidates[ok]
    if rows.size < max(least, 1) or 2 * rows.size < n:
        return None
    xy = np.full((n, 2), np.nan)
    xy[rows, 0], xy[rows, 1] = x[ok], y[ok]
    return xy


class MixedPoints(PlainRows):
    """The plain points of a batch and the facts of its other rows.

    ``plain``: bool (N,), the rows that are plain 2D points; ``stored``: float (N, 2), their
    coordinates as stored (NaN elsewhere); ``xy``: the same in ``east_north`` order;
    ``rest``: int (M,), the other rows, ascending; ``sub``: the facts (same class as the
    batch's) of the batch of those rows alone.
    """

    #: shapely's type id of every plain row (Point)
    type_id = 0

    def __init__(self, stored: np.ndarray, east_north: np.ndarray, sub: Any, rest: np.ndarray):
        self.stored, self.xy, self.sub, self.rest = stored, east_north, sub, rest
        self.plain = ~np.isnan(stored[:, 0])

    def lonlat_fits(self) -> bool:
        """Every plain row's coordinates lie within ±180, ±90."""
        xy = self.xy[self.plain]
        return bool(((np.abs(xy[:, 0]) <= 180) & (np.abs(xy[:, 1]) <= 90)).all())

    def orientation_contradicted(self) -> np.ndarray:
        """bool (N,): a plain row contradicts the batch's declared ring orientation (a
        point has no ring: never)."""
        return np.zeros(len(self.plain), dtype=bool)

    def outside_area_of_use(self, crs: Any) -> np.ndarray:
        """bool (N,): a plain row lies outside ``crs``'s area of use
        (:func:`~worker.core.spatial.crs.outside_area_of_use` on its coordinates)."""
        from worker.core.spatial.crs import outside_area_of_use

        out = np.zeros(len(self.plain), dtype=bool)
        out[self.plain] = outside_area_of_use(None, crs, points=self.xy[self.plain])
        return out

    def raw_geometries(self) -> np.ndarray:
        """object (N,): the geometries as stored: the plain points built from their
        coordinates (as GEOS reads their WKB), the other rows the general path's."""
        out = np.empty(len(self.plain), dtype=object)
        out[self.rest] = self.sub.raw_geometries
        out[self.plain] = shapely.points(self.stored[self.plain])
        return out

    def bounds(self) -> np.ndarray:
        """float (N, 4), ``east_north``: a plain point is its own envelope."""
        out = np.concatenate((self.xy, self.xy), axis=1)
        out[self.rest] = self.sub.bounds
        return out


def mixed_points(facts: ParsedFacts, least: int) -> MixedPoints | None:
    """The :class:`MixedPoints` of ``facts``'s batch (of at least ``least`` features), or
    None when it does not take this path: spherical edges, reader errors, all plain
    points (the points path proper), or fewer than half plain points."""
    from worker.core.clauses.sample import take_features  # clauses import the facts

    batch = facts.batch
    if facts.count < least or batch.edges != "planar" or batch.geometry_errors:
        return None
    wkb = batch.geometries_wkb
    lengths = arrow_lengths(wkb) if isinstance(wkb, WkbTuple) else None
    if lengths is not None and 2 * np.count_nonzero(lengths == POINT_WKB_BYTES) < facts.count:
        return None  # told by the Arrow offsets, before an object array of the values
    stored = plain_points_xy(facts._wkb_array, least, lengths)  # the facts' own array
    if stored is None:
        return None
    rest = np.flatnonzero(np.isnan(stored[:, 0]))
    if not rest.size:
        return None
    east_north = stored[:, ::-1] if batch.axis_order == "north_east" else stored
    sub = type(facts)(take_features(batch, rest), 0, (facts.edges_problem,))  # type: ignore[call-arg]
    return MixedPoints(stored, east_north, sub, rest)
