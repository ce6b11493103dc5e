"""Tests of worker.io.codec: round trips of every record, typed columns, bad bytes."""

from __future__ import annotations

import contextlib
import io
import json
import struct
from dataclasses import replace
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.core.errors import BatchError, DecodeError
from worker.core.model import (
    Batch,
    ClauseResult,
    Decision,
    FieldSpec,
    QuarantineReason,
    VersionVerdict,
)
from worker.io import codec
from worker.io.codec.avro import BATCH_ARRIVAL
from worker.io.payloads import read_batch_file

UTC = timezone.utc
T0 = datetime(2024, 5, 1, 12, 30, 15, 123000, tzinfo=UTC)
DEMO = Path(__file__).resolve().parents[2] / "worker" / "data"


def _batch(**changes: object) -> Batch:
    attrs = pa.table(
        {
            "s": pa.array(["a", None], pa.string()),
            "i": pa.array([1, 2], pa.int64()),
            "f": pa.array([1.5, float("nan")], pa.float64()),
            "b": pa.array([True, None], pa.bool_()),
            "t": pa.array([T0, None], pa.timestamp("us", tz="UTC")),
            "d": pa.array([date(2024, 5, 1), date(1960, 1, 2)], pa.date32()),
            "x": pa.array([b"\x00\xff", None], pa.binary()),
        }
    )
    base: dict[str, object] = {
        "batch_id": "b-1",
        "layer": "parcels",
        "producer": "etl",
        "data_time": T0,
        "produced_at": T0 + timedelta(seconds=5),
        "declared_crs": "EPSG:2263",
        "axis_order": "east_north",
        "schema_fields": (FieldSpec("s", "string", True), FieldSpec("i", "integer")),
        "feature_count": 2,
        "geometries_wkb": (shapely.Point(1, 2).wkb, None),
        "attributes": attrs,
    }
    base.update(changes)
    return Batch(**base)  # type: ignore[arg-type]


def _same(a: Batch, b: Batch) -> None:
    for name in (
        "batch_id",
        "layer",
        "producer",
        "data_time",
        "produced_at",
        "declared_crs",
        "axis_order",
        "schema_fields",
        "feature_count",
        "geometries_wkb",
        "payload_uri",
    ):
        assert getattr(a, name) == getattr(b, name), name
    assert a.attributes.schema == b.attributes.schema
    assert a.attributes.num_rows == b.attributes.num_rows
    assert json.dumps(a.attributes.to_pylist(), default=str) == json.dumps(
        b.attributes.to_pylist(), default=str
    )


def test_batch_round_trip_with_typed_columns() -> None:
    b = _batch()
    out = codec.decode_batch(codec.encode_batch(b))
    _same(b, out)
    assert out.attributes.column("i").to_pylist() == [1, 2]  # ints stay ints
    assert out.attributes.column("t").to_pylist()[0] == T0


def test_column_widths_and_units_normalise() -> None:
    attrs = pa.table(
        {
            "i8": pa.array([1, None], pa.int8()),
            "f32": pa.array([0.5, 1.0], pa.float32()),
            "ts_ms": pa.array([T0.replace(tzinfo=None)] * 2, pa.timestamp("ms")),
            "ls": pa.array(["x", "y"], pa.large_string()),
        }
    )
    out = codec.decode_batch(codec.encode_batch(_batch(attributes=attrs)))
    assert out.attributes.schema == pa.schema(
        [
            ("i8", pa.int64()),
            ("f32", pa.float64()),
            ("ts_ms", pa.timestamp("us", tz="UTC")),
            ("ls", pa.string()),
        ]
    )
    assert out.attributes.column("ts_ms").to_pylist() == [T0, T0]
    assert out.attributes.column("i8").to_pylist() == [1, None]


def test_zero_column_and_zero_feature_batches() -> None:
    n3 = pa.table({"_": pa.nulls(3)}).drop_columns(["_"])
    out = codec.decode_batch(
        codec.encode_batch(_batch(attributes=n3, geometries_wkb=(None, None, None)))
    )
    assert out.attributes.num_rows == 3 and out.attributes.num_columns == 0
    empty = codec.decode_batch(
        codec.encode_batch(_batch(attributes=pa.table({}), geometries_wkb=()))
    )
    assert empty.geometries_wkb == () and empty.attributes.num_rows == 0


