"""Every clause kind, passing and breaking (worker.core.clauses)."""

from __future__ import annotations

import json
import re
import struct
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyproj
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.catalogue import (
    ANTIMERIDIAN_PARTS,
    BOWTIE,
    EMPTY_POLYGON,
    EUROPE_BBOX,
    NAN_VERTEX_WKB,
    NOW,
    PARIS,
    PARIS_3857,
    PARIS_LAT_FIRST,
    UNPARSEABLE_WKB,
    VALID_POLYGON,
    batch_of,
    clause,
    contract_of,
)
from worker.core._util.durations import parse_duration_s
from worker.core.clauses import KINDS
from worker.core.facts.batch import BatchFacts
from worker.core.model import Batch, Clause, ClauseResult, FieldSpec

SWAP = (
    "axis order looks swapped: the coordinates fit the extent with x and y exchanged "
    "(or the region is written y first: the contract gives it as minx, miny, maxx, maxy)"
)


def run(c: Clause, batch: Batch, *others: Clause, now: datetime = NOW) -> ClauseResult:
    result = KINDS[c.kind].evaluate(c, contract_of(c, *others), BatchFacts(batch), now)
    assert result.name == c.name and result.kind == c.kind
    assert result.message and "\n" not in result.message
    return result


def test_registry_covers_every_kind() -> None:
    assert list(KINDS) == [
        "crs",
        "axis_order",
        "extent",
        "geometry_type",
        "validity",
        "domain",
        "freshness",
        "coverage",
        "schema",
        "feature_count",
    ]


# -- crs, axis_order -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "expect", "result"),
    [
        ("OGC:CRS84", "EPSG:4326", "pass"),
        ("ESRI:102100", "EPSG:3857", "pass"),
        ("EPSG:4326", "EPSG:4326", "pass"),
        ("EPSG:2263", "EPSG:4326", "break"),
        (None, "EPSG:4326", "break"),
        ("EPSG:999999", "EPSG:4326", "break"),
    ],
)
def test_crs(declared: str | None, expect: str, result: str) -> None:
    r = run(clause("srid", "crs", expect=expect), batch_of([PARIS], crs=declared))
    assert r.result == result
    assert r.measured == declared and r.expected == expect


def test_crs_undeclared_message() -> None:
    r = run(clause("srid", "crs", expect="EPSG:4326"), batch_of([PARIS], crs=None))
    assert "declares no CRS" in r.message


def test_axis_order() -> None:
    c = clause("axes", "axis_order", expect="east_north")
    assert run(c, batch_of([PARIS])).result == "pass"
    r = run(c, batch_of([PARIS], axis_order="north_east"))
    assert (r.result, r.measured, r.expected) == ("break", "north_east", "east_north")


# -- extent --------------------------------------------------------------------------------


def test_extent_passes_inside_europe() -> None:
    r = run(clause("ext", "extent", region=EUROPE_BBOX), batch_of([PARIS]))
    assert r.result == "pass" and r.measured["fraction_inside"] == 1.0
    assert r.diagnoses == ()


def test_extent_latitude_first_point_breaks_with_swap_diagnosis() -> None:
    crs = clause("srid", "crs", expect="EPSG:4326")
    r = run(clause("ext", "extent", region=EUROPE_BBOX), batch_of([PARIS_LAT_FIRST]), crs)
    assert r.result == "break"
    assert r.measured["fraction_inside"] == 0.0 and r.measured["outside"] == 1
    assert r.diagnoses == (SWAP,)


def test_a_swap_is_diagnosed_beside_empty_geometries() -> None:
    # a review: empties counted inside the extent but not in the swapped reading's count,
    # so 8 latitude-first points and 2 empties (0.2 inside, 1.0 once swapped) got none
    crs = clause("srid", "crs", expect="EPSG:4326")
    points = [shapely.Point(48.0 + i / 10, 2.0 + i / 10) for i in range(8)]
    batch = batch_of([*points, shapely.Point(), shapely.Point()])
    r = run(clause("ext", "extent", region=EUROPE_BBOX, min_fraction_inside=0.9), batch, crs)
    assert r.result == "break" and r.measured["fraction_inside"] == 0.2
    assert r.diagnoses == (SWAP,)


def test_extent_north_east_batch_is_normalised_before_measuring() -> None:
    batch = batch_of([PARIS_LAT_FIRST], axis_order="north_east")
    assert run(clause("ext", "extent", region=EUROPE_BBOX), batch).result == "pass"


def test_extent_metres_declared_as_degrees_diagnosed_as_3857() -> None:
    crs = clause("srid", "crs", expect="EPSG:4326")
    r = run(clause("ext", "extent", region=EUROPE_BBOX), batch_of([PARIS_3857]), crs)
    assert r.result == "break"
    assert r.diagnoses == (
        "coordinates look like EPSG:3857: they fit the extent after reprojecting "
        "from EPSG:3857 to EPSG:4326",
    )


def test_extent_degrees_declared_as_state_plane_diagnosed_as_geographic_base() -> None:
    nyc = shapely.Point(-73.97, 40.78)
    c = clause("ext", "extent", region=[909000, 110000, 1068000, 275000])
    r = run(c, batch_of([nyc], crs="EPSG:2263"), clause("srid", "crs", expect="EPSG:2263"))
    assert r.result == "break"
    assert len(r.diagnoses) == 1 and "coordinates look like EPSG:4" in r.diagnoses[0]
    assert r.diagnoses[0].endswith("to EPSG:2263")


def test_extent_reprojects_when_declared_crs_differs_from_contract() -> None:
    c = clause("ext", "extent", region=EUROPE_BBOX, crs="EPSG:4326")
    assert run(c, batch_of([PARIS_3857], crs="EPSG:3857")).result == "pass"


def test_extent_nan_unparseable_and_missing_are_not_inside() -> None:
    c = clause("ext", "extent", region=[-10, -10, 10, 10])
    for bad in (NAN_VERTEX_WKB, UNPARSEABLE_WKB, None):
        r = run(c, batch_of([VALID_POLYGON, bad]))
        assert r.result == "break", bad
        assert r.measured["fraction_inside"] == 0.5
    r = run(
        clause("ext", "extent", region=[-10, -10, 10, 10], min_fraction_inside=0.5),
        batch_of([VALID_POLYGON, NAN_VERTEX_WKB]),
    )
    assert r.result == "pass"


