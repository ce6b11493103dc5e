"""Schema Registry wire format (worker.kafka.wire) against confluent-kafka's own
serializers and its ``mock://`` registry (no registry server runs here)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from worker.cli.scenario import data_file
from worker.core.errors import DecodeError
from worker.core.model import Decision, QuarantineReason
from worker.io import codec
from worker.io.payloads import read_batch_file
from worker.kafka.framing import RegistryUnavailable, reader_schema, schema_id_of
from worker.kafka.wire import FAILED_LOOKUP_TTL_S, RegistryCodec

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
TOPIC = "gis.batches"
CTX = SerializationContext(TOPIC, MessageField.VALUE)
WORLD = read_batch_file(
    data_file("admin_boundaries.parquet"),
    layer="admin_boundaries",
    crs="EPSG:4326",
    data_time=NOW - timedelta(hours=1),
    batch_id="b1",
)
PLAIN = codec.encode_batch(WORLD)


def mock_client() -> SchemaRegistryClient:
    return SchemaRegistryClient.new_client({"url": "mock://registry-codec-test"})


def produce_framed(client: SchemaRegistryClient, schema: dict, record: dict) -> bytes:
    """What a producer using the library's AvroSerializer puts on gis.batches."""
    serializer = AvroSerializer(client, json.dumps(schema))
    framed = serializer(record, CTX)
    assert framed is not None
    return bytes(framed)


def evolved_schema() -> dict:
    """Our BatchArrival plus an optional field a newer producer added."""
    schema = reader_schema("BatchArrival")
    schema["fields"].append({"name": "region", "type": ["null", "string"], "default": None})
    return schema


def test_a_framed_event_from_the_library_serializer_decodes_to_the_same_batch() -> None:
    client = mock_client()
    framed = produce_framed(client, reader_schema("BatchArrival"), codec.decode_event(PLAIN))
    registered = client.get_latest_version(f"{TOPIC}-value")
    assert framed[0] == 0 and schema_id_of(framed) == registered.schema_id
    # the body is the plain Avro encoding of the same record (written with the whole schema:
    # the gate itself leaves out the two trailing optional fields of a planar batch)
    assert codec.decode_event(framed[5:]) == codec.decode_event(PLAIN)

    batch = RegistryCodec(client).decode_batch(framed, TOPIC)
    assert batch.batch_id == "b1" and batch.layer == "admin_boundaries"
    assert batch.feature_count == WORLD.feature_count == len(batch.geometries_wkb)
    assert batch.geometries_wkb == WORLD.geometries_wkb
    assert batch.attributes.equals(codec.decode_batch(PLAIN).attributes)


def test_an_event_of_an_evolved_writer_schema_is_read_into_ours() -> None:
    client = mock_client()
    ours = produce_framed(client, reader_schema("BatchArrival"), codec.decode_event(PLAIN))
    newer = produce_framed(
        client, evolved_schema(), {**codec.decode_event(PLAIN), "region": "north"}
    )
    assert schema_id_of(newer) != schema_id_of(ours)  # a second version of the subject
    assert len(newer) > len(ours)  # the added field travels in the body

    record = RegistryCodec(client).decode_event(newer, TOPIC)
    assert "region" not in record  # dropped by Avro schema resolution into our schema
    assert record == codec.decode_event(PLAIN)


def test_a_writer_schema_lacking_a_required_field_names_its_id() -> None:
    client = mock_client()
    schema = reader_schema("BatchArrival")
    schema["fields"] = [f for f in schema["fields"] if f["name"] != "producer"]
    record = {k: v for k, v in codec.decode_event(PLAIN).items() if k != "producer"}
    framed = produce_framed(client, schema, record)
    with pytest.raises(DecodeError) as err:
        RegistryCodec(client).decode_event(framed, TOPIC)
    assert f"schema id {schema_id_of(framed)} cannot be read as BatchArrival" in str(err.value)
    assert "producer" in str(err.value)


