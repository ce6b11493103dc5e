"""The BatchArrival reader written for its fields (worker/io/codec/arrival_reader.py) reads
what fastavro reads, value for value and type for type, and gives up on anything else: then
decode_event reads with fastavro, so every error message stays the old path's."""

from __future__ import annotations

import gc
import io
import struct
import tracemalloc
from datetime import datetime, timezone
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.broker import make_events
from worker.core.errors import DecodeError
from worker.io.codec.arrival_reader import read_batch_arrival
from worker.io.codec.avro import BATCH_ARRIVAL, BATCH_ARRIVAL_EDGES, BATCH_ARRIVAL_PLANAR
from worker.io.codec.events import _decoded, decode_event
from worker.io.codec.read_errors import MAX_MILLIS, MIN_MILLIS

LAYOUTS = {"planar": BATCH_ARRIVAL_PLANAR, "edges": BATCH_ARRIVAL_EDGES, "ids": BATCH_ARRIVAL}
LONGS = st.integers(-(1 << 63), (1 << 63) - 1)
TEXT = st.one_of(st.text(max_size=8), st.text(min_size=60, max_size=90))
#: bytes whose length takes one, two and three varint bytes
BLOBS = st.one_of(st.binary(max_size=70), st.binary(min_size=8180, max_size=8200))
MILLIS = st.one_of(
    st.integers(MIN_MILLIS - 2000, MIN_MILLIS + 2000),
    st.integers(-(10**12), 4 * 10**12),
    st.integers(MAX_MILLIS - 2000, MAX_MILLIS + 2000),
    LONGS,
    st.datetimes(timezones=st.just(timezone.utc)),
)
VALUE = st.one_of(st.none(), st.booleans(), LONGS, st.floats(), TEXT, BLOBS)
FEATURE_ID = st.one_of(st.none(), LONGS, st.floats(), TEXT)


