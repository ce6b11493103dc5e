"""Schema Registry wiring in worker.kafka: settings, routing of framed events, the framing
of output records by the pipeline, readers of the framed topics (``mock://`` registry)."""

from __future__ import annotations

import json
import socket
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.gate.world import World, world
from worker.cli.scenario import data_file
from worker.core.errors import BrokerError, ContractGateError
from worker.core.model import ActiveVersion
from worker.gate.route import Outcome, Source, route
from worker.gate.startup import register_schemas
from worker.io import codec
from worker.io.contract_files import load_contract
from worker.io.payloads import read_batch_file
from worker.kafka.framing import reader_schema, schema_id_of
from worker.kafka.redaction import describe_settings
from worker.kafka.registry_settings import SchemaRegistrySettings
from worker.kafka.schema_registry import codec_for, output_kinds, plain_value, registry_client
from worker.kafka.settings import Settings, Topics

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
TOPICS = Topics()
V1 = ActiveVersion(load_contract(data_file("contracts/admin_boundaries.v1.yaml")), "enforcing")
WORLD = read_batch_file(
    data_file("admin_boundaries.parquet"),
    layer="admin_boundaries",
    crs="EPSG:4326",
    data_time=NOW - timedelta(hours=1),
    batch_id="b1",
)
PLAIN = codec.encode_batch(WORLD)


def registry_settings() -> Settings:
    """Settings with a ``mock://`` registry of this test alone."""
    sr = SchemaRegistrySettings(url=f"mock://{uuid.uuid4().hex}")
    return Settings(instance_id="pod-0", schema_registry=sr)


def framed(settings: Settings, schema: dict, record: dict) -> bytes:
    """An event as a producer with the library's AvroSerializer writes it."""
    assert settings.schema_registry is not None
    ser = AvroSerializer(registry_client(settings.schema_registry), json.dumps(schema))
    out = ser(record, SerializationContext(TOPICS.batches, MessageField.VALUE))
    assert out is not None
    return bytes(out)


def go(settings: Settings, value: bytes) -> Outcome:
    return route(
        Source(TOPICS.batches, 2, 41, b"admin_boundaries", value),
        lambda layer: (V1,) if layer == "admin_boundaries" else (),
        TOPICS,
        now=NOW,
        worker_id="w",
        registry=codec_for(settings),
    )


# -- settings -----------------------------------------------------------------------------


def test_settings_from_env_and_flag_and_the_secret_never_printed() -> None:
    env = {
        "CONTRACT_GATE_SCHEMA_REGISTRY_URL": "https://bob:urlpass@sr.example:8081",
        "CONTRACT_GATE_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO": "key:hunter2",
        "CONTRACT_GATE_SCHEMA_REGISTRY_TIMEOUT_S": "2.5",
    }
    s = Settings.from_env(env)
    assert s.schema_registry == SchemaRegistrySettings(
        "https://bob:urlpass@sr.example:8081", "key:hunter2", 2.5
    )
    conf = s.schema_registry.client_config()
    assert conf["basic.auth.user.info"] == "key:hunter2" and conf["timeout"] == 2.5
    line = describe_settings(s)
    assert "schema-registry=https://sr.example:8081 auth=***" in line
    assert "hunter2" not in line and "urlpass" not in line and "bob" not in line
    assert "hunter2" not in repr(s)

    flagged = Settings.from_env(env, schema_registry_url="http://sr2:8081")
    assert flagged.schema_registry is not None and flagged.schema_registry.url == "http://sr2:8081"
    assert Settings.from_env({}).schema_registry is None  # plain Avro by default
    assert "schema-registry" not in describe_settings(Settings.from_env({}))


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CONTRACT_GATE_SCHEMA_REGISTRY_URL": "sr:8081"}, "must start with http:// or https://"),
        (
            {
                "CONTRACT_GATE_SCHEMA_REGISTRY_URL": "http://sr:8081",
                "CONTRACT_GATE_SCHEMA_REGISTRY_TIMEOUT_S": "soon",
            },
            "CONTRACT_GATE_SCHEMA_REGISTRY_TIMEOUT_S='soon' is not a number of seconds",
        ),
        (
            {
                "CONTRACT_GATE_SCHEMA_REGISTRY_URL": "http://sr:8081",
                "CONTRACT_GATE_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO": "justakey",
            },
            "BASIC_AUTH_USER_INFO must be user:password",
        ),
    ],
)
def test_bad_registry_settings_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ContractGateError, match=message) as err:
        Settings.from_env(env)
    assert "justakey" not in str(err.value)


