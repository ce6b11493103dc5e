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
  and ``contains`` on it end the process with SIGSEGV (found by the fault suite's fuzzing).

Nothing here repairs or interprets geometry: validity is still GEOS's to judge.
"""

from __future__ import annotations

import struct

import numpy as np

__all__ = ["DEFAULT_MAX_DEPTH", "wkb_has_nonfinite", "wkb_problem"]

#: Nesting depth of collections accepted (a MultiPolygon in a GeometryCollection is depth 2).
DEFAULT_MAX_DEPTH = 32

_POINT, _LINE, _POLYGON = 1, 2, 3
#: Base types whose body is a point list (LineString, CircularString).
_POINT_LISTS = {_LINE, 8}
#: Base types whose body is a list of rings (Polygon, Triangle).
_RING_LISTS = {_POLYGON, 17}
#: Base types whose body is a list of complete WKB geometries.
_COLLECTIONS = {4, 5, 6, 7, 9, 10, 11, 12, 15, 16}
_EWKB_Z, _EWKB_M, _EWKB_SRID = 0x80000000, 0x40000000, 0x20000000


class _Bad(Exception):
    pass


def _uint32(data: bytes, pos: int, order: str) -> int:
    if pos + 4 > len(data):
        raise _Bad(f"truncated at byte {pos}: a 4-byte count or type is missing")
    value: int = struct.unpack_from(order + "I", data, pos)[0]
    return value


def _skip(data: bytes, pos: int, count: int, item_bytes: int, what: str) -> int:
    end = pos + count * item_bytes
    if end > len(data):
        raise _Bad(
            f"the header claims {count} {what} ({count * item_bytes} bytes) but only "
            f"{len(data) - pos} bytes remain"
        )
    return end


def _geometry(
    data: bytes,
    pos: int,
    depth: int,
    max_depth: int,
    spans: list[tuple[int, int, str]] | None = None,
) -> int:
    """Position after the geometry starting at ``pos``; raises :class:`_Bad`.

    ``spans`` (optional) collects ``(offset, doubles, byte order)`` of every coordinate run.
    """
    if depth > max_depth:
        raise _Bad(f"collections nest deeper than {max_depth} levels")
    if pos >= len(data):
        raise _Bad(f"truncated at byte {pos}: a byte-order flag is missing")
    flag = data[pos]
    if flag not in (0, 1):
        raise _Bad(f"invalid byte-order flag {flag} at byte {pos} (expected 0 or 1)")
    order = "<" if flag == 1 else ">"
    code = _uint32(data, pos + 1, order)
    pos += 5
    dims = 2
    if code & (_EWKB_Z | _EWKB_M | _EWKB_SRID):
        dims += bool(code & _EWKB_Z) + bool(code & _EWKB_M)
        if code & _EWKB_SRID:
            _uint32(data, pos, order)
            pos += 4
        base = code & 0x0FFFFFFF
    else:
        thousands, base = divmod(code, 1000)
        if thousands > 3:
            raise _Bad(f"unknown WKB geometry type code {code}")
        dims += {0: 0, 1: 1, 2: 1, 3: 2}[thousands]
    point_bytes = 8 * dims
    if base == _POINT:
        if spans is not None:
            spans.append((pos, dims, order))
        return _skip(data, pos, 1, point_bytes, "point")
    if base in _POINT_LISTS:
        n = _uint32(data, pos, order)
        if spans is not None:
            spans.append((pos + 4, n * dims, order))
        return _skip(data, pos + 4, n, point_bytes, "points")
    if base in _RING_LISTS:
        rings = _uint32(data, pos, order)
        pos += 4
        _skip(data, pos, rings, 4, "rings")  # each ring needs at least its count
        for ring in range(rings):
            n = _uint32(data, pos, order)
            if n == 0 and rings > 1:
                raise _Bad(
                    f"ring {ring} of a polygon with {rings} rings has no points (GEOS's "
                    "predicates crash the process on an empty ring beside others)"
                )
            if spans is not None:
                spans.append((pos + 4, n * dims, order))
            pos = _skip(data, pos + 4, n, point_bytes, "points")
        return pos
    if base in _COLLECTIONS:
        parts = _uint32(data, pos, order)
        pos += 4
        _skip(data, pos, parts, 5, "parts")  # each part needs at least its header
        for _ in range(parts):
            pos = _geometry(data, pos, depth + 1, max_depth, spans)
        return pos
    raise _Bad(f"unknown WKB geometry type code {code}")


def wkb_problem(data: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> str | None:
    """What is structurally wrong with one WKB value, or None when GEOS may parse it.

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
        byte-order flag 2 at byte 0 (expected 0 or 1)"``, ``"the header claims ..."``),
        or None. Trailing bytes after the geometry are left to GEOS. The walk costs time in
        the number of rings and parts, never in the number of coordinates.
    """
    try:
        _geometry(data, 0, 1, max_depth)
    except _Bad as exc:
        return f"WKB rejected before parsing: {exc}"
    return None


def wkb_has_nonfinite(data: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> bool:
    """Whether a structurally sound WKB value has a NaN or infinite coordinate.

    Used to name the fault when GEOS refuses a geometry: a ring whose closing point is NaN
    is "not closed" to GEOS (NaN != NaN), but the defect a data engineer must fix is the
    non-finite coordinate. Empty points (all NaN by the WKB convention) count too; the
    caller asks only about values GEOS refused. False when the structure is unsound.
    """
    spans: list[tuple[int, int, str]] = []
    try:
        _geometry(data, 0, 1, max_depth, spans)
    except _Bad:
        return False
    for offset, count, order in spans:
        values = np.frombuffer(data, dtype=np.dtype(order + "f8"), count=count, offset=offset)
        if not np.isfinite(values).all():
            return True
    return False
