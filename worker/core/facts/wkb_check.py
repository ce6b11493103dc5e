"""Structural pre-check of raw WKB before GEOS parses it (pure; OGC 06-103r4 / ISO 13249-3).

GEOS reads WKB recursively: a GeometryCollection nested 20,000 levels deep overflows its
stack and kills the process with SIGSEGV, and a header that claims 2**32 points makes
it try to allocate them. :func:`wkb_problem` walks the *headers* only (byte order, type
code, element counts; coordinates are skipped by arithmetic, never read) and says what
is wrong before any of that can happen:

* the byte-order flag must be 0 (XDR, big endian) or 1 (NDR, little endian);
* the type code is ISO (``1000`` Z, ``2000`` M, ``3000`` ZM offsets) or EWKB (flags
  ``0x80000000`` Z, ``0x40000000`` M, ``0x20000000`` SRID follows) over a known base
  type (1-7 of Simple Features, 8-17 of SQL/MM curves and surfaces);
* every count fits the bytes that remain (a claimed size never exceeds the data);
* collections nest at most ``max_depth`` levels (default 32, far above any real layer);
* no polygon ring is empty while the polygon has other rings: GEOS 3.14 parses
  ``POLYGON ((0 0, 4 0, 4 4, 0 4, 0 0), EMPTY)`` as valid, then ``covered_by``, ``within``
  and ``contains`` on it end the process with SIGSEGV.
  Single polygons are not walked before GEOS parses them (:func:`may_nest`): the parsed
  ones are screened with :func:`empty_ring_polygons` instead;
* every part of a collection has the collection's coordinate dimension (XY, XYZ, XYM or
  XYZM; OGC 06-103r4 and ISO 13249-3 give a collection one). GEOS pads a 2D part of a
  GeometryCollection Z with a NaN Z, so such a value read as a geometry with a non-finite
  coordinate, the wrong reason (a reader of text formats refuses mixed positions too).
  An empty part (no coordinates: a Point of NaNs, a count of 0, a Polygon whose rings
  all have 0 points) is exempt: GEOS writes one XY in any collection (a part, a
  collection part too, is refused at its first coordinate; a curved part is refused
  as curved, whatever its dimension);
* the value ends where its geometry ends: GEOS's reader stops there and ignores the rest
  (``POINT (1 2)`` plus ``b"junk"`` reads as ``POINT (1 2)``), PostGIS, GDAL and DuckDB
  refuse it or read something else. Trailing bytes are not a structural danger, so
  :func:`wkb_survey` tells them apart (:func:`trailing_reason` words them); the parsed
  single geometries are screened by their sizes
  (:func:`~worker.core.facts.wkb_end.size_suspects`) and only the suspects walked.

Nothing here repairs or interprets geometry: validity is still GEOS's to judge.
"""

from __future__ import annotations

import struct

from worker.core.facts.wkb_header import (
    _COLLECTIONS,
    _CURVES,
    _EWKB_M,
    _EWKB_SRID,
    _EWKB_Z,
    _POINT,
    _POINT_LISTS,
    _RING_LISTS,
    _U32,
)
from worker.core.facts.wkb_multipolygon import flat_multi as _flat_multi

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "WkbRefused",
    "flat_multi",
    "trailing_reason",
    "walk",
    "wkb_problem",
    "wkb_survey",
]

#: Nesting depth of collections accepted (a MultiPolygon in a GeometryCollection is depth 2).
DEFAULT_MAX_DEPTH = 32


class _Bad(Exception):
    pass


def _uint32(data: bytes, pos: int, order: str) -> int:
    if pos + 4 > len(data):
        raise _Bad(f"truncated at byte {pos}: a 4-byte count or type is missing")
    value: int = _U32[order](data, pos)[0]
    return value


def _claims(data: bytes, pos: int, count: int, item_bytes: int, what: str) -> _Bad:
    return _Bad(
        f"the header claims {count} {what} ({count * item_bytes} bytes) but only "
        f"{len(data) - pos} bytes remain"
    )


