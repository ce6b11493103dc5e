"""The Schema Registry wire format end to end on a real broker, with the ``mock://`` registry.

The library's mock registry keeps its schemas in the client instance
(``MockSchemaRegistryClient.__init__`` creates an empty store), so a worker *process* would
have a registry of its own: the ids a producer in this test registered would be unknown
there and every framed event quarantined as such. The worker therefore runs in-process as
a Pipeline thread (``start_worker``), sharing the process's one client of the settings
(:func:`worker.kafka.schema_registry.registry_client`) with the test's producers.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from worker.cli.scenario import data_file
from worker.control.publish import publish_batch, publish_contract
from worker.gate.route import Outcome
from worker.io import codec
from worker.io.payloads import read_batch_file
from worker.kafka.admin import produce_one, read_topic
from worker.kafka.framing import reader_schema, schema_id_of
from worker.kafka.registry_settings import SchemaRegistrySettings
from worker.kafka.schema_registry import registry_client
from worker.kafka.settings import Settings
from worker.ops.quarantine import read_quarantine


def world(batch_id: str) -> Any:
    return read_batch_file(
        data_file("admin_boundaries.parquet"),
        layer="admin_boundaries",
        crs="EPSG:4326",
        data_time=datetime.now(timezone.utc) - timedelta(hours=1),
        batch_id=batch_id,
    )


def wait_for(outcomes: list[Outcome], n: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while len(outcomes) < n and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(outcomes) >= n, f"{len(outcomes)} of {n} events decided"


def test_framed_events_in_framed_records_out(settings: Settings, start_worker: Any) -> None:
    sr = SchemaRegistrySettings(url=f"mock://{uuid.uuid4().hex}")
    s = replace(settings, schema_registry=sr)
    client = registry_client(sr)
    publish_contract(s, data_file("contracts/admin_boundaries.v1.yaml"), published_by="t")
    outcomes: list[Outcome] = []
    start_worker(s, on_outcome=outcomes.append)

    publish_batch(s, world("framed-1"))  # `batch publish` frames with the registry set
    schema = reader_schema("BatchArrival")
    schema["fields"].append({"name": "region", "type": ["null", "string"], "default": None})
    newer = AvroSerializer(client, json.dumps(schema))(
        {**codec.decode_event(codec.encode_batch(world("evolved-2"))), "region": "north"},
        SerializationContext(s.topics.batches, MessageField.VALUE),
    )
    assert newer is not None
    produce_one(s, s.topics.batches, "admin_boundaries", newer)
    produce_one(s, s.topics.batches, "admin_boundaries", codec.encode_batch(world("plain-3")))
    unknown = b"\x00" + (9999).to_bytes(4, "big") + codec.encode_batch(world("unknown-4"))
    produce_one(s, s.topics.batches, "admin_boundaries", unknown)
    wait_for(outcomes, 4)

    admitted_ids = sorted(str(o.batch_id) for o in outcomes if o.decision.admitted)
    assert admitted_ids == ["evolved-2", "framed-1"]
    reasons = sorted(
        (o.decision.reasons[0].code, o.decision.reasons[0].message)
        for o in outcomes
        if not o.decision.admitted
    )
    assert len(reasons) == 2 and {code for code, _ in reasons} == {"decode_error"}
    assert any("schema id 9999 is unknown" in m for _, m in reasons)
    assert any("magic byte" in m and "plain Avro" in m for _, m in reasons)

    # admitted: the original framed bytes; both schema versions are on the subject
    admitted = [m.value() for m in read_topic(s, s.topics.admitted)]
    assert len(admitted) == 2 and newer in admitted
    assert len({schema_id_of(v) for v in admitted}) == 2  # our schema and the evolved one
    assert sorted(client.get_versions(f"{s.topics.batches}-value")) == [1, 2]

    # quarantine and evaluation records are framed: a downstream consumer reads them with
    # the library's deserializer, the gate's own quarantine reader deframes them
    q_id = client.get_latest_version(f"{s.topics.quarantine}-value").schema_id
    quarantined = [m.value() for m in read_topic(s, s.topics.quarantine)]
    assert [schema_id_of(v) for v in quarantined] == [q_id, q_id]
    ctx = SerializationContext(s.topics.quarantine, MessageField.VALUE)
    codes = [AvroDeserializer(client)(v, ctx)["reason_code"] for v in quarantined]
    assert codes == ["decode_error", "decode_error"]
    entries = list(read_quarantine(s))
    assert [e.error for e in entries] == [None, None]
    assert sorted(e.record["original"][:1] for e in entries if e.record) == [b"\x00", b"\x0e"]

    e_id = client.get_latest_version(f"{s.topics.evaluations}-value").schema_id
    evaluations = [m.value() for m in read_topic(s, s.topics.evaluations)]
    assert len(evaluations) == 2 and {schema_id_of(v) for v in evaluations} == {e_id}
