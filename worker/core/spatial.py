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

import contextlib
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely
from pyproj import CRS, Geod, Transformer
from pyproj.exceptions import CRSError as PyprojCRSError

from worker.core._util.memo import identity_memo
from worker.core.errors import CrsError

__all__ = [
    "AREA_OF_USE_MARGIN_DEG",
    "CrsInput",
    "area_m2_or_units",
    "area_of_use",
    "cached_transformer",
    "covered_mask",
    "crs_equivalent",
    "crs_label",
    "densify_for_transform",
    "densify_spherical",
    "fraction_covered",
    "geographic_base",
    "outside_area_of_use",
    "region_geometry",
    "reproject",
    "reproject_to_lonlat",
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


@identity_memo(maxsize=1024)
def _crs_equivalent(ca: CRS, cb: CRS) -> bool:
    # cached per pair of (cached, hence identical) CRS objects: the EPSG identification
    # below queries the PROJ database and must not run for every batch
    if ca.equals(cb, ignore_axis_order=True):
        return True
    ea, eb = ca.to_epsg(min_confidence=100), cb.to_epsg(min_confidence=100)
    return ea is not None and ea == eb


@identity_memo(maxsize=256)
def crs_label(crs: CRS) -> str:
    """A short readable name: ``EPSG:2263`` when identifiable, else the CRS name, else (a
    PROJ string's CRS is named "unknown") its PROJ or WKT text, clipped to 80 characters."""
    auth = crs.to_authority(min_confidence=90)
    if auth:
        return f"{auth[0]}:{auth[1]}"
    name = str(crs.name or "")
    if name and name.lower() != "unknown":
        return name
    text = " ".join(crs.to_string().split())
    return text if len(text) <= 80 else text[:79] + "…"


def geographic_base(crs: CRS) -> CRS | None:
    """The geographic (geodetic) CRS a projected CRS is built on, or None."""
    return crs.geodetic_crs


def cached_transformer(src: CrsInput, dst: CrsInput) -> Transformer:
    """One :class:`pyproj.Transformer` per (source, target) pair, ``always_xy=True``.

    Both arguments are resolved with :func:`resolve_crs` (a CRS string, PROJJSON or a
    :class:`pyproj.CRS`); the transformer is cached per resolved pair.
    """
    return _transformer(resolve_crs(src), resolve_crs(dst))


@identity_memo(maxsize=256)
def _transformer(src: CRS, dst: CRS) -> Transformer:
    return Transformer.from_crs(src, dst, always_xy=True)


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
    (found by a new-user session: one such feature killed the worker whenever its batch
    was reprojected). They are reprojected vertex by vertex, undensified."""
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
        x, y = transformer.transform(c[:, 0], c[:, 1], errcheck=False)
        return np.column_stack([np.asarray(x, dtype=float), np.asarray(y, dtype=float)])

    if densify:
        geoms = densify_for_transform(geoms)
    with np.errstate(all="ignore"):
        return shapely.transform(geoms, _tx, include_z=False)


#: Degrees added around a CRS's area of use (EPSG rounds its bounds to 0.01 degree, e.g.
#: 85.06 for Web Mercator whose true limit is 85.0511).
AREA_OF_USE_MARGIN_DEG = 0.01


@dataclass(frozen=True)
class AreaOfUse:
    """Where coordinates of one CRS are meaningful (see :func:`area_of_use`).

    ``lonlat`` is (west, south, east, north) in degrees on the CRS's geodetic CRS, margin
    included (``west > east`` crosses the antimeridian; ``full_longitude`` when every
    longitude is in). ``bounds`` is the same area in CRS units (``east_north``), from
    :meth:`pyproj.Transformer.transform_bounds` with densified edges; for a projected CRS
    whose area spans every longitude, x may exceed it by one width on each side (a
    geometry crossing the antimeridian written continuously, e.g. Web Mercator x beyond
    20037508 m). ``text`` describes it for messages.
    """

    lonlat: tuple[float, float, float, float]
    bounds: tuple[float, float, float, float]
    full_longitude: bool
    geographic: bool
    text: str


@identity_memo(maxsize=256)
def area_of_use(crs: CRS) -> AreaOfUse | None:
    """The area of use of ``crs`` (EPSG), cached per CRS; None when pyproj knows none.

    A geographic CRS's coordinates are meaningful worldwide (its datum's area of use only
    bounds its accuracy): longitude -180..180, latitude -90..90. A projected CRS uses
    :attr:`pyproj.CRS.area_of_use` widened by :data:`AREA_OF_USE_MARGIN_DEG`.
    """
    if crs.is_geographic:
        world = (-180.0, -90.0, 180.0, 90.0)
        return AreaOfUse(world, world, True, True, "longitude -180..180, latitude -90..90")
    aou = crs.area_of_use
    base = crs.geodetic_crs
    if aou is None or base is None:
        return None
    m = AREA_OF_USE_MARGIN_DEG
    w, s, e, n = (float(v) for v in aou.bounds)
    full = (e - w) >= 360.0 - 2 * m if w <= e else False
    s, n = max(s - m, -90.0), min(n + m, 90.0)
    if full:
        w, e = -180.0, 180.0
    else:
        w = w - m if w - m >= -180.0 else w - m + 360.0
        e = e + m if e + m <= 180.0 else e + m - 360.0
    try:
        to_crs = Transformer.from_crs(base, crs, always_xy=True)
        x0, y0, x1, y1 = to_crs.transform_bounds(w, s, e, n, densify_pts=21)
    except Exception:  # pyproj cannot bound it: check in lon/lat only
        x0, y0, x1, y1 = -np.inf, -np.inf, np.inf, np.inf
    if full and np.isfinite([x0, x1]).all():
        width = x1 - x0
        x0, x1 = x0 - width, x1 + width
    text = f"longitude {w:g}..{e:g}, latitude {s:g}..{n:g}"
    return AreaOfUse((w, s, e, n), (x0, y0, x1, y1), full, False, text)


def _envelopes_within(bounds: Any, area: tuple[float, float, float, float]) -> np.ndarray:
    """bool (N,): envelope rows (float (N, 4)) within ``area`` (minx, miny, maxx, maxy),
    with a 1e-9 tolerance; NaN rows are not within."""
    with np.errstate(invalid="ignore"):
        b = np.asarray(bounds, dtype=float).reshape(-1, 4)
        x0, y0, x1, y1 = area
        eps = 1e-9
        inside = (b[:, 0] >= x0 - eps) & (b[:, 1] >= y0 - eps)
        inside &= (b[:, 2] <= x1 + eps) & (b[:, 3] <= y1 + eps)
    return inside


def outside_area_of_use(
    geoms: Any,
    crs: CRS | None,
    bounds: np.ndarray | None = None,
    points: np.ndarray | None = None,
) -> np.ndarray:
    """bool (N,): some finite coordinate of the geometry lies outside ``crs``'s area of use.

    Tested on the coordinates as given (``east_north``, in ``crs``), before any reprojection
    can wrap them into range: Web Mercator y = 1e9 becomes latitude 90 and x = 1e279
    longitude -180 when inverted. A coordinate is outside when it is beyond the area's
    bounds in CRS units, or its inverse projection to longitude/latitude fails (non-finite)
    or lies outside the area of use (:func:`area_of_use`, EPSG). Non-finite coordinates are
    not tested (they are invalid geometries); None and empty geometries give False, and so
    does every geometry when ``crs`` is None or has no known area of use. ``bounds``
    (float (N, 4), ``shapely.bounds`` of ``geoms``) may be passed when already known.
    ``points`` (float (N, 2)): when every geometry is one finite point, its coordinates,
    tested instead of reading ``geoms`` (a batch of points need not be built as
    geometries).
    """
    if points is not None:
        n = len(points)
        if crs is None or not n or (aou_p := area_of_use(crs)) is None:
            return np.zeros(n, dtype=bool)
        return _xy_outside(points, np.arange(n), n, aou_p, crs)
    geoms = np.asarray(geoms, dtype=object)
    n = len(geoms)
    out = np.zeros(n, dtype=bool)
    if crs is None or not n:
        return out
    aou = area_of_use(crs)
    if aou is None:
        return out
    if aou.geographic:
        # a geometry whose envelope lies within the bounds has every finite coordinate
        # within them (a NaN coordinate can only make the envelope NaN, never narrower):
        # only the others need their coordinates tested
        b = shapely.bounds(geoms) if bounds is None else bounds
        inside = _envelopes_within(b, aou.bounds)
        missing = np.asarray(shapely.is_missing(geoms), dtype=bool)
        todo = np.flatnonzero(~inside & ~missing)
        if todo.size == 0:
            return out
        out[todo] = _coordinates_outside(geoms[todo], aou, crs)
        return out
    return _coordinates_outside(geoms, aou, crs)


def _coordinates_outside(geoms: np.ndarray, aou: AreaOfUse, crs: CRS) -> np.ndarray:
    """The exact test of :func:`outside_area_of_use`, coordinate by coordinate."""
    n = len(geoms)
    counts = np.asarray(shapely.get_num_coordinates(geoms), dtype=np.intp)
    xy = shapely.get_coordinates(geoms, include_z=False)
    return _xy_outside(xy, np.repeat(np.arange(n), counts), n, aou, crs)


def _xy_outside(xy: np.ndarray, owner: np.ndarray, n: int, aou: AreaOfUse, crs: CRS) -> np.ndarray:
    """bool (n,): features owning a coordinate of ``xy`` (float (M, 2)) outside ``aou``;
    ``owner`` (int (M,)) is the feature of each coordinate."""
    out = np.zeros(n, dtype=bool)
    finite = np.isfinite(xy).all(axis=1)
    xy, owner = xy[finite], owner[finite]
    x, y = xy[:, 0], xy[:, 1]
    x0, y0, x1, y1 = aou.bounds
    w, s, e, nn = aou.lonlat
    eps = 1e-9
    bad = (x < x0 - eps) | (x > x1 + eps) | (y < y0 - eps) | (y > y1 + eps)
    if not aou.geographic:
        to_lonlat = _to_geodetic_transformer(crs)
        with np.errstate(all="ignore"):
            lon, lat = (np.asarray(v, float) for v in to_lonlat.transform(x, y, errcheck=False))
        bad |= ~np.isfinite(lon) | ~np.isfinite(lat) | (lat < s) | (lat > nn)
        if not aou.full_longitude:
            inside_lon = (lon >= w) & (lon <= e) if w <= e else (lon >= w) | (lon <= e)
            bad |= ~inside_lon
    out[np.unique(owner[bad])] = True
    return out


@identity_memo(maxsize=64)
def _to_geodetic_transformer(crs: CRS) -> Transformer:
    return Transformer.from_crs(crs, crs.geodetic_crs or crs, always_xy=True)


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


#: Great circles do not depend on the sphere's radius; this one is the mean Earth radius
#: (IUGG), used only to express the densification step in metres.
_SPHERE = Geod(a=6371008.8, b=6371008.8)
#: Longest piece of a spherical edge after :func:`densify_spherical`, in metres.
SPHERICAL_STEP_M = 10_000.0


def densify_spherical(geoms: Any, step_m: float = SPHERICAL_STEP_M) -> np.ndarray:
    """Densify lon/lat geometries whose edges are great-circle arcs (GeoParquet
    ``edges: spherical``) so that their planar lon/lat reading follows the arcs.

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
