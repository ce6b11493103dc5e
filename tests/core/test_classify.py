"""Change classification, every row of docs/design.md section 4 (contracts built from YAML text)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from worker.core.contracts.classify import classification_to_json, classify, render_classification
from worker.core.contracts.parse import parse_contract
from worker.core.errors import ContractGateError
from worker.core.model import Contract

BASE_YAML = """\
layer: parcels
version: v7.0
cadence: P1D
objective: 0.99
owner: parcels-team
changelog: base version
clauses:
  - {name: srid, kind: crs, expect: "EPSG:2263"}
  - {name: axis_order, kind: axis_order, expect: east_north}
  - name: extent
    kind: extent
    region: [909000, 110000, 1068000, 275000]
    min_fraction_inside: 0.99
    tolerance: 10
  - {name: geometry_types, kind: geometry_type, allowed: [Polygon, MultiPolygon]}
  - {name: valid, kind: validity, max_invalid_fraction: 0.01}
  - name: land_use
    kind: domain
    column: land_use
    values: {R1: residential, C1: commercial, M1: manufacturing}
  - {name: fresh, kind: freshness, max_age: PT4H, on_break: warn}
  - {name: coverage, kind: coverage, min_fraction: 0.98, expected_features: 1000}
  - name: schema
    kind: schema
    fields:
      - {name: parcel_id, type: string}
      - {name: land_use, type: string, nullable: true}
  - {name: size, kind: feature_count, min: 1, max: 500000}