# -- routing ------------------------------------------------------------------------------


def test_a_framed_event_is_admitted_with_its_original_bytes() -> None:
    s = registry_settings()
    event = framed(s, reader_schema("BatchArrival"), codec.decode_event(PLAIN))
    out = go(s, event)
    assert out.decision.decision == "admitted", out.decision.reasons
    admitted = [r for r in out.records if r.topic == TOPICS.admitted]
    assert [r.value for r in admitted] == [event]  # forwarded unchanged, frame and all
    assert [r.topic for r in out.records].count(TOPICS.evaluations) == 1


def test_an_event_of_an_evolved_producer_schema_is_decided_as_ours() -> None:
    s = registry_settings()
    schema = reader_schema("BatchArrival")
    schema["fields"].append({"name": "region", "type": ["null", "string"], "default": None})
    event = framed(s, schema, {**codec.decode_event(PLAIN), "region": "north"})
    out = go(s, event)
    assert out.decision.decision == "admitted", out.decision.reasons
    assert out.batch_id == "b1" and out.layer == "admin_boundaries"


def reason_of(out: Outcome) -> tuple[str, str]:
    assert out.decision.decision == "quarantined"
    (record,) = [r for r in out.records if r.topic == TOPICS.quarantine]
    q = codec.decode_quarantine(record.value)
    return q["reason_code"], q["reasons"][0]["message"]


def test_plain_avro_unknown_id_and_dead_registry_are_decode_errors() -> None:
    s = registry_settings()
    code, message = reason_of(go(s, PLAIN))
    assert code == "decode_error"
    assert f"magic byte {PLAIN[0]}, expected 0" in message

    code, message = reason_of(go(s, b"\x00" + (77).to_bytes(4, "big") + PLAIN))
    assert code == "decode_error" and "schema id 77 is unknown to the schema registry" in message

    with socket.create_server(("127.0.0.1", 0)) as srv:
        port = srv.getsockname()[1]  # nothing listens there once closed
    dead = Settings(
        schema_registry=SchemaRegistrySettings(f"http://127.0.0.1:{port}", max_retries=0)
    )
    code, message = reason_of(go(dead, b"\x00" + (5).to_bytes(4, "big") + PLAIN))
    assert code == "decode_error"
    assert "writer schema id 5 cannot be looked up: the registry is unreachable" in message


def test_a_framed_record_that_is_not_a_batch_is_quarantined_with_its_ids() -> None:
    s = registry_settings()
    record = {**codec.decode_event(PLAIN), "features": None, "payload_uri": None}
    out = go(s, framed(s, reader_schema("BatchArrival"), record))
    code, message = reason_of(out)
    assert code == "decode_error" and "neither inline features nor a payload_uri" in message
    assert (out.layer, out.batch_id) == ("admin_boundaries", "b1")  # salvaged from the frame


# -- the pipeline frames its output records -----------------------------------------------


def commit(s: Settings, outcomes: list[Outcome]) -> tuple[bool, World]:
    """One run of ``outcomes`` (for as many events consumed) committed by a processor on
    the in-memory broker with settings ``s``."""
    w = world(settings=s, partitions=1)
    w.send(*[(0, b"e")] * len(outcomes))
    done = w.commit(w.poll(), outcomes)
    return done.complete, w


