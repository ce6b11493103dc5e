"""A WKB collection whose parts differ in coordinate dimension is refused with its reason,
on every path that turns WKB into facts (stop 43; ``worker/core/facts/wkb_check.py``).

OGC 06-103r4 and ISO 13249-3 give a collection one coordinate dimension. GEOS pads an XY
part of a GeometryCollection Z with a NaN Z, so such a feature used to break validity and
the extent with "non-finite coordinate (NaN or inf)" although every coordinate written is
finite. Now the walk that runs before GEOS refuses it and names the part, as the GeoJSON
readers refuse mixed positions (RFC 7946 3.1.1). Its valid neighbours still pass.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import shapely

from tests.io.test_wkb_trailing import AT, PATHS, _values, _wkb
from worker.core.facts.wkb_check import wkb_survey

_Z, _M, _SRID = 0x80000000, 0x40000000, 0x20000000


def _head(order: str, code: int, srid: bool = False) -> bytes:
    flag = b"\x01" if order == "<" else b"\x00"
    if srid:
        return flag + struct.pack(f"{order}II", code | _SRID, 4326)
    return flag + struct.pack(f"{order}I", code)


def _point(order: str, code: int, *xyz: float) -> bytes:
    return _head(order, code) + struct.pack(f"{order}{len(xyz)}d", *xyz)


def _cases(order: str, ewkb: bool) -> dict[str, tuple[bytes, str]]:
    """name -> (value, reason without the "WKB rejected before parsing: " prefix)."""
    z, zm, m = (_Z, _Z | _M, _M) if ewkb else (1000, 3000, 2000)
    top = 13 if ewkb else 9  # where the first part starts (after the SRID in EWKB)

    def coll(code: int, parts: list[bytes]) -> bytes:
        return (
            _head(order, code, srid=ewkb) + struct.pack(f"{order}I", len(parts)) + b"".join(parts)
        )

    def said(at: int, part: str, whole: str) -> str:
        return (f"the part at byte {at} is {part} inside a collection of {whole} parts "
                "(a collection has one coordinate dimension)")  # fmt: skip

    xy, xyz = _point(order, 1, 1.0, 2.0), _point(order, 1 + z, 3.0, 4.0, 5.0)
    line_xyz = _head(order, 2 + z) + struct.pack(f"{order}I6d", 2, 0, 0, 0, 1, 1, 1)
    poly_m = _head(order, 3 + m) + struct.pack(f"{order}II", 1, 4)
    poly_m += struct.pack(f"{order}12d", 0, 0, 7, 1, 0, 7, 0, 1, 7, 0, 0, 7)
    inner = _head(order, 7 + zm) + struct.pack(f"{order}I", 2) + xyz + xyz  # GC ZM of XYZ
    return {
        "gc-z-with-xy": (coll(7 + z, [xy, xyz]), said(top, "XY", "XYZ")),
        "gc-with-xyz-line": (coll(7, [xy, line_xyz]), said(top + 21, "XYZ", "XY")),
        "multipoint-z-with-xy": (coll(4 + z, [xyz, xy]), said(top + 29, "XY", "XYZ")),
        "multipolygon-with-xym": (coll(6, [poly_m]), said(top, "XYM", "XY")),
        "nested-gc-zm": (coll(7 + zm, [inner]), said(top + 9, "XYZ", "XYZM")),
    }


_ENCODINGS = {"ndr": ("<", False), "xdr": (">", False), "ewkb": (">", True)}


@pytest.mark.parametrize("case", list(_cases("<", False)))
@pytest.mark.parametrize("encoding", list(_ENCODINGS))
def test_the_walk_names_the_part_of_another_dimension(case: str, encoding: str) -> None:
    value, reason = _cases(*_ENCODINGS[encoding])[case]
    assert wkb_survey(value) == (f"WKB rejected before parsing: {reason}", None)
    # ... and one byte more or less is still that fault, found first
    assert wkb_survey(value + b"\0")[0] == f"WKB rejected before parsing: {reason}"


@pytest.mark.parametrize("encoding", list(_ENCODINGS))
@pytest.mark.parametrize("case", list(_cases("<", False)))
@pytest.mark.parametrize("path", list(PATHS))
def test_a_collection_of_mixed_dimensions_is_refused_on_every_path(
    path: str, case: str, encoding: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if path == "geopackage" and encoding == "ewkb":
        pytest.skip("a GeoPackage blob holds ISO WKB after its own header (its SRID is there)")
    bad, reason = _cases(*_ENCODINGS[encoding])[case]
    values = _values(bad, path)
    decision, broken, offenders = PATHS[path](values, tmp_path, monkeypatch)
    assert decision == "quarantined"
    # unparseable: untyped and unlocated too (as a GeoJSON geometry of mixed positions)
    assert broken == {"valid", "types", "ext"}
    assert offenders == [(AT, f"f{AT}", f"WKB rejected before parsing: {reason}")]


#: Collections with an empty part as GEOS writes them (shapely 2, GeoPandas): the empty
#: part has no coordinates, and GEOS writes it XY (a POINT EMPTY as NaN NaN) inside a Z, M
#: or ZM collection. Nothing is padded: the old path read them valid, and so do we.
_EMPTY_PARTS = {
    "gc-z-point-empty": shapely.geometrycollections([shapely.Point(1, 2, 3), shapely.Point()]),
    "gc-z-line-empty": shapely.geometrycollections([shapely.Point(1, 2, 3), shapely.LineString()]),
    "gc-z-gc-empty": shapely.geometrycollections(
        [shapely.Point(1, 2, 3), shapely.geometrycollections([])]
    ),
    "multipoint-z-empty": shapely.multipoints([shapely.Point(1, 2, 3), shapely.Point()]),
    "multilinestring-z-empty": shapely.multilinestrings(
        [shapely.LineString([(0, 0, 1), (1, 1, 1)]), shapely.LineString()]
    ),
    "multipolygon-z-empty": shapely.multipolygons(
        [shapely.Polygon([(0, 0, 1), (1, 0, 1), (1, 1, 1)]), shapely.Polygon()]
    ),
    "gc-m-point-empty": shapely.from_wkt("GEOMETRYCOLLECTION M (POINT M (1 2 3))"),
    "gc-z-gc-of-empties": shapely.geometrycollections(
        [shapely.Point(1, 2, 3), shapely.geometrycollections([shapely.Point(), shapely.Polygon()])]
    ),
}


def _with_empty(name: str) -> shapely.Geometry:
    geom = _EMPTY_PARTS[name]
    if name == "gc-m-point-empty":  # (WKT cannot say it: the part is added by itself)
        geom = shapely.geometrycollections([*shapely.get_parts(geom), shapely.Point()])
    return geom


def _written_empty(order: str, ewkb: bool) -> dict[str, bytes]:
    """Empty parts GEOS does not write but other writers may (a Polygon of one ring of 0
    points, as OGR's and older PostGIS's empty polygons, or as a tool fills a shell it has
    no points for), each of no coordinate: name -> value of a Z collection."""
    z = _Z if ewkb else 1000
    xyz = _point(order, 1 + z, 3.0, 4.0, 5.0)

    def coll(code: int, parts: list[bytes], top: bool = True) -> bytes:
        return (_head(order, code, srid=ewkb and top) + struct.pack(f"{order}I", len(parts))
                + b"".join(parts))  # fmt: skip

    ring0 = _head(order, 3) + struct.pack(f"{order}II", 1, 0)  # POLYGON (EMPTY), XY
    line0 = _head(order, 2) + struct.pack(f"{order}I", 0)
    return {
        "gc-z-polygon-of-an-empty-ring": coll(7 + z, [xyz, ring0]),
        "multipolygon-z-polygon-of-an-empty-ring": coll(6 + z, [ring0]),
        "gc-z-gc-of-a-polygon-of-an-empty-ring": coll(7 + z, [xyz, coll(7, [ring0], False)]),
        "gc-z-multilinestring-of-empty-lines": coll(7 + z, [xyz, coll(5, [line0, line0], False)]),
        "gc-z-multipolygon-of-an-empty-ring": coll(7 + z, [xyz, coll(6, [ring0], False)]),
    }


def _empty_value(name: str, encoding: str) -> bytes:
    if name in _EMPTY_PARTS:
        return _wkb(_with_empty(name), encoding)
    return _written_empty(*_ENCODINGS[encoding])[name]


_ALL_EMPTY = [*_EMPTY_PARTS, *_written_empty("<", False)]


@pytest.mark.parametrize("encoding", ["ndr", "xdr", "ewkb"])
@pytest.mark.parametrize("name", _ALL_EMPTY)
def test_an_empty_part_of_another_dimension_is_no_fault(name: str, encoding: str) -> None:
    assert wkb_survey(_empty_value(name, encoding)) == (None, None)


@pytest.mark.parametrize("encoding", list(_ENCODINGS))
@pytest.mark.parametrize(
    "name",
    ["gc-z-point-empty", "multipolygon-z-empty", *_written_empty("<", False)],
)
@pytest.mark.parametrize("path", list(PATHS))
def test_an_empty_part_of_another_dimension_is_valid_on_the_paths(
    name: str, path: str, encoding: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if path == "geopackage" and encoding == "ewkb":
        pytest.skip("a GeoPackage blob holds ISO WKB after its own header (its SRID is there)")
    values = _values(_empty_value(name, encoding), path)
    decision, broken, offenders = PATHS[path](values, tmp_path, monkeypatch)
    # the contract's types are XY: a Z value is of another type, and only that
    assert (decision, broken, offenders) == ("quarantined", {"types"}, [])


@pytest.mark.parametrize("encoding", list(_ENCODINGS))
def test_a_polygon_part_of_several_empty_rings_is_refused_for_its_rings(encoding: str) -> None:
    """No coordinate, so no dimension fault; but GEOS keeps the empty rings (``POLYGON
    EMPTY`` with an interior ring) and its overlay raises on them, as the top-level
    polygon's screen (``empty_ring_polygons``) refuses it: the walk's ring rule says it."""
    order, ewkb = _ENCODINGS[encoding]
    rings = _head(order, 3) + struct.pack(f"{order}III", 2, 0, 0)
    value = _head(order, 7 + (_Z if ewkb else 1000), srid=ewkb) + struct.pack(f"{order}I", 2)
    value += _point(order, 1 + (_Z if ewkb else 1000), 3.0, 4.0, 5.0) + rings
    assert wkb_survey(value) == (
        "WKB rejected before parsing: ring 0 of a polygon with 2 rings has no points (GEOS's "
        "predicates crash the process on an empty ring beside others)",
        None,
    )


@pytest.mark.parametrize("encoding", list(_ENCODINGS))
@pytest.mark.parametrize("points", [0, 1])
def test_a_curved_part_of_another_dimension_is_refused_as_curved(
    encoding: str, points: int
) -> None:
    """A curve is refused whatever its coordinates: an empty one of another dimension
    too, with the same reason as one of the collection's dimension."""
    order, ewkb = _ENCODINGS[encoding]
    z = _Z if ewkb else 1000
    arc = (
        _head(order, 8)
        + struct.pack(f"{order}I", points)
        + struct.pack(f"{order}{2 * points}d", *[1.0] * 2 * points)
    )
    value = _head(order, 7 + z, srid=ewkb) + struct.pack(f"{order}I", 1) + arc
    assert wkb_survey(value) == (
        "WKB rejected before parsing: curved geometry type CircularString (SQL/MM, code 8) "
        "is not supported: write it with straight segments (e.g. PostGIS ST_CurveToLine)",
        None,
    )


