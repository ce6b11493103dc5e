"""WKB headers read without parsing: type codes, dimension flags, EWKB SRIDs, plain points.

What GEOS need not be asked: the byte order and type code of each value (ISO ``1000`` Z,
``2000`` M, ``3000`` ZM offsets, or EWKB flags), whether it may hold nested geometries
(:func:`may_nest`, which decides what :func:`worker.core.facts.wkb_check.wkb_problem`
walks), the coordinates of a batch of plain 2D points, and the parsed polygons with an
empty ring that GEOS's predicates crash on (:func:`empty_ring_polygons`).
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Sequence

import numpy as np
import shapely

__all__ = [
    "EWKB_SRID_FLAG",
    "POINT_WKB_BYTES",
    "curve_type_name",
    "empty_ring_polygons",
    "ewkb_srid",
    "ewkb_srid_counts",
    "may_nest",
    "may_nest_many",
    "points_xy_of_records",
    "simple_points_xy",
    "type_code",
    "wkb_headers",
]


_POINT, _LINE, _POLYGON = 1, 2, 3
#: Base types whose body is a point list (LineString, CircularString).
_POINT_LISTS = {_LINE, 8}
#: Base types whose body is a list of rings (Polygon, Triangle).
_RING_LISTS = {_POLYGON, 17}
#: Base types whose body is a list of complete WKB geometries.
_COLLECTIONS = {4, 5, 6, 7, 9, 10, 11, 12, 15, 16}
#: SQL/MM curved types (CircularString, CompoundCurve, CurvePolygon, MultiCurve,
#: MultiSurface): GEOS reads them but shapely refuses the whole array holding one and
#: GEOS's predicates raise on them inside a collection, so they are refused by the walk.
_CURVES = {
    8: "CircularString",
    9: "CompoundCurve",
    10: "CurvePolygon",
    11: "MultiCurve",
    12: "MultiSurface",
}
#: Types named from their WKB header when no geometry could be built from the value: the
#: curves (refused by the walk) and the ISO WKB surfaces 15-17 (ISO/IEC 13249-3 SQL/MM,
#: OGC 06-103r4 Simple Features section 8.2.3: PolyhedralSurface, TIN, Triangle), which
#: GEOS does not read ("Unknown WKB type 16"; GDAL reads a MultiPatch as TIN Z).
_HEADER_NAMED = {**_CURVES, 15: "PolyhedralSurface", 16: "TIN", 17: "Triangle"}
#: Base types whose body holds no geometry and that GEOS reads or refuses by itself (see
#: :func:`may_nest`); curves are walked, to be refused with their name.
_SINGLE = ({_POINT} | _POINT_LISTS | _RING_LISTS) - set(_CURVES)
_EWKB_Z, _EWKB_M, _EWKB_SRID = 0x80000000, 0x40000000, 0x20000000
#: The PostGIS extended WKB flag of a type code followed by a 4-byte SRID.
EWKB_SRID_FLAG = _EWKB_SRID
#: Whether a base type code (index) is in ``_SINGLE``; the last row (False) stands for
#: every larger code.
_SINGLE_TABLE = np.array([code in _SINGLE for code in range(max(_SINGLE) + 2)], dtype=bool)
#: Readers of a 4-byte unsigned integer in each byte order ("<" NDR, ">" XDR).
_U32 = {"<": struct.Struct("<I").unpack_from, ">": struct.Struct(">I").unpack_from}
#: The byte numpy's ``astype("S5")`` writes first for None (it writes b"None").
_NONE_FLAG = ord("N")


def ewkb_srid(data: bytes | None) -> int | None:
    """The SRID an EWKB value carries after its type code (PostGIS extended WKB), or None
    (ISO WKB, no SRID flag, a header too short or without a byte order flag)."""
    if data is None or len(data) < 9 or data[0] > 1:
        return None
    order = "<" if data[0] == 1 else ">"
    if not _U32[order](data, 1)[0] & _EWKB_SRID:
        return None
    return int(_U32[order](data, 5)[0])


def ewkb_srid_counts(
    values: Sequence[bytes | None] | np.ndarray, heads: np.ndarray | None = None
) -> dict[str, int]:
    """Values per EWKB SRID (:func:`ewkb_srid` of each; decimal string keys in order of
    first appearance; values without one left out), vectorized with numpy over the first
    9 bytes of each value as :func:`wkb_headers` reads the first 5: no Python per value
    but for the few that carry an SRID flag (their length is checked). ``heads``: uint8
    (N, 9), those bytes when already read (zero-padded: a null or short value's zeros carry
    no SRID flag), e.g. from an Arrow array's buffers."""
    n = len(values)
    head = heads
    if head is None and n > 32:
        array = values if isinstance(values, np.ndarray) else np.array(values, dtype=object)
        with contextlib.suppress(ValueError, TypeError, UnicodeError):
            head = array.astype("S9").view(np.uint8).reshape(n, 9)  # None: b"None", flag 78
    if head is None:  # few values, or some not bytes: one by one
        found = np.array([s for s in map(ewkb_srid, values) if s is not None], dtype=np.int64)
    else:
        flag = head[:, 0]
        words = np.ascontiguousarray(head[:, 1:9]).view("<u4").reshape(n, 2)
        words = np.where((flag == 1)[:, None], words, words.byteswap())
        flagged = np.flatnonzero((flag <= 1) & ((words[:, 0] & _EWKB_SRID) != 0))
        whole = [len(values[i] or b"") >= 9 for i in flagged.tolist()]  # zero-padded when shorter
        found = words[flagged[np.asarray(whole, dtype=bool)], 1].astype(np.int64)
    if not found.size:
        return {}
    srids, first, counts = np.unique(found, return_index=True, return_counts=True)
    order = np.argsort(first, kind="stable")
    return {str(int(srids[i])): int(counts[i]) for i in order}


