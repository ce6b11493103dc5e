"""CRS resolution and equivalence, transformers, regions and areas (pure, cached).

Conventions written down once:

* Every coordinate array handled here is in ``east_north`` order: x is longitude/easting,
  y is latitude/northing (the order of OGC:CRS84 and RFC 7946). Transformers are built with
  ``always_xy=True`` so they honour that order whatever the CRS authority says.
* Regions (bbox lists or WKT) are written in the contract CRS, in ``east_north`` order.
* Areas are m² for a geographic CRS (geodesic, on the CRS's ellipsoid) and CRS units squared
  for a projected CRS (planar); see :func:`area_m2_or_units`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import shapely
from pyproj import CRS, Transformer
from pyproj.exceptions import CRSError as PyprojCRSError

from worker.core.errors import CrsError

__all__ = [
    "CrsInput",
    "area_m2_or_units",
    "cached_transformer",
    "crs_equivalent",
    "crs_label",
    "fraction_covered",
    "geographic_base",
    "region_geometry",
    "reproject",
    "resolve_crs",
    "split_at_antimeridian",
    "swap_xy",
]

#: Anything :func:`resolve_crs` accepts: EPSG/OGC code, WKT, ESRI WKT, PROJJSON text or dict,
#: or an already resolved :class:`pyproj.CRS`.
CrsInput = str | Mapping[str, Any] | CRS


@functools.lru_cache(maxsize=512)
def _resolve_text(text: str) -> CRS:
    try:
        return CRS.from_user_input(text)
    except (PyprojCRSError, ValueError, TypeError) as exc:
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise CrsError(
            f"cannot resolve CRS {shown!r}: {exc}; write an authority code such as "
            "'EPSG:2263' or 'OGC:CRS84', a WKT/ESRI WKT string, or PROJJSON"
        ) from exc


def resolve_crs(text: CrsInput) -> CRS:
    """Resolve a CRS definition to a cached :class:`pyproj.CRS`.

    Parameters
    ----------
    text : str, mapping or pyproj.CRS
        An authority code (``"EPSG:2263"``, ``"OGC:CRS84"``), WKT (OGC or ESRI, e.g. the text
        of a shapefile's ``.prj``), or PROJJSON as a string or a dict.

    Returns
    -------
    pyproj.CRS
        The same object for the same text (``functools.lru_cache``).

    Raises
    ------
    worker.core.errors.CrsError
        The text names no CRS pyproj knows; the message names the text and the fix.
    """
    if isinstance(text, CRS):
        return text
    if isinstance(text, Mapping):
        return _resolve_text(json.dumps(text, sort_keys=True))
    if not isinstance(text, str) or not text.strip():
        raise CrsError(f"cannot resolve CRS {text!r}: expected a non-empty string or PROJJSON")
    return _resolve_text(text.strip())


def crs_equivalent(a: CrsInput, b: CrsInput) -> bool:
    """True when ``a`` and ``b`` describe the same CRS, ignoring axis order.

    Equivalence is decided by pyproj, never by string: ``OGC:CRS84`` equals ``EPSG:4326``
    (same datum and units, only the axis order differs, which is its own clause) and
    ``ESRI:102100`` equals ``EPSG:3857``. When :meth:`pyproj.CRS.equals` says no, both are
    identified with an EPSG code at full confidence and those codes are compared.

    Raises
    ------
    worker.core.errors.CrsError
        Either definition cannot be resolved.
    """
    return _crs_equivalent(resolve_crs(a), resolve_crs(b))


@functools.lru_cache(maxsize=1024)
def _crs_equivalent(ca: CRS, cb: CRS) -> bool:
    # cached per pair of (cached, hence identical) CRS objects: the EPSG identification
    # below queries the PROJ database and must not run for every batch
    if ca.equals(cb, ignore_axis_order=True):
        return True
    ea, eb = ca.to_epsg(min_confidence=100), cb.to_epsg(min_confidence=100)
    return ea is not None and ea == eb


@functools.lru_cache(maxsize=256)
def crs_label(crs: CRS) -> str:
    """A short readable name: ``EPSG:2263`` when identifiable, else the CRS name."""
    auth = crs.to_authority(min_confidence=90)
    return f"{auth[0]}:{auth[1]}" if auth else str(crs.name)


def geographic_base(crs: CRS) -> CRS | None:
    """The geographic (geodetic) CRS a projected CRS is built on, or None."""
    return crs.geodetic_crs


@functools.lru_cache(maxsize=256)
def cached_transformer(src: CrsInput, dst: CrsInput) -> Transformer:
    """One :class:`pyproj.Transformer` per (source, target) pair, ``always_xy=True``.

    Both arguments must be hashable (a CRS string or a :class:`pyproj.CRS`).
    """
    return Transformer.from_crs(resolve_crs(src), resolve_crs(dst), always_xy=True)


def swap_xy(geoms: Any) -> Any:
    """Exchange x and y of every coordinate (vectorized; z is kept; None stays None)."""

    def _swap(c: np.ndarray) -> np.ndarray:
        out = c.copy()
        out[:, 0], out[:, 1] = c[:, 1], c[:, 0]
        return out

    with np.errstate(invalid="ignore"):  # NaN coordinates pass through unchanged
        return shapely.transform(geoms, _swap, include_z=None)


def reproject(geoms: Any, src: CrsInput, dst: CrsInput) -> Any:
    """Reproject geometries (``east_north`` order in and out) from ``src`` to ``dst``.

    Coordinates that cannot be transformed come back as ``inf``; callers must check
    finiteness before using the result in predicates.
    """
    transformer = cached_transformer(src, dst)

    def _tx(c: np.ndarray) -> np.ndarray:
        x, y = transformer.transform(c[:, 0], c[:, 1], errcheck=False)
        return np.column_stack([np.asarray(x, dtype=float), np.asarray(y, dtype=float)])

    with np.errstate(all="ignore"):
        return shapely.transform(geoms, _tx, include_z=False)


def split_at_antimeridian(geoms: Any) -> np.ndarray:
    """Repair geometries that crossed the antimeridian in a projected CRS and were then
    reprojected vertex by vertex to longitude/latitude.

    Such a geometry comes back spanning almost 360° of longitude (e.g. 178°E..178°W
    becomes -178..178). When moving its negative longitudes by +360° makes it narrower, it
    is moved so, cut at 180° and the part east of 180° moved back by -360°: the result has
    parts on both sides of the antimeridian, as RFC 7946 section 3.1.9 asks. Geometries
    that are genuinely wide (narrower unshifted) are returned unchanged.

    Parameters
    ----------
    geoms : array of shapely geometries (lon/lat, ``east_north``); None and empties pass.
    """
    geoms = np.asarray(geoms, dtype=object)
    with np.errstate(invalid="ignore"):
        b = shapely.bounds(geoms)
        candidates = np.flatnonzero((b[:, 2] - b[:, 0]) > 180.0)
    if candidates.size == 0:
        return geoms

    def _east(xy: np.ndarray) -> np.ndarray:
        return np.column_stack([np.where(xy[:, 0] < 0, xy[:, 0] + 360.0, xy[:, 0]), xy[:, 1]])

    shifted = shapely.transform(geoms[candidates], _east)
    sb = shapely.bounds(shifted)
    narrower = (sb[:, 2] - sb[:, 0]) < (b[candidates, 2] - b[candidates, 0])
    idx, shifted = candidates[narrower], shifted[narrower]
    if idx.size == 0:
        return geoms
    west_of_180 = shapely.intersection(shifted, shapely.box(-180.0, -90.0, 180.0, 90.0))
    east_of_180 = shapely.transform(
        shapely.intersection(shifted, shapely.box(180.0, -90.0, 540.0, 90.0)),
        lambda xy: xy - np.array([360.0, 0.0]),
    )
    out = geoms.copy()
    out[idx] = shapely.union(west_of_180, east_of_180)
    return out


def _looks_geographic(crs: CRS | None, values: Sequence[float]) -> bool:
    if crs is not None:
        return bool(crs.is_geographic)
    return all(-180.0 <= v <= 180.0 for v in values)


def region_geometry(region: Any, crs: CRS | None = None) -> shapely.Geometry:
    """The region of an extent or coverage clause as a shapely geometry.

    Parameters
    ----------
    region : list of 4 numbers or str
        A bbox ``[minx, miny, maxx, maxy]`` or a WKT polygon, ``east_north`` order, in the
        contract CRS. For a geographic CRS (or, with no CRS, longitudes within ±180), a bbox
        with ``minx > maxx`` crosses the antimeridian and becomes the MultiPolygon of
        ``[minx, 180]`` and ``[-180, maxx]``.
    crs : pyproj.CRS, optional
        The CRS the region is written in.

    Raises
    ------
    ValueError
        The region is neither a 4-number bbox nor parseable WKT, or ``minx > maxx`` in a
        projected CRS, or ``miny > maxy``.
    """
    if isinstance(region, str):
        try:
            return shapely.from_wkt(region)
        except shapely.errors.GEOSException as exc:
            raise ValueError(f"region {region[:60]!r} is not valid WKT: {exc}") from exc
    if (
        not isinstance(region, Sequence)
        or len(region) != 4
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in region)
    ):
        raise ValueError(f"region {region!r} must be a bbox [minx, miny, maxx, maxy] or WKT")
    minx, miny, maxx, maxy = (float(v) for v in region)
    if miny > maxy:
        raise ValueError(f"region {region!r} has miny > maxy")
    if minx <= maxx:
        return shapely.box(minx, miny, maxx, maxy)
    if not _looks_geographic(crs, [minx, maxx]):
        raise ValueError(
            f"region {region!r} has minx > maxx, which only a geographic CRS allows "
            "(a bbox crossing the antimeridian)"
        )
    return shapely.MultiPolygon(
        [shapely.box(minx, miny, 180.0, maxy), shapely.box(-180.0, miny, maxx, maxy)]
    )


def area_m2_or_units(geom: shapely.Geometry, crs: CRS | None) -> float:
    """Area of ``geom`` in an equal-area sense.

    Parameters
    ----------
    geom : shapely.Geometry
        Coordinates in ``crs``, ``east_north`` order (longitude, latitude when geographic).
    crs : pyproj.CRS or None
        For a geographic CRS the area on its ellipsoid is returned, in m²: the planar area
        after projecting to the Lambert cylindrical equal-area projection of that ellipsoid
        (``+proj=cea``, Snyder 1987, Map Projections: A Working Manual, USGS PP 1395,
        pp. 76-85), which is exact for the ellipsoid and maps meridians and parallels to
        straight lines, so graticule-bounded regions (lon/lat boxes) and any exact tiling of
        them measure exactly; lines and points have no area. For a projected CRS, or None,
        the planar area is returned in CRS units squared (e.g. US survey feet² for
        EPSG:2263), not m².
    """
    if geom is None or geom.is_empty:
        return 0.0
    if crs is None or not crs.is_geographic:
        return float(geom.area)
    to_cea = _equal_area_transformer(crs)
    projected = shapely.transform(
        geom, lambda xy: np.column_stack(to_cea.transform(xy[:, 0], xy[:, 1]))
    )
    return float(shapely.area(projected))


@functools.lru_cache(maxsize=64)
def _equal_area_transformer(crs: CRS) -> Transformer:
    """lon/lat of ``crs`` -> Lambert cylindrical equal-area (metres) on its ellipsoid."""
    e = crs.ellipsoid
    if e is None:  # pragma: no cover - every geographic CRS has an ellipsoid
        raise CrsError(f"{crs_label(crs)} has no ellipsoid: cannot compute an area in m2")
    shape = f"+rf={e.inverse_flattening}" if e.inverse_flattening else f"+b={e.semi_minor_metre}"
    cea = CRS.from_proj4(f"+proj=cea +lon_0=0 +lat_ts=0 +a={e.semi_major_metre} {shape} +units=m")
    return Transformer.from_crs(crs.geodetic_crs or crs, cea, always_xy=True)


def fraction_covered(geoms: np.ndarray, usable: np.ndarray, region: shapely.Geometry) -> float:
    """Share of features covered by ``region`` (vectorized ``shapely.covered_by``).

    Parameters
    ----------
    geoms : ndarray of shapely geometries
        ``east_north`` order, in the region's CRS.
    usable : ndarray of bool
        Features that may be tested; the others (missing, empty, NaN/inf coordinates) count
        as *not* inside, and are never passed to GEOS (which rejects NaN coordinates).

    Returns
    -------
    float
        In [0, 1]; 1.0 for an empty array (nothing lies outside).
    """
    n = len(geoms)
    if n == 0:
        return 1.0
    mask = np.asarray(usable, dtype=bool)
    if not mask.any():
        return 0.0
    shapely.prepare(region)
    inside = np.asarray(shapely.covered_by(geoms[mask], region), dtype=bool)
    return float(np.count_nonzero(inside)) / n
