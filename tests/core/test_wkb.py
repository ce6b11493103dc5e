"""Structural WKB pre-check (worker.core.facts.wkb_check): real geometries pass, hostile headers
don't."""

from __future__ import annotations

import contextlib
import struct

import pyarrow.parquet as pq
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.cli.scenario import data_file
from worker.core.facts import wkb_check as wkb
from worker.core.facts.wkb_check import wkb_problem
from worker.core.facts.wkb_multipolygon import ndr_multipolygon


def nested_collection(depth: int) -> bytes:
    """A GeometryCollection holding one GeometryCollection ... holding one point."""
    out = shapely.to_wkb(shapely.Point(1, 2))
    for _ in range(depth):
        out = struct.pack("<BII", 1, 7, 1) + out
    return out


def world_wkb() -> list[bytes]:
    """The shipped Natural Earth countries, as stored (WKB)."""
    return list(pq.read_table(data_file("admin_boundaries.parquet")).column("geometry").to_pylist())


def test_every_feature_of_the_shipped_data_passes() -> None:
    for name in ("admin_boundaries.parquet", "nyc_boroughs.parquet"):
        column = pq.read_table(data_file(name)).column("geometry").to_pylist()
        assert [wkb_problem(w) for w in column] == [None] * len(column)


@pytest.mark.parametrize(
    "wkt",
    [
        "POINT (1 2)",
        "POINT Z (1 2 3)",
        "LINESTRING (0 0, 1 1)",
        "POLYGON ((0 0, 1 0, 1 1, 0 0), (0.1 0.1, 0.2 0.1, 0.2 0.2, 0.1 0.1))",
        "MULTIPOLYGON Z (((0 0 1, 1 0 1, 1 1 1, 0 0 1)))",
        "GEOMETRYCOLLECTION (POINT (1 2), GEOMETRYCOLLECTION (LINESTRING (0 0, 1 1)))",
        "POLYGON EMPTY",
        "POINT EMPTY",
    ],
)
@pytest.mark.parametrize("flavor", ["iso", "extended"])
@pytest.mark.parametrize("byte_order", [0, 1])
def test_well_formed_wkb_in_every_flavour_passes(wkt: str, flavor: str, byte_order: int) -> None:
    geom = shapely.from_wkt(wkt)
    data = shapely.to_wkb(geom, flavor=flavor, byte_order=byte_order)
    assert wkb_problem(data) is None


def test_ewkb_with_an_srid_passes() -> None:
    geom = shapely.set_srid(shapely.from_wkt("MULTIPOINT (1 2, 3 4)"), 4326)
    assert wkb_problem(shapely.to_wkb(geom, include_srid=True)) is None


def test_iso_m_and_zm_types_pass() -> None:
    point_m = struct.pack("<BIddd", 1, 2001, 1.0, 2.0, 7.0)
    point_zm = struct.pack("<BIdddd", 1, 3001, 1.0, 2.0, 3.0, 7.0)
    assert wkb_problem(point_m) is None
    assert wkb_problem(point_zm) is None
    assert wkb_problem(point_m[:-8]) is not None  # an M point is three doubles long


def test_nesting_beyond_the_limit_is_refused_without_reaching_geos() -> None:
    assert wkb_problem(nested_collection(31)) is None
    assert "nest deeper than 32 levels" in str(wkb_problem(nested_collection(32)))
    # the 20,000-level event that crashed GEOS with SIGSEGV: refused, quickly
    assert "nest deeper" in str(wkb_problem(nested_collection(20_000)))


def test_invalid_byte_order_flag_is_refused() -> None:
    data = b"\x02" + shapely.to_wkb(shapely.Point(1, 2))[1:]
    assert wkb_problem(data) == (
        "WKB rejected before parsing: invalid byte-order flag 2 at byte 0 (expected 0 or 1)"
    )


def test_counts_larger_than_the_data_are_refused() -> None:
    huge = struct.pack("<BII", 1, 2, 0xFFFFFFFF) + b"\x00" * 32
    reason = wkb_problem(huge)
    assert reason is not None and "claims 4294967295 points" in reason
    parts = struct.pack("<BII", 1, 7, 1_000_000)
    assert "claims 1000000 parts" in str(wkb_problem(parts))


def test_unknown_type_codes_are_refused() -> None:
    assert "unknown WKB geometry type code 99" in str(
        wkb_problem(struct.pack("<BI", 1, 99) + b"\x00" * 16)
    )
    assert "type code 4001" in str(wkb_problem(struct.pack("<BI", 1, 4001) + b"\x00" * 16))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_get_an_answer_and_accepted_ones_parse_or_fail_cleanly(data: bytes) -> None:
    reason = wkb_problem(data)
    if reason is None:
        # GEOS parses it or refuses it with a message (a feature-level finding), never crashes
        with contextlib.suppress(shapely.errors.GEOSException):
            shapely.from_wkb(data)


def _polygon(*rings: list[tuple[float, float]]) -> bytes:
    out = struct.pack("<BII", 1, 3, len(rings))
    for ring in rings:
        out += struct.pack("<I", len(ring)) + b"".join(struct.pack("<dd", *p) for p in ring)
    return out


