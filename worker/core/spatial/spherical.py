"""Great-circle edges (``edges: spherical``) densified for a planar lon/lat reading."""

from __future__ import annotations

from typing import Any

import numpy as np
import shapely
from pyproj import Geod

from worker.core.spatial.antimeridian import split_at_antimeridian

__all__ = [
    "SPHERICAL_STEP_M",
    "densify_spherical",
]


#: Great circles do not depend on the sphere's radius; this one is the mean Earth radius
#: (IUGG), used only to express the densification step in metres.
_SPHERE = Geod(a=6371008.8, b=6371008.8)
#: Longest piece of a spherical edge after :func:`densify_spherical`, in metres.
SPHERICAL_STEP_M = 10_000.0


def densify_spherical(geoms: Any, step_m: float = SPHERICAL_STEP_M) -> np.ndarray:
    """Densify lon/lat geometries whose edges are great-circle arcs
    (``edges: spherical``) so that their planar lon/lat reading follows the arcs.

    Every edge longer than ``step_m`` gets intermediate points on its great circle
    (:meth:`pyproj.Geod.inv_intermediate` on a sphere; z, when present, is interpolated
    linearly). An edge whose longitudes differ by more than 180 degrees is the short arc
    across the antimeridian; geometries with such edges are then split there
    (:func:`split_at_antimeridian`). No vertex is moved or removed. None, empty, point,
    non-finite and measured (M) geometries pass unchanged.

    Parameters
    ----------
    geoms : array of shapely geometries, ``east_north`` (longitude, latitude in degrees).
    step_m : float
        Longest piece, metres on the sphere (radius 6371008.8 m).
    """
    geoms = np.asarray(geoms, dtype=object)
    out = geoms.copy()
    crossed = np.zeros(len(geoms), dtype=bool)
    for i, g in enumerate(geoms):
        if g is None or g.is_empty or g.geom_type in ("Point", "MultiPoint") or g.has_m:
            continue
        if not np.isfinite(shapely.get_coordinates(g, include_z=g.has_z)).all():
            continue
        flags = {"crossed": False}

        def _arc(xy: np.ndarray, flags: dict[str, bool] = flags) -> np.ndarray:
            return _densify_path(xy, step_m, flags)

        try:
            out[i] = _rebuild(g, _arc)
        except (ValueError, shapely.errors.ShapelyError):
            continue  # left as it is: the clauses judge it as stored, never a crash
        crossed[i] = flags["crossed"]
    if crossed.any():
        idx = np.flatnonzero(crossed)
        out[idx] = split_at_antimeridian(out[idx])
    return out


def _densify_path(xy: np.ndarray, step_m: float, flags: dict[str, bool]) -> np.ndarray:
    """One coordinate path (x, y[, z]) with great-circle points inserted (see above)."""
    lon, lat = xy[:, 0], xy[:, 1]
    if len(lon) < 2:
        return xy
    flags["crossed"] |= bool(np.any(np.abs(np.diff(lon)) > 180.0))
    _, _, dist = _SPHERE.inv(lon[:-1], lat[:-1], lon[1:], lat[1:], return_back_azimuth=True)
    dist = np.atleast_1d(np.asarray(dist, dtype=float))
    pieces = [xy[:1]]
    for j in range(len(lon) - 1):
        n = int(np.ceil(dist[j] / step_m)) - 1
        if n > 0:
            mid = _SPHERE.inv_intermediate(
                lon[j], lat[j], lon[j + 1], lat[j + 1], npts=n, return_back_azimuth=True
            )
            cols = [np.asarray(mid.lons, dtype=float), np.asarray(mid.lats, dtype=float)]
            t = np.arange(1, n + 1) / (n + 1)
            cols += [xy[j, k] + t * (xy[j + 1, k] - xy[j, k]) for k in range(2, xy.shape[1])]
            pieces.append(np.column_stack(cols))
        pieces.append(xy[j + 1 : j + 2])
    return np.concatenate(pieces)


#: Collection type -> shapely's vectorized constructor, which keeps empty parts (the
#: classes refuse a MultiLineString with an empty part and drop a MultiPolygon's).
_COLLECTION_BUILDERS = {
    "MultiLineString": shapely.multilinestrings,
    "MultiPolygon": shapely.multipolygons,
    "GeometryCollection": shapely.geometrycollections,
}


def _rebuild(g: shapely.Geometry, path: Any) -> shapely.Geometry:
    """``g`` with the coordinates of each linestring and ring replaced by ``path(coords)``
    (coords as ``(n, 2)`` or ``(n, 3)`` arrays); empty geometries and parts unchanged."""
    if g.is_empty:
        return g
    kind = g.geom_type
    if kind == "Polygon":
        for r in (g.exterior, *g.interiors):
            c = np.asarray(r.coords)
            if len(c) and not np.array_equal(c[0], c[-1]):
                raise ValueError("open ring: left as it is (no reader or fact closes rings)")
    if kind == "LineString":
        return shapely.LineString(path(np.asarray(g.coords)))
    if kind == "LinearRing":
        return shapely.LinearRing(path(np.asarray(g.coords)))
    if kind == "Polygon":
        holes = [path(np.asarray(r.coords)) for r in g.interiors]
        return shapely.Polygon(path(np.asarray(g.exterior.coords)), holes)
    if kind in _COLLECTION_BUILDERS:
        return _COLLECTION_BUILDERS[kind]([_rebuild(p, path) for p in shapely.get_parts(g)])
    return g
