"""Batch facts: everything the clauses measure, derived once and lazily from a Batch.

Every fact is a :class:`worker.core._util.memo.fact` (a lock-free cached property), so evaluating
N contract versions against the same :class:`BatchFacts` parses the WKB once, computes
validity once, and so on.
All array facts are vectorized numpy arrays with one entry per feature, in batch order.

Geometries are normalised to ``east_north`` order (x = longitude/easting) in
:attr:`BatchFacts.geometries`; :attr:`BatchFacts.raw_geometries` keeps the stored order.
Missing (None) and unparseable WKB give a ``None`` geometry and count as invalid (the
reason of an unparseable one is GEOS's, e.g. "Points of LinearRing do not form a closed
linestring"); so does a geometry the reader could not write as WKB (``Batch.geometry_errors``).
Empty geometries are valid here, as in GEOS: the geometry_type clause governs them
(``allow_empty``), so one empty feature is reported once, by one clause.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

import numpy as np
import shapely
from pyproj import CRS

from worker.core._util.memo import fact
from worker.core.errors import CrsError
from worker.core.facts.wkb_check import (
    curve_type_name,
    empty_ring_polygons,
    simple_points_xy,
    wkb_has_nonfinite,
    wkb_headers,
    wkb_problem,
)
from worker.core.geometry_types import (
    TYPE_NAME_TABLE,
    geometry_type_index,
)
from worker.core.geometry_types import (
    has_m as m_flags,
)
from worker.core.model import Batch
from worker.core.spatial.crs import crs_equivalent, crs_label, outside_area_of_use, resolve_crs
from worker.core.spatial.reproject import reproject, reproject_to_lonlat, swap_xy
from worker.core.spatial.spherical import densify_spherical

__all__ = [
    "MAX_REASONS",
    "BatchFacts",
    "edges_problem",
    "nonfinite_mask",
    "schema_fingerprint",
]

#: How many invalid-geometry reasons are computed for messages.
MAX_REASONS = 3

#: Fewest features for which a batch of 2D points is read without geometry objects
#: (:attr:`BatchFacts._points_xy`); below it the general path costs as little.
POINTS_WITHOUT_GEOMETRIES_MIN = 64


def schema_fingerprint(fields: Any) -> str:
    """sha256 (hex) of the canonical JSON list of ``{name, type, nullable}`` sorted by name.

    ``fields`` is an iterable of objects with ``name``, ``type`` and ``nullable``; a tuple
    of :class:`worker.core.model.FieldSpec` (hashable) is computed once per distinct schema.
    """
    if isinstance(fields, tuple) and len(fields) <= _CACHED_SCHEMA_FIELDS:
        try:
            return _cached_fingerprint(fields)
        except TypeError:  # unhashable elements
            pass
    return _fingerprint(fields)


#: Schemas of at most this many fields have their fingerprint cached (the fields come from
#: producers: the cache must stay small whatever they send).
_CACHED_SCHEMA_FIELDS = 64


@functools.lru_cache(maxsize=256)
def _cached_fingerprint(fields: tuple[Any, ...]) -> str:
    return _fingerprint(fields)


def _fingerprint(fields: Any) -> str:
    canon = sorted(
        ({"name": f.name, "nullable": bool(f.nullable), "type": f.type} for f in fields),
        key=lambda d: d["name"],
    )
    text = json.dumps(canon, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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


def edges_problem(edges: str, crs: CRS | None, lonlat: bool) -> str | None:
    """Why a batch's edge model cannot be honoured, or None.

    GeoParquet ``edges: spherical`` needs longitude/latitude coordinates: a geographic
    declared ``crs``, or an undeclared one with features whose every coordinate is within
    ±180, ±90 (``lonlat``: :attr:`BatchFacts.lonlat_fits` of a batch with features). Any
    ``edges`` value other than ``planar`` or ``spherical`` is unsupported.
    """
    if edges == "planar":
        return None
    if edges != "spherical":
        return (
            f"GeoParquet edges {edges!r} is not supported (GeoParquet 1.1 defines "
            "'planar' and 'spherical'): the geometries cannot be evaluated"
        )
    if crs is not None and crs.is_geographic:
        return None
    if crs is None and lonlat:
        return None
    where = crs_label(crs) if crs is not None else "an undeclared CRS"
    return (
        f"GeoParquet edges 'spherical' (great-circle arcs) with coordinates in {where}: "
        "spherical edges need longitude/latitude; write the file in a geographic CRS "
        "or with edges 'planar'"
    )


class BatchFacts:
    """Lazily computed, cached facts of one :class:`worker.core.model.Batch`.

    Parameters
    ----------
    batch : worker.core.model.Batch
        The decoded batch. It is not copied and must not be mutated.
    offset : int
        When ``batch`` is one chunk of a larger batch (:mod:`worker.core.chunks`), the
        index of its first feature in the whole batch: feature indices reported to users
        (offenders, invalid reasons) are ``offset`` + the index in the chunk. Default 0.
    edges : (str or None,), optional
        The whole batch's :attr:`edges_problem`, in a 1-tuple, when ``batch`` is a chunk
        (the spherical edges of an undeclared CRS are honoured only when *every*
        coordinate of the batch is longitude/latitude); default: computed from ``batch``.
    """

    def __init__(self, batch: Batch, offset: int = 0, edges: tuple[str | None] | None = None):
        self.batch = batch
        self.offset = offset
        self._reprojected: dict[int, tuple[CRS, np.ndarray, np.ndarray]] = {}
        if edges is not None:
            self.__dict__["edges_problem"] = edges[0]  # primes the cached_property

    # -- geometries ---------------------------------------------------------------------

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
        coordinates (:func:`~worker.core.facts.wkb_check.simple_points_xy`), else None. For such a
        batch validity, type, dimension, emptiness and envelopes are known without
        geometry objects; :attr:`geometries` are built only if a clause needs them (a
        region other than a rectangle, a reprojection)."""
        if self.count < POINTS_WITHOUT_GEOMETRIES_MIN or self.batch.geometry_errors:
            return None
        xy = simple_points_xy(self._wkb_array)
        if xy is not None and self.batch.axis_order == "north_east":
            xy = xy[:, ::-1]
        return xy

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
        """GEOS's strict WKB parse (``on_invalid="ignore"``): None when missing or unparseable."""
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
    def _headers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(present, single, has_z, has_m) of each WKB header (see ``wkb_headers``)."""
        return wkb_headers(self._wkb_array)

    @fact
    def _refused_before_parse(self) -> dict[int, str]:
        """Index -> reason of WKB values that GEOS must never see: those that may hold
        nested geometries (:func:`worker.core.facts.wkb_check.may_nest`) and fail
        :func:`worker.core.facts.wkb_check.wkb_problem` (deep nesting, bad byte order, impossible
        counts). Single geometries are left to GEOS, which refuses their impossible counts
        by itself; :attr:`_refused` then names their structural fault."""
        out: dict[int, str] = {}
        if self._points_xy is not None:
            return out
        values = self.batch.geometries_wkb
        present, single, _, _ = self._headers
        for i in np.flatnonzero(present & ~single).tolist():
            if reason := wkb_problem(values[i]):
                out[i] = reason
        return out

    @fact
    def _refused(self) -> dict[int, str]:
        """Index -> structural reason (:func:`worker.core.facts.wkb_check.wkb_problem`) of every WKB
        value with one: those refused before parsing, and the single geometries GEOS's
        strict reader refused (few; walked only then, so a batch of valid polygons is
        never walked in Python)."""
        out = dict(self._refused_before_parse)
        if self._points_xy is not None:
            return out
        for i in np.flatnonzero(self._strict_missing & ~self.missing).tolist():
            data = self.batch.geometries_wkb[i]
            if i not in out and data is not None and (reason := wkb_problem(data)):
                out[i] = reason
        return out

    @fact
    def curve_type_names(self) -> dict[int, str]:
        """Index -> the SQL/MM curved type (``"CircularString"``) of the values refused
        before parsing for being curved (:func:`worker.core.facts.wkb_check.curve_type_name`): the
        geometry_type clause names them instead of "missing or unparseable"."""
        values = self.batch.geometries_wkb
        named = ((i, curve_type_name(values[i])) for i in self._refused_before_parse)
        return {i: name for i, name in named if name is not None}

    @fact
    def _strict_missing(self) -> np.ndarray:
        """bool (N,): :attr:`_strict` has no geometry (missing, refused or unparseable)."""
        return np.asarray(shapely.is_missing(self._strict), dtype=bool)

    @fact
    def _refused_mask(self) -> np.ndarray:
        out = np.zeros(self.count, dtype=bool)
        out[list(self._refused)] = True
        return out

    @fact
    def raw_geometries(self) -> np.ndarray:
        """Geometries as stored (axis order as declared); None when missing or unreadable.

        Parsed with ``shapely.from_wkb(..., on_invalid="ignore")``: bad WKB never raises and
        is never repaired for validity. A WKB that GEOS refuses only for its structure (an
        open ring) is read again with ``on_invalid="fix"`` so that the clauses that locate
        and type features (extent, geometry_type) see where and what it is; it stays
        :attr:`unparseable`, so validity counts it invalid with GEOS's reason and coverage
        leaves it out. One defect, one clause.
        """
        geoms = self._strict
        bad = np.flatnonzero(self.unparseable & ~self._unbuilt & ~self._refused_mask)
        if len(bad):
            geoms = geoms.copy()
            with np.errstate(invalid="ignore"):
                geoms[bad] = shapely.from_wkb(self._wkb_array[bad], on_invalid="fix")
        return geoms

    @fact
    def unparseable(self) -> np.ndarray:
        """bool (N,): WKB was given but GEOS's strict reader refused it, or the reader could
        not write the geometry as WKB at all (``Batch.geometry_errors``)."""
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

    def parse_error(self, index: int) -> str:
        """Why feature ``index`` has no geometry object: the reader's reason
        (``Batch.geometry_errors``), GEOS's WKB reader's (e.g. "IllegalArgumentException:
        Points of LinearRing do not form a closed linestring"), or "missing geometry"."""
        if index in self.batch.geometry_errors:
            return f"unreadable geometry: {self.batch.geometry_errors[index]}"
        wkb = self.batch.geometries_wkb[index]
        if wkb is None:
            return "missing geometry"
        if index in self._refused:
            return self._refused[index]
        try:
            with np.errstate(invalid="ignore"):
                shapely.from_wkb(wkb)
        except (shapely.errors.GEOSException, TypeError, ValueError) as exc:
            if wkb_has_nonfinite(wkb):
                return (
                    f"non-finite coordinate (NaN or inf) in the WKB; GEOS says: {str(exc).strip()}"
                )
            # not "unparseable WKB": a GeoJSON or GeoArrow geometry (an open ring) reaches
            # GEOS as the literal WKB the reader wrote, which its user never saw
            return f"GEOS cannot read the geometry: {str(exc).strip()}"
        return "GEOS cannot read the geometry"

    @fact
    def east_north(self) -> np.ndarray:
        """Geometries as stored but in ``east_north`` order (x/y swapped when the batch is
        ``north_east``), vertices untouched."""
        if self.batch.axis_order == "north_east" and self.count:
            return np.asarray(swap_xy(self.raw_geometries), dtype=object)
        return self.raw_geometries

    @fact
    def geometries(self) -> np.ndarray:
        """The geometries every clause measures: :attr:`east_north`, and for GeoParquet
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
        return edges_problem(self.batch.edges, self.declared_crs, lonlat)

    @fact
    def bounds(self) -> np.ndarray:
        """float (N, 4): minx, miny, maxx, maxy in ``east_north`` order; NaN when none."""
        xy = self._points_xy
        if xy is not None:  # a point is its own envelope (densifying edges leaves it so)
            return np.concatenate((xy, xy), axis=1)
        return np.asarray(shapely.bounds(self.geometries), dtype=float).reshape(self.count, 4)

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
        never sent (a fresh-user session had a valid Polygon refused by ``allowed:
        [Polygon]``)."""
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
        """object (N,): GeoParquet ``geometry_types`` name with coordinate dimension
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
        if "_geos_valid" not in self.__dict__:
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
        (``shapely.transform``) drops M values, which then read as NaN (a new-user session
        had valid ``POINT M`` features judged non-finite); the swap and the densification
        of spherical edges make no coordinate non-finite."""
        if self._points_xy is not None:
            return self._all(False)
        geoms = self.raw_geometries
        if "_geos_valid" not in self.__dict__:
            return nonfinite_mask(geoms, self.has_z, self.has_m)
        out = np.zeros(self.count, dtype=bool)
        suspects = np.flatnonzero(~self._geos_valid | self.has_z | self.has_m)
        if suspects.size:
            out[suspects] = nonfinite_mask(
                geoms[suspects], self.has_z[suspects], self.has_m[suspects]
            )
        return out

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
        return outside_area_of_use(self.geometries, self.declared_crs, self.bounds)

    @fact
    def orientation_contradicted(self) -> np.ndarray:
        """bool (N,): the batch declares GeoParquet ``orientation: counterclockwise`` and a
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
                f"ring orientation contradicts the declared GeoParquet orientation "
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

    def feature_ids(self, column: str | None = None) -> np.ndarray:
        """object (N,): the id naming each feature in reports, None where it has none.

        The values of ``Batch.id_column``, else of ``column`` (the contract's
        ``id_column``), when the batch has that attribute column (non-finite floats and
        nulls give None); else ``Batch.feature_ids`` (the GeoJSON ``id`` member); else all
        None (the row index is then the feature's only name).
        """
        out = np.full(self.count, None, dtype=object)
        name = self.batch.id_column or column
        table = self.batch.attributes
        if name and name in table.column_names and table.num_rows == self.count:
            values = table.column(name).to_pylist()
        elif self.batch.feature_ids is not None and len(self.batch.feature_ids) == self.count:
            values = list(self.batch.feature_ids)
        else:
            return out
        for i, v in enumerate(values):
            if isinstance(v, bool) or v is None:
                out[i] = None if v is None else str(v)
            elif isinstance(v, int | str):
                out[i] = v
            elif isinstance(v, float):
                out[i] = v if np.isfinite(v) else None
            else:
                out[i] = str(v)
        return out

    # -- CRS and schema -------------------------------------------------------------------

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

    @fact
    def schema_fingerprint(self) -> str:
        """sha256 hex of the batch's declared schema fields (see :func:`schema_fingerprint`)."""
        return schema_fingerprint(self.batch.schema_fields)