SQUARE = [(0.0, 0.0), (4.0, 0.0), (4.0, 4.0), (0.0, 4.0), (0.0, 0.0)]
#: Found by the fault suite's fuzzing (tests/faults/fuzz.py): a MultiPolygon whose polygon
#: has an open shell and an empty hole; GEOS's "fix" reader made it
#: MULTIPOLYGON (((0 0, 4.000000007479798 0, ...), EMPTY)), and covered_by on that SIGSEGVed.
FUZZ_EMPTY_HOLE = bytes.fromhex(
    "0106000000010000000103000000020000000400000000000000000000000000000000000080"
    "8080800000001040000000000000000000000000000010400000000000001040000000000000"
    "0000d3000000000010400000000000000000000000000000c90004000000000000000000f03f"
    "000000008000f03f0000000000000040000000000000f03f00000000000000400000000000"
)


def test_an_empty_ring_beside_others_is_refused() -> None:
    # GEOS 3.14 reads it as a valid POLYGON ((0 0, ...), EMPTY); covered_by then SIGSEGVs
    reason = wkb_problem(_polygon(SQUARE, []))
    assert reason == (
        "WKB rejected before parsing: ring 1 of a polygon with 2 rings has no points "
        "(GEOS's predicates crash the process on an empty ring beside others)"
    )
    assert "ring 0 of a polygon with 2 rings" in str(wkb_problem(_polygon([], SQUARE)))
    assert "ring 1 of a polygon with 2 rings" in str(wkb_problem(FUZZ_EMPTY_HOLE))
    assert wkb_problem(_polygon([])) is None  # POLYGON EMPTY with one empty ring: harmless
    assert wkb_problem(_polygon(SQUARE, [(1, 1), (2, 1), (2, 2), (1, 1)])) is None


def test_curve_type_name_reads_the_header_with_its_dimension() -> None:
    from worker.core.facts.wkb_header import curve_type_name

    assert curve_type_name(struct.pack("<BI", 1, 8) + b"\0" * 4) == "CircularString"
    assert curve_type_name(struct.pack(">BI", 0, 1010)) == "CurvePolygon Z"
    assert curve_type_name(struct.pack("<BI", 1, 0x40000000 | 11)) == "MultiCurve M"
    assert curve_type_name(struct.pack("<BI", 1, 3012)) == "MultiSurface ZM"
    for other in (struct.pack("<BI", 1, 3), struct.pack("<BI", 1, 7), b"\x01\x08", None):
        assert curve_type_name(other) is None


def _walk_end(data: bytes, max_depth: int = wkb.DEFAULT_MAX_DEPTH) -> int | None:
    try:
        return wkb.walk(data, max_depth)
    except wkb.WkbRefused:
        return None


def test_flat_multi_geometries_of_the_shipped_data_take_the_fast_path() -> None:
    stored = world_wkb()
    multi = shapely.get_type_id(shapely.from_wkb(stored)) == 6
    values = [v for v, m in zip(stored, multi, strict=True) if m]
    assert len(values) == 29  # the countries stored as MultiPolygons
    for v in values:
        end = wkb.flat_multi(v, wkb.DEFAULT_MAX_DEPTH)
        assert end is not None and end == _walk_end(v) == len(v)
        # little-endian 2D MultiPolygons of Polygons: read by the shortest path
        assert ndr_multipolygon(v) == len(v)


@pytest.mark.parametrize(
    "wkt",
    [
        "MULTIPOINT ((1 2), (3 4))",
        "MULTIPOINT Z ((1 2 3), (3 4 5))",
        "MULTILINESTRING ((0 0, 1 1), (2 2, 3 3, 4 4))",
        "MULTILINESTRING M ((0 0 1, 1 1 2))",
        "MULTIPOLYGON (((0 0, 4 0, 4 4, 0 4, 0 0), (1 1, 2 1, 2 2, 1 1)), ((5 5, 6 5, 6 6, 5 5)))",
        "MULTIPOLYGON ZM (((0 0 0 0, 4 0 0 0, 4 4 0 0, 0 0 0 0)))",
        "MULTIPOLYGON EMPTY",
    ],
)
@pytest.mark.parametrize("flavor", ["iso", "extended"])
@pytest.mark.parametrize("byte_order", [0, 1])
def test_the_fast_path_ends_where_the_walk_ends(wkt: str, flavor: str, byte_order: int) -> None:
    data = shapely.to_wkb(shapely.from_wkt(wkt), flavor=flavor, byte_order=byte_order,
                          include_srid=False)  # fmt: skip
    assert wkb.flat_multi(data, wkb.DEFAULT_MAX_DEPTH) == _walk_end(data) == len(data)


