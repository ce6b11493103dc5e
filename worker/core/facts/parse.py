"""Facts of a batch's WKB: parsed geometries in ``east_north`` order, as the clauses read them.

The first layer of :class:`worker.core.facts.batch.BatchFacts`: WKB headers, the structural
pre-check (:mod:`worker.core.facts.wkb_check`), GEOS's strict parse, the stored and the
``east_north`` geometries, the declared CRS and the edge model they are read in
(:func:`worker.core.facts.edges.edges_problem`), and their envelopes. Missing (None) and
unparseable WKB give a ``None`` geometry; so does, for validity, a value with bytes after
the end of its geometry (:mod:`worker.core.facts.wkb_end`), which the clauses that locate
and type features still see (:attr:`ParsedFacts.raw_geometries`).
"""

from __future__ import annotations

import numpy as np
import shapely
from pyproj import CRS

from worker.core._util.memo import fact
from worker.core.errors import CrsError
from worker.core.facts.edges import edges_problem
from worker.core.facts.wkb_arrow import WkbTuple, arrow_points_xy
from worker.core.facts.wkb_faults import WkbFaults
from worker.core.facts.wkb_header import (
    empty_ring_polygons,
    simple_points_xy,
    wkb_headers,
)
from worker.core.model import Batch
from worker.core.spatial.crs import resolve_crs
from worker.core.spatial.reproject import swap_xy
from worker.core.spatial.spherical import densify_spherical

__all__ = [
    "POINTS_WITHOUT_GEOMETRIES_MIN",
    "ParsedFacts",
]


#: Fewest features for which a batch of 2D points is read without geometry objects
#: (:attr:`BatchFacts._points_xy`); below it the general path costs as little.
POINTS_WITHOUT_GEOMETRIES_MIN = 64