def test_payload_uri_event_decodes_without_features() -> None:
    data = codec.encode_batch(_batch(), inline=False, payload_uri="file:///data/b.parquet")
    out = codec.decode_batch(data)
    assert out.payload_uri == "file:///data/b.parquet"
    assert out.geometries_wkb == () and out.attributes.num_rows == 0
    assert out.feature_count == 2
    assert codec.decode_event(data)["features"] is None
    with pytest.raises(BatchError, match="needs a uri"):
        codec.encode_batch(_batch(), inline=False)


def test_demo_file_round_trips() -> None:
    b = read_batch_file(DEMO / "nyc_boroughs.parquet", layer="nyc_boroughs", data_time=T0)
    b = replace(b, produced_at=T0)  # timestamps travel in milliseconds
    _same(codec.decode_batch(codec.encode_batch(b)), b)


def test_encode_refuses_unsupported_values() -> None:
    big = pa.table({"u": pa.array([2**64 - 1, 0], pa.uint64())})
    with pytest.raises(BatchError, match="cannot encode batch b-1"):
        codec.encode_batch(_batch(attributes=big))


_values = {
    "integer": st.integers(-(2**63), 2**63 - 1),
    "double": st.floats(allow_nan=False),
    "string": st.text(max_size=8),
    "boolean": st.booleans(),
    "binary": st.binary(max_size=8),
}
_arrow = {
    "integer": pa.int64(),
    "double": pa.float64(),
    "string": pa.string(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
}
_millis = st.integers(0, 4_000_000_000_000).map(
    lambda ms: datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
)


@st.composite
def batches(draw: st.DrawFn) -> Batch:
    n = draw(st.integers(0, 5))
    kinds = draw(st.lists(st.sampled_from(sorted(_values)), max_size=4))
    cols = {
        f"c{i}": pa.array(draw(st.lists(st.none() | _values[k], min_size=n, max_size=n)), _arrow[k])
        for i, k in enumerate(kinds)
    }
    attrs = pa.table(cols) if cols else pa.table({"_": pa.nulls(n)}).drop_columns(["_"])
    geoms = draw(st.lists(st.none() | st.binary(min_size=1, max_size=30), min_size=n, max_size=n))
    return Batch(
        batch_id=draw(st.text(min_size=1, max_size=10).filter(str.strip)),  # ids name batches
        layer=draw(st.text(max_size=10)),
        producer=draw(st.text(max_size=10)),
        data_time=draw(_millis),
        produced_at=draw(_millis),
        declared_crs=draw(st.none() | st.text(max_size=20)),
        axis_order=draw(st.sampled_from(["east_north", "north_east"])),
        schema_fields=tuple(
            FieldSpec(f"c{i}", k, draw(st.booleans())) for i, k in enumerate(kinds)
        ),
        feature_count=draw(st.integers(0, 2**40)),
        geometries_wkb=tuple(geoms),
        attributes=attrs,
        payload_uri=draw(st.none() | st.just("file:///x.parquet")),
    )


@settings(max_examples=150, deadline=None)
@given(batches())
def test_batch_arrival_round_trip_property(b: Batch) -> None:
    # inline, the features travel and a loaded batch's own URI is not repeated
    _same(replace(b, payload_uri=None), codec.decode_batch(codec.encode_batch(b)))
    if b.payload_uri is not None:
        by_ref = codec.decode_batch(codec.encode_batch(b, inline=False))
        assert by_ref.payload_uri == b.payload_uri and by_ref.geometries_wkb == ()


def test_an_event_with_inline_features_and_a_payload_uri_is_undecodable() -> None:
    # found by a new-user session: inline point + payload_uri=file:///etc/passwd was
    # admitted, the URI intact, for consumers that follow payload_uri to read unjudged
    record = codec.decode_event(_good())
    record["payload_uri"] = "file:///etc/passwd"
    with pytest.raises(DecodeError, match=r"both inline features and a payload_uri \('file:///etc"):
        codec.decode_batch(_raw(record))
    with pytest.raises(BatchError, match="inline features or a payload_uri, not both"):
        codec.encode_batch(_batch(), payload_uri="file:///data/x.parquet")


def _good() -> bytes:
    return codec.encode_batch(_batch())


def _raw(record: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, BATCH_ARRIVAL, record)
    return out.getvalue()


def _tampered(**changes: object) -> bytes:
    record = codec.decode_event(_good())
    record.update(changes)
    return _raw(record)


def _column_tamper(name: str, values: list, type_: str | None = None) -> bytes:
    record = codec.decode_event(_good())
    for c in record["features"]["columns"]:
        if c["name"] == name:
            c["values"] = values
            c["type"] = type_ or c["type"]
    return _raw(record)


def _enum_index_out_of_range() -> bytes:
    good = _good()
    # axis_order is the first enum; rewrite its index (0 -> 9) right after declared_crs
    marker = b"\x02\x12EPSG:2263"  # union branch 1 (string), length 9, text
    at = good.index(marker) + len(marker)
    return good[:at] + b"\x12" + good[at + 1 :]


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty bytes"),
        (_good()[:10], "truncated"),
        (_good()[:-1], "truncated"),
        (_good() + b"\x00", "trailing bytes"),
        (b"\x06\xff\xfe\xfd" + _good()[4:], "UTF-8"),
        (_enum_index_out_of_range(), "enum"),
        (b"\x01" + _good()[1:], "negative length"),
        (codec.encode_consumer_declaration("c", "l", "v1.0", T0), "not a BatchArrival"),
        (_tampered(features=None, payload_uri=None), "neither inline features nor"),
        (_column_tamper("i", [1, "2"]), "holds a str at row 1"),
        (_column_tamper("i", [1]), "has 1 values for 2 geometries"),
        (_column_tamper("i", [1, 2], "widget"), "unknown logical type"),
        (_column_tamper("i", [1, 2], "struct"), "of type struct holds a int"),
        (_column_tamper("f", [1, 2]), "of type double holds a int"),
        (_column_tamper("b", [1, 0]), "of type boolean holds a int"),
        (_tampered(batch_id=""), "batch_id is empty"),
        (_tampered(batch_id="  "), "batch_id is empty"),
        (_tampered(batch_id="b" * 1025), "batch_id is 1025 characters long, more than 1024"),
    ],
)
def test_bad_bytes_raise_decode_error_with_reason(data: bytes, reason: str) -> None:
    with pytest.raises(DecodeError, match=reason):
        codec.decode_batch(data)


