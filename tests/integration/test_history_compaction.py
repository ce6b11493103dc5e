"""Issue 30 on a real broker: each hostile history is compacted as Kafka compacts it (the
newest record of every key, in offset order, written to a fresh topic) and a fresh worker's
config bootstrap reads it: the Atlantis batch, which the live worker quarantines, is never
admitted, and the layer reports the break (live and fresh alike)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone

import pytest

from worker.cli.scenario import data_file, demo_events
from worker.control.lifecycle import read_published, write_records
from worker.control.publish import publish_contract
from worker.core.contracts.parse import parse_contract
from worker.core.lifecycle.policy import Published
from worker.core.lifecycle.registry import Registry, config_key
from worker.gate.route import Source, route
from worker.io.contract_files import load_contract
from worker.kafka.admin import create_topics, produce_one
from worker.kafka.config_topic import read_config
from worker.kafka.settings import Settings, Topics

NOW = datetime.now(timezone.utc)
LAYER = "admin_boundaries"
V1_FILE = data_file("contracts/admin_boundaries.v1.yaml")
V11_FILE = data_file("contracts/admin_boundaries.v1.1.yaml")
V1, V11 = load_contract(V1_FILE), load_contract(V11_FILE)
ATLANTIS = next(e for e in demo_events(NOW) if e.label == "ab-unknown-continent")


def _read_all(settings: Settings) -> list[tuple[int, str, bytes | None]]:
    """Every record of the config topic: (partition, key, value), in offset order."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    from worker.kafka.clients import PARTITION_EOF

    consumer = Consumer(settings.reader())
    topic = settings.topics.contracts
    parts = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
    out, done = [], set()
    try:
        while len(done) < len(parts):
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == PARTITION_EOF
                done.add(msg.partition())
                continue
            out.append((msg.partition(), msg.key().decode(), msg.value()))
    finally:
        consumer.close()
    return out


def _compacted_copy(settings: Settings) -> Settings:
    """A fresh topic holding the newest record of every key, in offset order."""
    log = _read_all(settings)
    last = {key: i for i, (_, key, _) in enumerate(log)}
    prefix = f"c{uuid.uuid4().hex[:8]}."
    fresh = settings.with_(topics=Topics().with_prefix(prefix))
    create_topics(fresh, partitions=3)
    for i, (partition, key, value) in enumerate(log):
        if last[key] == i:
            produce_one(fresh, fresh.topics.contracts, key, value, partition=partition)
    return fresh


def _decision(registry: Registry) -> tuple[str, str]:
    out = route(
        Source("gis.batches", 0, 0, ATLANTIS.key.encode(), ATLANTIS.value),
        registry.active,
        Topics(),
        now=NOW,
        worker_id="w",
    )
    return out.decision.decision, out.decision.reasons[0].code


def _tombstone_v1(settings: Settings) -> None:
    produce_one(settings, settings.topics.contracts, config_key(V1), None)


def _garbage_v1(settings: Settings) -> None:
    produce_one(settings, settings.topics.contracts, config_key(V1), os.urandom(300))


def _edit_then_promote(settings: Settings) -> None:
    """An edited v1.1 (Atlantis allowed, enforcing, superseding v1.0) written past the CLI,
    then the genuine v1.1 promoted as `contract promote` writes it."""
    edited = parse_contract(V11.text.replace("Africa: Africa", "Africa: Africa\n      Atlantis: x"))
    assert edited.key == V11.key and edited.digest != V11.digest
    registry = read_published(settings)
    forged = Published(edited, "enforcing", "active", None, (), NOW, "mallory", (V1.key,))
    write_records(settings, (forged,), head=registry.head(LAYER), documents=frozenset({V11.key}))
    v1 = next(p for p in registry.published(LAYER) if p.contract.key == V1.key)
    promoted = Published(V11, "enforcing", "active", "tightening", (), NOW, "t", (V1.key,))
    write_records(settings, (promoted, replace(v1, state="superseded")), head=config_key(edited))


def _retire_then(damage: Callable[[Settings], None]) -> Callable[[Settings], None]:
    def run(settings: Settings) -> None:
        registry = read_published(settings)
        v1 = next(p for p in registry.published(LAYER) if p.contract.key == V1.key)
        write_records(settings, (replace(v1, state="retired"),), head=registry.head(LAYER))
        damage(settings)

    return run


ROWS: dict[str, Callable[[Settings], None]] = {
    "tombstone under v1.0": _tombstone_v1,
    "garbage under v1.0": _garbage_v1,
    "edited v1.1, then the genuine promoted": _edit_then_promote,
    "tombstone under a retired version": _retire_then(_tombstone_v1),
    "garbage under a retired version": _retire_then(_garbage_v1),
}


@pytest.mark.parametrize("row", ROWS)
def test_a_fresh_worker_on_the_compacted_topic_refuses_what_the_live_one_refused(
    settings: Settings, row: str
) -> None:
    publish_contract(settings, V1_FILE, mode="enforcing")
    publish_contract(settings, V11_FILE, mode="observing")
    publish_contract(settings, data_file("contracts/nyc_boroughs.v1.yaml"), mode="enforcing")
    ROWS[row](settings)
    live = read_config(settings, Registry())
    fresh = read_config(_compacted_copy(settings), Registry())
    for reg in (live, fresh):
        assert _decision(reg) == ("quarantined", "contract_history_broken"), row
        assert reg.breaks(LAYER)
        assert [v.contract.version for v in reg.active("nyc_boroughs")] == ["v1.0"]
    assert fresh.breaks(LAYER) == live.breaks(LAYER)


def test_republishing_the_genuine_document_restores_the_layer(settings: Settings) -> None:
    publish_contract(settings, V1_FILE, mode="enforcing")
    publish_contract(settings, V11_FILE, mode="observing")
    _tombstone_v1(settings)
    assert read_config(settings, Registry()).breaks(LAYER)
    out = publish_contract(settings, V1_FILE, mode="enforcing")
    assert out.startswith(f"restored {config_key(V1)} at ")
    for reg in (
        read_config(settings, Registry()),
        read_config(_compacted_copy(settings), Registry()),
    ):
        assert reg.breaks(LAYER) == ()
        assert _decision(reg) == ("quarantined", "contract_break")
        assert [(v.contract.version, v.mode) for v in reg.active(LAYER)] == [
            ("v1.0", "enforcing"),
            ("v1.1", "observing"),
        ]