def test_extent_counts_an_empty_geometry_inside_whatever_the_other_clauses_say() -> None:
    """The empty point set lies in every region; empties are geometry_type's to allow or
    refuse, so one empty feature is reported once, and removing or changing another
    clause never changes what extent measures (a fresh-user session found a geometry_type
    clause's removal, classified minor, turning extent's pass into a break)."""
    ext = clause("ext", "extent", region=[-10, -10, 10, 10])
    batch = batch_of([VALID_POLYGON, EMPTY_POLYGON])
    allows = clause("types", "geometry_type", allowed=["Polygon"], allow_empty=True)
    forbids = clause("types", "geometry_type", allowed=["Polygon"])
    for others in ((allows,), (forbids,), ()):
        r = run(ext, batch, *others)
        assert r.result == "pass" and r.measured["fraction_inside"] == 1.0, others
    assert run(allows, batch).result == "pass"
    assert run(forbids, batch).result == "break"  # reported once: by geometry_type


def test_extent_in_a_declared_crs_that_does_not_resolve_says_so() -> None:
    # a fresh-user session: it read "inside the extent in undeclared CRS"
    r = run(
        clause("ext", "extent", region=[-10, -10, 10, 10]), batch_of([VALID_POLYGON], crs="bogus")
    )
    assert r.result == "pass"
    assert "in the declared CRS 'bogus' (not resolvable)" in r.message
    r = run(clause("ext", "extent", region=[-10, -10, 10, 10]), batch_of([VALID_POLYGON], crs=None))
    assert "in undeclared CRS" in r.message


def test_extent_antimeridian_bbox_passes_split_features() -> None:
    parts = [
        ANTIMERIDIAN_PARTS,
        shapely.box(176, 0, 179, 1),
        shapely.box(-179, 0, -176, 1),
        shapely.Point(180, 0),
    ]
    r = run(clause("ext", "extent", region=[170, -10, -170, 10]), batch_of(parts))
    assert r.result == "pass" and r.measured["fraction_inside"] == 1.0
    r = run(clause("ext", "extent", region=[170, -10, -170, 10]), batch_of([PARIS]))
    assert r.result == "break"


def test_extent_tolerance_buffers_region() -> None:
    near = shapely.Point(10.5, 0)
    assert run(clause("e", "extent", region=[0, 0, 10, 10]), batch_of([near])).result == "break"
    c = clause("e", "extent", region=[0, 0, 10, 10], tolerance=1.0)
    assert run(c, batch_of([near])).result == "pass"


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(-180, 180), st.floats(-90, 90)),
        min_size=1,
        max_size=15,
    )
)
def test_extent_fraction_is_in_unit_interval(coords: list[tuple[float, float]]) -> None:
    r = run(clause("e", "extent", region=EUROPE_BBOX), batch_of([shapely.Point(c) for c in coords]))
    assert 0.0 <= r.measured["fraction_inside"] <= 1.0
    assert (r.result == "pass") == (r.measured["fraction_inside"] == 1.0)


# -- geometry_type, validity ---------------------------------------------------------------


def test_geometry_type() -> None:
    c = clause("types", "geometry_type", allowed=["Polygon", "MultiPolygon"])
    assert run(c, batch_of([VALID_POLYGON, ANTIMERIDIAN_PARTS])).result == "pass"
    r = run(c, batch_of([VALID_POLYGON, PARIS, PARIS, EMPTY_POLYGON, UNPARSEABLE_WKB]))
    assert r.result == "break"
    assert r.measured == {"Point": 2, "missing or unparseable": 1, "empty": 1}
    c2 = clause("types", "geometry_type", allowed=["Polygon"], allow_empty=True)
    assert run(c2, batch_of([VALID_POLYGON, EMPTY_POLYGON])).result == "pass"


def test_validity_bowtie_breaks_and_is_not_repaired() -> None:
    batch = batch_of([VALID_POLYGON, BOWTIE])
    r = run(clause("valid", "validity"), batch)
    assert r.result == "break"
    assert r.measured["invalid"] == 1 and r.measured["invalid_fraction"] == 0.5
    assert r.measured["reasons"] == [{"index": 1, "reason": "Self-intersection[0.5 0.5]"}]
    assert "feature 1: Self-intersection[0.5 0.5]" in r.message
    assert batch.geometries_wkb[1] == shapely.to_wkb(BOWTIE)  # never repaired
    assert run(clause("v", "validity", max_invalid_fraction=0.5), batch).result == "pass"


def test_validity_nan_breaks_and_empty_is_left_to_geometry_type() -> None:
    # issue 9 (docs/design.md section 3): empties are governed by geometry_type's allow_empty;
    # validity, like GEOS, does not count them, so an empty feature is reported once
    batch = batch_of([EMPTY_POLYGON, NAN_VERTEX_WKB, VALID_POLYGON])
    r = run(clause("valid", "validity"), batch)
    assert r.result == "break" and r.measured["invalid"] == 1
    assert "feature 1: non-finite coordinate" in r.message and "feature 0" not in r.message
    assert run(clause("valid", "validity"), batch_of([VALID_POLYGON])).result == "pass"
    empty_only = batch_of([EMPTY_POLYGON, VALID_POLYGON])
    assert run(clause("valid", "validity"), empty_only).result == "pass"
    types = run(clause("t", "geometry_type", allowed=["Polygon"]), empty_only)
    assert types.result == "break" and types.measured == {"empty": 1}


# -- domain --------------------------------------------------------------------------------


def _domain_batch(values: pa.Array) -> Batch:
    return batch_of([PARIS] * len(values), attributes=pa.table({"code": values}))


def test_domain_passes_on_known_string_codes() -> None:
    c = clause("d", "domain", column="code", values={"01": "one", "02": "two"})
    assert run(c, _domain_batch(pa.array(["01", "02", "01"]))).result == "pass"


def test_domain_integer_codes_do_not_match_zero_padded_strings() -> None:
    c = clause("d", "domain", column="code", values={"01": "one", "02": "two"})
    r = run(c, _domain_batch(pa.array([1, 2, 1], type=pa.int64())))
    assert r.result == "break"
    assert r.measured["unknown"] == [1, 2] and r.measured["unknown_count"] == 3
    # "1" is not "01" either
    r = run(c, _domain_batch(pa.array(["1", "01"])))
    assert r.measured["unknown"] == ["1"] and r.measured["unknown_count"] == 1


def test_domain_message_elides_only_distinct_values_left_out() -> None:
    # found by a new-user session: two 'Atlantis' rows read "('Atlantis', ...)"
    c = clause("d", "domain", column="code", values={"01": "one"})
    r = run(c, _domain_batch(pa.array(["Atlantis", "01", "Atlantis"])))
    assert "2 values not in the domain ('Atlantis');" in r.message
    many = [f"x{i}" for i in range(12)] + ["x0"]
    r = run(c, _domain_batch(pa.array(many)))
    assert r.measured["unknown_count"] == 13 and len(r.measured["unknown"]) == 10
    assert "'x9', ...);" in r.message


