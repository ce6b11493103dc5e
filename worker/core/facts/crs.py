"""Facts of a batch against a CRS: reprojection into a clause's CRS, area of use, covering bbox.

The third layer of :class:`worker.core.facts.batch.BatchFacts`. The declared CRS itself is
resolved in :class:`~worker.core.facts.parse.ParsedFacts` (the edge model depends on it).
"""

from __future__ import annotations

import numpy as np
import shapely
from pyproj import CRS

from worker.core._util.memo import fact
from worker.core.facts.geometry import nonfinite_mask
from worker.core.facts.mixed_facts import MixedFacts
from worker.core.spatial.crs import crs_equivalent, outside_area_of_use
from worker.core.spatial.reproject import reproject, reproject_to_lonlat

__all__ = [
    "CrsFacts",
]


class CrsFacts(MixedFacts):
    """The CRS facts of :class:`~worker.core.facts.batch.BatchFacts`: the geometries in
    another CRS (cached per CRS), the declared CRS's area of use, the file's bbox column."""

    def in_crs(self, dst: CRS) -> tuple[np.ndarray, np.ndarray]:
        """Geometries reprojected from the declared CRS to ``dst``, and their usable mask.

        ``east_north`` order in and out. When the declared CRS is unknown or equivalent to
        ``dst`` the normalised geometries are returned unchanged. Edges are densified
        before transforming; from a projected to a geographic CRS, polygons enclosing a
        pole reach it and geometries crossing the antimeridian are split there
        (:func:`worker.core.spatial.reproject_to_lonlat`). A feature whose transform gives
        a non-finite coordinate is not usable (see :meth:`reprojection_failed`). Cached
        per ``dst``.
        """
        # keyed by identity (a CRS hashes by rendering its WKT); the CRS is kept so the
        # id stays its own while cached
        cached = self._reprojected.get(id(dst))
        if cached is not None and cached[0] is dst:
            return cached[1], cached[2]
        src = self.declared_crs
        if src is None or self.keeps_crs(dst):
            hit = (self.geometries, self.usable)
        else:
            if dst.is_geographic and not src.is_geographic:
                geoms = reproject_to_lonlat(self.geometries, src, dst)
            else:
                geoms = np.asarray(reproject(self.geometries, src, dst), dtype=object)
            hit = (geoms, self.usable & ~nonfinite_mask(geoms))
        self._reprojected[id(dst)] = (dst, *hit)
        return hit

    def keeps_crs(self, dst: CRS) -> bool:
        """Whether :meth:`in_crs` leaves the geometries as they are for ``dst``: the
        declared CRS is unknown, or equivalent to ``dst``."""
        src = self.declared_crs
        return src is None or crs_equivalent(src, dst)

    def reprojection_failed(self, dst: CRS) -> np.ndarray:
        """bool (N,): usable features whose transform to ``dst`` gave a non-finite
        coordinate (PROJ could not transform them); all False when no reprojection."""
        if self.keeps_crs(dst):
            return self._all(False)
        return self.usable & ~self.in_crs(dst)[1]

    @fact
    def outside_area_of_use(self) -> np.ndarray:
        """bool (N,): some coordinate lies outside the declared CRS's area of use, tested
        as stored, before any reprojection (:func:`worker.core.spatial.outside_area_of_use`);
        all False when the CRS is undeclared or unresolvable."""
        if self._points_xy is not None:  # tested on the stored coordinates (east_north)
            return outside_area_of_use(None, self.declared_crs, points=self._points_xy)
        if (m := self._mixed) is not None:  # the plain rows their way, the others as below
            return m.scatter(False, m.sub.outside_area_of_use) | m.outside_area_of_use(
                self.declared_crs
            )
        return outside_area_of_use(self.geometries, self.declared_crs, self.bounds)

    @fact
    def covering_bbox_disagrees(self) -> np.ndarray:
        """bool (N,): the file's bbox covering column (its metadata's ``covering.bbox``)
        does not bound the feature's stored geometry: a geometry bound lies outside the
        row's (xmin, ymin, xmax, ymax), beyond float32 rounding (relative 1e-6), or the row
        has no bbox for a non-empty geometry. All False when the file has no such column.
        Readers that filter rows by that column would skip these features."""
        cover = self.batch.covering_bbox
        out = np.zeros(self.count, dtype=bool)
        if cover is None or not self.count:
            return out
        box = np.array([c if c is not None else (np.nan,) * 4 for c in cover], dtype=float)
        if self.batch.axis_order == "east_north" and self.batch.edges == "planar":
            b = self.bounds  # (the stored geometries' own: the fast paths', without GEOS)
        else:
            b = np.asarray(shapely.bounds(self.raw_geometries), dtype=float).reshape(-1, 4)
        has = ~np.isnan(b).any(axis=1)
        with np.errstate(invalid="ignore"):
            tol = 1e-6 * np.maximum(1.0, np.abs(b))
            lo_ok = (box[:, :2] <= b[:, :2] + tol[:, :2]).all(axis=1)
            hi_ok = (box[:, 2:] >= b[:, 2:] - tol[:, 2:]).all(axis=1)
        out[has] = ~(lo_ok & hi_ok)[has]
        return out
