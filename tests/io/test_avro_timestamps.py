"""Avro timestamps beyond the dates Python holds (stop 39, a new user's attempts).

A BatchArrival with ``data_time`` = 2^63 - 1 was quarantined as "not a BatchArrival record:
OverflowError: Python int too large to convert to C int": neither the field nor the value
named. Every record the gate reads goes through one reader (``worker.io.codec.avro._read``),
so the tests build a record of every schema with a timestamp field, set that field to
values beyond the years 1 to 9999, and read it with the public decoder: the decode error
names the field and its value. The first and last millisecond Python holds still read.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import fastavro
import pytest

from worker.core.errors import DecodeError
from worker.io import codec
from worker.io.codec import avro
from worker.io.codec.read_errors import without_logical_types

#: Every record the gate reads, with its full schema and its public decoder.
RECORDS: dict[str, tuple[dict[str, Any], Callable[[bytes], Any]]] = {
    "BatchArrival": (avro.BATCH_ARRIVAL, codec.decode_event),
    "QuarantineRecord": (avro.QUARANTINE_RECORD, codec.decode_quarantine),
    "ContractRecord": (avro.CONTRACT_RECORD, codec.decode_contract_record),
    "EvaluationRecord": (avro.EVALUATION_RECORD, codec.decode_evaluation),
    "ConsumerDeclaration": (avro.CONSUMER_DECLARATION, codec.decode_consumer_declaration),
}
FIRST_MS = -62_135_596_800_000  # 0001-01-01T00:00:00.000Z
LAST_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
BEYOND = [2**63 - 1, -(2**63), LAST_MS + 1, FIRST_MS - 1, 10**17]


def _value(kind: Any) -> Any:
    """A value of Avro type ``kind`` (a parsed schema node)."""
    if isinstance(kind, list):
        return None if "null" in kind else _value(kind[0])
    if isinstance(kind, dict):
        t = kind["type"]
        if t == "record":
            return {f["name"]: _value(f["type"]) for f in kind["fields"]}
        if t == "enum":
            return kind["symbols"][0]
        if t in ("array", "map"):
            return [] if t == "array" else {}
        return _value(t)
    return {"string": "x", "long": 0, "int": 0, "boolean": False, "double": 0.0,
            "float": 0.0, "bytes": b"", "null": None}[kind]  # fmt: skip


def _timestamp_fields(schema: dict[str, Any]) -> list[str]:
    return [
        f["name"]
        for f in schema["fields"]
        if isinstance(f["type"], dict) and f["type"].get("logicalType") == "timestamp-millis"
    ]


def _bytes(schema: dict[str, Any], **raw: int) -> bytes:
    record = {**_value(schema), **raw}
    buf = io.BytesIO()
    plain = fastavro.parse_schema(without_logical_types(schema), named_schemas={})
    fastavro.schemaless_writer(buf, plain, record)
    return buf.getvalue()


CASES = [(n, f) for n, (schema, _) in RECORDS.items() for f in _timestamp_fields(schema)]


def test_every_record_with_a_timestamp_is_covered() -> None:
    assert {n for n, _ in CASES} == set(RECORDS)
    assert ("BatchArrival", "data_time") in CASES and ("BatchArrival", "produced_at") in CASES


@pytest.mark.parametrize(("record", "field"), CASES)
@pytest.mark.parametrize("millis", BEYOND)
def test_a_timestamp_beyond_python_dates_is_named(record: str, field: str, millis: int) -> None:
    schema, decode = RECORDS[record]
    with pytest.raises(DecodeError) as info:
        decode(_bytes(schema, **{field: millis}))
    message = str(info.value)
    assert f"a timestamp beyond the years 1 to 9999: {field} = {millis}" in message
    assert "C int" not in message


@pytest.mark.parametrize(("record", "field"), CASES)
@pytest.mark.parametrize("millis", [FIRST_MS, LAST_MS, 0])
def test_the_first_and_last_millisecond_still_read(record: str, field: str, millis: int) -> None:
    schema, decode = RECORDS[record]
    value = decode(_bytes(schema, **{field: millis}))[field]
    assert round(value.timestamp() * 1000) == millis


def _registry_framed(millis: int) -> tuple[Any, bytes]:
    """A BatchArrival framed by the library's serializer under a writer schema that declares
    ``data_time`` a plain long (Avro resolution ignores logical types), and the client."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from worker.kafka.framing import reader_schema

    client = SchemaRegistryClient.new_client({"url": "mock://avro-timestamps-test"})
    writer = without_logical_types(reader_schema("BatchArrival"))
    ctx = SerializationContext("gis.batches", MessageField.VALUE)
    record = {**_value(avro.BATCH_ARRIVAL), "data_time": millis}
    return client, bytes(AvroSerializer(client, json.dumps(writer))(record, ctx) or b"")


@pytest.mark.parametrize("millis", BEYOND)
def test_a_registry_framed_event_names_its_timestamp_too(millis: int) -> None:
    # the Schema Registry reader (worker.kafka.wire) is the other way records are read
    from worker.kafka.wire import RegistryCodec

    client, framed = _registry_framed(millis)
    with pytest.raises(DecodeError) as info:
        RegistryCodec(client).decode_event(framed, "gis.batches")
    assert f"a timestamp beyond the years 1 to 9999: data_time = {millis}" in str(info.value)


@pytest.mark.parametrize("millis", [FIRST_MS, 1_764_396_000_000, LAST_MS])
def test_a_plain_long_timestamp_of_a_registry_writer_reads_as_a_time(millis: int) -> None:
    # it was an int: freshness then failed on it as a gate error
    from worker.kafka.wire import RegistryCodec

    client, framed = _registry_framed(millis)
    value = RegistryCodec(client).decode_event(framed, "gis.batches")["data_time"]
    assert value.tzinfo is not None and round(value.timestamp() * 1000) == millis