def test_domain_integer_keys_and_integer_column() -> None:
    c = clause("d", "domain", column="code", values={1: "one", 2: "two"})
    assert run(c, _domain_batch(pa.array([1, 2], type=pa.int8()))).result == "pass"
    assert run(c, _domain_batch(pa.array(["1", "2"]))).result == "break"


def test_domain_nulls_and_dictionary_column() -> None:
    c = clause("d", "domain", column="code", values={"R1": "res"})
    r = run(c, _domain_batch(pa.array(["R1", None])))
    assert r.result == "break" and r.measured["null_count"] == 1
    c2 = clause("d", "domain", column="code", values={"R1": "res"}, allow_null=True)
    assert run(c2, _domain_batch(pa.array(["R1", None]))).result == "pass"
    dict_col = pa.array(["R1", "R1"]).dictionary_encode()
    assert run(c, _domain_batch(dict_col)).result == "pass"


def test_domain_missing_column() -> None:
    c = clause("d", "domain", column="land_use", values={"R1": "res"})
    r = run(c, batch_of([PARIS]))
    assert r.result == "break" and "'land_use' is missing" in r.message


# -- freshness -----------------------------------------------------------------------------


def test_freshness_pass_and_break() -> None:
    c = clause("fresh", "freshness", max_age="PT4H")
    r = run(c, batch_of([PARIS], data_time=NOW - timedelta(hours=3)))
    assert r.result == "pass" and r.measured == 3 * 3600.0
    r = run(c, batch_of([PARIS], data_time=NOW - timedelta(hours=5)))
    assert r.result == "break" and r.measured == 5 * 3600.0


def test_freshness_honours_utc_offset() -> None:
    # 15:00+05:00 is 10:00 UTC: two hours before NOW (12:00 UTC), not three hours ahead
    plus5 = timezone(timedelta(hours=5))
    data_time = datetime(2024, 6, 1, 15, 0, tzinfo=plus5)
    r = run(clause("fresh", "freshness", max_age="PT4H"), batch_of([PARIS], data_time=data_time))
    assert r.result == "pass" and r.measured == 7200.0
    r = run(clause("fresh", "freshness", max_age="PT1H"), batch_of([PARIS], data_time=data_time))
    assert r.result == "break"


def test_freshness_future_beyond_clock_skew_breaks() -> None:
    c = clause("fresh", "freshness", max_age="P1D")
    assert run(c, batch_of([PARIS], data_time=NOW + timedelta(minutes=4))).result == "pass"
    r = run(c, batch_of([PARIS], data_time=NOW + timedelta(minutes=6)))
    assert r.result == "break" and r.measured == -360.0 and "future" in r.message
    c2 = clause("fresh", "freshness", max_age="P1D", max_clock_skew="PT10M")
    assert run(c2, batch_of([PARIS], data_time=NOW + timedelta(minutes=6))).result == "pass"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("PT4H", 14400.0),
        ("P1D", 86400.0),
        ("P1W", 604800.0),
        ("P1DT2H30M", 95400.0),
        ("PT0.5S", 0.5),
        ("PT1,5M", 90.0),
        ("PT5M", 300.0),
        ("P36525D", 36525 * 86400.0),  # the longest: 100 years
        ("PT0.0000001S", 1e-7),
    ],
)
def test_parse_duration_s(text: str, seconds: float) -> None:
    assert parse_duration_s(text) == seconds


@pytest.mark.parametrize(
    "text",
    ["P", "PT", "4H", "P1DT", "-PT1H", "P1Y", "P2M", "PT1H2D", "P36526D", "P99999999999999D",
     "PT3155760001S", "P5218W", "P" + "9" * 400 + "D"],
)  # fmt: skip
def test_parse_duration_s_rejects(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(text[:40]))):  # named, clipped
        parse_duration_s(text)


# -- coverage ------------------------------------------------------------------------------


def test_coverage_geodesic_differs_from_planar() -> None:
    # data covers latitudes 0..30 of a 0..60 region: planar 50 %, geodesic about 57.7 %
    c = clause("cov", "coverage", region=[0, 0, 10, 60], min_fraction=0.55)
    r = run(c, batch_of([shapely.box(0, 0, 10, 30)]))
    assert r.result == "pass" and r.measured["unit"] == "m²"
    assert r.measured["fraction"] == pytest.approx(0.5774, abs=0.005)
    # the same numbers in a projected CRS are planar: exactly one half
    c2 = clause("cov", "coverage", region=[0, 0, 10, 60], min_fraction=0.55, crs="EPSG:2263")
    r2 = run(c2, batch_of([shapely.box(0, 0, 10, 30)], crs="EPSG:2263"))
    assert r2.result == "break" and r2.measured["fraction"] == pytest.approx(0.5)
    assert r2.measured["unit"] == "CRS units²"


def test_coverage_union_skips_invalid_and_counts_overlap_once() -> None:
    c = clause("cov", "coverage", region=[0, 0, 4, 1], min_fraction=0.5, crs="EPSG:2263")
    geoms = [shapely.box(0, 0, 1, 1), shapely.box(0.5, 0, 1.5, 1), shapely.box(2, 0, 3, 1)]
    r = run(c, batch_of([*geoms, BOWTIE, NAN_VERTEX_WKB], crs="EPSG:2263"))
    assert r.measured["fraction"] == pytest.approx(2.5 / 4)
    assert r.result == "pass"
    r = run(c, batch_of([BOWTIE, EMPTY_POLYGON], crs="EPSG:2263"))
    assert r.result == "break" and r.measured["fraction"] == 0.0


def test_coverage_by_feature_count() -> None:
    c = clause("cov", "coverage", expected_features=100, min_fraction=0.98)
    assert run(c, batch_of([PARIS] * 98)).result == "pass"
    r = run(c, batch_of([PARIS] * 97))
    assert r.result == "break" and r.measured["features"] == 97
    # without expected_features the producer's declared count is the reference
    c2 = clause("cov", "coverage", min_fraction=0.98)
    assert run(c2, batch_of([PARIS] * 9, feature_count=10)).result == "break"
    assert run(c2, batch_of([PARIS] * 10, feature_count=10)).result == "pass"


# -- schema, feature_count -----------------------------------------------------------------

FIELDS = [
    {"name": "parcel_id", "type": "string"},
    {"name": "land_use", "type": "string", "nullable": True},
]


def _schema_batch(fields: tuple[FieldSpec, ...], table: pa.Table | None = None) -> Batch:
    if table is None:
        table = pa.table({"parcel_id": ["a", "b"], "land_use": ["R1", None]})
    return batch_of([PARIS, PARIS], schema_fields=fields, attributes=table)


def test_schema_passes() -> None:
    fields = (FieldSpec("parcel_id", "string"), FieldSpec("land_use", "string", True))
    r = run(clause("schema", "schema", fields=FIELDS), _schema_batch(fields))
    assert r.result == "pass" and r.measured["problems"] == []
    assert len(r.measured["fingerprint"]) == 64


