"""Batch facts: parsed once, lazily, vectorized (worker.core.facts.batch)."""

from __future__ import annotations

import struct
from dataclasses import replace

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
from tests.core.test_geometry_types import _point_wkb
from worker.core.facts.batch import (
    BatchFacts,
    nonfinite_mask,
    schema_fingerprint,
)
from worker.core.geometry_types import GEOMETRY_TYPES, TYPE_NAME_TABLE
from worker.core.model import FieldSpec
from worker.core.spatial.crs import resolve_crs


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
        (4, "WKB rejected before parsing: truncated at byte 1: a 4-byte count or type is missing"),
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
    # one strict parse of the batch; its one bad WKB (truncated) is refused by the structural
    # pre-check, so no structure-fixing parse is needed (GEOS never sees refused WKB)
    assert calls["from_wkb"] == 1


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
    # docs/design.md section 3: NaN/inf coordinates are invalid, M included
    m_nan = shapely.from_wkt("POINT M (1 2 NaN)")
    m_ok = shapely.from_wkt("POINT M (1 2 3)")
    assert nonfinite_mask(np.array([m_nan, m_ok], dtype=object)).tolist() == [True, False]


# -- coordinate dimensions (GeoParquet geometry_types names) --------------------------------


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
            "GEOS cannot read the geometry: IllegalArgumentException: "
            "Points of LinearRing do not form a closed linestring",
        ),
        (1, "unreadable geometry: ParseException: Unknown geometry type!"),
    )


# -- reprojection failures, area of use, GeoParquet edges/orientation/covering -------------


def test_a_transform_that_fails_is_reported_not_dropped() -> None:
    # 105 E is 90 degrees from UTM zone 33's central meridian: PROJ gives inf
    f = BatchFacts(batch_of([shapely.Point(15, 60), shapely.Point(105, 0), NAN_VERTEX_WKB]))
    utm = resolve_crs("EPSG:32633")
    geoms, usable = f.in_crs(utm)
    assert np.isfinite(shapely.get_coordinates(geoms[0])).all()
    assert usable.tolist() == [True, False, False]
    assert f.reprojection_failed(utm).tolist() == [False, True, False]  # NaN: not a failure
    assert not f.reprojection_failed(resolve_crs("OGC:CRS84")).any()


def test_outside_area_of_use_is_a_fact_of_the_declared_crs() -> None:
    f = BatchFacts(batch_of([shapely.Point(0, 1e9), shapely.Point(0, 1e6)], crs="EPSG:3857"))
    assert f.outside_area_of_use.tolist() == [True, False]
    assert not BatchFacts(batch_of([shapely.Point(0, 1e9)], crs=None)).outside_area_of_use.any()


CCW = shapely.Polygon([(0, 0), (4, 0), (4, 4), (0, 4)], [[(1, 1), (1, 2), (2, 2), (2, 1)]])


def test_orientation_contradicting_the_declaration_is_invalid_with_its_reason() -> None:
    assert CCW.exterior.is_ccw and not CCW.interiors[0].is_ccw
    cw_shell = shapely.Polygon(CCW.exterior.coords[::-1], [CCW.interiors[0].coords])
    ccw_hole = shapely.Polygon(CCW.exterior.coords, [CCW.interiors[0].coords[::-1]])
    multi = shapely.MultiPolygon([CCW, shapely.Polygon(shapely.box(10, 10, 11, 11).exterior)])
    geoms = [CCW, cw_shell, ccw_hole, multi, PARIS]
    batch = replace(batch_of(geoms), orientation="counterclockwise", metadata_name="GeoParquet")
    declared = BatchFacts(batch)
    assert declared.orientation_contradicted.tolist() == [False, True, True, False, False]
    assert declared.is_valid.tolist() == [True, False, False, True, True]
    (i, reason), _ = declared.invalid_reasons
    assert i == 1 and "contradicts the declared GeoParquet orientation" in reason
    undeclared = BatchFacts(batch_of(geoms))  # no assertion: both windings are valid
    assert not undeclared.orientation_contradicted.any() and undeclared.is_valid.all()


def test_covering_bbox_that_does_not_bound_its_geometry() -> None:
    boxes = ((0.0, 0.0, 1.0, 1.0), (0.0, 0.0, 0.5, 1.0), (-1.0, -1.0, 2.0, 2.0), None, None)
    geoms = [VALID_POLYGON, VALID_POLYGON, VALID_POLYGON, VALID_POLYGON, None]
    f = BatchFacts(replace(batch_of(geoms), covering_bbox=boxes))
    # exact, too small, loose (still bounds), missing for a geometry, missing for none
    assert f.covering_bbox_disagrees.tolist() == [False, True, False, True, False]
    # float32 rounding of the stored bbox is not a disagreement
    f32 = float(np.float32(0.1)) - 1e-9
    nudged = BatchFacts(
        replace(batch_of([shapely.box(0.1, 0, 1, 1)]), covering_bbox=((f32, 0, 1, 1),))
    )
    assert not nudged.covering_bbox_disagrees.any()
    assert not BatchFacts(batch_of(geoms)).covering_bbox_disagrees.any()


