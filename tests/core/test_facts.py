"""Batch facts: parsed once, lazily, vectorized (worker.core.facts)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import shapely

from tests.catalogue import (
    BOWTIE,
    EMPTY_POLYGON,
    NAN_VERTEX_WKB,
    PARIS,
    PARIS_LAT_FIRST,
    UNPARSEABLE_WKB,
    VALID_POLYGON,
    batch_of,
)
from worker.core.facts import (
    GEOMETRY_TYPES,
    BatchFacts,
    nonfinite_mask,
    schema_fingerprint,
    wkb_dimensions,
)
from worker.core.model import FieldSpec
from worker.core.spatial import resolve_crs


def _mixed() -> BatchFacts:
    return BatchFacts(
        batch_of(
            [VALID_POLYGON, BOWTIE, EMPTY_POLYGON, NAN_VERTEX_WKB, UNPARSEABLE_WKB, None, PARIS]
        )
    )


def test_parse_never_raises_and_flags_bad_wkb() -> None:
    f = _mixed()
    assert f.count == 7
    assert f.unparseable.tolist() == [False, False, False, False, True, False, False]
    assert f.missing.tolist() == [False, False, False, False, False, True, False]
    assert f.parsed.tolist() == [True, True, True, True, False, False, True]
    assert f.type_ids.tolist() == [3, 3, 3, 3, -1, -1, 0]
    assert f.is_empty.tolist() == [False, False, True, False, False, False, False]
    assert f.has_nonfinite.tolist() == [False, False, False, True, False, False, False]


def test_validity_counts_nan_unparseable_missing_as_invalid_not_empty() -> None:
    # issue 9: an empty geometry is GEOS-valid; geometry_type's allow_empty governs it, so
    # one empty feature is reported once, by one clause (issue 2 had it break both)
    f = _mixed()
    assert f.is_valid.tolist() == [True, False, True, False, False, False, True]
    assert f.invalid_count == 4
    assert f.invalid_reasons == (
        (1, "Self-intersection[0.5 0.5]"),
        (3, "non-finite coordinate (NaN or inf)"),
        (4, "unparseable WKB: ParseException: Unexpected EOF parsing WKB"),
    )


def test_bounds_are_east_north_and_nan_when_absent() -> None:
    f = _mixed()
    assert f.bounds.shape == (7, 4)
    assert f.bounds[0].tolist() == [0.0, 0.0, 1.0, 1.0]
    assert np.isnan(f.bounds[4]).all() and np.isnan(f.bounds[5]).all()


def test_north_east_batches_are_normalised_to_east_north() -> None:
    f = BatchFacts(batch_of([PARIS_LAT_FIRST], axis_order="north_east"))
    assert f.geometries[0].equals(PARIS)
    assert f.raw_geometries[0].equals(PARIS_LAT_FIRST)
    assert f.bounds[0].tolist() == [PARIS.x, PARIS.y, PARIS.x, PARIS.y]


def test_geometries_are_not_swapped_for_east_north() -> None:
    f = BatchFacts(batch_of([PARIS_LAT_FIRST]))
    assert f.geometries is f.raw_geometries


def test_nonfinite_checks_z_only_when_present_and_inf() -> None:
    geoms = np.array(
        [
            shapely.Point(1, 2),  # 2D: z is absent, not NaN
            shapely.Point(1, 2, 3),
            shapely.from_wkb(bytes.fromhex("01e9030000" + "0" * 32 + "000000000000f87f")),
            shapely.from_wkb(bytes.fromhex("0101000000" + "000000000000f07f" + "0" * 16)),
            None,
            EMPTY_POLYGON,
        ],
        dtype=object,
    )
    assert geoms[2].has_z  # POINT Z (0 0 NaN)
    assert nonfinite_mask(geoms).tolist() == [False, False, True, True, False, False]


def test_facts_are_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"from_wkb": 0}
    real = shapely.from_wkb

    def counting(*args: object, **kwargs: object) -> object:
        calls["from_wkb"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(shapely, "from_wkb", counting)
    f = _mixed()
    first = f.geometries
    for _ in range(3):
        assert f.geometries is first
        _ = f.is_valid, f.bounds, f.type_ids, f.has_nonfinite
    # one strict parse of the batch, one structure-fixing parse of its unparseable WKB only
    assert calls["from_wkb"] == 2


def test_declared_crs_resolved_or_error_kept() -> None:
    assert BatchFacts(batch_of([PARIS])).declared_crs is resolve_crs("EPSG:4326")
    undeclared = BatchFacts(batch_of([PARIS], crs=None))
    assert undeclared.declared_crs is None and undeclared.declared_crs_error is None
    bad = BatchFacts(batch_of([PARIS], crs="EPSG:999999"))
    assert bad.declared_crs is None
    assert bad.declared_crs_error is not None and "EPSG:999999" in bad.declared_crs_error


def test_in_crs_reprojects_from_declared_and_caches() -> None:
    f = BatchFacts(batch_of([PARIS, NAN_VERTEX_WKB]))
    geoms, usable = f.in_crs(resolve_crs("EPSG:3857"))
    assert geoms[0].x == pytest.approx(261845.7, abs=1.0)
    assert usable.tolist() == [True, False]
    assert f.in_crs(resolve_crs("EPSG:3857"))[0] is geoms
    assert f.in_crs(resolve_crs("OGC:CRS84"))[0] is f.geometries  # equivalent: unchanged


def test_schema_fingerprint_is_canonical() -> None:
    a = (FieldSpec("b", "string"), FieldSpec("a", "integer", True))
    b = (FieldSpec("a", "integer", True), FieldSpec("b", "string"))
    assert schema_fingerprint(a) == schema_fingerprint(b)
    assert len(schema_fingerprint(a)) == 64
    assert schema_fingerprint(a) != schema_fingerprint((FieldSpec("a", "integer"),))
    assert BatchFacts(batch_of([PARIS], schema_fields=a)).schema_fingerprint == (
        schema_fingerprint(b)
    )


def test_empty_batch() -> None:
    f = BatchFacts(batch_of([]))
    assert f.count == 0
    assert f.bounds.shape == (0, 4)
    assert f.invalid_count == 0
    assert f.has_nonfinite.shape == (0,)


def test_nan_in_the_measure_coordinate_is_non_finite() -> None:
    # DESIGN.md section 3: NaN/inf coordinates are invalid, M included
    m_nan = shapely.from_wkt("POINT M (1 2 NaN)")
    m_ok = shapely.from_wkt("POINT M (1 2 3)")
    assert nonfinite_mask(np.array([m_nan, m_ok], dtype=object)).tolist() == [True, False]


# -- coordinate dimensions (GeoParquet geometry_types names) --------------------------------


def _point_wkb(order: str, code: int, *coords: float, srid: int | None = None) -> bytes:
    head = struct.pack(f"{order}BI", 1 if order == "<" else 0, code)
    if srid is not None:
        head += struct.pack(f"{order}I", srid)
    return head + struct.pack(f"{order}{len(coords)}d", *coords)


# (WKB, has_z, has_m): ISO codes (1001 = Point Z, 2001 = Point M, 3001 = Point ZM, as in
# GeoParquet files) and PostGIS EWKB flags (0x80000000 Z, 0x40000000 M, 0x20000000 SRID)
HEADERS = [
    (_point_wkb("<", 1, 1, 2), False, False),
    (_point_wkb("<", 1001, 1, 2, 3), True, False),
    (_point_wkb("<", 2001, 1, 2, 3), False, True),
    (_point_wkb(">", 3001, 1, 2, 3, 4), True, True),
    (_point_wkb(">", 0x80000001, 1, 2, 3), True, False),
    (_point_wkb("<", 0x40000001, 1, 2, 3), False, True),
    (_point_wkb("<", 0xE0000001, 1, 2, 3, 4, srid=4326), True, True),
    (b"\x01\x03", False, False),
]


def test_wkb_dimensions_reads_iso_codes_and_ewkb_flags() -> None:
    z, m = wkb_dimensions([h for h, _, _ in HEADERS] + [None])
    assert z.tolist() == [hz for _, hz, _ in HEADERS] + [False]
    assert m.tolist() == [hm for _, _, hm in HEADERS] + [False]


def test_type_names_carry_the_coordinate_dimension() -> None:
    geoms = [
        shapely.from_wkt(w)
        for w in (
            "POINT (1 2)",
            "POINT Z (1 2 3)",
            "POINT M (1 2 3)",
            "POLYGON Z ((0 0 1, 1 0 1, 1 1 1, 0 0 1))",
            "MULTIPOLYGON ZM (((0 0 1 2, 1 0 1 2, 1 1 1 2, 0 0 1 2)))",
            "POINT Z EMPTY",
        )
    ]
    f = BatchFacts(batch_of([*geoms, None, UNPARSEABLE_WKB]))
    assert f.type_names.tolist() == [
        "Point",
        "Point Z",
        "Point M",
        "Polygon Z",
        "MultiPolygon ZM",
        "Point Z",
        None,
        None,
    ]
    assert set(f.type_names[:6]) <= set(GEOMETRY_TYPES)


def test_has_m_falls_back_to_the_wkb_header(monkeypatch: pytest.MonkeyPatch) -> None:
    # shapely < 2.1 (or GEOS < 3.12) has no has_m: the WKB header still tells
    batch = batch_of([_point_wkb("<", 2001, 1, 2, 3), _point_wkb("<", 3001, 1, 2, 3, 4), PARIS])
    expected = BatchFacts(batch).type_names.tolist()
    monkeypatch.delattr(shapely, "has_m")
    f = BatchFacts(batch)
    assert f.has_m.tolist() == [True, True, False]
    assert f.type_names.tolist() == expected == ["Point M", "Point ZM", "Point"]


def test_open_ring_is_invalid_with_geos_reason_but_located_and_typed() -> None:
    # issue 9: GEOS's reason is kept; the ring is closed only to locate and type it
    from dataclasses import replace

    from tests.catalogue import polygon_wkb

    open_ring = polygon_wkb([(0.0, 0.0), (10.0, 0.0), (10.0, 10.0), (0.0, 10.0)])
    batch = batch_of([open_ring, None, VALID_POLYGON])
    f = BatchFacts(replace(batch, geometry_errors={1: "ParseException: Unknown geometry type!"}))
    assert f.unparseable.tolist() == [True, True, False]
    assert f.missing.tolist() == [False, False, False]
    assert f.parsed.tolist() == [True, False, True]
    assert f.type_ids.tolist() == [3, -1, 3]
    assert f.bounds[0].tolist() == [0.0, 0.0, 10.0, 10.0]
    assert f.is_valid.tolist() == [False, False, True]
    assert f.invalid_reasons == (
        (
            0,
            "unparseable WKB: IllegalArgumentException: "
            "Points of LinearRing do not form a closed linestring",
        ),
        (1, "unreadable geometry: ParseException: Unknown geometry type!"),
    )