def test_not_bytes_is_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="expected bytes"):
        codec.decode_batch("text")  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_raise_another_exception(data: bytes) -> None:
    for decode in (
        codec.decode_batch,
        codec.decode_quarantine,
        codec.decode_contract_record,
        codec.decode_evaluation,
        codec.decode_consumer_declaration,
    ):
        with contextlib.suppress(DecodeError):
            decode(data)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_corrupted_events_never_raise_another_exception(data: st.DataObject) -> None:
    good = bytearray(_good())
    for _ in range(data.draw(st.integers(1, 4))):
        good[data.draw(st.integers(0, len(good) - 1))] = data.draw(st.integers(0, 255))
    with contextlib.suppress(DecodeError):
        codec.decode_batch(bytes(good))


def _verdict() -> VersionVerdict:
    return VersionVerdict(
        layer="parcels",
        version="v7.1",
        mode="observing",
        passed=False,
        clauses=(
            ClauseResult("srid", "crs", "pass", "halt", "EPSG:2263", "EPSG:2263", "ok"),
            ClauseResult(
                "extent",
                "extent",
                "break",
                "halt",
                {"inside": 0.5, "n": 10},
                [909000, 110000, 1068000, 275000],
                "half outside",
                ("axis order looks swapped",),
            ),
            ClauseResult(
                "fresh",
                "freshness",
                "break",
                "warn",
                7200.0,
                None,
                "old",
                ("axis order looks swapped", "clock skew"),
            ),
        ),
    )


