"""Checks of a contract document that JSON Schema cannot express.

Keys and numbers before the schema (domain code types, finite numbers); after it, unique
clause names, durations that parse, CRS definitions that resolve, and regions well formed and
within the range of the CRS they are written in.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

from worker.core._util.durations import parse_duration_s
from worker.core.clauses import KINDS
from worker.core.contracts.finite import _beyond_double
from worker.core.contracts.fixes import _DURATION_FIX, _FIXES, _fail, _path

#: Nothing public: the helpers here are imported by name by :mod:`worker.core.contracts.parse`.
__all__: list[str] = []


def _check_keys(doc: Any, source: str) -> None:
    """Domain codes must be str or int; every other key must be a string."""
    clauses = doc.get("clauses") if isinstance(doc, dict) else None
    for i, c in enumerate(clauses if isinstance(clauses, list) else []):
        values = c.get("values") if isinstance(c, dict) else None
        if not isinstance(values, dict):
            continue
        for code in values:
            if isinstance(code, bool) or not isinstance(code, (int, str)):
                raise _fail(
                    source,
                    ["clauses", i, "values", str(code)],
                    f"domain code {code!r} is a {type(code).__name__}",
                    "quote it (YAML reads on/off/yes/no as booleans, 1.5 as a float)",
                )


def _region_crs(doc: dict[str, Any], clause: dict[str, Any]) -> Any:
    """The CRS a clause's region is written in (clause ``crs``, else the crs clause's
    ``expect``, as :func:`worker.core.clauses.kinds.contract_crs`), resolved; None when the
    region is in the batch's declared CRS or the CRS does not resolve (reported on its own
    field)."""
    from worker.core.errors import CrsError
    from worker.core.spatial.crs import resolve_crs

    text = clause.get("crs")
    if text is None:
        text = next((c.get("expect") for c in doc["clauses"] if c.get("kind") == "crs"), None)
    if text is None:
        return None
    try:
        return resolve_crs(text)
    except CrsError:
        return None


def _check_region(source: str, path: list[Any], region: Any, crs: Any = None) -> None:
    """A bbox or WKT region is well formed, finite and within the range of ``crs``.

    ``crs`` (a pyproj CRS or None) is the CRS the region is written in; with it, a
    geographic CRS in degrees needs longitudes in [-180, 180] and latitudes in [-90, 90]
    (``east_north`` order: [minx, miny, maxx, maxy] = [west, south, east, north]; minx >
    maxx crosses the antimeridian), and a projected CRS needs the region near its area of
    use (:func:`_check_region_in_crs`).
    """
    if isinstance(region, list):
        names = ("minx", "miny", "maxx", "maxy")
        for name, v in zip(names, region, strict=True):
            if (why := _beyond_double(v)) is not None:
                raise _fail(
                    source,
                    path,
                    f"{name} is {why} (not a finite number; a literal beyond about 1.8e308, "
                    "e.g. 1.0e+400, overflows to infinity)",
                    "write finite numbers, e.g. [8.4, 47.3, 8.6, 47.5]",
                )
        if region[1] > region[3]:
            raise _fail(source, path, "miny is greater than maxy", _FIXES["region"])
        if region[0] == region[2] or region[1] == region[3]:
            raise _fail(source, path, "the bbox has zero width or height", _FIXES["region"])
        if (
            crs is None
            and region[0] > region[2]
            and not all(-180 <= v <= 180 for v in (region[0], region[2]))
        ):
            raise _fail(
                source,
                path,
                "minx is greater than maxx: a bbox crossing the antimeridian, which needs "
                "longitudes in [-180, 180]",
                "write [minx, miny, maxx, maxy] with minx < maxx, or give the region's CRS "
                "(a crs clause, or the clause's crs)",
            )
        if crs is not None and not crs.is_geographic and region[0] > region[2]:
            raise _fail(
                source,
                path,
                f"minx is greater than maxx in the projected CRS {_label(crs)} (only a "
                "geographic bbox may cross the antimeridian)",
                "write [minx, miny, maxx, maxy] with minx < maxx",
            )
        _check_region_in_crs(source, path, [float(v) for v in region], crs)
        return
    import shapely

    try:
        with np.errstate(all="ignore"):  # 1e400 in WKT overflows to inf: refused below
            geom = shapely.from_wkt(region)
    except shapely.errors.GEOSException as exc:
        raise _fail(source, path, f"not readable as WKT ({exc})", _FIXES["region"]) from None
    if geom is None or geom.is_empty or geom.geom_type not in ("Polygon", "MultiPolygon"):
        raise _fail(source, path, "the WKT is not a non-empty polygon", _FIXES["region"])
    coords = shapely.get_coordinates(geom)
    if not bool(np.isfinite(coords).all()):
        raise _fail(
            source, path, "the WKT polygon has a non-finite coordinate (NaN or inf)", "use numbers"
        )
    if not shapely.is_valid(geom):
        raise _fail(
            source,
            path,
            f"the WKT polygon is invalid ({shapely.is_valid_reason(geom)})",
            "make the ring simple (no self-intersection), e.g. list the vertices in order "
            "around the boundary",
        )
    _check_region_in_crs(source, path, [float(b) for b in geom.bounds], crs)


def _label(crs: Any) -> str:
    from worker.core.spatial.crs import crs_label

    return crs_label(crs)


def _check_region_in_crs(source: str, path: list[Any], bounds: list[float], crs: Any) -> None:
    """``bounds`` ([minx, miny, maxx, maxy], finite) lie within the range of ``crs``.

    Geographic CRS: x (longitude) within half a turn of 0, y (latitude) within a quarter
    turn, in the CRS's angular unit: [-180, 180] x [-90, 90] in degrees, [-200, 200] x
    [-100, 100] in grads (EPSG:4807 NTF Paris), [-pi, pi] x [-pi/2, pi/2] in radians.
    Projected CRS with an area of use (EPSG): the area of use (lon/lat, EPSG database) is
    transformed into the CRS with ``pyproj.Transformer.transform_bounds`` (densified
    edges); a region reaching beyond that box by more than the box's larger side is "far
    outside" and refused (an order-of-magnitude slip, or degrees and metres mixed up). A
    CRS without area of use, or whose area does not transform to finite bounds, is not
    range-checked.
    """
    if crs is None:
        return
    minx, miny, maxx, maxy = bounds
    if crs.is_geographic:
        unit, half_turn = _half_turn(crs)
        for name, v, hi, axis in (
            ("minx", minx, half_turn, "longitude"),
            ("maxx", maxx, half_turn, "longitude"),
            ("miny", miny, half_turn / 2, "latitude"),
            ("maxy", maxy, half_turn / 2, "latitude"),
        ):
            if not -hi <= v <= hi:
                raise _fail(
                    source,
                    path,
                    f"{axis} {v:g} ({name}) is outside [{-hi:g}, {hi:g}] in the geographic CRS "
                    f"{_label(crs)}",
                    f"write the region in {unit}s, longitude (x) first: [west, south, east, "
                    "north] with west > east for a region crossing the antimeridian",
                )
        return
    area = _area_of_use_in_crs(crs)
    if area is None:
        return
    ax0, ay0, ax1, ay1 = area
    margin = max(ax1 - ax0, ay1 - ay0)
    if minx < ax0 - margin or maxx > ax1 + margin or miny < ay0 - margin or maxy > ay1 + margin:
        raise _fail(
            source,
            path,
            f"the region [{minx:.6g}, {miny:.6g}, {maxx:.6g}, {maxy:.6g}] lies far outside "
            f"the area of use of {_label(crs)} ({crs.area_of_use.name}: about "
            f"[{ax0:.6g}, {ay0:.6g}, {ax1:.6g}, {ay1:.6g}] in CRS units)",
            f"write the region in {_label(crs)} units ({crs.axis_info[0].unit_name}), or "
            "declare the CRS it is written in",
        )


def _half_turn(crs: Any) -> tuple[str, float]:
    """The angular unit of a geographic CRS's axes (``degree``, ``grad``, ...) and half a turn
    (pi radians) in it: 180 in degrees, 200 in grads."""
    axis = crs.axis_info[0] if crs.axis_info else None
    if axis is None or not axis.unit_conversion_factor > 0:
        return "degree", 180.0
    return axis.unit_name, round(math.pi / axis.unit_conversion_factor, 9)


@cache
def _area_of_use_in_crs(crs: Any) -> tuple[float, float, float, float] | None:
    """The EPSG area of use of a projected CRS as [minx, miny, maxx, maxy] in the CRS; None
    when it has none or it does not transform to finite bounds."""
    from pyproj import Transformer
    from pyproj.exceptions import ProjError

    aou = crs.area_of_use
    base = crs.geodetic_crs
    if aou is None or base is None:
        return None
    try:
        tx = Transformer.from_crs(base, crs, always_xy=True)
        out = tx.transform_bounds(aou.west, aou.south, aou.east, aou.north, densify_pts=21)
    except ProjError:
        return None
    if not all(math.isfinite(v) for v in out):
        return None
    return (float(out[0]), float(out[1]), float(out[2]), float(out[3]))


def _check_crs(source: str, path: list[Any], text: str) -> None:
    from worker.core.errors import CrsError
    from worker.core.spatial.crs import resolve_crs

    try:
        resolve_crs(text)
    except CrsError as exc:
        raise _fail(source, path, f"CRS {text!r} does not resolve ({exc})", _FIXES["crs"]) from None


def _semantic_checks(doc: dict[str, Any], source: str) -> float:
    """Checks JSON Schema cannot express; returns cadence in seconds."""
    durations: list[tuple[list[Any], str]] = [(["cadence"], doc["cadence"])]
    seen: dict[str, int] = {}
    for i, c in enumerate(doc["clauses"]):
        if c["name"] in seen:
            raise _fail(
                source,
                ["clauses", i, "name"],
                f"clause name {c['name']!r} is already used by clauses[{seen[c['name']]}]",
                "clause names must be unique within a version; rename one",
            )
        seen[c["name"]] = i
        for key in ("max_age", "max_clock_skew"):
            if key in c:
                durations.append((["clauses", i, key], c[key]))
        if "region" in c:
            _check_region(source, ["clauses", i, "region"], c["region"], _region_crs(doc, c))
        kind = KINDS.get(c["kind"])
        found = kind.check(c) if kind is not None and kind.check is not None else None
        if found is not None:  # the kind's own checks of what the schema cannot say
            where, problem, fix = found
            raise _fail(source, ["clauses", i, *where], problem, fix)
        if c["kind"] == "crs":
            _check_crs(source, ["clauses", i, "expect"], c["expect"])
        if "crs" in c:
            _check_crs(source, ["clauses", i, "crs"], c["crs"])
    seconds = {}
    for path, text in durations:
        try:
            seconds[_path(path)] = parse_duration_s(text)
        except ValueError as exc:
            raise _fail(source, path, f"invalid duration {text!r} ({exc})", _DURATION_FIX) from None
    if seconds["cadence"] <= 0:
        raise _fail(source, ["cadence"], "the cadence must be longer than zero", _DURATION_FIX)
    return seconds["cadence"]
