"""The file's own CRS statement is evidence on every path (issue 26, T09 kind): a
declaration (``check --crs``, ``batch publish --crs``, the event's ``declared_crs``) that
the file contradicts breaks the crs clause with both named, for every reader that can state
a CRS: the legacy GeoJSON ``crs`` member, a shapefile's ``.prj``, a GeoPackage SRS, a
FlatGeobuf header, the GeoParquet ``geo`` key and the Parquet GEOMETRY ``crs``."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pyproj
import pytest
import shapely

from tests.catalogue import NOW, active, clause, contract_of
from worker.cli.main import main
from worker.core.chunks import ChunkedBatch
from worker.core.errors import ContractGateError
from worker.core.evaluate import evaluate
from worker.core.model import Batch
from worker.io.payloads import load_payload, read_batch_file
from worker.io.payloads.chunks import load_payload_chunked, read_batch_file_chunked
from worker.io.payloads.policy import UNRESTRICTED

pyogrio = pytest.importorskip("pyogrio")

T09 = Path(__file__).resolve().parents[1] / "cases" / "T09" / "batch.geojson"
POINTS = [shapely.Point(-100.0, 40.0), shapely.Point(-99.5, 40.5)]
SRID = contract_of(clause("srid", "crs", expect="EPSG:4326"))


def _ogr(tmp: Path, suffix: str, driver: str) -> Path:
    path = tmp / f"b{suffix}"
    wkb = pa.array(shapely.to_wkb(POINTS).tolist(), pa.binary())
    table = pa.table({"mark": ["m1", "m2"], "geometry": wkb})
    pyogrio.write_arrow(
        table, path, driver=driver, geometry_name="geometry", geometry_type="Point",
        crs="EPSG:4267",
    )  # fmt: skip
    return path


def _geojson(tmp: Path) -> Path:
    path = tmp / "b.geojson"
    path.write_bytes(T09.read_bytes())
    return path


def _geoparquet(tmp: Path) -> Path:
    wkb = pa.array(shapely.to_wkb(POINTS).tolist(), pa.binary())
    geo = {
        "version": "1.1.0",
        "primary_column": "geometry",
        "columns": {"geometry": {"encoding": "WKB", "crs": pyproj.CRS("EPSG:4267").to_json_dict()}},
    }
    table = pa.table({"mark": ["m1", "m2"], "geometry": wkb})
    path = tmp / "b.parquet"
    pq.write_table(table.replace_schema_metadata({"geo": json.dumps(geo)}), path)
    return path


#: each reader and place a CRS is stated, with the words naming the place
FILES = {
    "geojson crs member": (_geojson, "legacy GeoJSON 'crs' member"),
    "shapefile .prj": (lambda t: _ogr(t, ".shp", "ESRI Shapefile"), ".prj"),
    "GeoPackage SRS": (lambda t: _ogr(t, ".gpkg", "GPKG"), "GeoPackage SRS (gpkg_spatial_ref_sys)"),
    "FlatGeobuf header": (lambda t: _ogr(t, ".fgb", "FlatGeobuf"), "FlatGeobuf header CRS"),
    "GeoParquet geo key": (_geoparquet, "GeoParquet metadata"),
}


def _event(uri: str, crs: str) -> Batch:
    when = datetime(2026, 11, 29, tzinfo=timezone.utc)
    return Batch(
        batch_id="b1", layer="x", producer="p", data_time=when, produced_at=when,
        declared_crs=crs, axis_order="east_north", schema_fields=(), feature_count=2,
        geometries_wkb=(), attributes=pa.table({}), payload_uri=uri,
    )  # fmt: skip


def _srid(batch: Batch) -> tuple[bool, str]:
    (verdict,) = evaluate(batch, [active(SRID)], now=NOW).verdicts
    (result,) = verdict.clauses
    return result.result == "pass", result.message


@pytest.mark.parametrize("name", sorted(FILES))
def test_offline_read_compares_the_statement_with_crs(tmp_path: Path, name: str) -> None:
    make, where = FILES[name]
    path = make(tmp_path)
    ok, message = _srid(read_batch_file(path, layer="x", crs="EPSG:4326"))
    assert not ok
    assert message.endswith(
        f"but the file's {where} states EPSG:4267, not the EPSG:4326 declared (--crs): "
        "fix --crs or the file's CRS"
    ), message
    assert read_batch_file(path, layer="x", crs="EPSG:4267").crs_conflict is None
    assert read_batch_file(path, layer="x").crs_conflict is None  # no declaration


@pytest.mark.parametrize("name", ["geojson crs member", "GeoParquet geo key"])
def test_by_reference_compares_the_statement_with_the_event(tmp_path: Path, name: str) -> None:
    make, where = FILES[name]
    uri = make(tmp_path).as_uri()
    loaded = load_payload(uri, _event(uri, "EPSG:4326"), policy=UNRESTRICTED)
    ok, message = _srid(loaded)
    assert not ok and f"the payload's {where} states EPSG:4267, not the EPSG:4326 the event " in (
        message
    )
    chunked = load_payload_chunked(uri, _event(uri, "EPSG:4326"), policy=UNRESTRICTED)
    assert (chunked.batch if isinstance(chunked, ChunkedBatch) else chunked).crs_conflict == (
        loaded.crs_conflict
    )
    assert load_payload(uri, _event(uri, "EPSG:4267"), policy=UNRESTRICTED).crs_conflict is None


def test_chunked_offline_read_compares_too(tmp_path: Path) -> None:
    loaded = read_batch_file_chunked(_geoparquet(tmp_path), layer="x", crs="EPSG:4326")
    assert isinstance(loaded, ChunkedBatch)
    assert "GeoParquet metadata states EPSG:4267" in (loaded.batch.crs_conflict or "")


def test_a_format_default_is_no_statement(tmp_path: Path) -> None:
    # RFC 7946 GeoJSON (OGC:CRS84 by the format) declared as EPSG:2263: the declaration wins
    path = tmp_path / "plain.geojson"
    doc = json.loads(T09.read_text())
    del doc["crs"]
    path.write_text(json.dumps(doc))
    assert read_batch_file(path, layer="x", crs="EPSG:2263").crs_conflict is None


def test_check_quarantines_and_publish_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from worker.control.publish import publish_batch_file
    from worker.kafka.settings import Settings

    path = _ogr(tmp_path, ".shp", "ESRI Shapefile")
    contract = tmp_path / "c.yaml"
    contract.write_text(
        "layer: x\nversion: v1\ncadence: P1D\nobjective: 0.99\nowner: o\nchangelog: c\n"
        'clauses:\n- {name: srid, kind: crs, expect: "EPSG:4326"}\n'
    )
    argv = ["check", str(path), "--contract", str(contract), "--format", "json"]
    assert main([*argv, "--crs", "EPSG:4326"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["decision"] == "quarantined"
    with pytest.raises(ContractGateError, match=r"\.prj states EPSG:4267, not the EPSG:4326"):
        publish_batch_file(Settings(), path, layer="x", crs="EPSG:4326")


#: every spelling of the legacy GeoJSON ``crs`` member GDAL reads (ogrgeojsonreader.cpp):
#: ``name`` (the 2008 spec), ``EPSG`` with a code and ``OGC`` with a URN (the drafts before
#: it), ``link`` with an href (the 2008 spec; the gate resolves it without fetching it)
LEGACY_MEMBERS = {
    "name urn": {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::4267"}},
    "name url": {"type": "name", "properties": {"name": "http://www.opengis.net/def/crs/EPSG/0/4267"}},
    "EPSG code": {"type": "EPSG", "properties": {"code": 4267}},
    "EPSG code text": {"type": "EPSG", "properties": {"code": "4267"}},
    "OGC urn": {"type": "OGC", "properties": {"urn": "urn:ogc:def:crs:EPSG::4267"}},
    "link url": {"type": "link", "properties": {"href": "http://www.opengis.net/def/crs/EPSG/0/4267"}},
}  # fmt: skip


@pytest.mark.parametrize("how", ["whole read", "check (streamed)"])
@pytest.mark.parametrize("member", sorted(LEGACY_MEMBERS))
def test_every_spelling_of_the_legacy_crs_member_is_the_files_statement(
    tmp_path: Path, member: str, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _with_member(tmp_path, LEGACY_MEMBERS[member])
    states = "legacy GeoJSON 'crs' member states EPSG:4267, not the EPSG:4326 declared (--crs)"
    if how == "whole read":
        ok, message = _srid(read_batch_file(path, layer="x", crs="EPSG:4326"))
        assert not ok and states in message, message
        return
    contract = tmp_path / "c.yaml"
    contract.write_text(
        "layer: x\nversion: v1\ncadence: P1D\nobjective: 0.99\nowner: o\nchangelog: c\n"
        'clauses:\n- {name: srid, kind: crs, expect: "EPSG:4326"}\n'
    )
    argv = ["check", str(path), "--contract", str(contract), "--format", "json"]
    assert main([*argv, "--crs", "EPSG:4326"]) == 1, capsys.readouterr().out
    (result,) = json.loads(capsys.readouterr().out)["versions"][0]["clauses"]
    assert result["result"] == "break" and states in result["message"], result


def _with_member(tmp: Path, member: object) -> Path:
    doc = json.loads(T09.read_text())
    doc["crs"] = member
    path = tmp / "b.geojson"
    path.write_text(json.dumps(doc))
    return path


def test_a_link_the_gate_cannot_resolve_breaks_srid(tmp_path: Path) -> None:
    # a link to a file beside it (2008 spec: "esriwkt"): the gate does not follow links
    path = _with_member(
        tmp_path, {"type": "link", "properties": {"href": "crs.prj", "type": "esriwkt"}}
    )
    ok, message = _srid(read_batch_file(path, layer="x", crs="EPSG:4326"))
    assert not ok
    assert "legacy GeoJSON 'crs' member states a CRS that does not resolve" in message, message


@pytest.mark.parametrize(
    ("member", "what"),
    [
        ({"type": "EPSG", "properties": {"code": "not a code"}}, "integer properties.code"),
        ({"type": "OGC", "properties": {}}, "properties.urn string"),
        ({"type": "link", "properties": {"href": 5}}, "properties.href string"),
        ({"type": "name", "properties": {}}, "properties.name string"),
        ("EPSG:4267", "properties.name string"),
    ],
)
def test_a_malformed_legacy_crs_member_is_bad_input(
    tmp_path: Path, member: object, what: str
) -> None:
    with pytest.raises(
        ContractGateError, match=f"bad CRS: the legacy 'crs' member .*has no {what}"
    ):
        read_batch_file(_with_member(tmp_path, member), layer="x", crs="EPSG:4326")
