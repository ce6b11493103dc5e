"""Offending features in quarantine records (bounded) and as GeoJSON
(worker.io.reports.offenders)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone

import pyarrow as pa

from tests.catalogue import BOWTIE, NOW, PARIS, VALID_POLYGON, active, batch_of, clause, contract_of
from worker.core.evaluate import evaluate
from worker.core.model import QuarantineReason
from worker.core.offenders import MAX_OFFENDERS, Offender, Offenders
from worker.io import codec
from worker.io.codec.events import MAX_OFFENDER_CHARS
from worker.io.formats.offenders_file import offenders_collection
from worker.io.reports.offenders import broken_clauses, offenders_of_record

T0 = datetime(2026, 11, 29, 6, 0, tzinfo=timezone.utc)
COMMON = dict(
    batch_id="b-1",
    layer="parcels",
    source_topic="gis.batches",
    source_partition=0,
    source_offset=7,
    original=b"",
    quarantined_at=T0,
    worker_id="w-1",
)


def test_quarantine_record_carries_offenders_within_the_bound() -> None:
    long_reason = "Self-intersection at a place described at length " * 3
    feats = tuple(Offender(i, f"parcel-{i:06d}", long_reason) for i in range(MAX_OFFENDERS))
    offenders = Offenders(50_000, feats, "why the geometry is invalid")
    reason = QuarantineReason(
        "contract_break",
        "many invalid",
        "v1.0",
        "enforcing",
        "valid",
        {"invalid": 50_000},
        {},
        offenders,
    )
    data = codec.encode_quarantine([reason], **COMMON)  # type: ignore[arg-type]
    rec = codec.decode_quarantine(data)
    r = rec["reasons"][0]
    assert r["measured"] == {"invalid": 50_000}  # split out again
    kept = r["offenders"]["features"]
    assert r["offenders"]["total"] == 50_000
    assert 0 < len(kept) < MAX_OFFENDERS  # 100 of these do not fit: the first ones do
    assert kept[0] == {"index": 0, "id": "parcel-000000", "value": long_reason}
    assert len(json.dumps(r["offenders"])) <= MAX_OFFENDER_CHARS
    assert len(data) < 4000 + MAX_OFFENDER_CHARS + 1000


def test_clipped_measured_keeps_its_offenders() -> None:
    big = {"unknown": ["x" * 10_000]}
    offenders = Offenders(1, (Offender(3, None, "x" * 50),), "value of column 'c'")
    reason = QuarantineReason("contract_break", "m", "v1.0", "enforcing", "d", big, {}, offenders)
    r = codec.decode_quarantine(codec.encode_quarantine([reason], **COMMON))["reasons"][0]  # type: ignore[arg-type]
    assert isinstance(r["measured"], str) and "clipped" in r["measured"]
    assert r["offenders"]["features"][0]["index"] == 3


def test_geojson_of_offenders_has_geometry_attributes_and_broken_clauses() -> None:
    table = pa.table({"pid": ["a", "b", "c"], "code": ["R1", "XX", "R1"]})
    batch = replace(
        batch_of([VALID_POLYGON, BOWTIE, PARIS], crs="EPSG:2263", attributes=table),
        id_column="pid",
    )
    contract = contract_of(
        clause("valid", "validity"),
        clause("use", "domain", column="code", values={"R1": "res"}),
    )
    decision = evaluate(batch, [active(contract)], now=NOW)
    doc = offenders_collection(batch, broken_clauses(decision))
    assert doc["crs"] == {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::2263"}}
    (feature,) = doc["features"]
    assert feature["id"] == "b"
    assert feature["geometry"]["type"] == "Polygon"
    props = feature["properties"]
    assert props["gate_index"] == 1 and props["gate_broken"] == "v1.0:valid, v1.0:use"
    assert props["v1.0:valid"].startswith("Self-intersection")
    assert props["v1.0:use"] == "XX" and props["code"] == "XX"
    assert [c["total"] for c in doc["contract_gate"]["clauses"]] == [1, 1]
    # the same from a decoded quarantine record
    data = codec.encode_quarantine(decision, **COMMON)  # type: ignore[arg-type]
    reasons = codec.decode_quarantine(data)["reasons"]
    again = offenders_collection(batch, offenders_of_record(reasons))
    assert again["features"] == doc["features"]
    # a QuarantineRecord carries the clause kinds too
    assert [c.get("kind") for c in doc["contract_gate"]["clauses"]] == ["validity", "domain"]
    assert [c.get("kind") for c in again["contract_gate"]["clauses"]] == ["validity", "domain"]


def test_nan_vertices_give_a_null_geometry_with_the_reason_never_null_numbers() -> None:
    # found by a new-user trial: coordinates [null, 1.0] are not valid GeoJSON
    from tests.catalogue import NAN_VERTEX_WKB

    batch = batch_of([VALID_POLYGON, NAN_VERTEX_WKB])
    decision = evaluate(batch, [active(contract_of(clause("valid", "validity")))], now=NOW)
    doc = offenders_collection(batch, broken_clauses(decision))
    (feature,) = doc["features"]
    assert feature["geometry"] is None
    assert feature["properties"]["gate_index"] == 1
    assert feature["properties"]["gate_geometry_null"] == (
        "non-finite coordinate (NaN or infinity): not representable in GeoJSON"
    )
    text = json.dumps(doc, allow_nan=False)  # strict JSON: no NaN tokens
    assert "null, 1.0" not in text and "[null" not in text


def test_a_geometry_geos_refuses_is_written_as_sent_not_repaired() -> None:
    # an open ring: GEOS reads it only with on_invalid="fix", which closes the ring, and
    # the offenders file showed a valid square (a fresh-user finding)
    from tests.catalogue import polygon_wkb

    open_ring = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)]
    for axis_order, ring in (("east_north", open_ring), ("north_east", open_ring)):
        batch = batch_of([polygon_wkb(ring), VALID_POLYGON], axis_order=axis_order)
        c = contract_of(clause("valid", "validity", max_invalid_fraction=0.0))
        decision = evaluate(batch, [active(c)], now=NOW)
        (feature,) = offenders_collection(batch, broken_clauses(decision))["features"]
        written = [[x, y] for x, y in ring]
        if axis_order == "north_east":  # the file is x first, as GeoJSON is
            written = [[y, x] for x, y in ring]
        assert feature["geometry"] == {"type": "Polygon", "coordinates": [written]}
        assert "written exactly as sent" in feature["properties"]["gate_geometry_as_sent"]
        assert "gate_geometry_null" not in feature["properties"]