@pytest.mark.parametrize(
    "data",
    [
        # a MultiPolygon holding a GeometryCollection: nesting is the walk's to bound
        b"\x01\x06\x00\x00\x00\x01\x00\x00\x00\x01\x07\x00\x00\x00\x00\x00\x00\x00",
        # EWKB flags over an ISO Z code (0x80000000 | 1006): unknown type to the walk
        b"\x01" + (0x80000000 | 1006).to_bytes(4, "little") + b"\x00\x00\x00\x00",
        # a part with an SRID of its own
        b"\x01\x04\x00\x00\x00\x01\x00\x00\x00\x01\x01\x00\x00\x20" + b"\x00" * 20,
        # an empty ring beside another
        b"\x01\x06\x00\x00\x00\x01\x00\x00\x00\x01\x03\x00\x00\x00\x02\x00\x00\x00"
        b"\x00\x00\x00\x00\x00\x00\x00\x00",
        # a count past the data
        b"\x01\x05\x00\x00\x00\x01\x00\x00\x00\x01\x02\x00\x00\x00\xff\x00\x00\x00",
    ],
)
def test_anything_unusual_is_left_to_the_walk(data: bytes) -> None:
    assert wkb.flat_multi(data, wkb.DEFAULT_MAX_DEPTH) is None


_FLAT = st.sampled_from(
    [
        "MULTIPOINT ((1 2), (3 4), (5 6))",
        "MULTILINESTRING Z ((0 0 0, 1 1 1), (2 2 2, 3 3 3, 4 4 4))",
        "MULTIPOLYGON (((0 0, 4 0, 4 4, 0 4, 0 0), (1 1, 2 1, 2 2, 1 1)), ((5 5, 6 5, 6 6, 5 5)))",
    ]
)


@given(_FLAT, st.sampled_from(["iso", "extended"]), st.integers(0, 1),
       st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=3),
       st.integers(0, 400))  # fmt: skip
@settings(max_examples=500, deadline=None)
def test_whatever_the_fast_path_accepts_the_walk_accepts_to_the_same_byte(
    wkt: str, flavor: str, byte_order: int, edits: list[tuple[int, int]], cut: int
) -> None:
    data = bytearray(shapely.to_wkb(shapely.from_wkt(wkt), flavor=flavor, byte_order=byte_order))
    for at, value in edits:  # corrupt a few bytes (headers and counts among them)
        data[at % len(data)] = value
    value = bytes(data[: max(cut, 9)])  # and maybe cut it short
    end = wkb.flat_multi(value, wkb.DEFAULT_MAX_DEPTH)
    if end is not None:
        assert end == _walk_end(value)


_NDR_MULTIPOLYGONS = st.sampled_from(
    [
        "MULTIPOLYGON (((0 0, 4 0, 4 4, 0 4, 0 0)), ((5 5, 6 5, 6 6, 5 5)))",
        "MULTIPOLYGON (((0 0, 4 0, 4 4, 0 4, 0 0), (1 1, 2 1, 2 2, 1 1)), ((5 5, 6 5, 6 6, 5 5)))",
        "MULTIPOLYGON (((5 5, 6 5, 6 6, 5 5)), EMPTY, ((0 0, 1 0, 1 1, 0 0)))",
    ]
)


@given(_NDR_MULTIPOLYGONS,
       st.lists(st.tuples(st.integers(0, 300), st.integers(0, 255)), max_size=3),
       st.integers(0, 300), st.booleans())  # fmt: skip
@settings(max_examples=800, deadline=None)
def test_the_little_endian_multipolygon_path_accepts_what_the_walk_accepts_to_the_same_byte(
    wkt: str, edits: list[tuple[int, int]], cut: int, lone_empty_ring: bool
) -> None:
    # the path of countries (issue 27) and the general fast path agree on every value the
    # first accepts; it declines anything else (the general path then reads it)
    data = bytearray(shapely.to_wkb(shapely.from_wkt(wkt), byte_order=1))
    if lone_empty_ring:  # the first part's one ring claims no points (GEOS's to judge)
        data = data[:9] + b"\x01\x03\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00" + data[9:]
        data[5] += 1
    for at, value in edits:  # corrupt a few bytes (headers and counts among them)
        data[at % len(data)] = value
    value = bytes(data[: max(cut, 9)])
    end = ndr_multipolygon(value) if value.startswith(b"\x01\x06\x00\x00\x00") else None
    if end is not None:
        assert end == _walk_end(value) == wkb.flat_multi(value, wkb.DEFAULT_MAX_DEPTH)
    if not edits and cut >= len(data):
        assert end == len(data)


def test_an_empty_ring_beside_another_in_a_little_endian_multipolygon_is_left_to_the_walk() -> None:
    holed = "MULTIPOLYGON (((0 0, 4 0, 4 4, 0 4, 0 0), (1 1, 2 1, 2 2, 1 1)))"
    two = shapely.to_wkb(shapely.from_wkt(holed), byte_order=1)
    # the hole's point count set to 0, the data cut after it
    at = 9 + 9 + 4 + 5 * 16
    empty_hole = two[:at] + b"\x00\x00\x00\x00"
    assert ndr_multipolygon(empty_hole) is None
    assert "has no points" in str(wkb_problem(empty_hole))