def test_evaluation_round_trip() -> None:
    data = codec.encode_evaluation(
        _verdict(),
        batch_id="b-1",
        data_time=T0,
        evaluated_at=T0 + timedelta(minutes=1),
        source_topic="gis.batches",
        source_partition=3,
        source_offset=42,
    )
    rec = codec.decode_evaluation(data)
    assert (rec["layer"], rec["version"], rec["mode"], rec["passed"]) == (
        "parcels",
        "v7.1",
        "observing",
        False,
    )
    assert rec["data_time"] == T0 and rec["source_offset"] == 42
    assert rec["clauses"][1]["measured"] == {"inside": 0.5, "n": 10}
    # the contract's parameters are never copied into evaluation records (issue 10)
    assert [c["expected"] for c in rec["clauses"]] == [None] * len(rec["clauses"])
    assert rec["clauses"][2]["expected"] is None and rec["clauses"][2]["on_break"] == "warn"
    assert rec["diagnoses"] == ["axis order looks swapped", "clock skew"]


def test_quarantine_round_trip_from_decision_and_reasons() -> None:
    reason = QuarantineReason(
        "contract_break",
        "half outside",
        "v7.1",
        "enforcing",
        "extent",
        {"inside": 0.5},
        [0, 0, 1, 1],
    )
    decision = Decision("quarantined", (_verdict(),), (reason,), ("axis order looks swapped",))
    common = dict(
        batch_id="b-1",
        layer="parcels",
        source_topic="gis.batches",
        source_partition=0,
        source_offset=7,
        original=b"\x00raw",
        quarantined_at=T0,
        worker_id="w-1",
    )
    rec = codec.decode_quarantine(codec.encode_quarantine(decision, **common))  # type: ignore[arg-type]
    assert rec["reason_code"] == "contract_break" and rec["original"] == b"\x00raw"
    assert rec["reasons"][0]["measured"] == {"inside": 0.5}
    assert rec["reasons"][0]["clause"] == "extent" and rec["quarantined_at"] == T0
    assert rec["diagnoses"] == ["axis order looks swapped"]
    bare = QuarantineReason("decode_error", "undecodable")
    common.update(batch_id=None, layer=None)
    rec = codec.decode_quarantine(codec.encode_quarantine([bare], **common))  # type: ignore[arg-type]
    assert rec["reason_code"] == "decode_error" and rec["batch_id"] is None
    assert rec["reasons"][0]["version"] is None and rec["reasons"][0]["measured"] is None


def test_contract_record_round_trip() -> None:
    record = {
        "layer": "parcels",
        "version": "v7.1",
        "document": "layer: parcels\n",
        "digest": "ab" * 32,
        "mode": "observing",
        "state": "active",
        "change_class": "tightening",
        "differences": [
            {
                "clause": "fresh",
                "kind": "freshness",
                "class": "tightening",
                "reason": "max_age PT6H -> PT4H",
            }
        ],
        "published_at": T0,
        "published_by": "alice",
        "changelog": "tighter",
        "supersedes": [],
        "record_kind": None,
        "builds_on": None,
    }
    assert codec.decode_contract_record(codec.encode_contract_record(record)) == record
    minimal = {k: v for k, v in record.items() if k not in ("change_class", "differences")}
    out = codec.decode_contract_record(codec.encode_contract_record(minimal))
    assert out["change_class"] is None and out["differences"] == []
    with pytest.raises(Exception, match="cannot encode ContractRecord"):
        codec.encode_contract_record({**record, "mode": "shadow"})


def test_contract_record_supersedes_is_a_trailing_field_written_only_when_set() -> None:
    from worker.io.codec.avro import CONTRACT_RECORD_PLAIN

    record = {
        "layer": "parcels",
        "version": "v7.1",
        "document": "layer: parcels\n",
        "digest": "ab" * 32,
        "mode": "enforcing",
        "state": "active",
        "published_at": T0,
        "published_by": "alice",
        "changelog": "looser",
    }
    plain = codec.encode_contract_record(record)
    # without supersedes: the bytes a writer of the earlier schema produces
    out = io.BytesIO()
    fastavro.schemaless_writer(out, CONTRACT_RECORD_PLAIN, {**record, "differences": []})
    assert plain == out.getvalue()
    assert codec.decode_contract_record(plain)["supersedes"] == []
    full = codec.encode_contract_record({**record, "supersedes": ["parcels/v7.0"]})
    assert full.startswith(plain) and len(full) > len(plain)
    assert codec.decode_contract_record(full)["supersedes"] == ["parcels/v7.0"]
    with pytest.raises(DecodeError, match="trailing bytes"):
        codec.decode_contract_record(full + b"\x00")