def type_code(code: int) -> tuple[int, bool, bool] | None:
    """(base type, has Z, has M) of a WKB type code, ISO (``+1000`` Z, ``+2000`` M,
    ``+3000`` ZM) or EWKB (flag bits); None for an ISO code past the ZM range."""
    if code & (_EWKB_Z | _EWKB_M | _EWKB_SRID):
        return code & 0x0FFFFFFF, bool(code & _EWKB_Z), bool(code & _EWKB_M)
    thousands, base = divmod(code, 1000)
    if thousands > 3:
        return None
    return base, thousands in (1, 3), thousands in (2, 3)


def _header(data: bytes | None) -> tuple[bool, bool, bool, bool, int, bool]:
    """:func:`wkb_headers` of one value: (present, single, has_z, has_m, base, srid)."""
    if data is None:
        return False, False, False, False, 0, False
    if len(data) < 5:  # zero-padded, as in wkb_headers: GEOS refuses it whatever it says
        data = bytes(data).ljust(5, b"\0")
    code = _U32["<" if data[0] == 1 else ">"](data, 1)[0]
    typed = None if data[0] > 1 else type_code(code)
    if typed is None:
        return True, False, False, False, 0, False
    base, z, m = typed
    single = base in _SINGLE
    return (
        True,
        single,
        z and single,
        m and single,
        base * single,
        bool(code & _EWKB_SRID) and single,
    )


def curve_type_name(data: bytes | None) -> str | None:
    """The SQL/MM curved type or ISO WKB surface type 15-17 a WKB value's header names,
    with its coordinate dimension (``"CircularString"``, ``"CurvePolygon Z"``, ``"TIN
    Z"``, ``"Triangle"``), or None for any other value. Curves are refused before parsing
    (see :func:`wkb_problem`) and GEOS reads no PolyhedralSurface, TIN or Triangle; this
    names what could not be parsed."""
    if data is None or len(data) < 5 or data[0] > 1:
        return None
    typed = type_code(_U32["<" if data[0] == 1 else ">"](data, 1)[0])
    if typed is None or typed[0] not in _HEADER_NAMED:
        return None
    base, z, m = typed
    return _HEADER_NAMED[base] + ("", " Z", " M", " ZM")[z + 2 * m]


def may_nest(data: bytes) -> bool:
    """Whether GEOS could recurse on this WKB value: False only when its header holds a
    valid byte-order flag and the type code of a single geometry (Point, LineString,
    Polygon, Triangle, any dimension), whose body holds no geometry (curves are walked).

    Such values cannot overflow GEOS's stack, and GEOS (3.12 and later) refuses their
    impossible counts by itself ("Input buffer is smaller than requested object size"),
    so they may be parsed without walking them first; everything else is walked.
    """
    return not _header(data)[1]