class ParsedFacts(WkbFaults):
    """The parsing facts of :class:`~worker.core.facts.batch.BatchFacts` (its first base).

    Every fact is computed once per instance (:class:`worker.core._util.memo.fact`).
    """

    batch: Batch
    offset: int
    _reprojected: dict[int, tuple[CRS, np.ndarray, np.ndarray]]

    @fact
    def count(self) -> int:
        """Actual number of features (geometries), not the producer's declared count."""
        return len(self.batch.geometries_wkb)

    @fact
    def _wkb_array(self) -> np.ndarray:
        """object (N,): the WKB values (bytes or None), one per feature."""
        return np.fromiter(self.batch.geometries_wkb, dtype=object, count=self.count)

    @fact
    def _unbuilt(self) -> np.ndarray:
        """bool (N,): the reader could not write the geometry as WKB (see geometry_errors)."""
        out = np.zeros(self.count, dtype=bool)
        idx = [i for i in self.batch.geometry_errors if 0 <= i < self.count]
        out[idx] = True
        return out

    @fact
    def _points_xy(self) -> np.ndarray | None:
        """float (N, 2), ``east_north``: the coordinates of a batch of 2D points with finite
        coordinates (:func:`~worker.core.facts.wkb_header.simple_points_xy`), else None. For such a
        batch validity, type, dimension, emptiness and envelopes are known without
        geometry objects; :attr:`geometries` are built only if a clause needs them (a
        region other than a rectangle, a reprojection)."""
        if self.count < POINTS_WITHOUT_GEOMETRIES_MIN or self.batch.geometry_errors:
            return None
        wkb = self.batch.geometries_wkb  # read from its Arrow buffers when it has them
        xy = arrow_points_xy(wkb) if isinstance(wkb, WkbTuple) else simple_points_xy(wkb)
        if xy is not None and self.batch.axis_order == "north_east":
            xy = xy[:, ::-1]
        return xy

    points_xy = property(lambda self: self._points_xy, doc=":attr:`_points_xy`, public.")

    def _all(self, value: bool) -> np.ndarray:
        return np.full(self.count, value, dtype=bool)

    @fact
    def missing(self) -> np.ndarray:
        """bool (N,): the feature has no geometry (WKB is None and no reader error)."""
        if self._points_xy is not None:
            return self._all(False)
        return ~self._headers[0] & ~self._unbuilt

    @fact
    def _strict(self) -> np.ndarray:
        """GEOS's strict WKB parse (:attr:`_read`), None also where the value has bytes
        after the end of its geometry (:attr:`_trailing`): the reading validity judges."""
        geoms = self._read
        if self._trailing:
            geoms = geoms.copy()
            geoms[list(self._trailing)] = None
        return geoms

    @fact
    def _read(self) -> np.ndarray:
        """GEOS's strict WKB parse (``on_invalid="ignore"``): None when missing or
        unparseable; GEOS reads a value up to the end of its geometry and ignores the rest."""
        if self.count == 0:
            return np.empty(0, dtype=object)
        wkb = self._wkb_array
        if self._refused_before_parse:  # a 20,000-deep collection overflows GEOS's stack
            wkb = wkb.copy()
            wkb[list(self._refused_before_parse)] = None
        with np.errstate(invalid="ignore"):  # NaN coordinates are a fact here, not a warning
            geoms = np.asarray(shapely.from_wkb(wkb, on_invalid="ignore"), dtype=object)
        crashing = empty_ring_polygons(geoms)
        if crashing.size:  # refused as if GEOS had: :attr:`_refused` names the ring
            geoms[crashing] = None
        return geoms

    @fact
    def _headers(self) -> tuple[np.ndarray, ...]:
        """(present, single, has_z, has_m, base, srid) of each WKB header (see
        ``wkb_headers``)."""
        return wkb_headers(self._wkb_array)

    @fact
    def _strict_missing(self) -> np.ndarray:
        """bool (N,): :attr:`_strict` has no geometry (missing, refused or unparseable)."""
        return np.asarray(shapely.is_missing(self._strict), dtype=bool)

    @fact
    def raw_geometries(self) -> np.ndarray:
        """Geometries as stored (axis order as declared); None when missing or unreadable.

        Parsed with ``shapely.from_wkb(..., on_invalid="ignore")``: bad WKB never raises and
        is never repaired for validity. A WKB that GEOS refuses only for its structure (an
        open ring) is read again with ``on_invalid="fix"`` so that the clauses that locate
        and type features (extent, geometry_type) see where and what it is; it stays
        :attr:`unparseable`, so validity counts it invalid with GEOS's reason and coverage
        leaves it out. One defect, one clause. So too a value with bytes after the end of
        its geometry (:attr:`_trailing`): here it is the geometry GEOS read up to that end,
        validity counts it invalid ("4 bytes after the end of the WKB geometry ...") and
        coverage leaves it out; nothing is cut or repaired in the value.
        """
        geoms = self._strict
        bad = np.flatnonzero(self.unparseable & ~self._unbuilt & ~self._refused_mask)
        trailing = list(self._trailing)
        if len(bad) or trailing:
            geoms = geoms.copy()
            geoms[trailing] = self._read[trailing]
        if len(bad):
            with np.errstate(invalid="ignore"):
                geoms[bad] = shapely.from_wkb(self._wkb_array[bad], on_invalid="fix")
        return geoms

    @fact
    def unparseable(self) -> np.ndarray:
        """bool (N,): WKB was given but GEOS's strict reader refused it, bytes follow the
        end of its geometry (:attr:`_trailing`), or the reader could not write the
        geometry as WKB at all (``Batch.geometry_errors``)."""
        if self._points_xy is not None:
            return self._all(False)
        return self._strict_missing & ~self.missing

    @fact
    def parsed(self) -> np.ndarray:
        """bool (N,): a geometry object exists (not missing; read strictly, or with its
        structure fixed for locating and typing only: see :attr:`raw_geometries`)."""
        if self._points_xy is not None:
            return self._all(True)
        if self.raw_geometries is self._strict:  # no structure fixed: the same objects
            return ~self._strict_missing
        return ~np.asarray(shapely.is_missing(self.raw_geometries), dtype=bool)

    @fact
    def east_north(self) -> np.ndarray:
        """Geometries as stored but in ``east_north`` order (x/y swapped when the batch is
        ``north_east``), vertices untouched."""
        if self.batch.axis_order == "north_east" and self.count:
            return np.asarray(swap_xy(self.raw_geometries), dtype=object)
        return self.raw_geometries

    @fact
    def geometries(self) -> np.ndarray:
        """The geometries every clause measures: :attr:`east_north`, and for a batch of
        ``edges: spherical`` densified along their great-circle edges
        (:func:`worker.core.spatial.densify_spherical`) so that planar predicates see the
        arcs (unless :attr:`edges_problem` says they cannot be honoured)."""
        if self.batch.edges == "spherical" and self.count and self.edges_problem is None:
            return densify_spherical(self.east_north)
        return self.east_north

    @fact
    def lonlat_fits(self) -> bool:
        """Every coordinate lies within ±180, ±90 (True without coordinates)."""
        with np.errstate(invalid="ignore"):
            xy = self._points_xy
            if xy is None:
                xy = shapely.get_coordinates(self.east_north)
            return bool(((np.abs(xy[:, 0]) <= 180) & (np.abs(xy[:, 1]) <= 90)).all())

    @fact
    def edges_problem(self) -> str | None:
        """Why the batch's edge model cannot be honoured, or None (see
        :func:`edges_problem`)."""
        lonlat = self.count > 0 and (
            self.batch.edges != "spherical" or self.declared_crs is not None or self.lonlat_fits
        )
        return edges_problem(self.batch.edges, self.declared_crs, lonlat, self.batch.metadata_name)

    @fact
    def bounds(self) -> np.ndarray:
        """float (N, 4): minx, miny, maxx, maxy in ``east_north`` order; NaN when none."""
        xy = self._points_xy
        if xy is not None:  # a point is its own envelope (densifying edges leaves it so)
            return np.concatenate((xy, xy), axis=1)
        return np.asarray(shapely.bounds(self.geometries), dtype=float).reshape(self.count, 4)

    @fact
    def _crs_resolution(self) -> tuple[CRS | None, str | None]:
        text = self.batch.declared_crs
        if text is None or not str(text).strip():
            return None, None
        try:
            return resolve_crs(text), None
        except CrsError as exc:
            return None, str(exc)

    @property
    def declared_crs(self) -> CRS | None:
        """The batch's declared CRS resolved by pyproj; None when undeclared or unresolvable."""
        return self._crs_resolution[0]

    @property
    def declared_crs_error(self) -> str | None:
        """Why the declared CRS could not be resolved (None when fine or undeclared)."""
        return self._crs_resolution[1]