def _walk(data: bytes, max_depth: int, spans: list[tuple[int, int, str]] | None = None) -> int:
    """Position after the geometry at byte 0; raises :class:`_Bad`.

    Iterative (a stack of the parts left at each nesting level), so neither Python's nor
    GEOS's stack depth is at stake. ``spans`` (optional) collects ``(offset, doubles, byte
    order)`` of every coordinate run.
    """
    size = len(data)
    pos = 0
    left = [1]  # geometries still to read at each nesting level; len(left) is the depth
    dims_in = [0]  # the coordinate dimension of each level's collection (0: the top level)
    owed: list[str | None] = [None]  # a collection part's dimension fault, said at a coordinate
    while left:
        if not left[-1]:
            left.pop()
            dims_in.pop()
            owed.pop()
            continue
        left[-1] -= 1
        if len(left) > max_depth:
            raise _Bad(f"collections nest deeper than {max_depth} levels")
        if pos >= size:
            raise _Bad(f"truncated at byte {pos}: a byte-order flag is missing")
        flag = data[pos]
        if flag != 1 and flag != 0:
            raise _Bad(f"invalid byte-order flag {flag} at byte {pos} (expected 0 or 1)")
        order = "<" if flag == 1 else ">"
        u32 = _U32[order]
        code = _uint32(data, pos + 1, order)
        at, pos = pos, pos + 5  # (at: where this geometry's header starts)
        dims = 2
        if code & (_EWKB_Z | _EWKB_M | _EWKB_SRID):
            dims += bool(code & _EWKB_Z) + bool(code & _EWKB_M)
            flags = code & (_EWKB_Z | _EWKB_M) | 1  # the Z/M flags (bit 0 set: never 0)
            if code & _EWKB_SRID:
                _uint32(data, pos, order)
                pos += 4
            base = code & 0x0FFFFFFF
        else:
            thousands, base = divmod(code, 1000)
            if thousands > 3:
                raise _Bad(f"unknown WKB geometry type code {code} ({code:#010x})")
            dims += (0, 1, 1, 2)[thousands]
            flags = (1, _EWKB_Z | 1, _EWKB_M | 1, _EWKB_Z | _EWKB_M | 1)[thousands]  # EWKB's
        if base in _CURVES:  # (refused whatever its coordinates: before their dimension)
            raise _Bad(
                f"curved geometry type {_CURVES[base]} (SQL/MM, code {code}) is not "
                "supported: write it with straight segments (e.g. PostGIS ST_CurveToLine)"
            )
        fault = owed[-1]  # (an empty part has no coordinate to pad: GEOS writes it XY)
        if fault or (flags != dims_in[-1] and dims_in[-1]):
            fault = fault or (
                f"the part at byte {at} is {_DIMENSION[flags]} inside a collection of "
                f"{_DIMENSION[dims_in[-1]]} parts (a collection has one coordinate dimension)"
            )
            if base not in _COLLECTIONS and not _empty_at(data, pos, order, base, dims):
                raise _Bad(fault)
        point_bytes = 8 * dims
        if base == _POINT:
            if spans is not None:
                spans.append((pos, dims, order))
            if pos + point_bytes > size:
                raise _claims(data, pos, 1, point_bytes, "point")
            pos += point_bytes
        elif base in _POINT_LISTS:
            n = _uint32(data, pos, order)
            if spans is not None:
                spans.append((pos + 4, n * dims, order))
            pos += 4
            if pos + n * point_bytes > size:
                raise _claims(data, pos, n, point_bytes, "points")
            pos += n * point_bytes
        elif base in _RING_LISTS:
            rings = _uint32(data, pos, order)
            pos += 4
            if pos + 4 * rings > size:  # each ring needs at least its count
                raise _claims(data, pos, rings, 4, "rings")
            for ring in range(rings):
                if pos + 4 > size:
                    raise _Bad(f"truncated at byte {pos}: a 4-byte count or type is missing")
                n = u32(data, pos)[0]
                if n == 0 and rings > 1:
                    raise _Bad(
                        f"ring {ring} of a polygon with {rings} rings has no points (GEOS's "
                        "predicates crash the process on an empty ring beside others)"
                    )
                if spans is not None:
                    spans.append((pos + 4, n * dims, order))
                pos += 4
                if pos + n * point_bytes > size:
                    raise _claims(data, pos, n, point_bytes, "points")
                pos += n * point_bytes
        elif base in _COLLECTIONS:
            parts = _uint32(data, pos, order)
            pos += 4
            if pos + 5 * parts > size:  # each part needs at least its header
                raise _claims(data, pos, parts, 5, "parts")
            left.append(parts)
            dims_in.append(flags)
            owed.append(fault)
        else:
            raise _Bad(f"unknown WKB geometry type code {code} ({code:#010x})")
    return pos


