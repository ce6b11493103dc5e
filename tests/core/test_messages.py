"""Messages a GIS engineer can trust (issue 26 part 4): units from the CRS's axes, not
its name (T14), angular units of a geographic CRS (grads), ISO WKB 15-17 and curves named in
geometry_type results (T12), and every echoed value bounded in ``check`` output."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pyproj
import pytest
import shapely

from tests.catalogue import NOW, active, batch_of, clause, contract_of
from worker.cli.main import main
from worker.core.clauses.base import crs_units
from worker.core.evaluate import evaluate
from worker.core.spatial import crs_label, resolve_crs
from worker.core.spatial.units import units_differ

T14_PRJ = Path(__file__).resolve().parents[1] / "cases" / "T14" / "batch.prj"
GRADS = (
    'GEOGCS["WGS 84 grads",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],'
    'PRIMEM["Greenwich",0],UNIT["grad",0.015707963267949]]'
)


def test_t14_units_come_from_the_axes_not_the_name() -> None:
    prj = resolve_crs(T14_PRJ.read_text())
    assert prj.name == "NAD83 / New York Long Island (ftUS)"  # PROJ's name for the .prj
    assert crs_label(prj) == "NAD83 / New York Long Island (foot, 0.3048 m)"
    assert units_differ(prj, resolve_crs("EPSG:2263")) == (
        "units differ: foot (0.3048 m) vs US survey foot (0.3048006096 m)"
    )
    assert units_differ(resolve_crs("EPSG:2263"), resolve_crs("ESRI:102718")) is None


def test_crs_clause_message_names_both_units() -> None:
    batch = batch_of([shapely.Point(1e6, 2e5)], crs=T14_PRJ.read_text())
    srid = contract_of(clause("srid", "crs", expect="EPSG:2263"))
    (reason,) = evaluate(batch, [active(srid)], now=NOW).reasons
    assert reason.message == (
        "declared CRS NAD83 / New York Long Island (foot, 0.3048 m) is not equivalent to "
        "EPSG:2263: units differ: foot (0.3048 m) vs US survey foot (0.3048006096 m)"
    )


def test_angular_units_of_a_geographic_crs() -> None:
    assert crs_units(pyproj.CRS(GRADS)) == "grads"
    assert crs_units(pyproj.CRS("EPSG:4326")) == "degrees"
    assert crs_units(pyproj.CRS("EPSG:3857")) == "metre"
    assert units_differ(pyproj.CRS(GRADS), pyproj.CRS("EPSG:4326")) == (
        "units differ: grad (0.01570796327 rad) vs degree (0.01745329252 rad)"
    )
    batch = batch_of([shapely.Point(300.0, 300.0)], crs=GRADS)
    ext = contract_of(clause("ext", "extent", region=[0, 0, 10, 10]), layer="g")
    (reason,) = evaluate(batch, [active(ext)], now=NOW).reasons
    assert "(grads)" in reason.message or "(units of" in reason.message, reason.message
    assert "(degrees)" not in reason.message


def _iso(code: int, body: bytes = b"\0\0\0\0") -> bytes:
    return struct.pack("<BI", 1, code) + body


@pytest.mark.parametrize(
    ("code", "name"),
    [
        (15, "PolyhedralSurface"),
        (1016, "TIN Z"),
        (17, "Triangle"),
        (2017, "Triangle M"),
        (3015, "PolyhedralSurface ZM"),
        (8, "CircularString"),
        (1010, "CurvePolygon Z"),
    ],
)
def test_wkb_15_to_17_and_curves_are_named(code: int, name: str) -> None:
    ok = shapely.to_wkb(shapely.Polygon([(0, 0), (1, 0), (1, 1), (0, 0)]))
    batch = batch_of([], crs="EPSG:4326")
    from dataclasses import replace

    batch = replace(batch, geometries_wkb=(ok, _iso(code)), feature_count=2)
    types = contract_of(clause("types", "geometry_type", allowed=["Polygon"]))
    (verdict,) = evaluate(batch, [active(types)], now=NOW).verdicts
    (result,) = verdict.clauses
    assert result.measured == {name: 1}, result.measured
    assert "missing or unparseable" not in result.message


def test_check_output_bounds_a_10mb_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = "X" * 10_000_000
    doc = {
        "type": "FeatureCollection",
        "features": [
            {"type": "Feature", "properties": {"code": big},
             "geometry": {"type": "Point", "coordinates": [1, 2]}}
        ],
    }  # fmt: skip
    (tmp_path / "b.geojson").write_text(json.dumps(doc))
    (tmp_path / "c.yaml").write_text(
        "layer: x\nversion: v1\ncadence: P1D\nobjective: 0.99\nowner: o\nchangelog: c\n"
        "clauses:\n- {name: dom, kind: domain, column: code, values: {A: a}}\n"
    )
    argv = ["check", str(tmp_path / "b.geojson"), "--contract", str(tmp_path / "c.yaml")]
    assert main([*argv, "--format", "json"]) == 1
    out = capsys.readouterr().out
    assert len(out) < 20_000
    (unknown,) = json.loads(out)["versions"][0]["clauses"][0]["measured"]["unknown"]
    assert unknown == "X" * 1000 + "... [clipped: 10000000 chars in all]"