def test_consumer_declaration_round_trip() -> None:
    data = codec.encode_consumer_declaration("team-a", "parcels", "v7.0", T0)
    assert codec.decode_consumer_declaration(data) == {
        "consumer": "team-a",
        "layer": "parcels",
        "version": "v7.0",
        "declared_at": T0,
    }


def test_naive_datetimes_are_read_as_utc() -> None:
    data = codec.encode_consumer_declaration("c", "l", "v1.0", T0.replace(tzinfo=None))
    assert codec.decode_consumer_declaration(data)["declared_at"] == T0


def test_echoed_values_are_bounded_and_stay_json() -> None:
    from worker.core.model import QuarantineReason
    from worker.io.codec.events import MAX_MESSAGE_CHARS, MAX_VALUE_CHARS

    huge = "x" * 10_000_000  # a 10 MB attribute value, as in issue 10 item 4
    reason = QuarantineReason(
        code="contract_break",
        version="v1.0",
        mode="enforcing",
        clause="continent",
        measured={"offending": [huge]},
        expected={"allowed": ["Europe"]},
        message=f"value {huge} not allowed",
    )
    data = codec.encode_quarantine(
        [reason],
        batch_id="b",
        layer="l",
        source_topic="t",
        source_partition=0,
        source_offset=1,
        original=b"",
        quarantined_at=T0,
        worker_id="w",
    )
    assert len(data) < MAX_VALUE_CHARS * 2 + MAX_MESSAGE_CHARS + 1000
    rec = codec.decode_quarantine(data)["reasons"][0]
    assert rec["expected"] == {"allowed": ["Europe"]}  # short values are kept as they are
    assert isinstance(rec["measured"], str)
    assert rec["measured"].endswith("[clipped: 10000019 chars in all]")
    assert rec["message"].endswith(f"[clipped: {len(reason.message)} chars in all]")


def test_records_never_carry_nan_or_infinity_tokens() -> None:
    verdict = VersionVerdict(
        layer="parcels",
        version="v7.1",
        mode="enforcing",
        passed=False,
        clauses=(
            ClauseResult(
                "code",
                "domain",
                "break",
                "halt",
                {"unknown": [float("nan"), float("inf")], "bound": -float("inf")},
                {"values": [1, 2]},
                "unknown codes",
            ),
        ),
    )
    data = codec.encode_evaluation(
        verdict,
        batch_id="b-nan",
        data_time=T0,
        evaluated_at=T0,
        source_topic="gis.batches",
        source_partition=0,
        source_offset=1,
    )
    assert b"NaN" not in data and b"Infinity" not in data
    rec = codec.decode_evaluation(data)
    assert rec["clauses"][0]["measured"] == {"unknown": ["nan", "inf"], "bound": "-inf"}


def test_inline_events_carry_nested_mixed_and_unparseable_features(tmp_path: Path) -> None:
    # issue 9: what a file reader accepts, an inline event carries with the same verdict:
    # struct/list/map/decimal columns and mixed properties as JSON text keeping their
    # logical type, an open ring as its literal (unparseable) WKB
    from worker.io.formats.base import text_column
    from worker.io.payloads import derive_schema

    open_ring = b"\x01\x03\x00\x00\x00\x01\x00\x00\x00\x04\x00\x00\x00" + b"".join(
        struct.pack("<dd", x, y) for x, y in ((0, 0), (1, 0), (1, 1), (0, 1))
    )
    mixed_field, mixed = text_column("note", [42, "n/a"])
    attrs = pa.Table.from_arrays(
        [
            pa.array([{"xmin": 1.0, "ymax": 2.0}, None]),
            pa.array([[1, 2], []]),
            pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int64())),
            mixed,
        ],
        schema=pa.schema(
            [
                pa.field("bbox", pa.struct([("xmin", pa.float64()), ("ymax", pa.float64())])),
                pa.field("tags", pa.list_(pa.int64())),
                pa.field("m", pa.map_(pa.string(), pa.int64())),
                mixed_field,
            ]
        ),
    )
    batch = _batch(attributes=attrs, geometries_wkb=(open_ring, shapely.Point(1, 2).wkb))
    decoded = codec.decode_batch(codec.encode_batch(batch))
    assert derive_schema(decoded.attributes) == derive_schema(attrs)
    assert [f.type for f in derive_schema(attrs)] == ["struct", "list", "map", "mixed"]
    assert decoded.attributes.column("bbox").to_pylist() == ['{"xmin": 1.0, "ymax": 2.0}', None]
    assert decoded.attributes.column("m").to_pylist() == ['[["k", 1]]', None]
    assert decoded.attributes.column("note").to_pylist() == ["42", "n/a"]
    assert decoded.geometries_wkb == batch.geometries_wkb
    again = codec.decode_batch(codec.encode_batch(decoded))  # text columns re-encode as is
    assert again.attributes.equals(decoded.attributes, check_metadata=True)