@st.composite
def records(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    layout = draw(st.sampled_from(sorted(LAYOUTS)))
    n = draw(st.integers(0, 3))
    fields = st.fixed_dictionaries({"name": TEXT, "type": TEXT, "nullable": st.booleans()})
    column = st.fixed_dictionaries(
        {"name": TEXT, "type": TEXT, "values": st.lists(VALUE, min_size=n, max_size=n)}
    )
    features = st.fixed_dictionaries(
        {
            "geometry_wkb": st.lists(st.one_of(st.none(), BLOBS), min_size=n, max_size=n),
            "columns": st.lists(column, max_size=3),
        }
    )
    record = {
        "batch_id": draw(TEXT),
        "layer": draw(TEXT),
        "producer": draw(TEXT),
        "data_time": draw(MILLIS),
        "produced_at": draw(MILLIS),
        "declared_crs": draw(st.none() | TEXT),
        "axis_order": draw(st.sampled_from(["east_north", "north_east"])),
        "schema_fields": draw(st.lists(fields, max_size=4)),
        "feature_count": draw(LONGS),
        "features": draw(st.none() | features),
        "payload_uri": draw(st.none() | TEXT),
    }
    if layout != "planar":
        record["edges"] = draw(st.none() | st.just("spherical"))
        record["orientation"] = draw(st.none() | st.just("counterclockwise"))
    if layout == "ids":
        record["feature_ids"] = draw(st.none() | st.lists(FEATURE_ID, max_size=4))
    return layout, record


def written(layout: str, record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, LAYOUTS[layout], record)
    return out.getvalue()


def typed(value: Any) -> Any:
    """``value`` with each part's type, floats as their bits (NaN, -0.0), dicts' key order."""
    if isinstance(value, dict):
        return ("dict", [(k, typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, datetime):
        return ("datetime", value, value.tzinfo)
    return (type(value).__name__, value)


def outcome(read: Any, data: bytes) -> Any:
    try:
        return typed(read(data))
    except DecodeError as exc:  # (no object's address in it: test_decode_reasons_stable)
        return ("DecodeError", str(exc))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records())
def test_generated_records_read_as_fastavro_reads_them(drawn: tuple[str, dict[str, Any]]) -> None:
    data = written(*drawn)
    old = outcome(_decoded, data)
    assert outcome(decode_event, data) == old
    fast = read_batch_arrival(data)
    if old[0] == "DecodeError":  # a timestamp beyond the years 1 to 9999: fastavro's error
        assert fast is None and "a timestamp beyond the years 1 to 9999" in old[1]
    else:  # every valid record is read here, not handed back
        assert fast is not None and typed(fast) == old


def mutated(data: bytes, edits: list[tuple[int, int, int]]) -> bytes:
    """``data`` with each edit (kind, where, byte) applied: replace, insert, delete, cut,
    extend."""
    out = bytearray(data)
    for kind, where, byte in edits:
        at = where % (len(out) + 1)
        if kind == 0 and at < len(out):
            out[at] = byte
        elif kind == 1:
            out.insert(at, byte)
        elif kind == 2 and at < len(out):
            del out[at]
        elif kind == 3:
            del out[at:]
        elif kind == 4:
            out.extend(bytes([byte]) * (1 + where % 9))
    return bytes(out)


EDIT = st.tuples(st.integers(0, 4), st.integers(0, 1 << 16), st.integers(0, 255))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records(), st.lists(EDIT, min_size=1, max_size=3))
def test_mutated_bytes_decode_or_fail_as_before(
    drawn: tuple[str, dict[str, Any]], edits: list[tuple[int, int, int]]
) -> None:
    data = mutated(written(*drawn), edits)
    assert outcome(decode_event, data) == outcome(_decoded, data)


@pytest.mark.parametrize("features", [1, 100])
def test_the_benchmark_events_are_read_here(features: int) -> None:
    for data in make_events(features, 3):
        fast = read_batch_arrival(data)
        assert fast is not None and typed(fast) == typed(_decoded(data))


def test_arrays_in_several_blocks_read_as_before() -> None:
    """An array may come in several blocks, each its count and items; a negative count is
    followed by the block's size in bytes: left to fastavro, which reads it."""
    a, b = _field_bytes(FIELD), _field_bytes({**FIELD, "name": "b"})
    data = written("planar", {**LAYOUTS_SAMPLE, "schema_fields": [FIELD, {**FIELD, "name": "b"}]})
    assert data.count(b"\x04" + a + b + b"\x00") == 1
    blocks = data.replace(b"\x04" + a + b, b"\x02" + a + b"\x02" + b)
    sized = data.replace(b"\x04" + a + b, b"\x01" + bytes((len(a) << 1,)) + a + b"\x02" + b)
    expected = typed(_decoded(data))
    assert typed(read_batch_arrival(blocks)) == typed(_decoded(blocks)) == expected
    assert read_batch_arrival(sized) is None and typed(decode_event(sized)) == expected


FIELD = {"name": "a", "type": "string", "nullable": True}
LAYOUTS_SAMPLE = {
    "batch_id": "b1", "layer": "roads", "producer": "p",
    "data_time": datetime(2026, 12, 4, tzinfo=timezone.utc),
    "produced_at": datetime(2026, 12, 4, 1, tzinfo=timezone.utc), "declared_crs": "EPSG:4326",
    "axis_order": "east_north", "schema_fields": [], "feature_count": 0, "features": None,
    "payload_uri": "s3://b/k.parquet",
}  # fmt: skip


def _field_bytes(field: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, BATCH_ARRIVAL_PLANAR["fields"][7]["type"]["items"], field)
    return out.getvalue()


def test_kept_fields_and_columns_are_fresh_and_only_for_the_same_bytes() -> None:
    """What is kept per layer (its fields, its columns' names and types) serves only the
    same bytes, as fresh dicts and lists; layers interleaved keep their own."""
    column = {"name": "n", "type": "string", "values": ["a"]}
    features = {"geometry_wkb": [b"\x01"], "columns": [column]}
    first = written("planar", {**LAYOUTS_SAMPLE, "schema_fields": [FIELD], "features": features})
    a, b = read_batch_arrival(first), read_batch_arrival(first)
    assert a is not None and b is not None and a == b == _decoded(first)
    assert a["schema_fields"] is not b["schema_fields"]
    assert a["schema_fields"][0] is not b["schema_fields"][0]
    assert a["features"]["columns"][0] is not b["features"]["columns"][0]
    other_fields = [{**FIELD, "nullable": False}]
    other_columns = {**features, "columns": [{**column, "name": "m"}, column]}
    events = [
        written("planar", {**LAYOUTS_SAMPLE, "schema_fields": other_fields, "features": features}),
        written("planar", {**LAYOUTS_SAMPLE, "layer": "rivers", "features": other_columns}),
        first,
        written("planar", {**LAYOUTS_SAMPLE, "schema_fields": [FIELD], "features": other_columns}),
    ]
    for data in [*events, *events]:
        assert typed(read_batch_arrival(data)) == typed(_decoded(data))


#: A small record of every kind of value, its layout with feature ids.
EVERY_KIND = {
    **LAYOUTS_SAMPLE,
    "schema_fields": [FIELD, {**FIELD, "name": "n", "nullable": False}],
    "feature_count": -3,
    "features": {
        "geometry_wkb": [b"\x01\x01", None, bytes(range(70))],
        "columns": [
            {"name": "v", "type": "mixed", "values": [True, False, None]},
            {"name": "w", "type": "mixed", "values": [None, 1 << 40, -5]},
            {"name": "x", "type": "mixed", "values": [-0.5, "é", "x" * 70]},
            {"name": "y", "type": "mixed", "values": [b"\xff", 7, 300]},
        ],
    },
    "payload_uri": None,
    "edges": "spherical",
    "orientation": None,
    "feature_ids": [None, 5, 2.5, "f", 1 << 50, "y" * 70],
}


def test_every_byte_of_a_record_replaced_by_every_value_reads_as_before() -> None:
    data = written("ids", EVERY_KIND)
    assert read_batch_arrival(data) is not None
    differ = []
    for at in range(len(data)):
        for byte in range(256):
            other = data[:at] + bytes((byte,)) + data[at + 1 :]
            if outcome(decode_event, other) != outcome(_decoded, other):
                differ.append((at, byte))
    assert differ == []


def test_a_record_cut_or_extended_anywhere_reads_as_before() -> None:
    data = written("ids", EVERY_KIND)
    others = [data[:n] for n in range(len(data))]
    others += [
        data[:n] + bytes((b,)) + data[n:]
        for n in range(len(data) + 1)
        for b in (0, 1, 2, 127, 128, 255)
    ]
    assert [outcome(decode_event, d) for d in others] == [outcome(_decoded, d) for d in others]


def test_longs_of_ten_bytes_and_more_read_as_before() -> None:
    """fastavro reads a long's varint into 64 bits: one that does not fit is left to it."""
    head = written("planar", {**LAYOUTS_SAMPLE, "feature_count": 0})
    at = head.rindex(b"\x00\x00\x02")  # the feature count 0, no features, the payload uri
    for last in (*range(0, 8), 126, 127):
        for varint in (
            b"\xff" * 9 + bytes((last,)),
            b"\x80" * 9 + bytes((last,)),
            b"\xff" * 10 + bytes((last,)),
        ):
            data = head[:at] + varint + head[at + 1 :]
            assert outcome(decode_event, data) == outcome(_decoded, data)
    assert (
        read_batch_arrival(head[:at] + b"\xfe" + b"\xff" * 8 + b"\x01" + head[at + 1 :]) is not None
    )


def test_what_is_kept_stays_bounded_whatever_the_layer_names() -> None:
    """What the reader keeps is keyed by layer name, which a producer writes: 64 events of
    distinct 100,000-character layer names kept 6.4 MB of names alone (the module's bound
    is 18 MB in all, whatever the events). A long name's event is read as fastavro
    reads it, with nothing kept."""
    events = [
        written("planar", {**LAYOUTS_SAMPLE, "layer": f"{i:02d}" + "x" * 100_000})
        for i in range(64)
    ]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for data in events:
            fast = read_batch_arrival(data)
            assert fast is not None and typed(fast) == typed(_decoded(data))
        del fast
        gc.collect()
        kept_bytes = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept_bytes < 1_000_000