def test_quarantine_and_evaluation_records_are_framed_admitted_ones_untouched() -> None:
    s = registry_settings()
    event = framed(s, reader_schema("BatchArrival"), codec.decode_event(PLAIN))
    admitted, quarantined = go(s, event), go(s, PLAIN)
    register_schemas(codec_for(s), output_kinds(s.topics))
    ok, w = commit(s, [admitted, quarantined])
    calls = [c for c in w.broker.calls if not c.startswith("produce")]
    assert ok and calls == [
        "begin_transaction",
        "send_offsets_to_transaction",
        "commit_transaction",
    ]
    topics = (TOPICS.admitted, TOPICS.quarantine, TOPICS.evaluations)
    by_topic = {t: [m.value() for m in w.read(t)] for t in topics}
    assert by_topic[TOPICS.admitted] == [event]

    client = registry_client(s.schema_registry)  # type: ignore[arg-type]
    q_id = client.get_latest_version(f"{TOPICS.quarantine}-value").schema_id
    e_id = client.get_latest_version(f"{TOPICS.evaluations}-value").schema_id
    (q,) = by_topic[TOPICS.quarantine]
    (e,) = by_topic[TOPICS.evaluations]
    assert schema_id_of(q) == q_id and schema_id_of(e) == e_id and q_id != e_id

    # read as a downstream consumer would, with the library's deserializer
    ctx = SerializationContext(TOPICS.quarantine, MessageField.VALUE)
    record = AvroDeserializer(client)(q, ctx)
    assert record["reason_code"] == "decode_error" and record["original"] == PLAIN
    ctx = SerializationContext(TOPICS.evaluations, MessageField.VALUE)
    assert AvroDeserializer(client)(e, ctx)["batch_id"] == "b1"

    # and as the gate's own readers do (quarantine tail, SLO restore)
    assert codec.decode_quarantine(plain_value(s, TOPICS.quarantine, q))["reason_code"] == (
        "decode_error"
    )
    assert codec.decode_evaluation(plain_value(s, TOPICS.evaluations, e))["passed"] is True
    plain_q = quarantined.records[-1].value
    assert plain_value(s, TOPICS.quarantine, plain_q) == plain_q  # older plain records
    assert plain_value(Settings(), TOPICS.quarantine, q) == q  # no registry: untouched


def test_a_dead_registry_stops_the_start_and_aborts_a_transaction() -> None:
    with socket.create_server(("127.0.0.1", 0)) as srv:
        port = srv.getsockname()[1]
    sr = SchemaRegistrySettings(f"http://127.0.0.1:{port}", timeout_s=0.5, max_retries=0)
    dead = Settings(instance_id="pod-0", schema_registry=sr)
    with pytest.raises(BrokerError, match=r"subject 'gis\.batches\.quarantine-value'.*unreachable"):
        register_schemas(codec_for(dead), output_kinds(dead.topics))
    outcome = go(Settings(), PLAIN)  # admitted (plain Avro): its evaluation record is framed
    assert outcome.decision.admitted
    ok, w = commit(dead, [outcome])
    assert not ok and w.broker.calls == [
        "begin_transaction",
        "abort_transaction",
    ]  # nothing half-written
    # (the step seeks back to its offset, consumed again later: tests/gate/test_pipeline.py)
    assert w.p.transactions_aborted == 1


def test_quarantine_show_reads_the_features_of_a_framed_original() -> None:
    from worker.ops.quarantine import QuarantineEntry, entry_batch

    s = registry_settings()
    event = framed(s, reader_schema("BatchArrival"), codec.decode_event(PLAIN))
    record = {"original": event, "source_topic": TOPICS.batches, "reasons": []}
    entry = QuarantineEntry(TOPICS.quarantine, 0, 3, "admin_boundaries", {}, record, None)
    batch = entry_batch(entry, s)
    assert batch.batch_id == "b1" and batch.geometries_wkb == WORLD.geometries_wkb
    with pytest.raises(ContractGateError, match="the original event does not decode"):
        entry_batch(entry)  # without the registry the frame is not plain Avro