def test_schema_breaks_on_each_problem() -> None:
    fields = (
        FieldSpec("parcel_id", "integer", True),
        FieldSpec("extra", "double"),
    )
    table = pa.table({"parcel_id": [1, None], "extra": [1.0, 2.0]})
    r = run(clause("schema", "schema", fields=FIELDS), _schema_batch(fields, table))
    assert r.result == "break"
    assert r.measured["problems"] == [
        "field 'parcel_id' has type integer, expected string",
        "field 'parcel_id' is nullable, expected not nullable",
        "field 'parcel_id' has 1 null",
        "missing field 'land_use'",
        "extra field 'extra'",
    ]
    c = clause(
        "schema",
        "schema",
        fields=[{"name": "parcel_id", "type": "integer", "nullable": True}],
        allow_extra=True,
    )
    assert run(c, _schema_batch(fields, table)).result == "pass"


def test_schema_actual_nulls_in_non_nullable_field() -> None:
    fields = (FieldSpec("parcel_id", "string"), FieldSpec("land_use", "string", True))
    table = pa.table({"parcel_id": ["a", None], "land_use": ["R1", None]})
    r = run(clause("schema", "schema", fields=FIELDS), _schema_batch(fields, table))
    assert r.result == "break" and r.measured["problems"] == ["field 'parcel_id' has 1 null"]


def test_schema_field_null_in_every_feature_has_no_wrong_type(tmp_path: Path) -> None:
    # GeoJSON property null in every feature: arrow type null, derived as string; it was
    # "has type string, expected integer", a false break of a nullable integer field
    from worker.io.payloads import read_batch_file

    feats = [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [i, 0]},
         "properties": {"n": None, "code": None}}
        for i in range(2)
    ]  # fmt: skip
    path = tmp_path / "nulls.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": feats}))
    batch = read_batch_file(path, layer="parcels", data_time=NOW)
    assert pa.types.is_null(batch.attributes.schema.field("n").type)
    nullable = [{"name": "n", "type": "integer", "nullable": True},
                {"name": "code", "type": "string", "nullable": True}]  # fmt: skip
    assert run(clause("schema", "schema", fields=nullable), batch).result == "pass"
    strict = [{"name": "n", "type": "integer"}, {"name": "code", "type": "string"}]
    r = run(clause("schema", "schema", fields=strict), batch)
    assert r.measured["problems"] == [
        "field 'n' is nullable, expected not nullable",
        "field 'n' has 2 nulls",
        "field 'code' is nullable, expected not nullable",
        "field 'code' has 2 nulls",
    ]


def test_feature_count() -> None:
    c = clause("size", "feature_count", min=1, max=3)
    assert run(c, batch_of([PARIS] * 3)).result == "pass"
    assert run(c, batch_of([PARIS] * 4)).measured == 4
    assert run(c, batch_of([PARIS] * 4)).result == "break"
    assert run(c, batch_of([])).result == "break"
    assert run(clause("size", "feature_count"), batch_of([])).result == "pass"


def test_3857_hint_is_hedged_when_the_extent_spans_the_whole_crs() -> None:
    # found by a fresh-user session: NYC feet declared OGC:CRS84 against a world extent were
    # "diagnosed" as EPSG:3857; any projected coordinates fit a world box after that reprojection
    from tests.catalogue import NYC_BOROUGHS, active, read_geoparquet
    from worker.core.evaluate import evaluate

    geoms, _, _ = read_geoparquet(NYC_BOROUGHS)
    batch = batch_of(list(geoms), crs="OGC:CRS84")
    world = contract_of(
        clause("srid", "crs", expect="OGC:CRS84"),
        clause("extent", "extent", region=[-180, -90, 180, 90]),
    )
    result = evaluate(batch, [active(world)], now=NOW)
    (diag,) = result.diagnoses
    assert diag.startswith("coordinates look like EPSG:3857")
    assert "weak hint" in diag
    europe = contract_of(
        clause("srid", "crs", expect="EPSG:4326"),
        clause("extent", "extent", region=EUROPE_BBOX),
    )
    paris_m = batch_of([PARIS_3857], crs="EPSG:4326")
    (diag,) = evaluate(paris_m, [active(europe)], now=NOW).diagnoses
    assert diag.startswith("coordinates look like EPSG:3857") and "weak hint" not in diag


def test_integer_field_satisfies_a_double_field_but_not_the_reverse() -> None:
    # found by a fresh-user session: GeoJSON writes 123456.0 as 123456
    shape = clause("schema", "schema", fields=[{"name": "len", "type": "double"}])
    ints = batch_of([VALID_POLYGON], schema_fields=(FieldSpec("len", "integer"),),
                    attributes=pa.table({"len": pa.array([123456])}))  # fmt: skip
    assert (
        KINDS["schema"].evaluate(shape, contract_of(shape), BatchFacts(ints), NOW).result == "pass"
    )
    strict = clause("schema", "schema", fields=[{"name": "len", "type": "integer"}])
    doubles = batch_of([VALID_POLYGON], schema_fields=(FieldSpec("len", "double"),),
                       attributes=pa.table({"len": pa.array([1.5])}))  # fmt: skip
    r = KINDS["schema"].evaluate(strict, contract_of(strict), BatchFacts(doubles), NOW)
    assert r.result == "break" and "has type double, expected integer" in r.message


def test_feature_count_breaks_when_declared_count_differs() -> None:
    size = clause("size", "feature_count", min=1, max=10)
    truncated = batch_of([VALID_POLYGON], feature_count=1000)
    r = KINDS["feature_count"].evaluate(size, contract_of(size), BatchFacts(truncated), NOW)
    assert r.result == "break" and "declared 1000 features" in r.message


def test_extent_with_a_wrong_declared_crs_reports_raw_bounds_and_diagnoses_it() -> None:
    # found by a fresh-user session: NYC feet declared EPSG:4326 against an EPSG:2263
    # contract reported bounds: null (the reprojection fails) and no diagnosis
    from tests.catalogue import NYC_BOROUGHS, read_geoparquet

    geoms, _, _ = read_geoparquet(NYC_BOROUGHS)
    c = clause("extent", "extent", region=[909000, 110000, 1068000, 275000])
    srid = clause("srid", "crs", expect="EPSG:2263")
    r = run(c, batch_of(list(geoms), crs="EPSG:4326"), srid)
    assert r.result == "break" and r.measured["fraction_inside"] == 0.0
    x0, y0, x1, y1 = r.measured["bounds"]
    assert 909000 < x0 < x1 < 1068000 and 110000 < y0 < y1 < 275000
    assert r.measured["bounds_crs"] == "EPSG:4326"
    assert r.diagnoses == (
        "coordinates fit the extent as EPSG:2263: the declared CRS EPSG:4326 looks wrong",
    )
    ok = run(c, batch_of(list(geoms), crs="EPSG:2263"), srid)
    assert ok.result == "pass" and ok.measured["bounds_crs"] == "EPSG:2263"


