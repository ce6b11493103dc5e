"""Tests of worker.core.contracts.parse: loading, validation messages, digest, domain key types."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pytest
import yaml

from worker.core.clauses import CLAUSE_KINDS
from worker.core.contracts.parse import canonical_json, contract_to_document, parse_contract
from worker.core.contracts.yaml_doc import MAX_DOCUMENT_BYTES
from worker.core.errors import ContractError
from worker.core.geometry_types import GEOMETRY_TYPES
from worker.io.contract_files import load_contract

DATA = Path(__file__).resolve().parents[2] / "worker" / "data" / "contracts"
SCHEMAS = Path(__file__).resolve().parents[2] / "worker" / "schemas"

FULL = """\
layer: parcels_authoritative
version: v7.1
cadence: P1D
objective: 0.99
owner: parcels-team
changelog: "why this version exists"
clauses:
  - {name: srid, kind: crs, expect: "EPSG:2263", on_break: halt}
  - {name: axis_order, kind: axis_order, expect: east_north}
  - {name: extent, kind: extent, region: [909000, 110000, 1068000, 275000],
     min_fraction_inside: 1.0}
  - {name: geometry_types, kind: geometry_type, allowed: [Polygon, MultiPolygon]}
  - {name: valid, kind: validity, max_invalid_fraction: 0.0}
  - {name: land_use, kind: domain, column: land_use, values: {R1: residential, C1: commercial}}
  - {name: fresh, kind: freshness, max_age: PT4H}
  - {name: coverage, kind: coverage, min_fraction: 0.98, region: [909000, 110000, 1068000, 275000]}
  - {name: schema, kind: schema, fields: [{name: parcel_id, type: string},
                                          {name: land_use, type: string, nullable: true}]}
  - {name: size, kind: feature_count, min: 1, max: 500000}