@pytest.mark.parametrize("encoding", list(_ENCODINGS))
def test_a_collection_part_of_another_dimension_is_refused_at_its_first_coordinate(
    encoding: str,
) -> None:
    """An XY collection in a GeometryCollection Z is said at its own byte once one of its
    parts has a coordinate (all of them empty: no fault, see above)."""
    order, ewkb = _ENCODINGS[encoding]
    z = _Z if ewkb else 1000
    empty = _point(order, 1, float("nan"), float("nan"))
    inner = _head(order, 7) + struct.pack(f"{order}I", 2) + empty + _point(order, 1, 1.0, 2.0)
    top = 13 if ewkb else 9
    value = _head(order, 7 + z, srid=ewkb) + struct.pack(f"{order}I", 1) + inner
    assert wkb_survey(value)[0] == (
        f"WKB rejected before parsing: the part at byte {top} is XY inside a collection of XYZ "
        "parts (a collection has one coordinate dimension)"
    )


@pytest.mark.parametrize("order", ["<", ">"])
def test_a_part_with_its_own_srid_is_named_at_its_header(order: str) -> None:
    """The reason's byte is where the part's header starts, an EWKB SRID after its type
    code or not (it said 4 bytes past it for a part carrying its own SRID)."""
    part = _head(order, 1, srid=True) + struct.pack(f"{order}2d", 1.0, 2.0)  # XY, SRID 4326
    value = _head(order, 7 | _Z, srid=True) + struct.pack(f"{order}I", 1) + part
    assert wkb_survey(value) == (
        "WKB rejected before parsing: the part at byte 13 is XY inside a collection of XYZ "
        "parts (a collection has one coordinate dimension)",
        None,
    )