def test_a_pacific_polygon_in_a_projected_crs_is_inside_an_antimeridian_extent() -> None:
    # found by a data-path review: 178E..178W in EPSG:3832 came back 356 degrees wide
    from pyproj import Transformer

    to_3832 = Transformer.from_crs("OGC:CRS84", "EPSG:3832", always_xy=True)
    ring = [(178, -18), (-178, -18), (-178, -16), (178, -16), (178, -18)]
    fiji = shapely.Polygon([to_3832.transform(x, y) for x, y in ring])
    region = [170, -25, -170, -10]
    extent = clause("e", "extent", crs="EPSG:4326", region=region)
    cover = clause("c", "coverage", crs="EPSG:4326", region=region, min_fraction=0.0)
    c = contract_of(extent, cover)
    facts = BatchFacts(batch_of([fiji], crs="EPSG:3832"))
    assert KINDS["extent"].evaluate(extent, c, facts, NOW).measured["fraction_inside"] == 1.0
    # independent figure: 4 x 2 degrees over 20 x 15 degrees, areas on the ellipsoid
    wgs84 = pyproj.Geod(ellps="WGS84")

    def band(w: float, s: float, e: float, n: float) -> float:
        poly = shapely.orient_polygons(shapely.segmentize(shapely.box(w, s, e, n), 0.01))
        return abs(wgs84.geometry_area_perimeter(poly)[0])

    expected = (band(178, -18, 180, -16) * 2) / (band(170, -25, 180, -10) * 2)
    got = KINDS["coverage"].evaluate(cover, c, facts, NOW).measured["fraction"]
    assert got == pytest.approx(expected, rel=1e-3)


def test_whole_floats_match_integer_codes_but_not_fractions_or_strings() -> None:
    # found by a data-path review: GeoJSON {"c": 1} and {"c": 2.0} arrive as a float column
    dom = clause("d", "domain", column="c", values={1: "a", 2: "b"})
    floats = batch_of([VALID_POLYGON] * 3, attributes=pa.table({"c": pa.array([1.0, 2.0, 2.5])}))
    r = KINDS["domain"].evaluate(dom, contract_of(dom), BatchFacts(floats), NOW)
    assert (r.result, r.measured["unknown"]) == ("break", [2.5])
    whole = batch_of([VALID_POLYGON] * 2, attributes=pa.table({"c": pa.array([1.0, 2.0])}))
    assert KINDS["domain"].evaluate(dom, contract_of(dom), BatchFacts(whole), NOW).result == "pass"
    padded = clause("d", "domain", column="c", values={"01": "a", "02": "b"})
    r = KINDS["domain"].evaluate(padded, contract_of(padded), BatchFacts(whole), NOW)
    assert r.result == "break"  # no coercion between numbers and strings


# -- geometry_type: the coordinate dimension is part of the type ---------------------------

ISO_POINT_Z = struct.pack("<BI3d", 1, 1001, 1.0, 2.0, 3.0)  # ISO WKB 1001, as in case S17a
ISO_POINT_M = struct.pack("<BI3d", 1, 2001, 1.0, 2.0, 3.0)  # ISO WKB 2001
EWKB_POINT_Z = struct.pack(">BI3d", 0, 0x80000001, 1.0, 2.0, 3.0)  # PostGIS EWKB, big-endian
POLYGON_Z = shapely.from_wkt("POLYGON Z ((0 0 5, 1 0 5, 1 1 5, 0 0 5))")
POLYGON_ZM = shapely.from_wkt("POLYGON ZM ((0 0 5 1, 1 0 5 1, 1 1 5 1, 0 0 5 1))")


@pytest.mark.parametrize(
    ("geoms", "allowed", "measured"),
    [
        ([PARIS, ISO_POINT_Z, ISO_POINT_M], ["Point"], {"Point M": 1, "Point Z": 1}),
        ([PARIS, EWKB_POINT_Z], ["Point"], {"Point Z": 1}),
        ([ISO_POINT_Z, EWKB_POINT_Z], ["Point", "Point Z"], {}),
        ([ISO_POINT_M], ["Point Z"], {"Point M": 1}),
        ([ISO_POINT_M], ["Point M"], {}),
        ([VALID_POLYGON, POLYGON_Z], ["Polygon", "MultiPolygon"], {"Polygon Z": 1}),
        ([POLYGON_Z], ["Polygon Z"], {}),
        ([POLYGON_ZM], ["Polygon Z", "Polygon M"], {"Polygon ZM": 1}),
        ([VALID_POLYGON], ["Polygon Z"], {"Polygon": 1}),
    ],
)
def test_geometry_type_dimension(geoms: list, allowed: list[str], measured: dict) -> None:
    r = run(clause("types", "geometry_type", allowed=allowed), batch_of(geoms))
    assert r.measured == measured
    assert r.result == ("pass" if not measured else "break")


def test_geometry_type_says_how_to_allow_a_dimension() -> None:
    r = run(clause("types", "geometry_type", allowed=["Point"]), batch_of([ISO_POINT_Z, PARIS]))
    assert "disallowed geometries Point Z: 1" in r.message
    assert "a bare type name allows XY coordinates only: list Point Z in allowed" in r.message


# -- measured values are JSON: no NaN or Infinity --------------------------------------------


def test_non_finite_measured_values_become_strings() -> None:
    values = pa.array([1.0, float("nan"), float("inf"), 2.0])
    batch = batch_of([PARIS] * 4, attributes=pa.table({"code": values}))
    r = run(clause("code", "domain", column="code", values={1: "one", 2: "two"}), batch)
    assert r.result == "break"
    assert sorted(r.measured["unknown"]) == ["inf", "nan"]
    assert json.loads(json.dumps(r.measured, allow_nan=False))["unknown_count"] == 2


# -- issue 9 section 7: messages -----------------------------------------------------------


def test_domain_names_a_unicode_normalisation_mismatch() -> None:
    nfd, nfc = "Zu\u0308rich", "Z\u00fcrich"
    c = clause("canton", "domain", column="code", values={nfc: "Zurich", "Bern": "Bern"})
    r = run(c, _domain_batch(pa.array([nfd, "Bern", "Genf"])))
    assert r.result == "break" and r.measured["unknown_count"] == 2
    (note,) = r.diagnoses
    assert note == (
        f"value {nfd!r} (NFD: U+005A U+0075 U+0308 U+0072 U+0069 U+0063 U+0068) differs from "
        f"the code {nfc!r} (NFC: U+005A U+00FC U+0072 U+0069 U+0063 U+0068) only by Unicode "
        "normalisation: normalise the column (or the contract) to NFC"
    )
    assert note in r.message and "Genf" not in note