"""


def _doc(**changes: object) -> dict:
    doc = yaml.safe_load(FULL)
    doc.update(changes)
    return doc


def _text(doc: dict) -> str:
    return yaml.safe_dump(doc, sort_keys=False)


def _with_clause(clause: dict) -> str:
    doc = _doc()
    doc["clauses"] = [*doc["clauses"][:3], clause]
    return _text(doc)


def test_full_document_loads() -> None:
    c = parse_contract(FULL)
    assert (c.layer, c.version, c.major, c.minor) == ("parcels_authoritative", "v7.1", 7, 1)
    assert c.cadence_s == 86400.0
    assert c.objective == 0.99
    assert {cl.kind for cl in c.clauses} == set(CLAUSE_KINDS)
    assert c.clause("fresh") is not None and c.clause("fresh").params == {"max_age": "PT4H"}
    assert c.clause("axis_order").on_break == "halt"
    assert c.text == FULL
    assert len(c.digest) == 64 and c.key == "parcels_authoritative/v7.1"


@pytest.mark.parametrize(("written", "canonical"), [("v7", "v7.0"), ("v12.3", "v12.3")])
def test_version_canonicalisation(written: str, canonical: str) -> None:
    c = parse_contract(_text(_doc(version=written)))
    assert c.version == canonical
    assert (c.major, c.minor) == tuple(int(x) for x in canonical[1:].split("."))


def test_v7_and_v7_0_have_the_same_digest() -> None:
    assert (
        parse_contract(_text(_doc(version="v7"))).digest
        == parse_contract(_text(_doc(version="v7.0"))).digest
    )


def test_digest_is_stable_across_key_order_and_formatting() -> None:
    doc = _doc()
    reordered = {k: doc[k] for k in reversed(list(doc))}
    reordered["clauses"] = [dict(reversed(list(c.items()))) for c in doc["clauses"]]
    flow = json.dumps(doc)  # JSON is YAML: a completely different spelling
    a, b, c = (parse_contract(t) for t in (FULL, _text(reordered), flow))
    assert a.digest == b.digest == c.digest


def test_digest_changes_with_a_value() -> None:
    doc = _doc()
    doc["clauses"][6]["max_age"] = "PT5H"
    assert parse_contract(_text(doc)).digest != parse_contract(FULL).digest


def test_explicit_default_on_break_does_not_change_digest() -> None:
    doc = _doc()
    doc["clauses"][1]["on_break"] = "halt"
    assert parse_contract(_text(doc)).digest == parse_contract(FULL).digest


def test_int_and_string_domain_keys_are_preserved_and_distinct() -> None:
    as_int = FULL.replace("{R1: residential, C1: commercial}", "{1: one, 2: two}")
    as_str = FULL.replace("{R1: residential, C1: commercial}", '{"1": one, "2": two}')
    quoted = FULL.replace("{R1: residential, C1: commercial}", '{"01": one}')
    ci, cs, cq = (parse_contract(t) for t in (as_int, as_str, quoted))
    assert list(ci.clause("land_use").params["values"]) == [1, 2]
    assert list(cs.clause("land_use").params["values"]) == ["1", "2"]
    assert list(cq.clause("land_use").params["values"]) == ["01"]
    assert ci.digest != cs.digest
    assert '"int:1"' in canonical_json(contract_to_document(ci))


def test_contract_to_document_round_trips() -> None:
    c = parse_contract(FULL)
    again = parse_contract(yaml.safe_dump(contract_to_document(c)))
    assert again.digest == c.digest and again.clauses == c.clauses


def _error(text: str, source: str = "layers/parcels.v7.yaml") -> str:
    with pytest.raises(ContractError) as info:
        parse_contract(text, source=source)
    return str(info.value)


@pytest.mark.parametrize(
    ("text", "path", "fix"),
    [
        (_text(_doc(version="7.1")), "version", "v<major>.<minor>"),
        (_text(_doc(cadence="1 day")), "cadence", "ISO 8601 duration"),
        (_text(_doc(objective=0)), "objective", "0 < objective <= 1"),
        (_text(_doc(objective=1.5)), "objective", "0 < objective <= 1"),
        (_text(_doc(changelog="")), "changelog", "why this version exists"),
        (_text(_doc(clauses=[])), "clauses", "non-empty list"),
        (_text({k: v for k, v in _doc().items() if k != "owner"}), "owner", "owner"),
        (
            _with_clause({"name": "f", "kind": "freshness", "max_age": "4h"}),
            "clauses[3].max_age",
            "such as PT4H",
        ),
        (
            _with_clause(
                {"name": "f", "kind": "freshness", "max_age": "PT4H", "max_clock_skew": "5 min"}
            ),
            "clauses[3].max_clock_skew",
            "PT4H",
        ),
        (_text(_doc(cadence="P1M")), "cadence", "ISO 8601 duration"),
        (
            _with_clause({"name": "f", "kind": "freshness", "max_agee": "PT4H"}),
            "clauses[3]",
            "max_age",
        ),
        (
            _with_clause({"name": "x", "kind": "crs", "expect": "EPSG:2263", "expct": 1}),
            "clauses[3].expct",
            "allowed fields for kind crs",
        ),
        (
            _with_clause({"name": "x", "kind": "crss", "expect": "EPSG:2263"}),
            "clauses[3].kind",
            "feature_count",
        ),
        (
            _with_clause({"name": "x", "kind": "crs", "expect": "EPSG:2263", "on_break": "stop"}),
            "clauses[3].on_break",
            "halt or warn",
        ),
        (
            _with_clause({"name": "x", "kind": "axis_order", "expect": "lat_lon"}),
            "clauses[3].expect",
            "east_north or north_east",
        ),
        (
            _with_clause({"name": "x", "kind": "extent", "region": [1, 2, 3]}),
            "clauses[3].region",
            "bbox",
        ),
        (
            _with_clause({"name": "x", "kind": "extent", "region": [0, 5, 1, 2]}),
            "clauses[3].region",
            "bbox",
        ),
        (
            _with_clause({"name": "x", "kind": "extent", "region": "POLYGON ((0 0, 1"}),
            "clauses[3].region",
            "WKT",
        ),
        (
            _with_clause(
                {"name": "x", "kind": "extent", "region": [0, 0, 1, 1], "min_fraction_inside": 2}
            ),
            "clauses[3].min_fraction_inside",
            "fraction",
        ),
        (
            _with_clause({"name": "x", "kind": "geometry_type", "allowed": ["Polygn"]}),
            "clauses[3].allowed[0]",
            "MultiPolygon",
        ),
        (
            _with_clause({"name": "x", "kind": "geometry_type", "allowed": []}),
            "clauses[3].allowed",
            "non-empty",
        ),
        (
            _with_clause({"name": "x", "kind": "validity", "max_invalid_fraction": -0.1}),
            "clauses[3].max_invalid_fraction",
            "fraction",
        ),
        (
            _with_clause({"name": "x", "kind": "domain", "column": "c", "values": ["A", "B"]}),
            "clauses[3].values",
            "code -> meaning",
        ),
        (
            _with_clause({"name": "x", "kind": "coverage", "min_fraction": 0.9}),
            "clauses[3]",
            "expected_features",
        ),
        (
            _with_clause(
                {"name": "x", "kind": "coverage", "min_fraction": 0.9, "expected_features": 0}
            ),
            "clauses[3].expected_features",
            "> 0",
        ),
        (
            _with_clause({"name": "x", "kind": "schema", "fields": [{"name": "a", "type": "int"}]}),
            "clauses[3].fields[0].type",
            "integer",
        ),
        (
            _with_clause({"name": "x", "kind": "feature_count", "min": 5, "max": 1}),
            "clauses[3]",
            "min <= max",
        ),
        (_with_clause({"name": "x", "kind": "feature_count"}), "clauses[3]", "min"),
        (
            _with_clause(
                {
                    "name": "x",
                    "kind": "schema",
                    "fields": [{"name": "a", "type": "integer"}, {"name": "a", "type": "string"}],
                }
            ),
            "clauses[3].fields",
            "list each field once",
        ),
        (
            _with_clause({"name": "srid", "kind": "validity", "max_invalid_fraction": 0}),
            "clauses[3].name",
            "unique",
        ),
        (
            _with_clause({"name": "x", "kind": "crs", "expect": "EPSG:99999999"}),
            "clauses[3].expect",
            "EPSG:4326",
        ),
        (
            FULL.replace("{R1: residential, C1: commercial}", "{on: yes}"),
            "clauses[5].values",
            "quote",
        ),
    ],
)
def test_errors_name_file_path_and_fix(text: str, path: str, fix: str) -> None:
    message = _error(text)
    assert message.startswith("layers/parcels.v7.yaml: ")
    assert f": {path}" in message
    assert fix in message


def test_not_yaml_and_not_a_mapping() -> None:
    assert "not readable as YAML" in _error("layer: [unclosed")
    assert "not a mapping" in _error("- a\n- b\n")


def test_duplicate_yaml_keys_are_refused() -> None:
    assert "duplicate key 'layer'" in _error(FULL + "layer: other\n")


def test_load_contract_reads_a_file_and_names_it(tmp_path: Path) -> None:
    good = tmp_path / "p.v7.yaml"
    good.write_text(FULL, encoding="utf-8")
    assert load_contract(good).version == "v7.1"
    bad = tmp_path / "bad.yaml"
    bad.write_text(FULL.replace("PT4H", "4 hours"), encoding="utf-8")
    with pytest.raises(ContractError, match=r"bad\.yaml: clauses\[6\]\.max_age"):
        load_contract(bad)
    with pytest.raises(ContractError, match=r"missing\.yaml: cannot read"):
        load_contract(tmp_path / "missing.yaml")


def test_the_three_demo_contracts_ship() -> None:
    assert sorted(p.name for p in DATA.glob("*.yaml")) == [
        "admin_boundaries.v1.1.yaml",
        "admin_boundaries.v1.yaml",
        "nyc_boroughs.v1.yaml",
    ]


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.yaml")))
def test_shipped_demo_contracts_load(name: str) -> None:
    c = load_contract(DATA / name)
    assert c.layer in name


def test_an_unknown_kind_is_the_first_error_named() -> None:
    # found by a fresh-user session: the unknown fields of the clause were named first
    text = (
        "layer: t\nversion: v1\ncadence: P1D\nobjective: 0.9\nowner: me\nchangelog: t\n"
        "clauses:\n  - {name: c, kind: topology, foo: 1}\n"
    )
    with pytest.raises(ContractError) as exc:
        parse_contract(text, source="t.yaml")
    assert str(exc.value).startswith("t.yaml: clauses[0].kind:")


def test_an_invalid_wkt_region_is_refused_with_the_geos_reason() -> None:
    # found by a fresh-user session: a bowtie region was accepted, then every batch was
    # quarantined with a GEOS TopologyException in the coverage clause
    bowtie = "POLYGON ((0 0, 10 10, 10 0, 0 10, 0 0))"
    for kind, extra in (("extent", {}), ("coverage", {"min_fraction": 0.9})):
        message = _error(_with_clause({"name": "x", "kind": kind, "region": bowtie, **extra}))
        assert ": clauses[3].region: the WKT polygon is invalid (Self-intersection" in message
        assert "make the ring simple" in message


# -- geometry types: the GeoParquet vocabulary with coordinate dimensions -------------------


def test_schema_lists_the_geoparquet_geometry_type_vocabulary() -> None:
    schema = json.loads((SCHEMAS / "contract.schema.json").read_text(encoding="utf-8"))
    assert tuple(schema["$defs"]["geometry_type_name"]["enum"]) == GEOMETRY_TYPES
    assert len(GEOMETRY_TYPES) == 28 and "MultiPolygon ZM" in GEOMETRY_TYPES


def test_dimensioned_geometry_types_load_and_misspellings_are_refused() -> None:
    allowed = ["Point", "Point Z", "Polygon M", "MultiPolygon ZM"]
    c = parse_contract(_with_clause({"name": "t", "kind": "geometry_type", "allowed": allowed}))
    assert c.clause("t").params["allowed"] == allowed
    for wrong in ("PointZ", "Point z", "POINT Z", "Point 3D"):
        message = _error(_with_clause({"name": "t", "kind": "geometry_type", "allowed": [wrong]}))
        assert ": clauses[3].allowed[0]: invalid value" in message
        assert "with a space and Z, M or ZM" in message and "'Polygon Z'" in message


# -- YAML 1.1 implicit types: codes mean what their authors wrote ---------------------------


def _domain(values_yaml: str) -> str:
    return FULL.replace("values: {R1: residential, C1: commercial}", f"values: {values_yaml}")


@pytest.mark.parametrize(
    ("written", "reads"),
    [
        ("010", "an integer: 8"),  # octal
        ("007", "an integer: 7"),
        ("0x1A", "an integer: 26"),  # hexadecimal
        ("1:30", "an integer: 90"),  # sexagesimal
        ("1_000", "an integer: 1000"),  # digit separators
        ("0b101", "an integer: 5"),  # binary
        ("+5", "an integer: 5"),
        ("yes", "a boolean: True"),
        ("off", "a boolean: False"),
        ("1.5", "a float: 1.5"),
        ("~", "null: None"),
        ("2020-01-01", "a timestamp: datetime.date(2020, 1, 1)"),
    ],
)
def test_domain_codes_yaml_would_retype_are_refused(written: str, reads: str) -> None:
    message = _error(_domain(f"{{{written}: x, R1: residential}}"))
    assert f": clauses[5].values.{written}: domain code {written} is written unquoted" in message
    assert f"YAML 1.1 reads it as {reads}" in message
    assert f"quote it ('{written}': ...)" in message


@pytest.mark.parametrize("written", ["010", "0x1A", "1:30", "yes", "1.5"])
def test_domain_meanings_yaml_would_retype_are_refused(written: str) -> None:
    message = _error(_domain(f"{{R1: {written}}}"))
    assert f": clauses[5].values.R1: the meaning {written} is written unquoted" in message
    assert "a meaning is text" in message and f"quote it (...: '{written}')" in message


@pytest.mark.parametrize(
    ("old", "new", "path", "reads"),
    [  # N08 kind in every number field: YAML 1.1 retypes what YAML 1.2 and readers keep
        ("min: 1,", "min: 010,", "clauses[9].min", "an integer: 8"),
        ("max: 500000", "max: 1:30", "clauses[9].max", "an integer: 90"),
        ("max: 500000", "max: 500_000", "clauses[9].max", "an integer: 500000"),
        ("max: 500000", "max: 0x7A120", "clauses[9].max", "an integer: 500000"),
        ("region: [909000, 110000,", "region: [909000, 0110000,", "clauses[2].region[1]",
         "an integer: 36864"),
        ("min_fraction: 0.98", "min_fraction: 0.9_8", "clauses[7].min_fraction", "a float: 0.98"),
        ("objective: 0.99", "objective: 0.9_9", "objective", "a float: 0.99"),
        ("min_fraction_inside: 1.0}", "min_fraction_inside: 1.0, tolerance: 1:30}",
         "clauses[2].tolerance", "an integer: 90"),
        ("owner: parcels-team", "owner: 0100", "owner", "an integer: 64"),
    ],
)  # fmt: skip
def test_numbers_yaml_would_retype_are_refused_in_every_field(
    old: str, new: str, path: str, reads: str
) -> None:
    assert old in FULL
    message = _error(FULL.replace(old, new, 1))
    written = next(
        w for w in new.replace(",", " ").replace("}", " ").split()[::-1] if w[0] in "015"
    )
    assert f": {path}: {written} is written unquoted and YAML 1.1 reads it as {reads}" in (
        message
    ), message
    assert "write the number in plain decimal" in message


def test_plain_numbers_keep_what_was_written() -> None:
    text = FULL.replace("max: 500000", "max: +500000").replace("0.98", "9.8e-1")
    text = text.replace("objective: 0.99", "objective: 0.990")
    c = parse_contract(text.replace("min_fraction_inside: 1.0}", "min_fraction_inside: 1.}"))
    assert c.clause("size").params["max"] == 500000 and c.objective == 0.99
    assert c.clause("coverage").params["min_fraction"] == 0.98


def test_quoted_codes_plain_decimals_and_plain_strings_keep_what_was_written() -> None:
    c = parse_contract(_domain("{'010': a, \"0x1A\": b, 10: c, -3: d, 0: e, 08: f, R1: '010'}"))
    values = c.clause("land_use").params["values"]
    assert values == {"010": "a", "0x1A": "b", 10: "c", -3: "d", 0: "e", "08": "f", "R1": "010"}


# -- YAML: no aliases, bounded size and depth -----------------------------------------------


def test_anchors_and_aliases_are_refused() -> None:
    text = FULL.replace("max_age: PT4H", "max_age: &age PT4H") + (
        "  - {name: fresh2, kind: freshness, max_age: *age}\n"
    )
    message = _error(text)
    assert "not readable as YAML" in message and "anchors and aliases" in message
    assert "line 15, column 45" in message  # where the anchor is, not only that there is one


def test_a_billion_laughs_document_is_refused_fast_without_memory_growth() -> None:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    text = "\n".join(lines) + "\n"  # 9 levels: 9**10 = 3.5e9 strings once expanded
    tracemalloc.start()
    started = time.perf_counter()
    try:
        message = _error(text)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "anchors and aliases" in message
    assert elapsed < 0.5
    assert peak < 2_000_000  # bytes: nothing was expanded


def test_a_document_over_the_size_cap_is_refused_before_parsing() -> None:
    text = FULL + "# " + "x" * MAX_DOCUMENT_BYTES + "\n"
    started = time.perf_counter()
    message = _error(text)
    assert time.perf_counter() - started < 0.5
    assert f"more than the {MAX_DOCUMENT_BYTES} a contract may have" in message


def test_deep_nesting_and_unhashable_keys_are_clear_errors() -> None:
    message = _error("layer: " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert "nested deeper than 32 levels" in message
    message = _error(FULL + "? [a, b]\n: 1\n")
    assert "not readable as YAML" in message and "a mapping key is a list" in message


# -- regions are checked against the contract CRS -------------------------------------------


def _region_contract(crs: str | None, region: str, kind: str = "extent") -> str:
    srid = f'  - {{name: srid, kind: crs, expect: "{crs}"}}\n' if crs else ""
    extra = "min_fraction: 0.9" if kind == "coverage" else "min_fraction_inside: 1.0"
    return (
        "layer: t\nversion: v1\ncadence: P1D\nobjective: 0.9\nowner: me\nchangelog: t\n"
        f"clauses:\n{srid}  - {{name: area, kind: {kind}, region: {region}, {extra}}}\n"
    )


@pytest.mark.parametrize("kind", ["extent", "coverage"])
@pytest.mark.parametrize(
    ("crs", "region", "what"),
    [
        ("OGC:CRS84", "[8.4, 47.3, 800, 47.5]", "longitude 800 (maxx) is outside [-180, 180]"),
        ("OGC:CRS84", "[8.4, 47.3, 1.0e+400, 47.5]", "maxx is inf (not a finite number"),
        ("OGC:CRS84", "[8.4, 47.3, 1" + "0" * 400 + ", 47.5]", "maxx is an integer of 401 digits"),
        (None, "[8.4, 47.3, 1" + "0" * 400 + ", 47.5]", "maxx is an integer of 401 digits"),
        ("OGC:CRS84", "[-.inf, 47.3, 8.6, 47.5]", "minx is -inf (not a finite number"),
        ("OGC:CRS84", "[.nan, 47.3, 8.6, 47.5]", "minx is nan (not a finite number"),
        (None, "[8.4, 47.3, 1.0e+400, 47.5]", "maxx is inf"),
        # EPSG:4326 is lat/lon by definition, but regions are [minx, miny, maxx, maxy] with
        # x = longitude, as for OGC:CRS84 (worker.core.spatial.region_geometry)
        ("EPSG:4326", "[170, -95, 175, 10]", "latitude -95 (miny) is outside [-90, 90]"),
        ("EPSG:4326", "[-181, 10, 20, 30]", "longitude -181 (minx) is outside [-180, 180]"),
        (
            "OGC:CRS84",
            "'POLYGON ((170 0, 200 0, 200 10, 170 0))'",
            "longitude 200 (maxx) is outside [-180, 180]",
        ),
        (
            "OGC:CRS84",
            "'POLYGON ((0 0, 1 0, 1 1e400, 0 0))'",
            "the WKT polygon has a non-finite coordinate",
        ),
        # the range is in the CRS's angular unit: a quarter turn is 100 grads (NTF Paris)
        ("EPSG:4807", "[0, 0, 10, 150]", "latitude 150 (maxy) is outside [-100, 100]"),
        ("EPSG:4807", "[-250, 0, 10, 10]", "longitude -250 (minx) is outside [-200, 200]"),
        ("EPSG:3857", "[0, 0, 1000, 1.0e+9]", "lies far outside the area of use of EPSG:3857"),
        (
            "EPSG:2263",
            "[909000000, 110000, 1068000000, 275000]",
            "lies far outside the area of use of EPSG:2263",
        ),
        ("EPSG:3857", "[1000, 0, -1000, 10]", "minx is greater than maxx in the projected CRS"),
    ],
)
def test_regions_outside_the_crs_range_are_refused(
    crs: str | None, region: str, what: str, kind: str
) -> None:
    message = _error(_region_contract(crs, region, kind))
    index = 1 if crs else 0
    assert f": clauses[{index}].region: " in message and what in message


@pytest.mark.parametrize(
    ("crs", "region"),
    [
        ("OGC:CRS84", "[-180, -90, 180, 90]"),
        ("OGC:CRS84", "[170, -10, -170, 10]"),  # crosses the antimeridian
        ("EPSG:4326", "[8.4, 47.3, 8.6, 47.5]"),
        ("EPSG:4807", "[-190, 50, 10, 95]"),  # grads: 95 gr is latitude 85.5 degrees
        ("EPSG:3857", "[-20037508.34, -20048966.1, 20037508.34, 20048966.1]"),
        ("EPSG:2263", "[909000, 110000, 1068000, 275000]"),
        ("EPSG:32618", "[300000, 4400000, 700000, 4600000]"),
        (None, "[909000, 110000, 1068000, 275000]"),  # the batch's CRS: unknown at load
    ],
)
def test_regions_within_the_crs_range_load(crs: str | None, region: str) -> None:
    c = parse_contract(_region_contract(crs, region))
    assert c.clause("area") is not None


def test_a_clause_crs_overrides_the_contract_crs_for_its_region() -> None:
    text = _region_contract("OGC:CRS84", "[900000, 6000000, 1000000, 6100000]").replace(
        "min_fraction_inside: 1.0}", 'min_fraction_inside: 1.0, crs: "EPSG:3857"}'
    )
    assert parse_contract(text).clause("area").params["crs"] == "EPSG:3857"
    assert "longitude 900000" in _error(_region_contract("OGC:CRS84", "[900000, 0, 1000000, 1]"))


def test_a_number_yaml_11_reads_as_text_gets_a_hint() -> None:
    # YAML 1.1 floats need a dot and a signed exponent: 1.0e9 and 1e9 are strings
    message = _error(_region_contract("EPSG:3857", "[0, 0, 1000, 1.0e9]"))
    assert ": clauses[1].region: " in message
    assert "YAML 1.1 reads '1.0e9' as text: write 1.0e+9" in message
    message = _error(_region_contract("EPSG:3857", "[0, 0, 1000, 10]").replace("1.0}", "1e-2}"))
    assert ": clauses[1].min_fraction_inside: " in message
    assert "YAML 1.1 reads '1e-2' as text: write 1.0e-2" in message


@pytest.mark.parametrize(
    ("old", "new", "path"),
    [
        ("objective: 0.99", "objective: .nan", "objective"),
        (
            "max_invalid_fraction: 0.0",
            "max_invalid_fraction: .nan",
            "clauses[4].max_invalid_fraction",
        ),
        ("min_fraction: 0.98", "min_fraction: -.inf", "clauses[7].min_fraction"),
        (
            "min_fraction_inside: 1.0",
            "min_fraction_inside: 1.0, tolerance: 1.0e+400",
            "clauses[2].tolerance",
        ),
        # an integer literal beyond double precision: no float holds it (E02 kind)
        (
            "min_fraction_inside: 1.0",
            "min_fraction_inside: 1.0, tolerance: 1" + "0" * 400,
            "clauses[2].tolerance",
        ),
        ("max: 500000", "max: 9" * 1 + "9" * 320, "clauses[9].max"),
    ],
)
def test_non_finite_numbers_are_refused_anywhere(old: str, new: str, path: str) -> None:
    assert old in FULL
    message = _error(FULL.replace(old, new))
    assert f": {path}: " in message and "is not a finite number" in message


def test_schema_fields_can_name_every_field_type_but_not_mixed() -> None:
    # issue 9: nested columns are nameable (FIELD_TYPES); 'mixed' and 'other' are batch-only
    from worker.core.vocab import BATCH_ONLY_FIELD_TYPES, FIELD_TYPES

    def doc(ftype: str) -> str:
        return FULL.replace("{name: parcel_id, type: string}", f"{{name: bbox, type: {ftype}}}")

    for ftype in FIELD_TYPES:
        fields = parse_contract(doc(ftype)).clause("schema").params["fields"]  # type: ignore[union-attr]
        assert fields[0] == {"name": "bbox", "type": ftype}
    for ftype in BATCH_ONLY_FIELD_TYPES:
        with pytest.raises(ContractError, match="type"):
            parse_contract(doc(ftype))
    # the fix names every type a contract can use (it listed 7 of 13: a fresh-user finding)
    with pytest.raises(ContractError) as refused:
        parse_contract(doc("str"))
    assert str(refused.value).endswith(f"expected one of {', '.join(FIELD_TYPES)}")


def test_inputs_found_by_fuzzing_are_contract_errors() -> None:
    """tests/faults/fuzz.py found both raising outside ContractError (yaml.ReaderError,
    ValueError), which the config follower would not have caught."""
    assert "unacceptable character #x001f" in _error("\x1f")
    message = _error("layer: parcels\nversion: 2026-13-45\n")
    assert "not readable as YAML: a value cannot be constructed (month must be in 1..12)" in (
        message
    )


@pytest.mark.parametrize("layer", ["roads east/west", "roads east", "a/b", "x" * 201, "é"])
def test_a_layer_name_kafka_cannot_carry_is_refused(layer: str) -> None:
    # found by a new-user session: `layer: "roads east/west"` was published (exit 0), then
    # rejected by every worker as key_mismatch; "roads east" made an illegal topic name
    text = (DATA / "admin_boundaries.v1.yaml").read_text()
    text = text.replace("layer: admin_boundaries", f"layer: {json.dumps(layer)}")
    with pytest.raises(ContractError, match=r"layer: invalid value .* letters, digits"):
        parse_contract(text, source="c.yaml")


@pytest.mark.parametrize("version", ["v1.05", "v01", "v1.", "v1.2.3", "1.1"])
def test_a_version_number_with_leading_zeros_or_another_form_is_refused(version: str) -> None:
    # found by a new-user session: v1.05 was read as v1.5 without a word
    text = (DATA / "admin_boundaries.v1.yaml").read_text()
    text = text.replace("version: v1\n", f"version: {json.dumps(version)}\n")
    with pytest.raises(ContractError, match=r"version: invalid value .* without leading zeros"):
        parse_contract(text, source="c.yaml")


def test_a_null_value_is_said_in_yaml_terms() -> None:
    # a fresh-user session: "allow_empty: null" read "None is not of type 'boolean'"
    text = (DATA / "admin_boundaries.v1.yaml").read_text()
    text = text.replace(
        "allowed: [Polygon, MultiPolygon]\n",
        "allowed: [Polygon, MultiPolygon]\n    allow_empty: null\n",
    )
    with pytest.raises(ContractError) as info:
        parse_contract(text, source="c.yaml")
    message = str(info.value)
    assert "allow_empty: invalid value null (null is not of type 'boolean')" in message
    assert "expected true or false" in message and "None" not in message
