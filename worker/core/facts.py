"""Batch facts: everything the clauses measure, derived once and lazily from a Batch.

Every fact is a :func:`functools.cached_property`, so evaluating N contract versions
against the same :class:`BatchFacts` parses the WKB once, computes validity once, and so on.
All array facts are vectorized numpy arrays with one entry per feature, in batch order.

Geometries are normalised to ``east_north`` order (x = longitude/easting) in
:attr:`BatchFacts.geometries`; :attr:`BatchFacts.raw_geometries` keeps the stored order.
Missing (None) and unparseable WKB give a ``None`` geometry and count as invalid.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

import numpy as np
import shapely
from pyproj import CRS

from worker.core.errors import CrsError
from worker.core.model import Batch
from worker.core.spatial import (
    crs_equivalent,
    crs_label,
    densify_spherical,
    outside_area_of_use,
    reproject,
    reproject_to_lonlat,
    resolve_crs,
    swap_xy,
)

__all__ = ["MAX_REASONS", "BatchFacts", "nonfinite_mask", "schema_fingerprint"]

#: How many invalid-geometry reasons are computed for messages.
MAX_REASONS = 3


def schema_fingerprint(fields: Any) -> str:
    """sha256 (hex) of the canonical JSON list of ``{name, type, nullable}`` sorted by name."""
    canon = sorted(
        ({"name": f.name, "nullable": bool(f.nullable), "type": f.type} for f in fields),
        key=lambda d: d["name"],
    )
    text = json.dumps(canon, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def nonfinite_mask(geoms: np.ndarray) -> np.ndarray:
    """bool (N,): some coordinate of the geometry (x, y, or z or m when present) is NaN or ±inf.

    Vectorized: one ``get_coordinates`` call, rows mapped back to features with
    ``np.repeat`` over ``get_num_coordinates``. None and empty geometries give False.
    """
    geoms = np.asarray(geoms, dtype=object)
    n = len(geoms)
    out = np.zeros(n, dtype=bool)
    if n == 0:
        return out
    counts = np.asarray(shapely.get_num_coordinates(geoms), dtype=np.intp)
    xy = shapely.get_coordinates(geoms, include_z=False)
    out[np.repeat(np.arange(n), counts)[~np.isfinite(xy).all(axis=1)]] = True
    with_z = np.asarray(shapely.has_z(geoms), dtype=bool)
    if with_z.any():
        idx = np.flatnonzero(with_z)
        xyz = shapely.get_coordinates(geoms[idx], include_z=True)
        out[np.repeat(idx, counts[idx])[~np.isfinite(xyz[:, 2])]] = True
    with_m = np.asarray(shapely.has_m(geoms), dtype=bool)
    if with_m.any():
        idx = np.flatnonzero(with_m)
        xym = shapely.get_coordinates(geoms[idx], include_m=True)
        out[np.repeat(idx, counts[idx])[~np.isfinite(xym[:, -1])]] = True
    return out


class BatchFacts:
    """Lazily computed, cached facts of one :class:`worker.core.model.Batch`.

    Parameters
    ----------
    batch : worker.core.model.Batch
        The decoded batch. It is not copied and must not be mutated.
    """

    def __init__(self, batch: Batch) -> None:
        self.batch = batch
        self._reprojected: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    # -- geometries ---------------------------------------------------------------------

    @functools.cached_property
    def count(self) -> int:
        """Actual number of features (geometries), not the producer's declared count."""
        return len(self.batch.geometries_wkb)

    @functools.cached_property
    def _wkb_array(self) -> np.ndarray:
        arr = np.empty(self.count, dtype=object)
        arr[:] = list(self.batch.geometries_wkb)
        return arr

    @functools.cached_property
    def missing(self) -> np.ndarray:
        """bool (N,): the feature has no geometry (WKB is None)."""
        return np.asarray(self._wkb_array == None, dtype=bool)  # noqa: E711 - elementwise

    @functools.cached_property
    def raw_geometries(self) -> np.ndarray:
        """Geometries as stored (axis order as declared); None when missing or unparseable.

        Parsed with ``shapely.from_wkb(..., on_invalid="ignore")``: bad WKB never raises and
        is never repaired.
        """
        if self.count == 0:
            return np.empty(0, dtype=object)
        with np.errstate(invalid="ignore"):  # NaN coordinates are a fact here, not a warning
            geoms = shapely.from_wkb(self._wkb_array, on_invalid="ignore")
        return np.asarray(geoms, dtype=object)

    @functools.cached_property
    def unparseable(self) -> np.ndarray:
        """bool (N,): WKB was given but could not be parsed."""
        return shapely.is_missing(self.raw_geometries) & ~self.missing

    @functools.cached_property
    def parsed(self) -> np.ndarray:
        """bool (N,): a geometry object exists (not missing, not unparseable)."""
        return ~np.asarray(shapely.is_missing(self.raw_geometries), dtype=bool)

    @functools.cached_property
    def east_north(self) -> np.ndarray:
        """Geometries as stored but in ``east_north`` order (x/y swapped when the batch is
        ``north_east``), vertices untouched."""
        if self.batch.axis_order == "north_east" and self.count:
            return np.asarray(swap_xy(self.raw_geometries), dtype=object)
        return self.raw_geometries

    @functools.cached_property
    def geometries(self) -> np.ndarray:
        """The geometries every clause measures: :attr:`east_north`, and for GeoParquet
        ``edges: spherical`` densified along their great-circle edges
        (:func:`worker.core.spatial.densify_spherical`) so that planar predicates see the
        arcs (unless :attr:`edges_problem` says they cannot be honoured)."""
        if self.batch.edges == "spherical" and self.count and self.edges_problem is None:
            return densify_spherical(self.east_north)
        return self.east_north

    @functools.cached_property
    def edges_problem(self) -> str | None:
        """Why the batch's edge model cannot be honoured, or None.

        GeoParquet ``edges: spherical`` needs longitude/latitude coordinates: a geographic
        declared CRS, or an undeclared one with every coordinate within ±180, ±90. Any
        ``edges`` value other than ``planar`` or ``spherical`` is unsupported.
        """
        edges = self.batch.edges
        if edges == "planar":
            return None
        if edges != "spherical":
            return (
                f"GeoParquet edges {edges!r} is not supported (GeoParquet 1.1 defines "
                "'planar' and 'spherical'): the geometries cannot be evaluated"
            )
        crs = self.declared_crs
        if crs is not None and crs.is_geographic:
            return None
        if crs is None and self.count:
            with np.errstate(invalid="ignore"):
                xy = shapely.get_coordinates(self.east_north)
                fits = bool(((np.abs(xy[:, 0]) <= 180) & (np.abs(xy[:, 1]) <= 90)).all())
            if fits:
                return None
        where = crs_label(crs) if crs is not None else "an undeclared CRS"
        return (
            f"GeoParquet edges 'spherical' (great-circle arcs) with coordinates in {where}: "
            "spherical edges need longitude/latitude; write the file in a geographic CRS "
            "or with edges 'planar'"
        )

    @functools.cached_property
    def bounds(self) -> np.ndarray:
        """float (N, 4): minx, miny, maxx, maxy in ``east_north`` order; NaN when none."""
        return np.asarray(shapely.bounds(self.geometries), dtype=float).reshape(self.count, 4)

    @functools.cached_property
    def type_ids(self) -> np.ndarray:
        """int (N,): shapely geometry type id, -1 when missing or unparseable."""
        return np.asarray(shapely.get_type_id(self.geometries), dtype=int)

    @functools.cached_property
    def is_empty(self) -> np.ndarray:
        """bool (N,): the geometry exists and is empty."""
        return np.asarray(shapely.is_empty(self.geometries), dtype=bool) & self.parsed

    @functools.cached_property
    def has_nonfinite(self) -> np.ndarray:
        """bool (N,): some coordinate (x, y, or z when present) is NaN or ±inf."""
        return nonfinite_mask(self.geometries)

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
        key = dst.to_wkt()
        hit = self._reprojected.get(key)
        if hit is None:
            src = self.declared_crs
            if src is None or crs_equivalent(src, dst):
                hit = (self.geometries, self.usable)
            else:
                if dst.is_geographic and not src.is_geographic:
                    geoms = reproject_to_lonlat(self.geometries, src, dst)
                else:
                    geoms = np.asarray(reproject(self.geometries, src, dst), dtype=object)
                hit = (geoms, self.usable & ~nonfinite_mask(geoms))
            self._reprojected[key] = hit
        return hit

    def reprojection_failed(self, dst: CRS) -> np.ndarray:
        """bool (N,): usable features whose transform to ``dst`` gave a non-finite
        coordinate (PROJ could not transform them); all False when no reprojection."""
        return self.usable & ~self.in_crs(dst)[1]

    @functools.cached_property
    def outside_area_of_use(self) -> np.ndarray:
        """bool (N,): some coordinate lies outside the declared CRS's area of use, tested
        as stored, before any reprojection (:func:`worker.core.spatial.outside_area_of_use`);
        all False when the CRS is undeclared or unresolvable."""
        return outside_area_of_use(self.geometries, self.declared_crs)

    @functools.cached_property
    def orientation_contradicted(self) -> np.ndarray:
        """bool (N,): the batch declares GeoParquet ``orientation: counterclockwise`` and a
        polygon of the feature has a clockwise exterior ring or a counterclockwise interior
        ring (``shapely.is_ccw`` on :attr:`east_north`; all False without a declaration)."""
        out = np.zeros(self.count, dtype=bool)
        if self.batch.orientation is None or not self.count:
            return out
        geoms = self.east_north
        polygonal = np.flatnonzero(np.isin(self.type_ids, (3, 6)) & ~self.is_empty)
        if polygonal.size == 0:
            return out
        parts, owner = shapely.get_parts(geoms[polygonal], return_index=True)
        rings, ring_part = shapely.get_rings(parts, return_index=True)
        first = np.r_[True, ring_part[1:] != ring_part[:-1]]  # exterior ring of each part
        with np.errstate(invalid="ignore"):
            ccw = np.asarray(shapely.is_ccw(rings), dtype=bool)
        wrong = np.where(first, ~ccw, ccw)
        out[polygonal[np.unique(owner[ring_part[wrong]])]] = True
        return out

    @functools.cached_property
    def covering_bbox_disagrees(self) -> np.ndarray:
        """bool (N,): the file's bbox covering column (GeoParquet 1.1 ``covering.bbox``)
        does not bound the feature's stored geometry: a geometry bound lies outside the
        row's (xmin, ymin, xmax, ymax), beyond float32 rounding (relative 1e-6), or the row
        has no bbox for a non-empty geometry. All False when the file has no such column.
        Readers that filter rows by that column would skip these features."""
        cover = self.batch.covering_bbox
        out = np.zeros(self.count, dtype=bool)
        if cover is None or not self.count:
            return out
        box = np.array([c if c is not None else (np.nan,) * 4 for c in cover], dtype=float)
        b = np.asarray(shapely.bounds(self.raw_geometries), dtype=float).reshape(-1, 4)
        has = ~np.isnan(b).any(axis=1)
        with np.errstate(invalid="ignore"):
            tol = 1e-6 * np.maximum(1.0, np.abs(b))
            lo_ok = (box[:, :2] <= b[:, :2] + tol[:, :2]).all(axis=1)
            hi_ok = (box[:, 2:] >= b[:, 2:] - tol[:, 2:]).all(axis=1)
        out[has] = ~(lo_ok & hi_ok)[has]
        return out

    @functools.cached_property
    def usable(self) -> np.ndarray:
        """bool (N,): parsed, non-empty and all coordinates finite (safe for predicates)."""
        return self.parsed & ~self.is_empty & ~self.has_nonfinite

    @functools.cached_property
    def is_valid(self) -> np.ndarray:
        """bool (N,): GEOS-valid, parsed, non-empty, all coordinates finite, and ring
        orientation as the batch declares (:attr:`orientation_contradicted`)."""
        geos_valid = np.asarray(shapely.is_valid(self.geometries), dtype=bool)
        return geos_valid & self.usable & ~self.orientation_contradicted

    @functools.cached_property
    def invalid_count(self) -> int:
        """Number of invalid features (see :attr:`is_valid`)."""
        return int(self.count - np.count_nonzero(self.is_valid))

    @functools.cached_property
    def invalid_reasons(self) -> tuple[tuple[int, str], ...]:
        """(feature index, reason) of the first :data:`MAX_REASONS` invalid features."""
        reasons: list[tuple[int, str]] = []
        for i in np.flatnonzero(~self.is_valid)[:MAX_REASONS]:
            idx = int(i)
            if self.missing[idx]:
                reason = "missing geometry"
            elif self.unparseable[idx]:
                reason = "unparseable WKB"
            elif self.is_empty[idx]:
                reason = "empty geometry"
            elif self.has_nonfinite[idx]:
                reason = "non-finite coordinate (NaN or inf)"
            elif self.orientation_contradicted[idx]:
                reason = (
                    f"ring orientation contradicts the declared GeoParquet orientation "
                    f"{self.batch.orientation!r} (exterior rings counterclockwise, interior "
                    "rings clockwise)"
                )
            else:
                reason = str(shapely.is_valid_reason(self.geometries[idx]))
            reasons.append((idx, reason))
        return tuple(reasons)

    # -- CRS and schema -------------------------------------------------------------------

    @functools.cached_property
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

    @functools.cached_property
    def schema_fingerprint(self) -> str:
        """sha256 hex of the batch's declared schema fields (see :func:`schema_fingerprint`)."""
        return schema_fingerprint(self.batch.schema_fields)
