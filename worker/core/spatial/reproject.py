"""Reprojection of geometry arrays: axis swap, densified edges, and lon/lat targets.

Coordinates are ``east_north`` in and out (see :mod:`worker.core.spatial`).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import shapely
from pyproj import CRS

from worker.core.spatial.antimeridian import _polar_polygon, _pole_images, split_at_antimeridian
from worker.core.spatial.crs import CrsInput, cached_transformer

__all__ = [
    "DENSIFY_PIECES",
    "densify_for_transform",
    "reproject",
    "reproject_to_lonlat",
    "swap_xy",
]


def swap_xy(geoms: Any) -> Any:
    """Exchange x and y of every coordinate (vectorized; z is kept; None stays None)."""

    def _swap(c: np.ndarray) -> np.ndarray:
        out = c.copy()
        out[:, 0], out[:, 1] = c[:, 1], c[:, 0]
        return out

    with np.errstate(invalid="ignore"):  # NaN coordinates pass through unchanged
        return shapely.transform(geoms, _swap, include_z=None)


#: Pieces the longest side of a geometry's bounding box is cut into before reprojection
#: (:func:`densify_for_transform`): a straight edge in one CRS is a curve in another.
DENSIFY_PIECES = 64


def densify_for_transform(geoms: Any, pieces: int = DENSIFY_PIECES) -> Any:
    """Insert vertices so that no edge is longer than 1/``pieces`` of the longest side of
    its geometry's bounding box (``shapely.segmentize``, vectorized, per geometry).

    Reprojecting vertex by vertex keeps every edge straight in the target CRS; densifying
    first makes the result follow the true image of each edge (the bulge of a long edge).
    Points, None and empty geometries pass unchanged; non-finite coordinates are left alone,
    and so is a geometry GEOS refuses to densify (coordinates past about 1e154).
    """
    geoms = np.asarray(geoms, dtype=object)
    if geoms.size == 0:
        return geoms
    with np.errstate(invalid="ignore", over="ignore"):
        b = np.asarray(shapely.bounds(geoms), dtype=float).reshape(-1, 4)
        side = np.maximum(b[:, 2] - b[:, 0], b[:, 3] - b[:, 1])
        length = side / float(pieces)
    ok = np.isfinite(length) & (length > 0) & ~np.asarray(shapely.is_missing(geoms), dtype=bool)
    ok[_segmentize_crashes(geoms, ok)] = False
    if not ok.any():
        return geoms
    out = geoms.copy()
    with np.errstate(invalid="ignore"):  # NaN vertices stay as they are
        try:
            out[ok] = shapely.segmentize(geoms[ok], length[ok])
        except shapely.errors.GEOSException:
            # one geometry GEOS cannot densify fails the whole call (coordinates past
            # 1e154, whose squared lengths overflow: "Tolerance is too small compared to
            # geometry length"): densify one by one, and leave that one undensified
            for i in np.flatnonzero(ok).tolist():
                with contextlib.suppress(shapely.errors.GEOSException):
                    out[i] = shapely.segmentize(geoms[i], length[i])
    return out


def _segmentize_crashes(geoms: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """int (K,): indices among ``candidates`` (bool (N,)) of the multi-part geometries and
    collections that ``shapely.segmentize`` must not see: those with an empty part or a
    nested collection. GEOS 3.14 ends the process with SIGSEGV on
    ``MULTIPOINT (EMPTY, (1 1))`` or ``GEOMETRYCOLLECTION (POINT EMPTY, POINT (1 1))``
    (one such feature killed the worker whenever its batch was reprojected). They are
    reprojected vertex by vertex, undensified."""
    multi = np.flatnonzero(candidates & (np.asarray(shapely.get_type_id(geoms)) >= 4))
    if not multi.size:
        return multi
    parts, owner = shapely.get_parts(geoms[multi], return_index=True)
    risky = np.asarray(shapely.is_empty(parts), dtype=bool) | (
        np.asarray(shapely.get_type_id(parts)) >= 4
    )
    return np.asarray(multi[np.unique(owner[risky])], dtype=np.intp)


def reproject(geoms: Any, src: CrsInput, dst: CrsInput, *, densify: bool = True) -> Any:
    """Reproject geometries (``east_north`` order in and out) from ``src`` to ``dst``.

    With ``densify`` (default) edges are first densified (:func:`densify_for_transform`) so
    long edges keep their true shape in ``dst``. Coordinates that cannot be transformed
    come back as ``inf``; callers must check finiteness before using the result in
    predicates (see :func:`worker.core.facts.batch.nonfinite_mask`).
    """
    transformer = cached_transformer(src, dst)

    def _tx(c: np.ndarray) -> np.ndarray:
        # x and y as two contiguous rows, transformed in place: pyproj copies strided
        # columns, and stacking its results copied them again (1.2 of 2.8 s of a
        # diagnosis reprojecting 10,000 densified polygons)
        xy = np.array(c[:, :2].T, dtype=float, order="C")
        transformer.transform(xy[0], xy[1], errcheck=False, inplace=True)
        return xy.T

    if densify:
        geoms = densify_for_transform(geoms)
    with np.errstate(all="ignore"):
        return shapely.transform(geoms, _tx, include_z=False)


def reproject_to_lonlat(geoms: Any, src: CRS, dst: CRS) -> np.ndarray:
    """Reproject from a projected ``src`` to a geographic ``dst`` (``east_north``), right
    along edges, at the antimeridian and at the poles.

    Edges are densified first (:func:`reproject`). A polygon that encloses a pole in
    ``src`` (the pole, transformed into ``src``, lies inside one of its exterior rings)
    becomes the lon/lat polygon that reaches that pole across all longitudes (a polar cap
    of UPS North or Antarctic polar stereographic data), where vertex-by-vertex
    reprojection gives a sliver. Other geometries that crossed the antimeridian are split
    there (:func:`split_at_antimeridian`, RFC 7946 section 3.1.9). Coordinates that cannot
    be transformed come back non-finite (callers must check them).

    Returns
    -------
    ndarray of shapely geometries (object), one per input, None stays None.
    """
    geoms = np.asarray(geoms, dtype=object)
    dense = np.asarray(densify_for_transform(geoms), dtype=object)
    out = np.asarray(split_at_antimeridian(reproject(dense, src, dst, densify=False)), dtype=object)
    poles = _pole_images(src, dst)
    if not poles or out.size == 0:
        return out
    polygonal = np.isin(shapely.get_type_id(dense), (3, 6))
    if not polygonal.any():
        return out
    idx = np.flatnonzero(polygonal)
    parts, owner = shapely.get_parts(dense[idx], return_index=True)
    shells = shapely.polygons(shapely.get_exterior_ring(parts))
    hits = np.zeros(len(parts), dtype=bool)
    for x, y, _ in poles:
        with np.errstate(invalid="ignore"):
            hits |= np.asarray(shapely.contains_xy(shells, x, y), dtype=bool)
    to_lonlat = cached_transformer(src, dst)
    for i in np.unique(idx[owner[hits]]):
        polar = _polar_polygon(dense[i], to_lonlat, poles)
        if polar is not None:
            out[i] = polar
    return out