def test_schema_names_a_type_no_contract_can_name() -> None:
    from worker.core.vocab import LOGICAL_TYPE_KEY, VALUE_TYPES_KEY

    # as worker.io.formats.base.text_column tags an integer beyond int64
    meta = {LOGICAL_TYPE_KEY: b"other", VALUE_TYPES_KEY: b"integer"}
    field = pa.field("big", pa.string(), metadata=meta)
    table = pa.Table.from_arrays([pa.array([str(2**64)])], schema=pa.schema([field]))
    batch = batch_of([PARIS], attributes=table, schema_fields=(FieldSpec("big", "other"),))
    r = run(clause("schema", "schema", fields=[{"name": "big", "type": "integer"}]), batch)
    assert r.measured["problems"] == [
        "field 'big' has a type no contract can name (integer values arrow cannot hold), "
        "expected integer"
    ]


# -- CRS limits, poles, non-finite transforms, GeoParquet edges (issue 9 sections 4, 5) ----


def _merc(lon: float, lat: float) -> shapely.Point:
    t = pyproj.Transformer.from_crs("OGC:CRS84", "EPSG:3857", always_xy=True)
    return shapely.Point(t.transform(lon, lat))


def test_extent_counts_coordinates_beyond_the_crs_area_of_use_as_outside() -> None:
    # inverse Mercator maps any huge y to latitude ~90, inside a global lon/lat extent
    batch = batch_of([_merc(10, 50), _merc(0, 89), shapely.Point(0, 1e9)], crs="EPSG:3857")
    world = clause("extent", "extent", crs="OGC:CRS84", region=[-180, -90, 180, 90])
    r = run(world, batch)
    assert r.result == "break"
    assert r.measured["fraction_inside"] == pytest.approx(1 / 3)
    assert r.measured["outside_area_of_use"] == 2
    assert "2 features outside the area of use of EPSG:3857" in r.message
    assert "latitude -85.07..85.07" in r.message
    assert r.diagnoses == ()  # swapped values (y = 0, x = 1e9) fit no CRS either
    assert r.measured["bounds"] == pytest.approx([10.0, 50.0, 10.0, 50.0])
    tolerant = clause("e", "extent", crs="OGC:CRS84", region=[-180, -90, 180, 90],
                      min_fraction_inside=0.3)  # fmt: skip
    assert run(tolerant, batch).result == "pass"  # outside counts against the tolerance


def test_extent_beyond_the_area_of_use_without_reprojection() -> None:
    # found in field case N10: x = 1e279 was "diagnosed" as EPSG:3857 coordinates
    c = clause("extent", "extent", region=[-180, -90, 180, 90])
    srid = clause("srid", "crs", expect="OGC:CRS84")
    r = run(c, batch_of([shapely.Point(1e279, 0), shapely.Point(10, 50)], crs="OGC:CRS84"), srid)
    assert r.result == "break" and r.measured["outside_area_of_use"] == 1
    assert "outside the area of use of OGC:CRS84" in r.message
    # the span shown leaves that feature out, and says so (a fresh-user finding)
    assert "; the features within the area of use of OGC:CRS84 span x 10 .. 10, y 50 .. 50" in (
        r.message
    )
    assert r.diagnoses == ()
    # plausible candidates are still named: metres within Web Mercator's range
    r = run(clause("extent", "extent", region=EUROPE_BBOX), batch_of([PARIS_3857]), srid)
    assert r.diagnoses and r.diagnoses[0].startswith("coordinates look like EPSG:3857")


def test_antimeridian_and_crs_limit_in_one_batch() -> None:
    x_east = 2 * 20037508.342789244 + _merc(-178, 0).x  # 182 E written continuously
    pacific = shapely.box(_merc(178, 10).x, _merc(0, 10).y, x_east, _merc(0, 20).y)
    polar = shapely.box(_merc(178, 80).x, _merc(0, 80).y, x_east, _merc(0, 86).y)
    batch = batch_of([pacific, polar], crs="EPSG:3857")
    region = [170, 0, -170, 89]  # crosses the antimeridian; lat 86 would be inside
    r = run(clause("e", "extent", crs="OGC:CRS84", region=region), batch)
    assert r.result == "break" and r.measured["fraction_inside"] == 0.5
    assert r.measured["outside_area_of_use"] == 1
    cover = clause("c", "coverage", crs="OGC:CRS84", region=[178, 10, -178, 20])
    r = run(cover, batch)
    # the Pacific box covers the region exactly; the polar one is left out, not wrapped in
    assert r.measured["fraction"] == pytest.approx(1.0, rel=1e-6)
    assert r.measured["outside_area_of_use"] == 1 and r.result == "pass"


def test_non_finite_transform_results_break_extent_and_coverage() -> None:
    # 105 E cannot be written in UTM zone 33N (PROJ returns inf)
    far = shapely.box(105, 0, 106, 1)
    near = shapely.box(14, 59, 16, 61)
    batch = batch_of([near, far], crs="EPSG:4326")
    region = [0, 0, 1_000_000, 10_000_000]
    r = run(clause("e", "extent", crs="EPSG:32633", region=region), batch)
    assert r.result == "break" and r.measured["not_reprojectable"] == 1
    assert "1 feature could not be reprojected from EPSG:4326 to EPSG:32633" in r.message
    c = clause("c", "coverage", crs="EPSG:32633", region=region, min_fraction=0.0)
    r = run(c, batch)
    assert r.result == "break" and r.measured["not_reprojectable"] == 1
    assert "the covered area is unknown" in r.message
    assert run(c, batch_of([near], crs="EPSG:4326")).result == "pass"


@pytest.mark.parametrize(
    ("crs", "cap", "region"),
    [("EPSG:32661", 87.5, [-180, 88, 180, 90]), ("EPSG:3031", -87.5, [-180, -90, 180, -88])],
)
def test_a_polar_cap_covers_the_pole_region(crs: str, cap: float, region: list[float]) -> None:
    # field case S20c: a UPS North cap was measured 0% covered; the south pole likewise
    t = pyproj.Transformer.from_crs("OGC:CRS84", crs, always_xy=True)
    lon = np.linspace(-180, 180, 720, endpoint=False)
    ring = np.column_stack(t.transform(lon, np.full(lon.size, cap)))
    batch = batch_of([shapely.Polygon(ring)], crs=crs)
    r = run(clause("c", "coverage", crs="OGC:CRS84", region=region, min_fraction=0.95), batch)
    assert r.result == "pass" and r.measured["fraction"] == pytest.approx(1.0, rel=1e-9)
    e = run(clause("e", "extent", crs="OGC:CRS84", region=[-180, -90, 180, 90]), batch)
    x0, y0, x1, y1 = e.measured["bounds"]
    assert (x0, x1) == pytest.approx((-180, 180))
    assert (y1 == 90.0) if cap > 0 else (y0 == -90.0)  # the pole is reached


