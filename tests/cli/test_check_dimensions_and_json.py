"""`contract-gate check` end to end: coordinate dimensions in every encoding, contracts
that YAML 1.1 would misread, and JSON output without NaN/Infinity (issue 9, sections 3, 6)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from worker.cli.main import main

RECENT = ["--data-time", "2026-11-29T06:00:00Z", "--now", "2026-11-29T07:00:00Z"]
HEAD = "layer: t\nversion: v1\ncadence: P1D\nobjective: 0.99\nowner: qa\nchangelog: t\n"
POINT_Z = struct.pack("<BI3d", 1, 1001, 1.0, 2.0, 3.0)  # ISO WKB Point Z
POINT_M = struct.pack("<BI3d", 1, 2001, 1.0, 2.0, 3.0)  # ISO WKB Point M
POINT = struct.pack("<BI2d", 1, 1, 1.0, 2.0)


def _contract(tmp_path: Path, clauses: str) -> str:
    path = tmp_path / "contract.yaml"
    path.write_text(HEAD + "clauses:\n  - {name: srid, kind: crs, expect: 'OGC:CRS84'}\n" + clauses)
    return str(path)


def _geoparquet(path: Path, wkb: list[bytes], types: list[str], **columns: pa.Array) -> str:
    geo = {
        "version": "1.1.0",
        "primary_column": "geometry",
        "columns": {"geometry": {"encoding": "WKB", "geometry_types": types}},
    }
    table = pa.table({"geometry": pa.array(wkb, type=pa.binary()), **columns})
    pq.write_table(table.replace_schema_metadata({"geo": json.dumps(geo)}), path)
    return str(path)


def _check(capsys: pytest.CaptureFixture[str], batch: str, contract: str) -> tuple[int, dict]:
    code = main(["check", batch, "--contract", contract, "--format", "json", *RECENT])
    out = capsys.readouterr().out
    assert "NaN" not in out and "Infinity" not in out
    return code, json.loads(out)


def _clause(doc: dict, name: str) -> dict:
    found: dict = next(c for c in doc["versions"][0]["clauses"] if c["name"] == name)
    return found


TYPES = "  - {name: types, kind: geometry_type, allowed: [Point]}\n"


def test_a_2d_point_layer_refuses_z_and_m_from_geoparquet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = _geoparquet(tmp_path / "b.parquet", [POINT, POINT_Z, POINT_M], ["Point Z", "Point M"])
    code, doc = _check(capsys, batch, _contract(tmp_path, TYPES))
    assert code == 1 and doc["decision"] == "quarantined"
    assert _clause(doc, "types")["measured"] == {"Point M": 1, "Point Z": 1}
    allowing = TYPES.replace("[Point]", "[Point, Point Z, Point M]")
    code, doc = _check(capsys, batch, _contract(tmp_path, allowing))
    assert code == 0 and _clause(doc, "types")["result"] == "pass"


def test_a_2d_point_layer_refuses_z_from_geojson(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    features = [
        {"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": c}}
        for c in ([1.0, 2.0], [1.0, 2.0, 3.0])
    ]
    batch = tmp_path / "b.geojson"
    batch.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    code, doc = _check(capsys, str(batch), _contract(tmp_path, TYPES))
    assert code == 1 and _clause(doc, "types")["measured"] == {"Point Z": 1}


def _native_points(path: Path, dims: str, layout: str, types: list[str]) -> str:
    """GeoParquet 1.1 ``point`` column of two points with coordinates ``dims`` (xyz, xym,
    xyzm), separated (a struct) or interleaved (a fixed-size list: Parquet keeps no name for
    its values, so only the ``geometry_types`` metadata can tell xyz from xym)."""
    values = [[1.0, 2.0, 3.0, 4.0][: len(dims)], [5.0, 6.0, 7.0, 8.0][: len(dims)]]
    if layout == "separated":
        arr: pa.Array = pa.StructArray.from_arrays(
            [pa.array([v[i] for v in values]) for i in range(len(dims))], names=list(dims)
        )
    else:
        arr = pa.array(values, pa.list_(pa.field(dims, pa.float64()), len(dims)))
    geo = {"version": "1.1.0", "primary_column": "geometry",
           "columns": {"geometry": {"encoding": "point", "geometry_types": types}}}  # fmt: skip
    pq.write_table(
        pa.table({"geometry": arr}).replace_schema_metadata({"geo": json.dumps(geo)}), path
    )
    return str(path)


@pytest.mark.parametrize("layout", ["separated", "interleaved"])
@pytest.mark.parametrize(
    ("dims", "name"), [("xyz", "Point Z"), ("xym", "Point M"), ("xyzm", "Point ZM")]
)
def test_a_geoarrow_point_keeps_its_dimension_in_every_layout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str, dims: str, name: str
) -> None:
    """S17 kind through the GeoArrow native reader: an interleaved xym point (its value
    field renamed 'element' by Parquet) was read as xyz, a measure taken for a height: a
    [Point Z] layer admitted it, a [Point M] one refused it."""
    batch = _native_points(tmp_path / "b.parquet", dims, layout, [name])
    code, doc = _check(capsys, batch, _contract(tmp_path, TYPES))
    assert code == 1 and _clause(doc, "types")["measured"] == {name: 2}
    allowing = TYPES.replace("[Point]", f"[{name}]")
    code, doc = _check(capsys, batch, _contract(tmp_path, allowing))
    assert code == 0, _clause(doc, "types")


def test_unquoted_zero_padded_codes_refuse_the_contract(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = _geoparquet(
        tmp_path / "b.parquet", [POINT, POINT], ["Point"], code=pa.array([8, 8], pa.int64())
    )
    contract = _contract(
        tmp_path, "  - {name: code, kind: domain, column: code, values: {007: seven, 010: ten}}\n"
    )
    code = main(["check", batch, "--contract", contract, *RECENT])
    err = capsys.readouterr().err
    assert code == 2
    assert "clauses[1].values.007: domain code 007 is written unquoted" in err
    quoted = _contract(
        tmp_path, "  - {name: code, kind: domain, column: code, values: {'007': a, '010': b}}\n"
    )
    code, doc = _check(capsys, batch, quoted)
    assert code == 1 and _clause(doc, "code")["measured"]["unknown"] == [8]


def test_non_finite_attribute_values_print_as_strings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = pa.array([1.0, float("nan"), float("inf")], pa.float64())
    batch = _geoparquet(tmp_path / "b.parquet", [POINT] * 3, ["Point"], code=values)
    contract = _contract(tmp_path, "  - {name: code, kind: domain, column: code, values: {1: a}}\n")
    code, doc = _check(capsys, batch, contract)
    assert code == 1
    assert sorted(_clause(doc, "code")["measured"]["unknown"]) == ["inf", "nan"]
    assert main(["check", batch, "--contract", contract, *RECENT]) == 1
    text = capsys.readouterr().out
    assert "NaN" not in text and "Infinity" not in text
    assert "2 values not in the domain (nan, inf)" in text
