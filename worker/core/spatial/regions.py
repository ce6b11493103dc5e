"""Regions of extent and coverage clauses: their geometry, their area, what they cover.

Regions are written in the contract CRS, ``east_north`` order; areas are m² for a
geographic CRS and CRS units squared for a projected one (:func:`area_m2_or_units`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import shapely
from pyproj import CRS, Transformer

from worker.core._util.memo import identity_memo
from worker.core.errors import ContractError, CrsError
from worker.core.spatial.crs import crs_label

__all__ = [
    "area_m2_or_units",
    "covered_mask",
    "fraction_covered",
    "region_geometry",
]


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
        The region is neither a 4-number bbox nor parseable WKT, or ``miny > maxy``.
    ContractError
        ``minx > maxx`` in a projected CRS (or, with none, beyond ±180): the contract
        cannot be applied to coordinates in that CRS.
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
        where = f"the projected CRS {crs_label(crs)}" if crs is not None else "no CRS"
        raise ContractError(
            f"region {region!r} has minx > maxx, which only a geographic CRS allows "
            f"(a bbox crossing the antimeridian), and it is read in {where}",
            fix="give the region's CRS (a crs clause, or the clause's crs), or write minx < maxx",
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


@identity_memo(maxsize=64)
def _equal_area_transformer(crs: CRS) -> Transformer:
    """lon/lat of ``crs`` -> Lambert cylindrical equal-area (metres) on its ellipsoid."""
    e = crs.ellipsoid
    if e is None:  # pragma: no cover - every geographic CRS has an ellipsoid
        raise CrsError(f"{crs_label(crs)} has no ellipsoid: cannot compute an area in m2")
    shape = f"+rf={e.inverse_flattening}" if e.inverse_flattening else f"+b={e.semi_minor_metre}"
    cea = CRS.from_proj4(f"+proj=cea +lon_0=0 +lat_ts=0 +a={e.semi_major_metre} {shape} +units=m")
    return Transformer.from_crs(crs.geodetic_crs or crs, cea, always_xy=True)


def covered_mask(
    geoms: np.ndarray | Callable[[], np.ndarray],
    usable: np.ndarray,
    region: shapely.Geometry,
    bounds: np.ndarray | None = None,
) -> np.ndarray:
    """bool (N,): features covered by ``region`` (vectorized ``shapely.covered_by``).

    ``geoms`` are ``east_north`` geometries in the region's CRS; features not ``usable``
    (missing, empty, NaN/inf coordinates) are False and never passed to GEOS (which
    rejects NaN coordinates). An axis-aligned rectangle is decided on the envelopes
    (``bounds``, float (N, 4), may be passed when already known; ``geoms`` may then be a
    function returning them, called only for a region that is not a rectangle).
    """
    mask = np.asarray(usable, dtype=bool)
    out = np.zeros(len(mask), dtype=bool)
    if not mask.any():
        return out
    box = _as_box(region)
    if box is not None:
        # an axis-aligned rectangle covers a geometry exactly when it covers the
        # geometry's envelope (every point lies within the min/max of the coordinates)
        if bounds is None:
            geoms = np.asarray(geoms() if callable(geoms) else geoms, dtype=object)
            b = np.asarray(shapely.bounds(geoms[mask]), dtype=float).reshape(-1, 4)
        else:
            b = np.asarray(bounds, dtype=float).reshape(-1, 4)[mask]
        x0, y0, x1, y1 = box
        out[mask] = (b[:, 0] >= x0) & (b[:, 1] >= y0) & (b[:, 2] <= x1) & (b[:, 3] <= y1)
        return out
    shapely.prepare(region)
    geoms = np.asarray(geoms() if callable(geoms) else geoms, dtype=object)
    out[mask] = np.asarray(shapely.covered_by(geoms[mask], region), dtype=bool)
    return out


@identity_memo(maxsize=64)  # holds the region geometries alive: keep few
def _as_box(region: shapely.Geometry) -> tuple[float, float, float, float] | None:
    """``(minx, miny, maxx, maxy)`` when ``region`` is exactly an axis-aligned rectangle
    (a bbox region, also after a mitred buffer), else None."""
    if region.geom_type != "Polygon" or region.is_empty or len(region.interiors):
        return None
    bounds = tuple(float(v) for v in region.bounds)
    if not all(np.isfinite(bounds)):
        return None
    rect = shapely.box(*bounds)
    same = shapely.equals(region, rect) and abs(region.area - rect.area) <= 0.0
    return bounds if same else None  # type: ignore[return-value]


def fraction_covered(geoms: np.ndarray, usable: np.ndarray, region: shapely.Geometry) -> float:
    """Share of features covered by ``region`` (see :func:`covered_mask`).

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
    return float(np.count_nonzero(covered_mask(geoms, usable, region))) / n
