"""Facts of a batch's geometries: types, dimensions, empties, non-finite coordinates, validity.

The second layer of :class:`worker.core.facts.batch.BatchFacts`, over the parsed geometries
of :class:`~worker.core.facts.parse.ParsedFacts`. Empty geometries are valid here, as in
GEOS: the geometry_type clause governs them (``allow_empty``), so one empty feature is
reported once, by one clause.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import shapely

from worker.core._util.memo import fact
from worker.core.facts.parse import ParsedFacts
from worker.core.geometry_types import (
    TYPE_NAME_TABLE,
    geometry_type_index,
)
from worker.core.geometry_types import (
    has_m as m_flags,
)
from worker.core.model import stated

__all__ = [
    "MAX_REASONS",
    "GeometryFacts",
    "nonfinite_mask",
]


#: How many invalid-geometry reasons are computed for messages.
MAX_REASONS = 3


def nonfinite_mask(
    geoms: np.ndarray, has_z: np.ndarray | None = None, has_m: np.ndarray | None = None
) -> np.ndarray:
    """bool (N,): some coordinate of the geometry (x, y, or z or m when present) is NaN or ±inf.

    Vectorized: one ``get_coordinates`` call, rows mapped back to features with
    ``np.repeat`` over ``get_num_coordinates``. None and empty geometries give False.
    ``has_z`` / ``has_m`` (bool (N,)) may be passed when already known.
    """
    geoms = np.asarray(geoms, dtype=object)
    n = len(geoms)
    out = np.zeros(n, dtype=bool)
    if n == 0:
        return out
    xy = shapely.get_coordinates(geoms, include_z=False)
    with np.errstate(over="ignore", invalid="ignore"):
        # the sum is finite only when every term is (finite overflow merely takes the
        # exact path below): one pass instead of a (rows, 2) mask and its reduction
        all_finite = bool(np.isfinite(np.add.reduce(xy, axis=None)))
    counts: np.ndarray | None = None
    if not all_finite:
        counts = np.asarray(shapely.get_num_coordinates(geoms), dtype=np.intp)
        out[np.repeat(np.arange(n), counts)[~np.isfinite(xy).all(axis=1)]] = True
    with_z = np.asarray(shapely.has_z(geoms) if has_z is None else has_z, dtype=bool)
    with_m = m_flags(geoms) if has_m is None else np.asarray(has_m, dtype=bool)
    if counts is None and (with_z.any() or with_m.any()):
        counts = np.asarray(shapely.get_num_coordinates(geoms), dtype=np.intp)
    if with_z.any():
        assert counts is not None
        idx = np.flatnonzero(with_z)
        xyz = shapely.get_coordinates(geoms[idx], include_z=True)
        out[np.repeat(idx, counts[idx])[~np.isfinite(xyz[:, 2])]] = True
    if with_m.any():
        assert counts is not None
        idx = np.flatnonzero(with_m)
        xym = shapely.get_coordinates(geoms[idx], include_m=True)
        out[np.repeat(idx, counts[idx])[~np.isfinite(xym[:, -1])]] = True
    return out


class GeometryFacts(ParsedFacts):
    """The geometry facts of :class:`~worker.core.facts.batch.BatchFacts`: type, dimension,
    emptiness, finiteness, ring orientation and validity of each feature."""

    def _known(self, name: str) -> bool:
        """Whether fact ``name`` is computed already (reading it is free)."""
        return name in self.__dict__

    @fact
    def envelope(self) -> tuple[float, float, float, float] | None:
        """The total bounds of :attr:`geometries` taken from the reader's coordinate arrays
        (``Batch.coordinate_bounds``, e.g. GeoArrow native columns) instead of the
        geometries; None unless that is exact: an ``east_north`` batch with planar edges
        whose every feature is :attr:`usable` (a geometry, non-empty, finite)."""
        env = self.batch.coordinate_bounds
        if env is None or self.batch.axis_order != "east_north" or self.batch.edges != "planar":
            return None
        return env if self.count and bool(self.usable.all()) else None

    @fact
    def type_ids(self) -> np.ndarray:
        """int (N,): shapely geometry type id of the geometry as stored, -1 when missing or
        unreadable even with its structure fixed (see :attr:`raw_geometries`).

        The stored type, not that of :attr:`geometries`: densifying ``edges: spherical``
        splits a polygon crossing the antimeridian into a MultiPolygon, which a producer
        never sent (a valid Polygon was refused by ``allowed: [Polygon]``)."""
        if self._points_xy is not None:
            return np.zeros(self.count, dtype=int)  # shapely's Point
        return np.asarray(shapely.get_type_id(self.raw_geometries), dtype=int)

    def _dimension(self, column: int, geos: Any) -> np.ndarray:
        """A dimension flag of each geometry: column ``column`` of :attr:`_headers` for
        single geometries (their type code is their coordinate dimension), ``geos(idx)``
        for the others (collections); False where there is no geometry."""
        if self._points_xy is not None:
            return self._all(False)
        single, out = self._headers[1], self._headers[column]
        rest = np.flatnonzero(~single & self.parsed)
        if rest.size:
            out = out.copy()
            out[rest] = geos(rest)
        return out & self.parsed

    @fact
    def has_z(self) -> np.ndarray:
        """bool (N,): the geometry has Z coordinates (also when empty, e.g. POINT Z EMPTY):
        the WKB header of single geometries (Point, LineString, Polygon), GEOS for
        collections."""
        return self._dimension(2, lambda idx: shapely.has_z(self.raw_geometries[idx]))

    @fact
    def has_m(self) -> np.ndarray:
        """bool (N,): the geometry has M values: the WKB header of single geometries (as
        :attr:`has_z`), shapely.has_m for collections (else their WKB header)."""
        return self._dimension(
            3, lambda idx: m_flags(self.raw_geometries[idx], self._wkb_array[idx])
        )

    @fact
    def type_names(self) -> np.ndarray:
        """object (N,): ``geometry_types`` name with coordinate dimension
        (``Point``, ``Point Z``, ``Polygon M``, ``MultiPolygon ZM``); None when missing or
        unparseable. See :func:`geometry_type_names`."""
        return TYPE_NAME_TABLE[self.type_name_index]

    @fact
    def type_name_index(self) -> np.ndarray:
        """int (N,): row of :data:`TYPE_NAME_TABLE` of each :attr:`type_names` entry (see
        :func:`geometry_type_index`)."""
        return geometry_type_index(self.type_ids, self.has_z, self.has_m)

    @fact
    def is_empty(self) -> np.ndarray:
        """bool (N,): the geometry exists and is empty."""
        if self._points_xy is not None:
            return self._all(False)
        if not self._known("_geos_valid"):
            return np.asarray(shapely.is_empty(self.geometries), dtype=bool) & self.parsed
        # a GEOS-valid geometry has finite x and y (IsValidOp: "Invalid Coordinate"), so
        # its envelope is NaN exactly when it is empty; the others are asked (the extent
        # and area-of-use clauses, which ask for emptiness, need the bounds anyway)
        out = self._geos_valid & np.isnan(self.bounds[:, 0])
        others = np.flatnonzero(~self._geos_valid)
        if others.size:
            out[others] = shapely.is_empty(self.geometries[others])
        return out & self.parsed

    @fact
    def has_nonfinite(self) -> np.ndarray:
        """bool (N,): some coordinate (x, y, or z or m when present) is NaN or ±inf.

        When GEOS's validity is known already (:attr:`is_valid` was asked first), only
        the GEOS-invalid geometries and those with Z or M are read: GEOS judges a NaN or
        infinite x or y invalid ("Invalid Coordinate", IsValidOp since GEOS 3.10), so a
        valid XY geometry has none. The result is the same either way.

        Read on the geometries as stored: swapping a ``north_east`` batch's axes
        (``shapely.transform``) drops M values, which then read as NaN (valid ``POINT M``
        features were judged non-finite); the swap and the densification
        of spherical edges make no coordinate non-finite."""
        if self._points_xy is not None:
            return self._all(False)
        geoms = self.raw_geometries
        if not self._known("_geos_valid"):
            return nonfinite_mask(geoms, self.has_z, self.has_m)
        out = np.zeros(self.count, dtype=bool)
        suspects = np.flatnonzero(~self._geos_valid | self.has_z | self.has_m)
        if suspects.size:
            out[suspects] = nonfinite_mask(
                geoms[suspects], self.has_z[suspects], self.has_m[suspects]
            )
        return out

    @fact
    def orientation_contradicted(self) -> np.ndarray:
        """bool (N,): the batch declares ``orientation: counterclockwise`` and a
        polygon of the feature has a clockwise exterior ring or a counterclockwise interior
        ring (``shapely.is_ccw`` on :attr:`east_north`; all False without a declaration)."""
        out = np.zeros(self.count, dtype=bool)
        if self.batch.orientation is None or not self.count:
            return out
        polygonal = np.flatnonzero(np.isin(self.type_ids, (3, 6)) & ~self.is_empty)
        if polygonal.size == 0:
            return out
        geoms = self.east_north
        parts, owner = shapely.get_parts(geoms[polygonal], return_index=True)
        rings, ring_part = shapely.get_rings(parts, return_index=True)
        first = np.r_[True, ring_part[1:] != ring_part[:-1]]  # exterior ring of each part
        with np.errstate(invalid="ignore"):
            ccw = np.asarray(shapely.is_ccw(rings), dtype=bool)
        wrong = np.where(first, ~ccw, ccw)
        out[polygonal[np.unique(owner[ring_part[wrong]])]] = True
        return out

    @fact
    def usable(self) -> np.ndarray:
        """bool (N,): parsed, non-empty and all coordinates finite (safe for predicates)."""
        return self.parsed & ~self.is_empty & ~self.has_nonfinite

    @fact
    def is_valid(self) -> np.ndarray:
        """bool (N,): parsed, GEOS-valid, all coordinates finite, and ring orientation as
        the batch declares (:attr:`orientation_contradicted`).

        An empty geometry is valid (as for GEOS, OGC Simple Features): whether empties are
        allowed is the geometry_type clause's ``allow_empty``.
        """
        return (
            self._geos_valid
            & self.parsed
            & ~self.unparseable
            & ~self.has_nonfinite
            & ~self.orientation_contradicted
        )

    geos_valid = property(lambda self: self._geos_valid, doc=":attr:`_geos_valid`, public.")

    @fact
    def _geos_valid(self) -> np.ndarray:
        """bool (N,): ``shapely.is_valid`` of :attr:`geometries` (False for None); all
        True for 2D points with finite coordinates (:attr:`_points_xy`), as GEOS says."""
        if self._points_xy is not None:
            return self._all(True)
        with np.errstate(all="ignore"):
            return np.asarray(shapely.is_valid(self.geometries), dtype=bool)

    @fact
    def invalid_count(self) -> int:
        """Number of invalid features (see :attr:`is_valid`)."""
        return int(self.count - np.count_nonzero(self.is_valid))

    def invalid_reason(self, idx: int) -> str:
        """Why feature ``idx`` is invalid (see :attr:`is_valid`): the parse error, a
        non-finite coordinate, a contradicted ring orientation, or GEOS's reason
        (``shapely.is_valid_reason``, e.g. "Self-intersection[1.5 1.5]")."""
        if self.unparseable[idx] or self.missing[idx]:
            return self.parse_error(idx)
        if self.has_nonfinite[idx]:
            return "non-finite coordinate (NaN or inf)"
        if self.orientation_contradicted[idx]:
            return (
                f"ring orientation contradicts the declared "
                f"{stated(self.batch.metadata_name, 'orientation')} "
                f"{self.batch.orientation!r} (exterior rings counterclockwise, interior "
                "rings clockwise)"
            )
        with np.errstate(all="ignore"):  # extreme coordinates: a reason, not a warning
            return str(shapely.is_valid_reason(self.geometries[idx])).strip()

    @fact
    def invalid_reasons(self) -> tuple[tuple[int, str], ...]:
        """(feature index, reason) of the first :data:`MAX_REASONS` invalid features; the
        index counts from :attr:`offset`."""
        return tuple(
            (self.offset + int(i), self.invalid_reason(int(i)))
            for i in np.flatnonzero(~self.is_valid)[:MAX_REASONS]
        )
