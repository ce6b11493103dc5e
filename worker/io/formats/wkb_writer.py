"""A literal WKB writer: coordinates go into the bytes exactly as given, never repaired.

GEOS's constructors behind shapely (``from_ragged_array``, ``linearrings``, ``polygons``)
close open rings silently, and GEOS's GeoJSON reader refuses an open ring outright, so
neither can hand a defect to the validity clause. These writers build ISO WKB (OGC Simple
Features 1.2.1, clause 8.2; little-endian; type codes 1..7 plus 1000 for Z, 2000 for M,
3000 for ZM) from the raw coordinates, so an open ring, a ring of three points or a
duplicate vertex reaches :class:`worker.core.facts.batch.BatchFacts` as it was written, and
GEOS's WKB reader reports it there (e.g. "Points of LinearRing do not form a closed
linestring").
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from worker.core.facts.wkb_header import EWKB_SRID_FLAG, type_code

__all__ = ["DIMENSIONS", "geojson_to_wkb", "ragged_to_wkb", "wkb_to_geojson"]

#: WKB base type codes of the OGC geometry types (GeoJSON ``type`` names).
_CODES = {
    "Point": 1,
    "LineString": 2,
    "Polygon": 3,
    "MultiPoint": 4,
    "MultiLineString": 5,
    "MultiPolygon": 6,
    "GeometryCollection": 7,
}
#: ISO WKB type code offset of each coordinate dimension (GeoArrow dimension names).
DIMENSIONS = {"xy": 0, "xyz": 1000, "xym": 2000, "xyzm": 3000}
_NESTING = {"Point": 0, "LineString": 1, "MultiPoint": 1, "Polygon": 2, "MultiLineString": 2}
_NESTING["MultiPolygon"] = 3
#: The integers a double holds without overflowing to infinity (an integer literal beyond
#: them is exact in Python, and ``float()`` of it raises OverflowError).
_DOUBLE_MAX = int(np.finfo(np.float64).max)
_DOUBLE_MIN = -_DOUBLE_MAX


def _header(kind: str, dims: str) -> bytes:
    return struct.pack("<BI", 1, _CODES[kind] + DIMENSIONS[dims])


# -- GeoJSON -------------------------------------------------------------------------------


def _positions(value: Any, depth: int, where: str) -> list[Any]:
    """Check the nesting of GeoJSON ``coordinates`` (RFC 7946 3.1.1: a position is an
    array of 2 or 3 numbers); raises ValueError naming the first offending element."""
    if depth == 0:
        ok = isinstance(value, list) and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value
        )
        if not ok or not (2 <= len(value) <= 3 or (len(value) == 0 and where == "coordinates")):
            raise ValueError(f"{where} is not a position (an array of 2 or 3 numbers): {value!r}")
        for i, v in enumerate(value):
            if isinstance(v, int) and not _DOUBLE_MIN <= v <= _DOUBLE_MAX:
                # json.loads keeps an integer literal exact: 400 digits are no double
                raise ValueError(
                    f"{where}[{i}] is an integer of about 1e{round(math.log10(abs(v)))}, "
                    "beyond double precision (RFC 7493 section 2.2): not a coordinate"
                )
        return [value]
    if not isinstance(value, list):
        raise ValueError(f"{where} is not an array: {value!r}")
    out: list[Any] = []
    for i, v in enumerate(value):
        out.extend(_positions(v, depth - 1, f"{where}[{i}]"))
    return out


def _seq(points: Sequence[Sequence[float]]) -> bytes:
    flat = [float(c) for p in points for c in p]
    return struct.pack(f"<I{len(flat)}d", len(points), *flat)


def _body(kind: str, coords: Any, dims: str) -> bytes:
    if kind == "Point":
        return struct.pack("<2d", math.nan, math.nan) if not coords else _seq([coords])[4:]
    if kind == "LineString":
        return _seq(coords)
    if kind == "Polygon":
        return struct.pack("<I", len(coords)) + b"".join(_seq(r) for r in coords)
    part = {"MultiPoint": "Point", "MultiLineString": "LineString", "MultiPolygon": "Polygon"}[kind]
    return struct.pack("<I", len(coords)) + b"".join(
        _header(part, dims) + _body(part, c, dims) for c in coords
    )


def geojson_to_wkb(geometry: Any) -> bytes:
    """ISO WKB of a GeoJSON geometry object (RFC 7946 3.1), coordinates taken literally.

    Parameters
    ----------
    geometry : dict
        A decoded GeoJSON geometry: ``{"type": ..., "coordinates": [...]}`` or a
        GeometryCollection with ``geometries``. Positions of 2 numbers give XY, of 3 XYZ.

    Returns
    -------
    bytes
        WKB that may describe an invalid or even unparseable geometry (an open ring, a ring
        of 3 points): that is the point, GEOS judges it later.

    Raises
    ------
    ValueError
        The object cannot be written as WKB at all: unknown ``type``, ``coordinates`` not
        nested as the type requires, a position that is not 2 or 3 numbers, positions of
        different dimensions in one geometry. The message names the offending member.
    """
    if not isinstance(geometry, dict):
        raise ValueError(f"the geometry is not an object: {geometry!r}")
    kind = geometry.get("type")
    if kind == "GeometryCollection":
        members = geometry.get("geometries")
        if not isinstance(members, list):
            raise ValueError("GeometryCollection has no 'geometries' array")
        parts = [geojson_to_wkb(g) for g in members]
        # a collection's dimension is its members'; an empty one is XY
        code = struct.unpack("<I", parts[0][1:5])[0] // 1000 * 1000 if parts else 0
        if any(struct.unpack("<I", p[1:5])[0] // 1000 * 1000 != code for p in parts):
            raise ValueError("GeometryCollection members have different coordinate dimensions")
        return struct.pack("<BII", 1, 7 + code, len(parts)) + b"".join(parts)
    if kind not in _NESTING:
        raise ValueError(f"unknown geometry type {kind!r}; RFC 7946 types are {list(_CODES)}")
    coords = geometry.get("coordinates")
    points = _positions(coords, _NESTING[kind], "coordinates")
    widths = {len(p) for p in points if p}
    if len(widths) > 1:
        raise ValueError(f"positions of {sorted(widths)} numbers mixed in one {kind}")
    width = widths.pop() if widths else 2
    dims = "xyz" if width == 3 else "xy"
    return _header(kind, dims) + _body(kind, coords, dims)


# -- GeoArrow native arrays -----------------------------------------------------------------


def ragged_to_wkb(
    kind: str, coords: np.ndarray, offsets: Sequence[np.ndarray], dims: str
) -> list[bytes]:
    """ISO WKB of every geometry of a GeoArrow native column, coordinates taken literally.

    Parameters
    ----------
    kind : str
        ``Point``, ``LineString``, ``Polygon``, ``MultiPoint``, ``MultiLineString`` or
        ``MultiPolygon`` (GeoArrow ``point`` ... ``multipolygon`` encodings).
    coords : ndarray of float, shape (M, D)
        All coordinates, D = ``len(dims)``.
    offsets : sequence of int ndarrays
        Outermost first (geometry -> parts ... -> coordinates), each starting at 0, as the
        GeoArrow list nesting of ``kind`` gives them; empty for ``Point``.
    dims : str
        ``xy``, ``xyz``, ``xym`` or ``xyzm``.

    Returns
    -------
    list of bytes
        One WKB per geometry, in order. Open rings stay open (GeoArrow requires closed
        rings; a file that breaks that rule must be judged, not repaired).
    """
    xy = np.ascontiguousarray(coords, dtype="<f8")
    n_coord = xy.shape[1] if xy.ndim == 2 else 0

    def seq(lo: int, hi: int) -> bytes:
        return struct.pack("<I", hi - lo) + xy[lo:hi].tobytes()

    def point(i: int) -> bytes:
        return _header("Point", dims) + xy[i].tobytes()

    def build(k: str, level: int, i: int) -> bytes:
        """WKB body of element ``i`` of nesting ``level`` for a geometry of kind ``k``."""
        if k == "Point":
            return point(i)
        off = offsets[level]
        lo, hi = int(off[i]), int(off[i + 1])
        if k == "LineString":
            return _header(k, dims) + seq(lo, hi)
        if k == "MultiPoint":
            return (
                _header(k, dims) + struct.pack("<I", hi - lo) + b"".join(map(point, range(lo, hi)))
            )
        if k == "Polygon":
            inner = offsets[level + 1]
            rings = (seq(int(inner[r]), int(inner[r + 1])) for r in range(lo, hi))
            return _header(k, dims) + struct.pack("<I", hi - lo) + b"".join(rings)
        part = "LineString" if k == "MultiLineString" else "Polygon"
        members = (build(part, level + 1, j) for j in range(lo, hi))
        return _header(k, dims) + struct.pack("<I", hi - lo) + b"".join(members)

    if n_coord and n_coord != len(dims):
        raise ValueError(f"coordinates have {n_coord} values, dimension {dims!r} needs {len(dims)}")
    count = len(xy) if kind == "Point" else len(offsets[0]) - 1
    return [build(kind, 0, i) for i in range(count)]


# -- back to GeoJSON, literally ------------------------------------------------------------

_KINDS = {code: kind for kind, code in _CODES.items()}


def wkb_to_geojson(data: bytes, max_depth: int = 32) -> dict[str, Any] | None:
    """The GeoJSON geometry of a WKB value with its coordinates exactly as written, for a
    value GEOS refuses to read (an open ring, a ring of three points): GEOS, and shapely
    on it, can only hand back a repaired shape, so a report drawing it would show a
    defect that is not there. The inverse of :func:`geojson_to_wkb`.

    Reads ISO and EWKB (OGC Simple Features 1.2.1 clause 8.2; PostGIS flags, SRID
    skipped), either byte order, types 1 to 7; Z is kept as the third number of a
    position, M dropped (GeoJSON has no M, RFC 7946 3.1.1); a point of NaN only is the
    empty point ``[]``. Returns None for anything else: another type, a count past the
    data, trailing bytes, a non-finite coordinate (not representable in JSON), nesting
    deeper than ``max_depth``.
    """
    try:
        geometry, end = _read_geometry(bytes(data), 0, max_depth)
    except (struct.error, ValueError, IndexError):
        return None
    return geometry if end == len(data) else None


def _read_geometry(buf: bytes, pos: int, depth: int) -> tuple[dict[str, Any], int]:
    if depth < 1 or buf[pos] > 1:
        raise ValueError("too deep, or not a byte order flag")
    order = "<" if buf[pos] == 1 else ">"
    (code,) = struct.unpack_from(order + "I", buf, pos + 1)
    pos += 9 if code & EWKB_SRID_FLAG else 5
    typed = type_code(code)
    kind = _KINDS.get(typed[0]) if typed is not None else None
    if typed is None or kind is None:
        raise ValueError(f"type code {code}")
    _, z, m = typed
    dims, keep = 2 + z + m, 3 if z else 2

    def count() -> int:
        nonlocal pos
        (n,) = struct.unpack_from(order + "I", buf, pos)
        pos += 4
        return int(n)

    def points(n: int) -> list[list[float]]:
        nonlocal pos
        if pos + 8 * dims * n > len(buf):
            raise ValueError("points past the data")
        values = struct.unpack_from(f"{order}{n * dims}d", buf, pos)
        pos += 8 * dims * n
        if not all(math.isfinite(v) for v in values):
            raise ValueError("a non-finite coordinate")
        return [list(values[i * dims : i * dims + keep]) for i in range(n)]

    if kind == "Point":
        values = struct.unpack_from(f"{order}{dims}d", buf, pos)
        pos += 8 * dims
        if all(math.isnan(v) for v in values):
            return {"type": kind, "coordinates": []}, pos
        pos -= 8 * dims
        return {"type": kind, "coordinates": points(1)[0]}, pos
    if kind == "LineString":
        return {"type": kind, "coordinates": points(count())}, pos
    if kind == "Polygon":
        rings = count()
        if pos + 4 * rings > len(buf):
            raise ValueError("rings past the data")
        return {"type": kind, "coordinates": [points(count()) for _ in range(rings)]}, pos
    parts = count()
    if pos + 5 * parts > len(buf):
        raise ValueError("parts past the data")
    members = []
    for _ in range(parts):
        member, pos = _read_geometry(buf, pos, depth - 1)
        members.append(member)
    if kind == "GeometryCollection":
        return {"type": kind, "geometries": members}, pos
    single = kind.removeprefix("Multi")
    if any(g["type"] != single for g in members):
        raise ValueError(f"a {kind} part that is not a {single}")
    return {"type": kind, "coordinates": [g["coordinates"] for g in members]}, pos