"""


def base_doc() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(BASE_YAML)
    return doc


def contract(doc: dict[str, Any], version: str = "v7.1") -> Contract:
    doc = copy.deepcopy(doc)
    doc["version"] = version
    return parse_contract(yaml.safe_dump(doc, sort_keys=False), source="test")


BASE = parse_contract(BASE_YAML, source="base")


def clause(doc: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in doc["clauses"] if c["name"] == name)
    return found


def edited(edit: Callable[[dict[str, Any]], None]) -> Contract:
    doc = base_doc()
    edit(doc)
    return contract(doc)


def _set(name: str, **values: Any) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        clause(doc, name).update(values)

    return edit


def _drop(name: str) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        doc["clauses"] = [c for c in doc["clauses"] if c["name"] != name]

    return edit


def _fields(*fields: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    return _set("schema", fields=list(fields))


PID = {"name": "parcel_id", "type": "string"}
LU = {"name": "land_use", "type": "string", "nullable": True}

# (id, edit of the base making it STRICTER, expected reason fragment)
TIGHTENINGS: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    (
        "domain code removed",
        _set("land_use", values={"R1": "residential", "C1": "commercial"}),
        "codes removed",
    ),
    ("geometry type removed", _set("geometry_types", allowed=["Polygon"]), "types removed"),
    ("allow_empty true->false", _set("geometry_types", allow_empty=False), "allow_empty"),
    ("allow_null true->false", _set("land_use", allow_null=False), "allow_null"),
    ("allow_extra true->false", _set("schema", allow_extra=False), "allow_extra"),
    ("max_invalid_fraction", _set("valid", max_invalid_fraction=0.0), "max_invalid_fraction"),
    ("max_age", _set("fresh", max_age="PT2H"), "max_age"),
    ("min_fraction", _set("coverage", min_fraction=0.99), "min_fraction"),
    ("min_fraction_inside", _set("extent", min_fraction_inside=1.0), "min_fraction_inside"),
    ("tolerance", _set("extent", tolerance=1), "tolerance"),
    ("feature_count min", _set("size", min=10), "min"),
    ("feature_count max", _set("size", max=1000), "max"),
    (
        "new required field",
        _fields(PID, LU, {"name": "zone", "type": "string"}),
        "new required field",
    ),
    (
        "new clause",
        lambda d: d["clauses"].append(
            {"name": "valid2", "kind": "validity", "max_invalid_fraction": 0.0}
        ),
        "new validity",
    ),
    ("on_break warn->halt", _set("fresh", on_break="halt"), "warn -> halt"),
]

# the "loose" side of each pair for flags: the base must carry the loose value first
LOOSE_BASE: dict[str, Callable[[dict[str, Any]], None]] = {
    "allow_empty true->false": _set("geometry_types", allow_empty=True),
    "allow_null true->false": _set("land_use", allow_null=True),
    "allow_extra true->false": _set("schema", allow_extra=True),
}


def pair(name: str, edit: Callable[[dict[str, Any]], None]) -> tuple[Contract, Contract]:
    """(looser, stricter) contracts for one tightening row."""
    doc = base_doc()
    if name in LOOSE_BASE:
        LOOSE_BASE[name](doc)
    loose = contract(doc, "v7.0")
    edit(doc)
    return loose, contract(doc, "v7.1")


@pytest.mark.parametrize(("name", "edit", "fragment"), TIGHTENINGS, ids=[t[0] for t in TIGHTENINGS])
def test_each_tightening_and_its_reverse_loosening(
    name: str, edit: Callable[[dict[str, Any]], None], fragment: str
) -> None:
    loose, strict = pair(name, edit)
    forward = classify(loose, strict)
    assert forward.class_ == "tightening", render_classification(forward)
    assert len(forward.differences) == 1
    assert fragment in forward.differences[0].reason
    backward = classify(strict, loose)
    # the reverse of a new required field is a removed field, which section 4 makes major
    expected = "major" if name == "new required field" else "minor"
    assert backward.class_ == expected, render_classification(backward)
    assert len(backward.differences) == 1


def test_removed_clause_other_than_crs_axis_is_minor() -> None:
    c = classify(BASE, edited(_drop("valid")))
    assert c.class_ == "minor"
    assert c.differences[0].reason == "validity clause removed"


def test_new_nullable_field_is_minor() -> None:
    c = classify(
        BASE, edited(_fields(PID, LU, {"name": "note", "type": "string", "nullable": True}))
    )
    assert c.class_ == "minor"
    assert "new nullable field 'note'" in c.differences[0].reason


MAJORS: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    # another projected CRS whose range holds the region (a geographic one would refuse it)
    ("crs not equivalent", _set("srid", expect="EPSG:32618"), "CRS not equivalent"),
    ("crs clause removed", _drop("srid"), "crs clause removed"),
    ("axis order changed", _set("axis_order", expect="north_east"), "axis order changed"),
    ("axis order removed", _drop("axis_order"), "axis_order clause removed"),
    # found by a new-user session: these were tightening and minor, though they change what
    # the CRS guarantee is as surely as removing the clause
    ("crs halt -> warn", _set("srid", on_break="warn"), "on_break halt -> warn"),
    ("axis order halt -> warn", _set("axis_order", on_break="warn"), "on_break halt -> warn"),
    ("extent redrawn", _set("extent", region=[909000, 110000, 1068000, 280000]), "redrawn"),
    (
        "domain meaning changed",
        _set("land_use", values={"R1": "rural", "C1": "commercial", "M1": "manufacturing"}),
        "code meaning changed",
    ),
    ("domain column changed", _set("land_use", column="zoning"), "column changed"),
    ("schema field removed", _fields(PID), "'land_use' removed or renamed"),
    ("schema field renamed", _fields(PID, {**LU, "name": "landuse"}), "removed or renamed"),
    ("schema field retyped", _fields({"name": "parcel_id", "type": "integer"}, LU), "retyped"),
    (
        "kind changed",
        lambda d: d["clauses"].__setitem__(4, {"name": "valid", "kind": "feature_count", "min": 1}),
        "kind changed",
    ),
]


@pytest.mark.parametrize(("name", "edit", "fragment"), MAJORS, ids=[m[0] for m in MAJORS])
def test_each_major_trigger(
    name: str, edit: Callable[[dict[str, Any]], None], fragment: str
) -> None:
    c = classify(BASE, edited(edit))
    assert c.class_ == "major", render_classification(c)
    assert any(d.class_ == "major" and fragment in d.reason for d in c.differences)


def test_crs_spelling_of_an_equivalent_crs_is_minor_with_a_none_difference() -> None:
    # docs/design.md section 4: none = identical content (same digest); a respelled CRS changes
    # the document, so the overall class is minor, the difference itself is listed as none
    def crs(expect: str) -> Contract:
        return edited(lambda d: (_set("srid", expect=expect)(d), _drop("extent")(d)))

    web = classify(crs("EPSG:3857"), crs("ESRI:102100"))
    assert web.class_ == "minor"
    assert [(d.clause, d.class_) for d in web.differences] == [("srid", "none")]
    assert web.differences[0].reason.startswith("equivalent CRS, spelling changed")
    assert classify(crs("EPSG:2263"), crs("EPSG:4326")).class_ == "major"


def test_region_written_differently_but_equal_is_minor_with_none_differences() -> None:
    wkt = "POLYGON ((909000 110000, 1068000 110000, 1068000 275000, 909000 275000, 909000 110000))"
    c = classify(BASE, edited(_set("extent", region=wkt)))
    assert c.class_ == "minor"
    assert c.differences and all(d.class_ == "none" for d in c.differences)


def test_versions_of_different_layers_are_refused() -> None:
    other = parse_contract(BASE_YAML.replace("layer: parcels", "layer: roads"), source="roads")
    with pytest.raises(ContractGateError, match="different layers: parcels vs roads"):
        classify(BASE, other)


@pytest.mark.parametrize("field", ["owner", "changelog"])
def test_metadata_only_edit_is_minor(field: str) -> None:
    c = classify(BASE, edited(lambda d: d.__setitem__(field, "something else")))
    assert c.class_ == "minor"
    assert [(d.kind, d.class_) for d in c.differences] == [(field, "minor")]


def test_description_edit_is_minor() -> None:
    c = classify(BASE, edited(_set("valid", description="no invalid parcels please")))
    assert (c.class_, c.differences[0].reason) == ("minor", "description edited")


def test_identical_documents_are_none() -> None:
    same = parse_contract(BASE_YAML.replace("v7.0", "v7.0  # a comment only"), source="same")
    c = classify(BASE, same)
    assert (c.class_, c.differences) == ("none", ())
    assert classification_to_json(c) == {"class": "none", "differences": []}


def test_same_version_written_differently_is_not_called_renumbered() -> None:
    # a fresh-user session kept v7.0 and reordered a list: classify said "renumbered"
    respelled = parse_contract(
        BASE_YAML.replace("allowed: [Polygon, MultiPolygon]", "allowed: [MultiPolygon, Polygon]"),
        source="respelled",
    )
    assert respelled.version == BASE.version and respelled.digest != BASE.digest
    c = classify(BASE, respelled)
    assert c.class_ == "minor"
    ((d,),) = [c.differences]
    assert d.reason.startswith("no clause or metadata change: the same content written")
    renumbered = contract(base_doc(), "v7.1")
    assert classify(BASE, renumbered).differences[0].reason == (
        "no clause or metadata change (renumbered)"
    )


def test_mixed_change_most_severe_wins_and_every_difference_is_listed() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["owner"] = "new-team"  # minor
        _set("valid", max_invalid_fraction=0.0)(d)  # tightening
        _set("axis_order", expect="north_east")(d)  # major

    c = classify(BASE, edited(edit))
    assert c.class_ == "major"
    assert sorted(d.class_ for d in c.differences) == ["major", "minor", "tightening"]
    js = classification_to_json(c)
    assert js["class"] == "major"
    assert {d["clause"] for d in js["differences"]} == {"(document)", "valid", "axis_order"}
    assert set(js["differences"][0]) == {"clause", "kind", "class", "reason"}
    text = render_classification(c, "v7.0 -> v7.1")
    assert text.splitlines()[0] == "v7.0 -> v7.1: change class major"
    assert len(text.splitlines()) == 4


def test_real_shipped_contracts_v1_to_v1_1() -> None:
    from worker.cli.scenario import data_file
    from worker.io.contract_files import load_contract

    old = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
    new = load_contract(data_file("contracts/admin_boundaries.v1.1.yaml"))
    c = classify(old, new)
    assert c.class_ == "tightening"
    assert [(d.clause, d.class_) for d in c.differences] == [
        ("(document)", "minor"),
        ("continent", "tightening"),
    ]


# -- coordinate dimensions: part of the geometry type ---------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "class_", "reasons"),
    [
        (
            ["Polygon", "MultiPolygon"],
            ["Polygon", "Polygon Z", "MultiPolygon"],
            "minor",
            [("minor", "geometry types added: Polygon Z (XYZ; Polygon also allowed as XY)")],
        ),
        (
            ["Polygon", "Polygon Z", "MultiPolygon"],
            ["Polygon", "MultiPolygon"],
            "tightening",
            [
                (
                    "tightening",
                    "geometry types removed: Polygon Z (XYZ; Polygon stays allowed as XY)",
                )
            ],
        ),
        (
            ["Polygon", "MultiPolygon"],
            ["Polygon Z", "MultiPolygon"],
            "tightening",
            [
                (
                    "tightening",
                    "geometry types removed: Polygon (XY; Polygon stays allowed as XYZ)",
                ),
                ("minor", "geometry types added: Polygon Z (XYZ)"),
            ],
        ),
        (
            ["Polygon", "MultiPolygon"],
            ["Polygon", "MultiPolygon", "MultiPolygon M", "MultiPolygon ZM"],
            "minor",
            [
                (
                    "minor",
                    "geometry types added: MultiPolygon M (XYM; MultiPolygon also allowed as XY, "
                    "XYZM), MultiPolygon ZM (XYZM; MultiPolygon also allowed as XY, XYM)",
                )
            ],
        ),
    ],
)
def test_a_coordinate_dimension_added_is_a_type_added_removed_a_type_removed(
    old: list[str], new: list[str], class_: str, reasons: list[tuple[str, str]]
) -> None:
    before = edited(_set("geometry_types", allowed=old))
    after = edited(_set("geometry_types", allowed=new))
    c = classify(before, after)
    assert c.class_ == class_, render_classification(c)
    assert [(d.class_, d.reason) for d in c.differences] == reasons


def test_an_undeclared_region_crs_is_named_in_words_not_none() -> None:
    # found by a new-user trial: "region CRS not equivalent (None -> EPSG:2263)"
    doc = base_doc()
    doc["clauses"] = [c for c in doc["clauses"] if c["kind"] != "crs"]
    old = contract(doc, "v7.0")
    new_doc = copy.deepcopy(doc)
    next(c for c in new_doc["clauses"] if c["name"] == "extent")["crs"] = "EPSG:2263"
    result = classify(old, contract(new_doc))
    (diff,) = [d for d in result.differences if d.clause == "extent"]
    assert diff.class_ == "major"
    assert diff.reason == (
        "region CRS not equivalent (undeclared: the batch's declared CRS -> EPSG:2263)"
    )
    assert "None" not in render_classification(result, "v7.0 -> v7.1")


def test_a_crs_clause_added_where_there_was_none_is_major() -> None:
    # found by a new-user session: classed tightening, though the regions of the other
    # clauses move from each batch's declared CRS to the one the clause expects, so
    # batches the old version rejected are admitted
    without = edited(_drop("srid"))
    c = classify(without, BASE)
    assert c.class_ == "major"
    assert [(d.clause, d.class_, d.reason) for d in c.differences if d.class_ == "major"] == [
        ("srid", "major", "new crs clause")
    ]
    # a second crs clause beside an existing one is only stricter
    doc = base_doc()
    doc["clauses"].append({"name": "srid_again", "kind": "crs", "expect": "EPSG:2263"})
    again = classify(BASE, contract(doc))
    assert again.class_ == "tightening", render_classification(again)
    # warn -> halt on the crs clause stays a tightening
    warned = edited(_set("srid", on_break="warn"))
    assert classify(warned, contract(base_doc(), "v7.2")).class_ == "tightening"