def _empty_at(data: bytes, pos: int, order: str, base: int, dims: int) -> bool:
    """The single part whose body starts at ``pos`` has no coordinates: its dimension is
    no fault (GEOS writes an empty part XY in a Z or M collection; other writers write a
    Point of NaNs, a count of 0, or a Polygon of one ring of 0 points).

    A Point of NaNs, a point list of 0 points, a ring list of 0 rings or of rings all of
    0 points (their counts read, at most as many as the bytes left hold; several empty
    rings are then refused by the walk's own rule). Of any other type, False (a
    collection's parts are walked, a curve or an unknown type is refused).
    """
    size = len(data)
    if base == _POINT:
        return pos + 8 * dims <= size and all(
            x != x for x in struct.unpack_from(f"{order}{dims}d", data, pos)
        )
    if pos + 4 > size:
        return False
    count = _U32[order](data, pos)[0]
    if base in _RING_LISTS:  # (empty rings are 4 zero bytes each, one after the other)
        return pos + 4 + 4 * count <= size and not any(data[pos + 4 : pos + 4 + 4 * count])
    return base in _POINT_LISTS and count == 0


def trailing_reason(end: int, size: int) -> str | None:
    """The reason of a value of ``size`` bytes whose geometry ends at byte ``end`` (the
    first byte after it), or None when it ends there: ``"4 bytes after the end of the WKB
    geometry (it ends at byte 21 of 25)"``."""
    extra = size - end
    if extra <= 0:
        return None
    unit = "byte" if extra == 1 else "bytes"
    return f"{extra} {unit} after the end of the WKB geometry (it ends at byte {end} of {size})"


#: Z/M flags (EWKB's, with bit 0 set) -> the coordinate dimension's name.
_DIMENSION = {1: "XY", _EWKB_Z | 1: "XYZ", _EWKB_M | 1: "XYM", _EWKB_Z | _EWKB_M | 1: "XYZM"}


def wkb_survey(data: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> tuple[str | None, str | None]:
    """(structural problem, trailing bytes) of one WKB value, each a one-line reason or None.

    The first (see :func:`wkb_problem`) means GEOS must not be asked to parse the value;
    the second (``"4 bytes after the end of the WKB geometry (it ends at byte 21 of
    25)"``) is said only of a value whose structure is sound: GEOS parses it, reading the
    geometry up to its end, and the value is still invalid. One walk for both.
    """
    try:
        end = _flat_multi(data, max_depth)
        if end is None:
            end = _walk(data, max_depth)
    except _Bad as exc:
        return f"WKB rejected before parsing: {exc}", None
    return None, trailing_reason(end, len(data))


def wkb_problem(data: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> str | None:
    """What is structurally wrong with one WKB value, or None when it is sound.

    Parameters
    ----------
    data : bytes
        One WKB or EWKB geometry, untrusted.
    max_depth : int
        Deepest collection nesting accepted (the top-level geometry is depth 1).

    Returns
    -------
    str or None
        A one-line reason (``"collections nest deeper than 32 levels"``, ``"invalid
        byte-order flag 2 at byte 0 (expected 0 or 1)"``, ``"the header claims ..."``,
        ``"3 bytes after the end of the WKB geometry (it ends at byte 21 of 24)"``), or
        None. The walk costs time in the number of rings and parts, never in the number
        of coordinates. :func:`wkb_survey` tells trailing bytes (GEOS may parse the value)
        from the other faults (it must not).
    """
    problem, trailing = wkb_survey(data, max_depth)
    return problem or trailing


#: Public names of the walk, its refusal and the fast path of flat multi-geometries.
walk, WkbRefused, flat_multi = _walk, _Bad, _flat_multi  # (flat_multi: wkb_multipolygon's)