def test_plain_avro_and_other_magic_bytes_are_refused_by_name() -> None:
    rc = RegistryCodec(mock_client())
    with pytest.raises(DecodeError, match=rf"magic byte {PLAIN[0]}, expected 0.*plain Avro"):
        rc.decode_event(PLAIN, TOPIC)
    with pytest.raises(DecodeError, match=r"magic byte 1, expected 0 \(schema GUID framing"):
        rc.decode_event(b"\x01" + bytes(16) + PLAIN, TOPIC)
    with pytest.raises(DecodeError, match="5 bytes, not more than the 5-byte header"):
        rc.decode_event(b"\x00\x00\x00\x00\x01", TOPIC)
    with pytest.raises(DecodeError, match="framed BatchArrival: 0 bytes, not more than"):
        rc.decode_event(b"", TOPIC)


def test_an_unknown_schema_id_is_named() -> None:
    framed = b"\x00" + (4242).to_bytes(4, "big") + PLAIN
    with pytest.raises(DecodeError, match="schema id 4242 is unknown to the schema registry"):
        RegistryCodec(mock_client()).decode_event(framed, TOPIC)


def test_a_schema_id_of_another_format_is_named() -> None:
    client = mock_client()
    sid = client.register_schema(f"{TOPIC}-value", Schema('{"type": "object"}', "JSON"))
    framed = b"\x00" + sid.to_bytes(4, "big") + PLAIN
    with pytest.raises(DecodeError, match=f"schema id {sid} is a JSON schema, not Avro"):
        RegistryCodec(client).decode_event(framed, TOPIC)


