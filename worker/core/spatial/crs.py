"""CRS resolution and equivalence, cached transformers, and the area of use of a CRS.

Coordinates are ``east_north`` (x is longitude/easting); transformers are built with
``always_xy=True`` (see :mod:`worker.core.spatial`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely
from pyproj import CRS, Transformer
from pyproj.exceptions import CRSError as PyprojCRSError

from worker.core._util.memo import identity_memo
from worker.core.errors import CrsError
from worker.core.spatial.units import relabel_units

__all__ = [
    "AREA_OF_USE_MARGIN_DEG",
    "AreaOfUse",
    "CrsInput",
    "area_of_use",
    "cached_transformer",
    "crs_equivalent",
    "crs_label",
    "geographic_base",
    "outside_area_of_use",
    "resolve_crs",
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
        of a ``.prj`` sidecar), or PROJJSON as a string or a dict.

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
    if (ca.is_geographic, ca.is_projected) != (cb.is_geographic, cb.is_projected):
        return False  # an EPSG code names one kind of CRS (OGC:CRS84's query: 20 ms)
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
        return relabel_units(name, crs)  # units from the axes, not from the name (T14)
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
    # by column, no copy if all finite: an (M, 2) mask's reduction + copies, 3.5 ms/65,536
    finite = np.isfinite(xy[:, 0]) & np.isfinite(xy[:, 1])
    if not finite.all():
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
    out[owner[bad]] = True  # not np.unique: its first call imports numpy.ma (0.1 s)
    return out


@identity_memo(maxsize=64)
def _to_geodetic_transformer(crs: CRS) -> Transformer:
    return Transformer.from_crs(crs, crs.geodetic_crs or crs, always_xy=True)