def test_spherical_edges_are_densified_for_every_clause() -> None:
    band = shapely.Polygon([(-60, 55), (60, 55), (60, 60), (-60, 60), (-60, 55)])
    spherical = BatchFacts(replace(batch_of([band], crs="OGC:CRS84"), edges="spherical"))
    assert spherical.edges_problem is None
    assert spherical.bounds[0, 3] == pytest.approx(73.898, abs=1e-3)
    assert spherical.east_north[0].equals(band)  # stored vertices untouched
    assert BatchFacts(batch_of([band])).bounds[0, 3] == 60.0  # planar: the default
    projected = BatchFacts(replace(batch_of([band], crs="EPSG:3857"), edges="spherical"))
    assert projected.edges_problem is not None and "EPSG:3857" in projected.edges_problem
    assert projected.geometries[0].equals(band)  # not honoured: not densified either
    unknown = BatchFacts(replace(batch_of([band]), edges="ellipsoidal"))
    assert unknown.edges_problem is not None and "'ellipsoidal'" in unknown.edges_problem
    undeclared = BatchFacts(replace(batch_of([band], crs=None), edges="spherical"))
    assert undeclared.edges_problem is None  # lon/lat values: great circles apply


def test_hostile_wkb_never_reaches_geos_and_each_feature_keeps_its_own_reason() -> None:
    # issue 10: a 20,000-level GeometryCollection killed the worker with SIGSEGV in from_wkb
    from tests.core.test_wkb import nested_collection

    deep = nested_collection(20_000)
    bad_order = b"\x02" + shapely.to_wkb(shapely.Point(1, 2))[1:]
    f = BatchFacts(batch_of([PARIS, deep, bad_order]))
    assert f.is_valid.tolist() == [True, False, False]
    reasons = dict(f.invalid_reasons)
    assert reasons[1] == "WKB rejected before parsing: collections nest deeper than 32 levels"
    assert reasons[2].startswith("WKB rejected before parsing: invalid byte-order flag 2")
    assert f.parsed.tolist() == [True, False, False]


def test_a_nan_closing_vertex_is_named_non_finite_not_unclosed() -> None:
    import struct

    ring = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (float("nan"), 0.0)]
    wkb = struct.pack("<BII", 1, 3, 1) + struct.pack("<I", 4)
    wkb += b"".join(struct.pack("<2d", *p) for p in ring)
    f = BatchFacts(batch_of([wkb]))
    assert f.is_valid.tolist() == [False]
    assert dict(f.invalid_reasons)[0].startswith("non-finite coordinate (NaN or inf) in the WKB")


# -- the same facts by the cheaper routes --------------------------------------------------


# polygons, lines, points and collections, XY, Z, M, ZM, with NaN or inf in x, y, z or m,
# empty, nested, missing and unparseable: 33 values (more than the 32 read in Python)
def _iso(*wkt: str) -> list[bytes]:
    with np.errstate(invalid="ignore"):
        return [shapely.to_wkb(shapely.from_wkt(w), flavor="iso") for w in wkt]


ROUTES = [
    *_iso(
        "POLYGON ((0 0, 1 0, 1 1, 0 0))",
        "POLYGON ((0 0, 1 0, 1 NaN, 0 0))",
        "POLYGON Z ((0 0 NaN, 1 0 0, 1 1 0, 0 0 0))",
        "POLYGON M ((0 0 1, 1 0 Inf, 1 1 0, 0 0 1))",
        "LINESTRING (0 0, Inf 1)",
        "LINESTRING ZM (0 0 1 2, 1 1 1 NaN)",
        "POINT (NaN 1)",
        "POINT Z (1 2 3)",
        "POINT Z EMPTY",
        "MULTIPOLYGON (((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 NaN, 5 5)))",
        "MULTIPOINT Z ((0 0 0), (1 1 NaN))",
        "GEOMETRYCOLLECTION (POINT (1 1), LINESTRING (0 0, 1 Inf))",
        "GEOMETRYCOLLECTION (GEOMETRYCOLLECTION (POINT Z (1 1 1)))",
        "POLYGON ((0 0, 2 2, 2 0, 0 2, 0 0))",
    ),
    _point_wkb("<", 2001, 1, 2, float("nan")),
    _point_wkb(">", 3001, 1, 2, 3, 4),
    _point_wkb("<", 0xE0000001, 1, 2, float("inf"), 4, srid=4326),
    None,
    UNPARSEABLE_WKB,
    NAN_VERTEX_WKB,
    *[VALID_POLYGON, BOWTIE, PARIS] * 5,
]


