"""The CRS a GeoJSON file states (issue 26, T01 kind): RFC 7946 section 4 fixes WGS 84
longitude, latitude (OGC:CRS84), and a third position element is the height above the
WGS 84 ellipsoid (section 3.1.1), so a file with heights is OGC:CRS84h (EPSG:4979 ignoring
axis order); the legacy 2008 ``crs`` member is the file's own statement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.catalogue import NOW, active, clause, contract_of
from worker.core.evaluate import evaluate
from worker.core.spatial import crs_equivalent
from worker.io.payloads import read_batch_file, read_features

T01 = Path(__file__).resolve().parents[1] / "cases" / "T01" / "batch.geojson"


def _file(tmp: Path, coords: list[list[float]], crs: str | None = None) -> Path:
    doc: dict = {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "properties": {"i": i},
                "geometry": {"type": "Point", "coordinates": c},
            }
            for i, c in enumerate(coords)
        ],
    }
    if crs is not None:
        doc["crs"] = {"type": "name", "properties": {"name": crs}}
    path = tmp / "b.geojson"
    path.write_text(json.dumps(doc))
    return path


def test_t01_heights_make_the_file_crs84h() -> None:
    data = read_features(T01)
    assert (data.declared_crs, data.crs_stated) == ("OGC:CRS84h", False)
    assert crs_equivalent(data.declared_crs, "EPSG:4979")
    assert not crs_equivalent(data.declared_crs, "EPSG:4326")


@pytest.mark.parametrize(
    ("coords", "crs"),
    [
        ([[10.0, 50.0], [10.1, 50.1]], "OGC:CRS84"),
        ([[10.0, 50.0, 312.4]], "OGC:CRS84h"),
        ([[10.0, 50.0], [10.1, 50.1, 7.5]], "OGC:CRS84h"),  # one feature with heights
    ],
)
def test_rfc7946_crs_follows_the_positions(tmp_path: Path, coords: list, crs: str) -> None:
    assert read_features(_file(tmp_path, coords)).declared_crs == crs


def test_3d_geojson_passes_an_epsg4979_contract_and_not_a_2d_one(tmp_path: Path) -> None:
    batch = read_batch_file(_file(tmp_path, [[10.0, 50.0, 312.4]]), layer="x")
    srid = contract_of(clause("srid", "crs", expect="EPSG:4979"))
    assert evaluate(batch, [active(srid)], now=NOW).admitted
    flat = contract_of(clause("srid", "crs", expect="EPSG:4326"))
    (reason,) = evaluate(batch, [active(flat)], now=NOW).reasons
    assert reason.message == "declared CRS OGC:CRS84h is not equivalent to EPSG:4326"


def test_legacy_crs_member_is_stated_and_wins_over_heights(tmp_path: Path) -> None:
    data = read_features(_file(tmp_path, [[-100.0, 40.0, 5.0]], crs="urn:ogc:def:crs:EPSG::4267"))
    assert (data.declared_crs, data.crs_stated) == ("urn:ogc:def:crs:EPSG::4267", True)