def test_inline_events_carry_edges_and_orientation_so_the_worker_judges_what_check_judges() -> None:
    # found by a fresh-user session: `batch publish` of a spherical / oriented GeoParquet
    # file was admitted by the worker while `check` quarantined it
    from worker.cli.scenario import data_file
    from worker.core.evaluate import evaluate
    from worker.core.model import ActiveVersion
    from worker.io.codec.avro import BATCH_ARRIVAL_PLANAR
    from worker.io.contract_files import load_contract

    nyc = read_batch_file(
        data_file("nyc_boroughs.parquet"), layer="nyc_boroughs", crs="EPSG:2263", data_time=T0
    )
    planar = codec.encode_batch(nyc)
    # planar batches are written with the earlier schema, byte for byte readable by it
    record = fastavro.schemaless_reader(io.BytesIO(planar), BATCH_ARRIVAL_PLANAR, None)
    assert record["batch_id"] == nyc.batch_id
    oriented = replace(nyc, orientation="counterclockwise")
    back = codec.decode_batch(codec.encode_batch(oriented))
    assert (back.edges, back.orientation) == ("planar", "counterclockwise")
    spherical = codec.decode_batch(codec.encode_batch(replace(nyc, edges="spherical")))
    assert (spherical.edges, spherical.orientation) == ("spherical", None)
    v1 = ActiveVersion(load_contract(data_file("contracts/nyc_boroughs.v1.yaml")), "enforcing")
    offline = evaluate(oriented, [v1], now=T0 + timedelta(hours=1))
    inline = evaluate(back, [v1], now=T0 + timedelta(hours=1))
    assert [(c.name, c.result) for c in inline.verdicts[0].clauses] == [
        (c.name, c.result) for c in offline.verdicts[0].clauses
    ]
    # the NYC rings are clockwise: declared counterclockwise, validity breaks in both
    assert {c.name: c.result for c in inline.verdicts[0].clauses}["valid"] == "break"


def test_unknown_edges_or_orientation_values_are_decode_errors() -> None:
    from worker.cli.scenario import data_file

    nyc = read_batch_file(
        data_file("nyc_boroughs.parquet"), layer="nyc_boroughs", crs="EPSG:2263", data_time=T0
    )
    raw = codec.decode_event(codec.encode_batch(replace(nyc, edges="spherical")))
    raw["edges"] = "ellipsoidal"
    out = io.BytesIO()
    fastavro.schemaless_writer(out, BATCH_ARRIVAL, raw)
    with pytest.raises(DecodeError, match="edges 'ellipsoidal': expected null, planar or"):
        codec.decode_batch(out.getvalue())