@pytest.fixture
def silent_registry() -> Iterator[tuple[int, list[socket.socket]]]:
    """A loopback port that accepts connections and never answers (a hung registry)."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join(5)
    for s in accepted:
        s.close()
    server.close()


def test_a_hung_registry_is_bounded_in_time_named_and_remembered(
    silent_registry: tuple[int, list[socket.socket]],
) -> None:
    port, accepted = silent_registry
    client = SchemaRegistryClient(
        {
            "url": f"http://alice:s3cret@127.0.0.1:{port}",
            "timeout": 0.5,
            "max.retries": 0,
        }
    )
    now = [100.0]
    rc = RegistryCodec(client, clock=lambda: now[0])
    framed = b"\x00" + (7).to_bytes(4, "big") + PLAIN
    started = time.monotonic()
    with pytest.raises(DecodeError) as err:
        rc.decode_event(framed, TOPIC)
    first = time.monotonic() - started
    reason = str(err.value)
    assert "writer schema id 7 cannot be looked up: the registry is unreachable" in reason
    assert "Timeout" in reason
    assert "s3cret" not in reason and "alice" not in reason
    assert 0.4 < first < 3.0  # the client's timeout, not forever
    assert len(accepted) == 1

    # the next events with that id within the TTL: the same reason at once, no new request
    started = time.monotonic()
    with pytest.raises(DecodeError, match="writer schema id 7 cannot be looked up"):
        rc.decode_event(framed, TOPIC)
    assert time.monotonic() - started < 0.1 and len(accepted) == 1

    now[0] += FAILED_LOOKUP_TTL_S + 1  # after the TTL the registry is asked again
    with pytest.raises(DecodeError, match="schema id 7"):
        rc.decode_event(framed, TOPIC)
    assert len(accepted) == 2


def test_a_refused_connection_is_named() -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    client = SchemaRegistryClient({"url": f"http://127.0.0.1:{port}", "max.retries": 0})
    framed = b"\x00" + (3).to_bytes(4, "big") + PLAIN
    with pytest.raises(DecodeError, match=r"schema id 3 .*unreachable \(ConnectError"):
        RegistryCodec(client).decode_event(framed, TOPIC)
    with pytest.raises(RegistryUnavailable, match=r"subject 'gis\.batches\.quarantine-value'"):
        RegistryCodec(client).register("gis.batches.quarantine", "QuarantineRecord")


def quarantine_plain() -> bytes:
    reason = QuarantineReason(code="decode_error", message="undecodable", measured={"n": 1})
    return codec.encode_quarantine(
        Decision("quarantined", (), (reason,)),
        batch_id=None,
        layer=None,
        source_topic=TOPIC,
        source_partition=1,
        source_offset=9,
        original=b"\x00\x01 original bytes",
        quarantined_at=NOW,
        worker_id="w-0",
    )


def test_output_records_are_framed_for_the_library_deserializer() -> None:
    client = mock_client()
    rc = RegistryCodec(client)
    topic = "gis.batches.quarantine"
    sid = rc.register(topic, "QuarantineRecord")
    assert rc.register(topic, "QuarantineRecord") == sid  # idempotent
    plain = quarantine_plain()
    framed = rc.frame(plain, topic, "QuarantineRecord")
    assert framed[:5] == b"\x00" + sid.to_bytes(4, "big") and framed[5:] == plain

    # a downstream consumer with the library's deserializer (writer schema by id)
    record = AvroDeserializer(client)(framed, SerializationContext(topic, MessageField.VALUE))
    assert record["reason_code"] == "decode_error" and record["worker_id"] == "w-0"
    assert record["original"] == b"\x00\x01 original bytes" and record["source_offset"] == 9
    assert client.get_latest_version(f"{topic}-value").schema_id == sid

    # and our own readers get the plain record back
    assert rc.to_plain(framed, topic, "QuarantineRecord") == plain
    assert codec.decode_quarantine(rc.to_plain(framed, topic, "QuarantineRecord"))["reasons"][0][
        "measured"
    ] == {"n": 1}


def test_framing_something_that_is_not_the_record_kind_fails_by_name() -> None:
    rc = RegistryCodec(mock_client())
    with pytest.raises(DecodeError, match="not a EvaluationRecord"):
        rc.frame(b"\x02", "gis.contract.evaluations", "EvaluationRecord")


def test_a_planar_batch_event_is_framed_and_reads_back() -> None:
    # planar events leave out the two trailing optional fields: framing must still read them
    rc = RegistryCodec(mock_client())
    framed = rc.frame(PLAIN, TOPIC, "BatchArrival")
    assert framed[0] == 0
    assert rc.decode_batch(framed, TOPIC).geometries_wkb == WORLD.geometries_wkb


def test_events_with_feature_ids_and_contract_records_with_supersedes_are_framed() -> None:
    # issue 14: two more trailing optional fields; each variant frames and reads back
    from dataclasses import replace

    from worker.control.publish import contract_record
    from worker.io.contract_files import load_contract

    rc = RegistryCodec(mock_client())
    n = len(WORLD.geometries_wkb)
    ids = tuple(f"feature-{i}" for i in range(n))
    for batch in (replace(WORLD, feature_ids=ids), replace(WORLD, edges="spherical")):
        framed = rc.frame(codec.encode_batch(batch), TOPIC, "BatchArrival")
        back = rc.decode_batch(framed, TOPIC)
        assert (back.feature_ids, back.edges) == (batch.feature_ids, batch.edges)
    v1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
    v11 = load_contract(data_file("contracts/admin_boundaries.v1.1.yaml"))
    for rec, supersedes in (
        (contract_record(v1, mode="enforcing", published_at=NOW, published_by="t"), []),
        (
            {
                **contract_record(v11, mode="enforcing", published_at=NOW, published_by="t"),
                "supersedes": [v1.key],
            },
            [v1.key],
        ),
    ):
        plain = codec.encode_contract_record(rec)
        framed = rc.frame(plain, "gis.contracts", "ContractRecord")
        # the framed body follows the registered (whole) schema: supersedes always written
        assert framed[5:].startswith(plain)
        decoded = codec.decode_contract_record(
            rc.to_plain(framed, "gis.contracts", "ContractRecord")
        )
        assert decoded["supersedes"] == supersedes and decoded["version"] == rec["version"]