def _band() -> shapely.Polygon:
    return shapely.Polygon([(-60, 55), (60, 55), (60, 60), (-60, 60), (-60, 55)])


def test_spherical_edges_are_honoured_by_the_extent() -> None:
    # field case N01: the northern great-circle edge reaches latitude 73.9
    c = clause("extent", "extent", region=[-70, 50, 70, 62])
    planar = batch_of([_band()], crs="OGC:CRS84")
    assert run(c, planar).result == "pass"
    r = run(c, replace(planar, edges="spherical", orientation="counterclockwise"))
    assert r.result == "break" and r.measured["bounds"][3] == pytest.approx(73.898, abs=1e-3)
    assert "great-circle arcs (edges: spherical)" in r.message  # no metadata name
    named = replace(planar, edges="spherical", metadata_name="GeoParquet")  # its reader's
    assert "great-circle arcs (GeoParquet edges: spherical)" in run(c, named).message
    wide = clause("extent", "extent", region=[-70, 50, 70, 75])
    assert run(wide, replace(planar, edges="spherical")).result == "pass"


def test_spherical_edges_that_cannot_be_honoured_break_with_the_reason() -> None:
    batch = replace(batch_of([_band()], crs="EPSG:3857"), edges="spherical")
    for c in (
        clause("extent", "extent", region=[-100, 0, 100, 100]),
        clause("cover", "coverage", region=[-100, 0, 100, 100], min_fraction=0.0),
    ):
        r = run(c, batch)
        assert r.result == "break" and r.measured["edges"] == "spherical"
        assert "edges 'spherical'" in r.message and "EPSG:3857" in r.message


def test_covering_bbox_disagreement_is_a_warning_of_the_extent() -> None:
    batch = replace(
        batch_of([VALID_POLYGON, VALID_POLYGON]),
        covering_bbox=((0.0, 0.0, 1.0, 1.0), (5.0, 5.0, 6.0, 6.0)),
    )
    r = run(clause("extent", "extent", region=[-10, -10, 10, 10]), batch)
    assert r.result == "pass" and r.measured["covering_bbox_disagrees"] == 1
    assert "bbox covering column does not bound 1 feature (index 1)" in r.message
    clean = run(clause("extent", "extent", region=[-10, -10, 10, 10]), batch_of([VALID_POLYGON]))
    assert "covering_bbox_disagrees" not in clean.measured


def test_a_batch_without_a_crs_cannot_be_placed_in_the_contracts_crs() -> None:
    # found by a fresh-user session: NYC feet with `crs: null` passed a feet extent by luck
    # and were read as degrees against a lon/lat one
    feet = [shapely.Point(1_000_000, 200_000), shapely.Point(1_010_000, 210_000)]
    unknown = batch_of(feet, crs=None)
    ext = clause("ext", "extent", region=[900_000, 100_000, 1_100_000, 300_000], crs="EPSG:2263")
    r = run(ext, unknown)
    assert r.result == "break"
    assert r.message.startswith(
        "the batch declares no CRS: its coordinates cannot be placed in EPSG:2263"
    )
    assert r.measured == {"declared_crs": None, "features": 2}
    cov = clause("cov", "coverage", region=[900_000, 100_000, 1_100_000, 300_000], crs="EPSG:2263")
    assert run(cov, unknown).result == "break"
    # with the CRS declared the same coordinates pass; with no CRS anywhere they are judged raw
    assert run(ext, batch_of(feet, crs="EPSG:2263")).result == "pass"
    raw = clause("raw", "extent", region=[900_000, 100_000, 1_100_000, 300_000])
    assert run(raw, unknown).result == "pass"


def test_geometry_types_are_the_stored_ones_when_spherical_edges_split_a_polygon() -> None:
    # found by a new-user session: a valid Polygon with `edges: spherical` across 180 deg
    # broke `allowed: [Polygon]` as "MultiPolygon: 1" (the antimeridian split's type)
    pacific = shapely.Polygon([(170, -10), (-170, -10), (-170, 10), (170, 10), (170, -10)])
    batch = replace(batch_of([pacific], crs="OGC:CRS84"), edges="spherical")
    facts = BatchFacts(batch)
    assert shapely.get_type_id(facts.geometries[0]) == 6  # measured as two parts
    r = run(clause("types", "geometry_type", allowed=["Polygon"]), batch)
    assert r.result == "pass", r.message


def test_a_struct_or_list_column_under_a_domain_is_unknown_values_not_an_error() -> None:
    # found by a new-user session: "evaluation error: ArrowNotImplementedError: Function
    # 'unique' has no kernel matching input types (struct<...>)" as the verdict
    c = clause("d", "domain", column="code", values={"01": "one"})
    structs = pa.array([{"a": 1}, None, {"a": 1}, {"a": 2}])
    r = run(c, _domain_batch(structs))
    assert r.result == "break" and r.gate_error is None
    assert r.measured["unknown"] == ["{'a': 1}", "{'a': 2}"]
    assert r.measured["unknown_count"] == 3 and r.measured["null_count"] == 1
    lists = run(c, _domain_batch(pa.array([["01"], ["02", "03"]])))
    assert lists.result == "break" and lists.measured["unknown"] == ["['01']", "['02', '03']"]


def test_whole_number_decimals_match_integer_domain_codes() -> None:
    # found by a new-user session: decimal(5,0) value 1 was "not in the domain (Decimal('1'))"
    from decimal import Decimal

    c = clause("d", "domain", column="code", values={1: "one", 2: "two"})
    whole = pa.array([Decimal(1), Decimal(2), None], pa.decimal128(5, 0))
    r = run(clause("d", "domain", column="code", values={1: "one", 2: "two"}, allow_null=True),
            _domain_batch(whole))  # fmt: skip
    assert r.result == "pass", r.message
    r = run(c, _domain_batch(pa.array([Decimal(1), Decimal(3)], pa.decimal128(5, 0))))
    assert r.result == "break" and r.measured["unknown"] == [3]
    # a fraction is never a code
    frac = run(c, _domain_batch(pa.array([Decimal("1.5")], pa.decimal128(5, 1))))
    assert frac.result == "break"