def test_production_writes_validate_only_a_failed_record_and_name_its_field(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from worker.io.codec import avro

    monkeypatch.setattr(avro, "validate_writes", False)
    record = {
        "layer": "roads",
        "version": "v1.0",
        "document": "layer: roads\n",
        "digest": "ab" * 32,
        "mode": "shadow",
        "state": "active",
        "published_at": T0,
        "published_by": "alice",
        "changelog": "",
    }
    named = r"(?s)cannot encode ContractRecord roads: ValidationError.*\.mode is <shadow>"
    with pytest.raises(Exception, match=named):
        codec.encode_contract_record(record)
    good = {**record, "mode": "enforcing"}
    assert codec.decode_contract_record(codec.encode_contract_record(good))["mode"] == "enforcing"


def test_inline_events_carry_geojson_feature_ids_to_the_quarantine_offenders(
    tmp_path: Path,
) -> None:
    # issue 14: `batch publish FILE.geojson` lost the ids; offenders fell back to indexes
    from tests.cli.test_check_offenders import CONTRACT, _geojson
    from worker.core.contracts.parse import parse_contract
    from worker.core.evaluate import evaluate
    from worker.core.model import ActiveVersion
    from worker.io.codec.avro import BATCH_ARRIVAL_EDGES
    from worker.io.codec.events import MAX_FEATURE_ID_CHARS

    batch = read_batch_file(_geojson(tmp_path / "b.geojson"), layer="places", data_time=T0)
    assert batch.feature_ids == ("in", "out")
    data = codec.encode_batch(batch)
    without = codec.encode_batch(replace(batch, feature_ids=None))
    assert data.startswith(without[:-1]) and len(data) > len(without)  # a trailing field
    back = codec.decode_batch(data)
    assert back.feature_ids == ("in", "out")
    assert codec.decode_batch(without).feature_ids is None
    decision = evaluate(back, [ActiveVersion(parse_contract(CONTRACT))], now=T0)
    rec = codec.decode_quarantine(
        codec.encode_quarantine(
            decision,
            batch_id=back.batch_id,
            layer="places",
            source_topic="t",
            source_partition=0,
            source_offset=0,
            original=data,
            quarantined_at=T0,
            worker_id="w",
        )
    )
    offenders = rec["reasons"][0]["offenders"]
    assert offenders["features"] == [{"index": 1, "id": "out", "value": [100.0, 10.0, 100.0, 10.0]}]
    # edges-only events (written before feature ids existed) still read
    spherical = codec.encode_batch(replace(batch, feature_ids=None, edges="spherical"))
    rec_e = fastavro.schemaless_reader(io.BytesIO(spherical), BATCH_ARRIVAL_EDGES, None)
    assert rec_e["edges"] == "spherical"
    assert codec.decode_batch(spherical).feature_ids is None
    # bounded: strings clipped, integers kept, the count must match the geometries
    long_ids = replace(batch, feature_ids=("x" * 10_000, 2**40))
    ids = codec.decode_batch(codec.encode_batch(long_ids)).feature_ids
    assert ids is not None and ids[0] == "x" * (MAX_FEATURE_ID_CHARS - 1) + "…"
    assert ids[1] == 2**40
    raw = codec.decode_event(data)
    raw["feature_ids"] = ["only-one"]
    out = io.BytesIO()
    fastavro.schemaless_writer(out, BATCH_ARRIVAL, raw)
    with pytest.raises(DecodeError, match="feature_ids has 1 ids for 2 geometries"):
        codec.decode_batch(out.getvalue())


def _reason_codes_documented() -> list[str]:
    schema = json.loads((DEMO.parent / "schemas" / "quarantine_record.avsc").read_text())
    field = next(f for f in schema["fields"] if f["name"] == "reason_code")
    return str(field["doc"]).split("|")


def test_reason_codes_are_the_ones_the_record_schema_documents() -> None:
    from worker.core.errors import PayloadError
    from worker.core.vocab import ReasonCode

    assert [c.value for c in ReasonCode] == _reason_codes_documented()
    assert f"{ReasonCode.PAYLOAD_CORRUPT}" == "payload_corrupt" == str(ReasonCode.PAYLOAD_CORRUPT)
    stack: list[type[PayloadError]] = [PayloadError]
    while stack:  # every payload error's reason is a code
        cls = stack.pop()
        assert ReasonCode(cls.reason) == cls.reason
        stack.extend(cls.__subclasses__())


_QUARANTINE = dict(
    batch_id="b-1",
    layer="parcels",
    source_topic="gis.batches",
    source_partition=0,
    source_offset=7,
    original=b"\x00raw",
    quarantined_at=T0,
    worker_id="w-1",
)


def test_quarantine_reasons_carry_the_clause_kind() -> None:
    from worker.core.vocab import ReasonCode

    reasons = [
        QuarantineReason(
            ReasonCode.CONTRACT_BREAK,
            "column 'continent': 1 value not in the domain (Atlantis)",
            "v1.0",
            "enforcing",
            "continent",
            {"unknown": ["Atlantis"], "unknown_count": 1, "null_count": 0},
            kind="domain",
        ),
        QuarantineReason(ReasonCode.DECODE_ERROR, "undecodable"),
    ]
    rec = codec.decode_quarantine(codec.encode_quarantine(reasons, **_QUARANTINE))  # type: ignore[arg-type]
    assert [r["kind"] for r in rec["reasons"]] == ["domain", None]
    assert rec["reason_code"] == "contract_break"


def test_a_quarantine_record_written_before_the_kind_decodes_without_it() -> None:
    """Records on the quarantine topic written by the previous schema (no ``kind`` in
    QuarantineReason) still decode; their reports word the clause from its message."""
    from worker.io.reports.text import brief

    old = json.loads((DEMO.parent / "schemas" / "quarantine_record.avsc").read_text())
    reasons = next(f for f in old["fields"] if f["name"] == "reasons")
    items = reasons["type"]["items"]
    items["fields"] = [f for f in items["fields"] if f["name"] != "kind"]
    record = {
        "batch_id": "b-1",
        "layer": "parcels",
        "reason_code": "contract_break",
        "reasons": [
            {
                "code": "contract_break",
                "version": "v1.0",
                "mode": "enforcing",
                "clause": "continent",
                "measured": json.dumps({"unknown": ["Atlantis"], "unknown_count": 1}),
                "expected": None,
                "message": "column 'continent': 1 value not in the domain (Atlantis)",
            },
            {
                "code": "contract_break",
                "version": "v1.0",
                "mode": "enforcing",
                "clause": "valid",
                "measured": json.dumps({"invalid": 1, "reasons": []}),
                "expected": None,
                "message": "1 of 5 geometries invalid (20.0%, expected <= 0.0%)",
            },
        ],
        "diagnoses": [],
        "source_topic": "gis.batches",
        "source_partition": 0,
        "source_offset": 7,
        "original": b"\x00raw",
        "quarantined_at": T0,
        "worker_id": "w-1",
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(old), record)
    rec = codec.decode_quarantine(out.getvalue())
    assert [r["kind"] for r in rec["reasons"]] == [None, None]
    assert [r["clause"] for r in rec["reasons"]] == ["continent", "valid"]
    assert rec["reasons"][0]["measured"] == {"unknown": ["Atlantis"], "unknown_count": 1}
    assert rec["worker_id"] == "w-1" and rec["original"] == b"\x00raw"
    first = rec["reasons"][0]
    assert brief(first["kind"], first["measured"], first["message"]) == (
        "column 'continent': 1 value not in the domain"
    )
    assert brief("domain", first["measured"], first["message"]) == "unknown 'Atlantis'"


def test_contract_record_kind_and_builds_on_are_trailing_fields_written_only_when_set() -> None:
    from worker.io.codec.avro import CONTRACT_RECORD_SUPERSEDES

    base = {
        "layer": "parcels",
        "version": "v7.1",
        "document": "",
        "digest": "ab" * 32,
        "mode": "enforcing",
        "state": "superseded",
        "published_at": T0,
        "published_by": "alice",
        "changelog": "",
        "supersedes": ["parcels/v7.0"],
    }
    old = codec.encode_contract_record(base)  # the bytes written before issue 30
    assert fastavro.schemaless_reader(io.BytesIO(old), CONTRACT_RECORD_SUPERSEDES)["supersedes"]
    new = codec.encode_contract_record(
        {**base, "record_kind": "state", "builds_on": f"parcels/v7.1/{'ab' * 32}"}
    )
    assert new.startswith(old) and len(new) > len(old)
    out = codec.decode_contract_record(new)
    assert (out["record_kind"], out["builds_on"]) == ("state", f"parcels/v7.1/{'ab' * 32}")
    assert codec.decode_contract_record(old)["record_kind"] is None
