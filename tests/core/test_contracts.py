"""Tests of worker.core.contracts: loading, validation messages, digest, domain key types."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from worker.core.contracts import canonical_json, contract_to_document, parse_contract
from worker.core.errors import ContractError
from worker.core.model import CLAUSE_KINDS
from worker.io.contract_files import load_contract

DATA = Path(__file__).resolve().parents[2] / "worker" / "data" / "contracts"

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


def test_schema_fields_can_name_every_field_type_but_not_mixed() -> None:
    # issue 9: nested columns are nameable (FIELD_TYPES); 'mixed' and 'other' are batch-only
    from worker.core.model import BATCH_ONLY_FIELD_TYPES, FIELD_TYPES

    def doc(ftype: str) -> str:
        return FULL.replace("{name: parcel_id, type: string}", f"{{name: bbox, type: {ftype}}}")

    for ftype in FIELD_TYPES:
        fields = parse_contract(doc(ftype)).clause("schema").params["fields"]  # type: ignore[union-attr]
        assert fields[0] == {"name": "bbox", "type": ftype}
    for ftype in BATCH_ONLY_FIELD_TYPES:
        with pytest.raises(ContractError, match="type"):
            parse_contract(doc(ftype))
