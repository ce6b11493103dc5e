"""Geometries at the antimeridian and the poles after vertex-by-vertex reprojection.

Splitting at 180 degrees (RFC 7946 section 3.1.9), and the polar caps that
:func:`worker.core.spatial.reproject.reproject_to_lonlat` builds for polygons enclosing a pole.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import shapely
from pyproj import CRS, Transformer

from worker.core.spatial.crs import cached_transformer

__all__ = [
    "split_at_antimeridian",
]


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
        wide = (b[:, 2] - b[:, 0]) > 180.0
        candidates = np.flatnonzero(wide & ~_nonfinite(geoms))
    if candidates.size == 0:
        return geoms

    def _east(xy: np.ndarray) -> np.ndarray:
        out = xy.copy()  # z, when present, is kept
        out[:, 0] = np.where(xy[:, 0] < 0, xy[:, 0] + 360.0, xy[:, 0])
        return out

    def _west(xy: np.ndarray) -> np.ndarray:
        out = xy.copy()
        out[:, 0] -= 360.0
        return out

    shifted = shapely.transform(geoms[candidates], _east, include_z=None)
    sb = shapely.bounds(shifted)
    narrower = (sb[:, 2] - sb[:, 0]) < (b[candidates, 2] - b[candidates, 0])
    idx, shifted = candidates[narrower], shifted[narrower]
    if idx.size == 0:
        return geoms

    def _split(g: Any) -> Any:
        west_of_180 = shapely.intersection(g, shapely.box(-180.0, -90.0, 180.0, 90.0))
        east_of_180 = shapely.transform(
            shapely.intersection(g, shapely.box(180.0, -90.0, 540.0, 90.0)),
            _west,
            include_z=None,
        )
        return shapely.union(west_of_180, east_of_180)

    out = geoms.copy()
    try:
        out[idx] = _split(shifted)
    except shapely.errors.GEOSException:
        # an invalid geometry (e.g. self-intersecting after reprojection) cannot be cut:
        # that one stays as reprojected (validity judges it), the others are split
        for i, g in zip(idx, shifted, strict=True):
            try:
                out[i] = _split(g)
            except shapely.errors.GEOSException:
                continue
    return out


def _nonfinite(geoms: np.ndarray) -> np.ndarray:
    """bool (N,): some x or y of the geometry is NaN or inf."""
    counts = np.asarray(shapely.get_num_coordinates(geoms), dtype=np.intp)
    xy = shapely.get_coordinates(geoms)
    out = np.zeros(len(geoms), dtype=bool)
    out[np.repeat(np.arange(len(geoms)), counts)[~np.isfinite(xy).all(axis=1)]] = True
    return out


def _pole_images(src: CRS, dst: CRS) -> list[tuple[float, float, float]]:
    """(x, y, latitude) in ``src`` of the poles of geographic ``dst`` that ``src`` can
    represent (finite, and transforming back lands on the pole)."""
    to_src = cached_transformer(dst, src)
    back = cached_transformer(src, dst)
    out = []
    for lat in (90.0, -90.0):
        with np.errstate(all="ignore"):
            x, y = to_src.transform(0.0, lat, errcheck=False)
            if not (np.isfinite(x) and np.isfinite(y)):
                continue
            _, lat_back = back.transform(x, y, errcheck=False)
        if np.isfinite(lat_back) and abs(lat_back - lat) < 1e-6:
            out.append((float(x), float(y), lat))
    return out


def _wrap_to_180(geom: shapely.Geometry) -> shapely.Geometry:
    """A lon/lat geometry whose longitudes run continuously beyond ±180 cut into pieces at
    the antimeridian, each moved by a multiple of 360 degrees into [-180, 180]."""
    x0, _, x1, _ = geom.bounds
    pieces = []
    for k in range(int(np.floor((x0 + 180.0) / 360.0)), int(np.floor((x1 + 180.0) / 360.0)) + 1):
        lo = -180.0 + 360.0 * k
        piece = shapely.intersection(geom, shapely.box(lo, -90.0, lo + 360.0, 90.0))
        if not piece.is_empty:
            pieces.append(shapely.transform(piece, lambda c, k=k: c - np.array([360.0 * k, 0.0])))
    return shapely.union_all(pieces) if pieces else geom


def _ring_region(lon: np.ndarray, lat: np.ndarray, pole_lat: float) -> shapely.Geometry:
    """The lon/lat area a ring encloses. Longitudes are unwrapped to run continuously; a
    ring that winds once around a pole (its longitude changes by 360 degrees) is closed
    along the pole's parallel (lat ``pole_lat``) across every longitude, a polar cap."""
    lon = np.unwrap(lon, period=360.0)
    if round((lon[-1] - lon[0]) / 360.0) != 0:
        lon = np.concatenate([lon, [lon[-1], lon[0], lon[0]]])
        lat = np.concatenate([lat, [pole_lat, pole_lat, lat[0]]])
    return _wrap_to_180(shapely.Polygon(np.column_stack([lon, lat])))


def _polar_polygon(
    geom: shapely.Geometry, to_lonlat: Transformer, poles: list[tuple[float, float, float]]
) -> shapely.Geometry | None:
    """A (multi)polygon of ``src`` coordinates that encloses a pole, as lon/lat polygons
    reaching that pole; None when a ring cannot be transformed or overlaid."""
    regions = []
    for part in shapely.get_parts(geom):
        shell = shapely.Polygon(part.exterior)
        inside = [lat for x, y, lat in poles if shell.contains(shapely.Point(x, y))]
        rings = []
        for ring in (part.exterior, *part.interiors):
            c = np.asarray(ring.coords)
            with np.errstate(all="ignore"):
                lon, lat = (np.asarray(v, float) for v in to_lonlat.transform(c[:, 0], c[:, 1]))
            if not (np.isfinite(lon).all() and np.isfinite(lat).all()):
                return None
            rings.append((lon, lat))
        pole_lat = inside[0] if inside else (90.0 if np.mean(rings[0][1]) >= 0 else -90.0)
        try:
            region = _ring_region(*rings[0], pole_lat)
            for hole in rings[1:]:
                region = shapely.difference(region, _ring_region(*hole, pole_lat))
        except shapely.errors.GEOSException:
            return None
        regions.append(region)
    return shapely.union_all(regions)
