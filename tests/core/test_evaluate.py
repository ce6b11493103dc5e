"""Verdicts and routing decisions over several versions, and real-data runs (core.evaluate)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import shapely

from tests.catalogue import (
    ADMIN_BOUNDARIES,
    BOWTIE,
    EUROPE_BBOX,
    NOW,
    NYC_BOROUGHS,
    PARIS,
    PARIS_LAT_FIRST,
    VALID_POLYGON,
    active,
    batch_of,
    clause,
    contract_of,
    read_geoparquet,
)
from worker.core.evaluate import evaluate, evaluate_versions
from worker.core.facts.batch import BatchFacts
from worker.core.model import Batch, FieldSpec
from worker.core.spatial.reproject import reproject

SWAP = (
    "axis order looks swapped: the coordinates fit the extent with x and y exchanged "
    "(or the region is written y first: the contract gives it as minx, miny, maxx, maxy)"
)

STRICT = contract_of(
    clause("srid", "crs", expect="EPSG:4326"),
    clause("ext", "extent", region=EUROPE_BBOX),
    clause("valid", "validity"),
    version="v2.0",
)
LOOSE = contract_of(clause("srid", "crs", expect="EPSG:4326"), version="v1.0")


def test_all_pass_is_admitted() -> None:
    d = evaluate(batch_of([PARIS]), [active(STRICT)], now=NOW)
    assert d.decision == "admitted" and d.admitted
    assert d.reasons == () and d.diagnoses == ()
    assert d.enforcing_passed == ("v2.0",)
    assert [r.result for r in d.verdicts[0].clauses] == ["pass", "pass", "pass"]


def test_enforcing_halt_break_quarantines_with_one_reason_per_clause() -> None:
    d = evaluate(batch_of([PARIS_LAT_FIRST, BOWTIE]), [active(STRICT)], now=NOW)
    assert d.decision == "quarantined"
    # the structural fault leads (issue 10 item 9), though the contract lists ext first
    assert [(r.code, r.version, r.mode, r.clause) for r in d.reasons] == [
        ("contract_break", "v2.0", "enforcing", "valid"),
        ("contract_break", "v2.0", "enforcing", "ext"),
    ]
    assert d.reasons[0].measured["invalid"] == 1
    assert d.diagnoses == ()  # the bowtie is outside too, so no swap fits all features
    d = evaluate(batch_of([PARIS_LAT_FIRST]), [active(STRICT)], now=NOW)
    assert d.diagnoses == (SWAP,)


def test_warn_break_does_not_fail_the_version() -> None:
    c = contract_of(clause("ext", "extent", on_break="warn", region=EUROPE_BBOX))
    d = evaluate(batch_of([PARIS_LAT_FIRST]), [active(c)], now=NOW)
    assert d.decision == "admitted"
    v = d.verdicts[0]
    assert v.passed and [r.name for r in v.broken] == ["ext"]
    assert d.reasons == () and d.diagnoses == (SWAP,)


def test_observing_versions_never_change_the_decision() -> None:
    bad = batch_of([PARIS_LAT_FIRST])
    for versions in (
        [active(STRICT, mode="observing")],
        [active(LOOSE), active(STRICT, mode="observing")],
    ):
        d = evaluate(bad, versions, now=NOW)
        assert d.decision == "admitted" and d.reasons == ()
        observing = next(v for v in d.verdicts if v.mode == "observing")
        assert not observing.passed
    d = evaluate(bad, [active(STRICT), active(LOOSE, mode="observing")], now=NOW)
    assert d.decision == "quarantined"
    assert {r.version for r in d.reasons} == {"v2.0"}


def test_only_active_versions_are_evaluated() -> None:
    versions = [active(STRICT, state="superseded"), active(LOOSE), active(STRICT, state="retired")]
    d = evaluate(batch_of([PARIS_LAT_FIRST]), versions, now=NOW)
    assert [v.version for v in d.verdicts] == ["v1.0"] and d.admitted


def test_diagnoses_deduplicated_in_order() -> None:
    other = contract_of(clause("extent2", "extent", region=EUROPE_BBOX), version="v3.0")
    d = evaluate(batch_of([PARIS_LAT_FIRST]), [active(STRICT), active(other)], now=NOW)
    assert d.diagnoses == (SWAP,)
    assert len(d.reasons) == 2


def test_facts_are_built_once_across_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}
    real = shapely.from_wkb

    def counting(*args: object, **kwargs: object) -> object:
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(shapely, "from_wkb", counting)
    versions = [
        active(contract_of(*STRICT.clauses, version=f"v{i}.0"), mode=m)
        for i, m in enumerate(["enforcing", "observing"] * 4, start=1)
    ]
    d = evaluate(batch_of([PARIS, VALID_POLYGON]), versions, now=NOW)
    assert len(d.verdicts) == 8
    assert calls["n"] == 1


def test_evaluate_versions_shares_one_facts_object() -> None:
    facts = BatchFacts(batch_of([PARIS]))
    verdicts = evaluate_versions(facts, [active(STRICT), active(LOOSE)], NOW)
    assert [v.version for v in verdicts] == ["v2.0", "v1.0"]
    geoms = facts.geometries
    evaluate_versions(facts, [active(STRICT)], NOW)
    assert facts.geometries is geoms


def test_an_evaluator_exception_becomes_a_gate_error() -> None:
    c = contract_of(
        clause("ext", "extent", region="NOT WKT"),
        clause("weird", "no_such_kind"),
        clause("size", "feature_count", min=1),
    )
    d = evaluate(batch_of([PARIS]), [active(c)], now=NOW)
    results = {r.name: r for r in d.verdicts[0].clauses}
    assert results["ext"].result == "break"
    assert results["ext"].message.startswith("gate error (contract-gate 0.1.0): ValueError")
    assert results["weird"].message == (
        "gate error (contract-gate 0.1.0): ValueError: unknown clause kind 'no_such_kind'; "
        "the gate failed, not the data: the batch is quarantined, replay it once the gate "
        "is fixed"
    )
    assert results["weird"].gate_error == "ValueError: unknown clause kind 'no_such_kind'"
    assert results["size"].result == "pass" and results["size"].gate_error is None
    assert d.decision == "quarantined"
    assert [(r.code, r.clause) for r in d.reasons] == [
        ("gate_error", "ext"),
        ("gate_error", "weird"),
    ]


def test_a_gate_error_halts_even_a_warn_clause_and_leads_the_reasons() -> None:
    c = contract_of(
        clause("size", "feature_count", min=5),
        clause("weird", "no_such_kind", on_break="warn"),
    )
    d = evaluate(batch_of([PARIS]), [active(c)], now=NOW)
    assert [(r.code, r.clause) for r in d.reasons] == [
        ("gate_error", "weird"),
        ("contract_break", "size"),
    ]
    observing = evaluate(batch_of([PARIS]), [active(c, mode="observing")], now=NOW)
    assert observing.admitted  # observing versions never change the decision


def test_no_active_versions_admits_without_verdicts() -> None:
    d = evaluate(batch_of([PARIS]), [], now=NOW)
    assert d.admitted and d.verdicts == ()


# -- real data (GeoParquet shipped in worker/data) -------------------------------------------

CONTINENTS = [
    "Africa",
    "Antarctica",
    "Asia",
    "Europe",
    "North America",
    "Oceania",
    "Seven seas (open ocean)",
    "South America",
]


def _real(path: object) -> tuple[Batch, np.ndarray, dict[str, object]]:
    geoms, table, wkb = read_geoparquet(path)  # type: ignore[arg-type]
    geo = json.loads(pq.read_schema(path).metadata[b"geo"])  # type: ignore[arg-type]
    crs_json = geo["columns"]["geometry"]["crs"]
    batch = batch_of(wkb, crs=json.dumps(crs_json), attributes=table)
    return batch, geoms, crs_json


BOROS = {1: "Manhattan", 2: "Bronx", 3: "Brooklyn", 4: "Queens", 5: "Staten Island"}


def test_real_nyc_boroughs_pass_the_design_contract() -> None:
    batch, _geoms, _ = _real(NYC_BOROUGHS)
    region = [909000, 110000, 1068000, 275000]
    c = contract_of(
        clause("srid", "crs", expect="EPSG:2263"),
        clause("axis", "axis_order", expect="east_north"),
        clause("extent", "extent", region=region),
        clause("types", "geometry_type", allowed=["Polygon", "MultiPolygon"]),
        clause("valid", "validity"),
        clause(
            "boro",
            "domain",
            column="BoroCode",
            values={1: "MN", 2: "BX", 3: "BK", 4: "QN", 5: "SI"},
        ),
        clause("cov", "coverage", region=region, min_fraction=0.3),
        clause("size", "feature_count", min=5, max=5),
    )
    d = evaluate(batch, [active(c)], now=NOW)
    results = {r.name: r for r in d.verdicts[0].clauses}
    assert d.admitted, [r.message for r in d.verdicts[0].broken]
    assert results["extent"].measured["fraction_inside"] == 1.0
    # planar area in US survey feet²: the union equals the boroughs' own Shape_Area sum
    shape_area = sum(batch.attributes.column("Shape_Area").to_pylist())
    assert results["cov"].measured["covered_area"] == pytest.approx(shape_area, rel=1e-3)
    assert results["cov"].measured["region_area"] == pytest.approx(159000.0 * 165000.0)
    assert results["cov"].measured["unit"] == "CRS units²"


def test_real_nyc_boroughs_string_codes_break_domain() -> None:
    batch, _, _ = _real(NYC_BOROUGHS)
    c = contract_of(clause("boro", "domain", column="BoroCode", values={"1": "MN", "2": "BX"}))
    d = evaluate(batch, [active(c)], now=NOW)
    r = d.verdicts[0].clauses[0]
    assert d.decision == "quarantined"
    assert sorted(r.measured["unknown"]) == [1, 2, 3, 4, 5]
    assert r.measured["unknown_count"] == 5


def test_real_world_boundaries_geodesic_land_area_and_antimeridian() -> None:
    batch, _geoms, _ = _real(ADMIN_BOUNDARIES)
    names = batch.attributes.column("name").to_pylist()
    # Russia has a vertex at lon 180.00000000000006: exactly outside, inside with tolerance
    world = clause("world", "extent", region=[-180, -90, 180, 90])
    exact = evaluate(batch, [active(contract_of(world))], now=NOW).verdicts[0].clauses[0]
    assert exact.measured["outside"] == 1 and exact.result == "break"
    c = contract_of(
        clause("srid", "crs", expect="OGC:CRS84"),
        clause("world", "extent", region=[-180, -90, 180, 90], tolerance=1e-9),
        clause("valid", "validity"),
        clause("cont", "domain", column="continent", values={k: k for k in CONTINENTS}),
        clause("cov", "coverage", region=[-180, -90, 180, 90], min_fraction=0.25),
    )
    d = evaluate(batch, [active(c)], now=NOW)
    res = {r.name: r for r in d.verdicts[0].clauses}
    assert d.admitted, [r.message for r in d.verdicts[0].broken]
    # geodesic: land incl. Antarctica ~1.49e8 km² of the Earth's 5.10e8 km²
    assert res["cov"].measured["region_area"] == pytest.approx(5.1007e14, rel=1e-3)
    assert 1.45e14 < res["cov"].measured["covered_area"] < 1.52e14
    assert res["cov"].measured["unit"] == "m²"
    # Fiji straddles the antimeridian: inside a bbox with minx > maxx
    fiji = batch_of([batch.geometries_wkb[names.index("Fiji")]])
    fiji_c = contract_of(clause("pacific", "extent", region=[170, -25, -170, -10]))
    assert evaluate(fiji, [active(fiji_c)], now=NOW).admitted


def test_real_south_america_in_metres_declared_as_degrees() -> None:
    batch, geoms, _ = _real(ADMIN_BOUNDARIES)
    continent = np.asarray(batch.attributes.column("continent").to_pylist())
    south = geoms[continent == "South America"]
    metres = reproject(south, "EPSG:4326", "EPSG:3857")
    c = contract_of(
        clause("srid", "crs", expect="EPSG:4326"),
        clause("sa", "extent", region=[-82, -56, -34, 13]),
    )
    assert evaluate(batch_of(list(south)), [active(c)], now=NOW).admitted
    d = evaluate(batch_of(list(metres)), [active(c)], now=NOW)
    assert d.decision == "quarantined"
    assert d.verdicts[0].clauses[1].measured["fraction_inside"] == 0.0
    assert d.diagnoses == (
        "coordinates look like EPSG:3857: they fit the extent after reprojecting "
        "from EPSG:3857 to EPSG:4326",
    )


def test_real_world_declared_north_east_but_stored_lon_first() -> None:
    batch, geoms, _ = _real(ADMIN_BOUNDARIES)
    continent = np.asarray(batch.attributes.column("continent").to_pylist())
    europe = [g for g, k in zip(geoms, continent, strict=True) if k == "Europe"]
    wrong = batch_of(europe, axis_order="north_east")
    c = contract_of(clause("world", "extent", region=[-180, -90, 180, 90], tolerance=1e-9))
    d = evaluate(wrong, [active(c)], now=NOW)
    # Russia and others reach beyond 90° east: read as latitudes they fall off the world
    expected = sum(1 for g in europe if g.bounds[2] <= 90 + 1e-9) / len(europe)
    assert d.verdicts[0].clauses[0].measured["fraction_inside"] == pytest.approx(expected)
    assert d.decision == "quarantined"


def test_schema_fields_of_real_table() -> None:
    batch, _, _ = _real(NYC_BOROUGHS)
    fields = (
        FieldSpec("BoroCode", "integer"),
        FieldSpec("BoroName", "string"),
        FieldSpec("Shape_Leng", "double"),
        FieldSpec("Shape_Area", "double"),
    )
    b = Batch(**{**batch.__dict__, "schema_fields": fields})
    c = contract_of(
        clause(
            "schema",
            "schema",
            fields=[
                {"name": "BoroCode", "type": "integer"},
                {"name": "BoroName", "type": "string"},
            ],
            allow_extra=True,
        )
    )
    assert evaluate(b, [active(c)], now=NOW).admitted


def test_a_polygon_with_an_empty_hole_is_invalid_not_a_crash() -> None:
    """Found by the fault suite's fuzzing: GEOS reads ``POLYGON ((...), EMPTY)`` as valid
    and its ``covered_by`` (the extent clause) then ended the process with SIGSEGV."""
    from tests.core.test_wkb import FUZZ_EMPTY_HOLE, SQUARE, _polygon

    valid = shapely.to_wkb(shapely.box(1, 44, 2, 45))
    batch = batch_of([_polygon(SQUARE, []), FUZZ_EMPTY_HOLE, valid])
    d = evaluate(batch, [active(STRICT)], now=NOW)
    res = {r.name: r for r in d.verdicts[0].clauses}
    assert d.decision == "quarantined"
    assert res["valid"].result == "break" and res["valid"].measured["invalid"] == 2
    assert "ring 1 of a polygon with 2 rings has no points" in json.dumps(res["valid"].measured)


def test_a_feature_with_an_empty_part_is_judged_when_the_batch_is_reprojected() -> None:
    # a new-user finding: MULTIPOLYGON (EMPTY, ...) in a batch whose extent broke (the
    # diagnosis reprojects) or whose extent has its own crs ended the process (SIGSEGV)
    from tests.core.test_spatial import EMPTY_PART_WKT

    geoms = [shapely.from_wkt(w) for w in EMPTY_PART_WKT] + [shapely.Point(500, 10)]
    c = contract_of(
        clause("valid", "validity"),
        clause("ext", "extent", region=[-180, -90, 180, 90]),
        clause("ext3857", "extent", region=[-2e7, -2e7, 2e7, 2e7], crs="EPSG:3857"),
    )
    d = evaluate(batch_of(geoms), [active(c)], now=NOW)
    results = {r.name: r for r in d.verdicts[0].clauses}
    assert results["valid"].result == "pass"
    assert results["ext"].measured["outside"] == 1  # the point at x = 500
    assert results["ext3857"].measured["outside"] == 1  # beyond EPSG:4326's area of use