def test_no_candidate_crs_diagnosis_when_most_features_are_inside() -> None:
    # found by a fresh-user session: one stray point (x = 200) among degree points inside
    # the world extent was "diagnosed" as EPSG:3857, since that reprojection maps every
    # degree coordinate to within metres of the origin
    points = [shapely.Point(-170 + 3.4 * i, -80 + 1.6 * i) for i in range(100)]
    world = clause("ext", "extent", region=[-180, -90, 180, 90])
    crs = clause("srid", "crs", expect="EPSG:4326")
    stray = run(world, batch_of([*points, shapely.Point(200, 10)]), crs)
    assert stray.result == "break" and stray.measured["outside"] == 1
    assert not any("EPSG:3857" in d for d in stray.diagnoses)
    # since: x = 200 fits once wrapped to -160, which is named, for one or many
    assert stray.diagnoses[0].startswith("longitudes beyond ±180")
    half = run(world, batch_of([*points[:40], *(shapely.Point(200, 10),) * 60]), crs)
    assert half.result == "break" and half.measured["outside"] == 60
    assert half.diagnoses[0].startswith("longitudes beyond ±180")
    # metres near the origin of EPSG:3857, beyond any longitude: the candidate is named
    metres = run(world, batch_of([*points[:40], *(shapely.Point(2e6, 1e6),) * 60]), crs)
    assert metres.diagnoses and metres.diagnoses[0].startswith("coordinates look like EPSG:3857")


def test_latitudes_beyond_web_mercator_are_diagnosed_as_such_not_as_a_wrong_crs() -> None:
    # a fresh-user finding: CRS84 features up to latitude 89.9 against a world extent in
    # EPSG:3857 were diagnosed "the declared CRS OGC:CRS84 looks wrong" (small degree
    # values fit a box of metres), then "axis order looks swapped"
    merc = [-20037508.34, -20048966.1, 20037508.34, 20048966.1]
    c = clause("extent", "extent", region=merc, crs="EPSG:3857")
    polar = [shapely.box(-10, 80, 10, 89.9), shapely.Point(0, 90), shapely.Point(5, 50)]
    r = run(c, batch_of(polar, crs="OGC:CRS84"))
    assert r.result == "break" and r.measured["outside"] == 2
    assert r.diagnoses == (
        "2 of 3 features lie beyond the area of use of EPSG:3857 (longitude -180..180, "
        "latitude -85.07..85.07): EPSG:3857 cannot hold them; their coordinates look "
        "right as OGC:CRS84",
    )
    # metres declared as degrees still blame the declaration (x beyond 180 degrees)
    metres = [shapely.Point(1_000_000 + i, 6_000_000) for i in range(3)]
    wrong = run(c, batch_of(metres, crs="EPSG:4326"))
    assert wrong.result == "break"
    assert wrong.diagnoses == (
        "coordinates fit the extent as EPSG:3857: the declared CRS EPSG:4326 looks wrong",
    )


def test_geometry_type_names_a_curved_type_refused_before_parsing() -> None:
    # a new-user finding: a CircularString was counted as "missing or unparseable"
    arc_z = struct.pack("<BII", 1, 1008, 3) + struct.pack("<9d", 0, 0, 0, 1, 1, 0, 2, 0, 0)
    nested = struct.pack("<BII", 1, 7, 1) + arc_z
    c = clause("types", "geometry_type", allowed=["Polygon"])
    r = run(c, batch_of([arc_z, VALID_POLYGON, nested]))
    assert r.result == "break"
    assert r.measured == {"CircularString Z": 1, "missing or unparseable": 1}
    assert r.offenders is not None
    assert [f.value for f in r.offenders.features] == [
        "CircularString Z",
        "missing or unparseable",
    ]


def test_swapped_axes_are_named_even_when_most_features_are_inside() -> None:
    # the demo's latitude-first Europe against a world extent: only Russia (longitude
    # beyond 90 read as latitude) is outside, yet the cause is the axis order
    lat_first = [shapely.Point(40 + i, 5 + 2 * i) for i in range(9)] + [shapely.Point(60, 100)]
    world = clause("ext", "extent", region=[-180, -90, 180, 90])
    r = run(world, batch_of(lat_first), clause("srid", "crs", expect="EPSG:4326"))
    assert r.result == "break" and r.measured["outside"] == 1
    # a world box read y first is no region (longitudes as latitudes): the batch is named
    assert r.diagnoses == (
        "axis order looks swapped: the coordinates fit the extent with x and y exchanged",
    )


def test_a_region_written_latitude_first_is_named_beside_a_swap_of_the_batch() -> None:
    # correct lon/lat data against a region written [minlat, minlon, maxlat, maxlon]: the
    # fit with x and y exchanged cannot tell which side is wrong (a fresh-user finding)
    r = run(clause("extent", "extent", region=[48.0, 2.0, 49.0, 3.0]), batch_of([PARIS]))
    assert r.result == "break" and r.diagnoses == (SWAP,)
    assert "or the region is written y first" in SWAP


def test_domain_messages_spell_booleans_and_null_as_json_and_yaml_do() -> None:
    # "(False, True)" beside offenders saying false (a fresh-user finding)
    attrs = pa.table({"flag": pa.array([True, False, None])})
    c = clause("flag", "domain", column="flag", values={True: "set"}, allow_null=True)
    r = run(c, batch_of([VALID_POLYGON] * 3, attributes=attrs))
    assert r.result == "break"
    assert "1 value not in the domain (false); 1 null (allowed); the codes are true" in r.message


def test_longitudes_beyond_180_that_fit_once_wrapped_are_diagnosed_so() -> None:
    # a point at longitude 181 was hinted as EPSG:3857 metres (a fresh-user finding)
    world = clause("extent", "extent", region=[-180, -90, 180, 90])
    r = run(world, batch_of([shapely.Point(1, 2), shapely.Point(181, 5)]))
    assert r.result == "break"
    assert r.diagnoses == (
        "longitudes beyond ±180: the coordinates fit the extent once wrapped into -180..180 "
        "(x - 360 east of 180, x + 360 west of -180); write longitudes within -180..180, "
        "splitting features that cross the antimeridian (RFC 7946 section 3.1.9)",
    )
    west = run(world, batch_of([shapely.box(-200, 0, -190, 10)]))
    assert west.diagnoses[0].startswith("longitudes beyond ±180")
    # a feature across the antimeridian is not moved: nothing wraps it inside a world box
    across = run(world, batch_of([shapely.box(170, 0, 190, 10)]))
    assert not any(d.startswith("longitudes beyond") for d in across.diagnoses)
    # an infinite longitude is not wrapped (moving it warned "invalid value encountered in
    # multiply" on stderr, an error under this suite's warning filter): a fresh-user finding
    inf = shapely.from_wkb(struct.pack("<BIdd", 1, 1, float("inf"), 1.0))
    r = run(world, batch_of([shapely.Point(1, 2), inf]))
    assert r.result == "break" and r.measured["fraction_inside"] == 0.5
    assert not any(d.startswith("longitudes beyond") for d in r.diagnoses)