def wkb_headers(
    values: Sequence[bytes | None] | np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(present, single, has_z, has_m, base, srid) of each header: bool (N,), base int64.

    ``present``: the value is not None. ``single``: its header holds a valid byte-order
    flag and the type code of a single geometry (not :func:`may_nest`); only then are
    ``has_z`` / ``has_m`` read from the type code (ISO ``1000`` Z, ``2000`` M, ``3000``
    ZM; EWKB flags), which for a single geometry is its coordinate dimension, ``base``
    its base type (1 Point, 2 LineString, 3 Polygon, 17 Triangle) and ``srid`` whether an
    EWKB SRID (4 bytes) follows the type code; False (0) for the others. Vectorized with
    numpy over the first 5 bytes of each value: a batch of 100,000 polygons costs
    milliseconds, not a Python call per feature.
    """
    n = len(values)
    head = None
    if n > 32:
        array = values if isinstance(values, np.ndarray) else np.array(values, dtype=object)
        # the first 5 bytes of each value, zero-padded (a shorter value is no geometry
        # GEOS reads: it stays unparseable whatever its header says); numpy writes None
        # as b"None"; a bytearray or memoryview value is read one by one below
        with contextlib.suppress(ValueError, TypeError, UnicodeError):
            head = array.astype("S5").view(np.uint8).reshape(n, 5)
    if head is None:  # few values (numpy's fixed cost exceeds a few header reads)
        rows = [_header(v) for v in values]
        cols = np.array(rows, dtype=np.int64).reshape(n, 6)
        flags = cols.astype(bool)
        return flags[:, 0], flags[:, 1], flags[:, 2], flags[:, 3], cols[:, 4], flags[:, 5]
    flag = head[:, 0]
    present = np.ones(n, dtype=bool)
    maybe_none = np.flatnonzero(flag == _NONE_FLAG)  # None, or a value starting with "N"
    if maybe_none.size:
        present[maybe_none] = [array[i] is not None for i in maybe_none.tolist()]
    code = np.ascontiguousarray(head[:, 1:]).view("<u4").reshape(n)
    code = np.where(flag == 1, code, code.byteswap())
    ewkb = (code & (_EWKB_Z | _EWKB_M | _EWKB_SRID)) != 0
    base = np.where(ewkb, code & 0x0FFFFFFF, code % 1000)
    thousands = code // 1000
    ok = (
        (flag <= 1)
        & (ewkb | (thousands <= 3))
        & _SINGLE_TABLE[np.minimum(base, len(_SINGLE_TABLE) - 1)]
    )
    single = ok & present
    z = np.where(ewkb, (code & _EWKB_Z) != 0, (thousands == 1) | (thousands == 3))
    m = np.where(ewkb, (code & _EWKB_M) != 0, (thousands == 2) | (thousands == 3))
    srid = single & ewkb & ((code & _EWKB_SRID) != 0)
    return present, single, z & single, m & single, np.where(single, base, 0).astype(np.int64), srid


def may_nest_many(values: Sequence[bytes | None] | np.ndarray) -> np.ndarray:
    """bool (N,): :func:`may_nest` of each value, vectorized (None gives False)."""
    present, single = wkb_headers(values)[:2]
    return present & ~single


#: Bytes of a 2D WKB Point: byte order, type code 1, x, y (OGC 06-103r4 section 8.2).
POINT_WKB_BYTES = 21


def simple_points_xy(values: Sequence[bytes | None] | np.ndarray) -> np.ndarray | None:
    """float (N, 2): x, y as stored of every value, when every value is a 2D WKB Point with
    finite coordinates: 21 bytes, one byte order for all, type code 1 (ISO and EWKB agree:
    no Z, M or SRID); None otherwise (a None value, another type or size, NaN or infinite
    coordinates: POINT EMPTY is written as NaN, NaN).

    GEOS reads such a value as a point it judges valid (IsValidOp: a point is valid when
    its coordinates are finite), non-empty, with the coordinates as its envelope: a batch
    of them needs no geometry object for those facts. One length pass, one concatenation
    and a structured numpy view; a first value of another size returns at once.
    """
    n = len(values)
    if not n:
        return None
    first = values[0]
    if type(first) is not bytes or len(first) != POINT_WKB_BYTES or first[0] > 1:
        return None
    try:
        lengths = np.fromiter(map(len, values), dtype=np.int64, count=n)
    except TypeError:  # a None value
        return None
    if not bool((lengths == POINT_WKB_BYTES).all()):
        return None
    try:
        joined = b"".join(values)  # type: ignore[arg-type]
    except TypeError:  # not bytes (e.g. str)
        return None
    return points_xy_of_records(np.frombuffer(joined, dtype=np.uint8), n)


def points_xy_of_records(raw: np.ndarray, n: int) -> np.ndarray | None:
    """float (N, 2) of ``raw`` (uint8 (21 N,): ``n`` values of 21 bytes back to back), as
    :func:`simple_points_xy` gives it: x, y as stored when every value is a 2D WKB Point
    (one byte order for all, type code 1) with finite coordinates, else None."""
    first = int(raw[0])
    if first > 1:
        return None
    order = "<" if first == 1 else ">"
    layout = np.dtype(
        [("flag", "u1"), ("code", order + "u4"), ("x", order + "f8"), ("y", order + "f8")]
    )
    rows = raw.view(layout)
    if not (bool((rows["flag"] == first).all()) and bool((rows["code"] == 1).all())):
        return None
    xy = np.empty((n, 2), dtype=float)
    xy[:, 0] = rows["x"]
    xy[:, 1] = rows["y"]
    with np.errstate(invalid="ignore", over="ignore"):
        if not np.isfinite(np.add.reduce(xy, axis=None)):  # one pass: inf + -inf is NaN
            return None
    return xy


def empty_ring_polygons(geoms: np.ndarray) -> np.ndarray:
    """int (K,): indices of the parsed Polygons (shapely 2, vectorized) that have an empty
    ring beside other rings (see the module notes: GEOS predicates crash on them).

    Only polygons with interior rings can have one; the others cost one ring-count pass
    (``shapely.get_num_interior_rings`` is 0 for every other geometry type and None).
    """
    geoms = np.asarray(geoms, dtype=object)
    holed = np.flatnonzero(np.asarray(shapely.get_num_interior_rings(geoms)) > 0)
    if not holed.size:
        return holed
    rings, owner = shapely.get_rings(geoms[holed], return_index=True)
    empty = np.asarray(shapely.get_num_coordinates(rings)) == 0
    return np.asarray(holed[np.unique(owner[empty])], dtype=np.intp)
