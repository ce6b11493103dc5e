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

from worker.core._util.memo import fact
from worker.core.facts.geometry import GeometryFacts
from worker.core.facts.wkb_header import POINT_WKB_BYTES

if TYPE_CHECKING:
    from worker.core.facts.parse import ParsedFacts

__all__ = ["MixedPoints", "MixedPointsFacts", "mixed_points", "plain_points_xy"]


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


def plain_points_xy(values: np.ndarray, least: int) -> np.ndarray | None:
    """float (N, 2): x, y as stored of each value that is a finite 2D WKB Point (21 bytes,
    either byte order, type code 1: no Z, M or SRID; as
    :func:`~worker.core.facts.wkb_header.simple_points_xy`, row by row), NaN in the other
    rows; None when fewer than ``least`` rows or fewer than half of them are such points.
    One length pass and one concatenation of the 21-byte values, read with numpy."""
    n = len(values)
    candidates = np.flatnonzero(_lengths(values) == POINT_WKB_BYTES)
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


class MixedPoints:
    """The plain points of a batch and the facts of its other rows.

    ``plain``: bool (N,), the rows that are plain 2D points; ``stored``: float (N, 2), their
    coordinates as stored (NaN elsewhere); ``xy``: the same in ``east_north`` order;
    ``rest``: int (M,), the other rows, ascending; ``sub``: the facts (same class as the
    batch's) of the batch of those rows alone.
    """

    def __init__(self, stored: np.ndarray, east_north: np.ndarray, sub: Any, rest: np.ndarray):
        self.stored, self.xy, self.sub, self.rest = stored, east_north, sub, rest
        self.plain = ~np.isnan(stored[:, 0])

    def scatter(self, point_value: Any, rest_values: np.ndarray) -> np.ndarray:
        """An array of the batch: ``point_value`` in the plain rows, ``rest_values`` (one
        per :attr:`rest` row, in order) in the others."""
        rest_values = np.asarray(rest_values)
        out = np.full((len(self.plain), *rest_values.shape[1:]), point_value, rest_values.dtype)
        out[self.rest] = rest_values
        return out

    def reindexed(self, by_row: dict[int, Any]) -> dict[int, Any]:
        """``by_row`` (keys: rows of :attr:`sub`) keyed by the rows of the batch."""
        return {int(self.rest[i]): v for i, v in by_row.items()}

    def position(self, index: int) -> int:
        """The row of :attr:`sub` of the batch's row ``index`` (one of :attr:`rest`)."""
        return int(np.searchsorted(self.rest, index))

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
    stored = plain_points_xy(facts._wkb_array, least)  # the facts' own array
    if stored is None:
        return None
    rest = np.flatnonzero(np.isnan(stored[:, 0]))
    if not rest.size:
        return None
    east_north = stored[:, ::-1] if batch.axis_order == "north_east" else stored
    sub = type(facts)(take_features(batch, rest), 0, (facts.edges_problem,))  # type: ignore[call-arg]
    return MixedPoints(stored, east_north, sub, rest)


class MixedPointsFacts(GeometryFacts):
    """The facts of :class:`~worker.core.facts.geometry.GeometryFacts`, each the scatter of
    the plain points' known value and the other rows' general one when the batch takes
    this path (:attr:`_mixed`), else the general fact itself."""

    @fact
    def _mixed(self) -> MixedPoints | None:
        """The plain points and the other rows' facts, or None (see :func:`mixed_points`)."""
        if self._points_xy is not None:  # every feature a plain point: the points path
            return None
        from worker.core.facts import parse  # read at call time (tests turn it off)

        return mixed_points(self, parse.POINTS_WITHOUT_GEOMETRIES_MIN)

    @fact
    def missing(self) -> np.ndarray:
        """See :attr:`ParsedFacts.missing`."""
        m = self._mixed
        return super().missing if m is None else m.scatter(False, m.sub.missing)

    @fact
    def unparseable(self) -> np.ndarray:
        """See :attr:`ParsedFacts.unparseable`."""
        m = self._mixed
        return super().unparseable if m is None else m.scatter(False, m.sub.unparseable)

    @fact
    def parsed(self) -> np.ndarray:
        """See :attr:`ParsedFacts.parsed`."""
        m = self._mixed
        return super().parsed if m is None else m.scatter(True, m.sub.parsed)

    @fact
    def _refused_before_parse(self) -> dict[int, str]:
        m = self._mixed
        if m is None:
            return super()._refused_before_parse
        return m.reindexed(m.sub._refused_before_parse)  # the same class's

    @fact
    def _refused(self) -> dict[int, str]:
        m = self._mixed
        if m is None:
            return super()._refused
        return m.reindexed(m.sub._refused)  # the same class's

    @fact
    def curve_type_names(self) -> dict[int, str]:
        """See :attr:`ParsedFacts.curve_type_names`."""
        m = self._mixed
        return super().curve_type_names if m is None else m.reindexed(m.sub.curve_type_names)

    @fact
    def raw_geometries(self) -> np.ndarray:
        """See :attr:`ParsedFacts.raw_geometries` (built only when a clause asks)."""
        m = self._mixed
        return super().raw_geometries if m is None else m.raw_geometries()

    @fact
    def lonlat_fits(self) -> bool:
        """See :attr:`ParsedFacts.lonlat_fits`."""
        m = self._mixed
        if m is None:
            return super().lonlat_fits
        xy = m.xy[m.plain]
        return bool(
            m.sub.lonlat_fits and ((np.abs(xy[:, 0]) <= 180) & (np.abs(xy[:, 1]) <= 90)).all()
        )

    @fact
    def bounds(self) -> np.ndarray:
        """See :attr:`ParsedFacts.bounds`."""
        m = self._mixed
        return super().bounds if m is None else m.bounds()

    @fact
    def type_ids(self) -> np.ndarray:
        """See :attr:`GeometryFacts.type_ids` (a plain point is shapely's Point, 0)."""
        m = self._mixed
        return super().type_ids if m is None else m.scatter(0, m.sub.type_ids)

    @fact
    def has_z(self) -> np.ndarray:
        """See :attr:`GeometryFacts.has_z`."""
        m = self._mixed
        return super().has_z if m is None else m.scatter(False, m.sub.has_z)

    @fact
    def has_m(self) -> np.ndarray:
        """See :attr:`GeometryFacts.has_m`."""
        m = self._mixed
        return super().has_m if m is None else m.scatter(False, m.sub.has_m)

    @fact
    def is_empty(self) -> np.ndarray:
        """See :attr:`GeometryFacts.is_empty`."""
        m = self._mixed
        return super().is_empty if m is None else m.scatter(False, m.sub.is_empty)

    @fact
    def has_nonfinite(self) -> np.ndarray:
        """See :attr:`GeometryFacts.has_nonfinite`."""
        m = self._mixed
        return super().has_nonfinite if m is None else m.scatter(False, m.sub.has_nonfinite)

    @fact
    def _geos_valid(self) -> np.ndarray:
        m = self._mixed
        return super()._geos_valid if m is None else m.scatter(True, m.sub.geos_valid)

    @fact
    def orientation_contradicted(self) -> np.ndarray:
        """See :attr:`GeometryFacts.orientation_contradicted`."""
        m = self._mixed
        if m is None:
            return super().orientation_contradicted
        return m.scatter(False, m.sub.orientation_contradicted)

    def invalid_reason(self, idx: int) -> str:
        """See :meth:`GeometryFacts.invalid_reason` (a plain point is never invalid)."""
        m = self._mixed
        return super().invalid_reason(idx) if m is None else m.sub.invalid_reason(m.position(idx))