@pytest.mark.parametrize("n", [len(ROUTES), 12])
def test_nonfinite_after_validity_reads_only_suspects_with_the_same_result(n: int) -> None:
    plain = BatchFacts(batch_of(ROUTES[:n]))
    primed = BatchFacts(batch_of(ROUTES[:n]))
    assert primed.is_valid is not None and "_geos_valid" in primed.__dict__
    expected = nonfinite_mask(plain.geometries)
    assert plain.has_nonfinite.tolist() == primed.has_nonfinite.tolist() == expected.tolist()
    assert expected[:7].tolist() == [False, True, True, True, True, True, True]


@pytest.mark.parametrize("n", [len(ROUTES), 12])
def test_dimensions_from_the_headers_are_those_geos_reads(n: int) -> None:
    f = BatchFacts(batch_of(ROUTES[:n]))
    geoms = f.raw_geometries
    assert f.has_z.tolist() == (shapely.has_z(geoms) & f.parsed).tolist()
    assert f.has_m.tolist() == (shapely.has_m(geoms) & f.parsed).tolist()
    assert f.has_z.any() and f.has_m.any()


def test_a_curved_geometry_is_one_invalid_feature_not_a_failed_batch() -> None:
    # shapely refuses a whole WKB array holding one SQL/MM curve (NotImplementedError) and
    # GEOS's predicates raise on a curve inside a collection: both are refused by the
    # walk before parsing, feature by feature, naming the type
    arc = struct.pack("<BII", 1, 8, 3) + struct.pack("<6d", 0, 0, 1, 1, 2, 0)
    nested = struct.pack("<BII", 1, 7, 1) + struct.pack("<BII", 1, 9, 1) + arc
    f = BatchFacts(batch_of([arc, VALID_POLYGON, nested]))
    assert f.is_valid.tolist() == [False, True, False]
    assert f.type_names.tolist() == [None, "Polygon", None]
    reasons = dict(f.invalid_reasons)
    assert "curved geometry type CircularString (SQL/MM, code 8)" in reasons[0]
    assert "curved geometry type CompoundCurve (SQL/MM, code 9)" in reasons[2]
    assert f.bounds[1].tolist() == list(VALID_POLYGON.bounds)


EMPTIES = [
    *ROUTES,
    *_iso(
        "POLYGON EMPTY",
        "MULTIPOLYGON EMPTY",
        "GEOMETRYCOLLECTION EMPTY",
        "GEOMETRYCOLLECTION (POINT EMPTY, POINT (1 1))",
        "GEOMETRYCOLLECTION (POINT EMPTY)",
        "LINESTRING EMPTY",
        "POINT EMPTY",
    ),
    EMPTY_POLYGON,
]


def test_emptiness_after_validity_and_bounds_is_geos_emptiness() -> None:
    """Once validity and bounds are known, emptiness of the valid geometries is read from
    their envelopes (NaN exactly when empty); the result is GEOS's is_empty."""
    plain = BatchFacts(batch_of(EMPTIES))
    primed = BatchFacts(batch_of(EMPTIES))
    assert primed.geos_valid is not None and primed.bounds is not None
    expected = shapely.is_empty(plain.geometries) & plain.parsed
    assert plain.is_empty.tolist() == primed.is_empty.tolist() == expected.tolist()
    assert int(expected.sum()) == 8  # "POINT Z EMPTY" and the seven empties of EMPTIES
    assert not primed.is_empty[len(ROUTES) + 3]  # a collection with one empty part


def test_type_name_index_rows_are_the_type_names() -> None:
    f = BatchFacts(batch_of(EMPTIES))
    names = f.type_names
    assert names.tolist() == [TYPE_NAME_TABLE[i] for i in f.type_name_index]
    assert names[0] == "Polygon" and names[7] == "Point Z" and names[17] is None


def test_m_values_of_a_north_east_batch_are_not_read_as_non_finite() -> None:
    # a new-user finding: the axis swap (shapely.transform) drops M, which then read as NaN
    values = [
        _point_wkb("<", 2001, 20, 10, 3),
        _point_wkb("<", 3001, 20, 10, 3, 4),
        struct.pack("<BII6d", 1, 2002, 2, 20, 10, 1, 21, 11, 2),
        _point_wkb("<", 2001, 20, 10, float("nan")),
    ]
    f = BatchFacts(batch_of(values, axis_order="north_east"))
    assert f.has_m.tolist() == [True, True, True, True]
    assert f.has_nonfinite.tolist() == [False, False, False, True]
    assert f.is_valid.tolist() == [True, True, True, False]
    assert f.bounds[0].tolist() == [10, 20, 10, 20]  # east_north


def test_geos_reasons_carry_no_trailing_newline() -> None:
    # a new-user finding: "point array must contain 0 or >1 elements\n"
    one_point_line = struct.pack("<BII2d", 1, 2, 1, 0, 0)
    f = BatchFacts(batch_of([one_point_line, UNPARSEABLE_WKB, BOWTIE]))
    reasons = dict(f.invalid_reasons)
    assert set(reasons) == {0, 1, 2}
    assert all(r == r.strip() for r in reasons.values()), reasons
    assert "point array must contain 0 or >1 elements" in reasons[0]
