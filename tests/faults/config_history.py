"""Fault scenarios of issue 30 against real ``contract-gate run`` processes.

* **compacted hostile history**: after the demo's versions, a tombstone and 300 random
  bytes land under the key of the only enforcing version (v1.0); the config topic is
  compacted as Kafka compacts it (the newest record of every key, in offset order, copied
  to a fresh topic) and a fresh worker starts on the copy. The Atlantis batch must be
  quarantined (``contract_history_broken``), an NYC batch admitted.
* **damage to a superseded or retired version, compacted**: v1.1 promoted (v1.0
  superseded, the records ``contract promote`` writes), for *retired* v1.0 then retired;
  a tombstone or 300 random bytes under v1.0's document key; compacted as above. docs/design.md
  section 2 (immutability survives compaction, a tombstone never bypasses the retirement
  gate): the fresh worker fails closed as for an enforcing version, Atlantis quarantined
  ``contract_history_broken``, an NYC batch admitted, and ``contract list`` on the
  compacted topic shows the layer's BROKEN HISTORY.
* **forged signature**: the demo's versions published signed with Ed25519 key A on a fresh
  config topic, then v1.0's document record demoted to observing, signed with key B; a
  worker given A's public key (``--verify-key``) must refuse it (``bad_signature`` in its
  log) and quarantine the Atlantis batch (``contract_history_broken``), admit an NYC batch.
* **config flood**: 30 records of 1.2 MiB and 1,000 small invalid records on the config
  topic; a fresh worker must decide a batch within 10 s plus the group join.
"""

from __future__ import annotations

import io
import os
import time
import uuid
from datetime import datetime, timezone

from tests.faults.suite import (
    RSS_CEILING_MIB,
    Lab,
    Row,
    _judge,
    lab,
    nyc_event,
    wait_decided,
)
from worker.cli.scenario import data_file, demo_events
from worker.core.lifecycle.registry import config_key
from worker.io.contract_files import load_contract
from worker.kafka.admin import create_topics, produce_one, read_topic
from worker.kafka.settings import Settings, Topics

__all__ = [
    "compacted_damage",
    "compacted_history",
    "config_flood",
    "forged_signature",
    "promote_v11",
    "retire_v1",
]

LAYER = "admin_boundaries"
V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
V11 = load_contract(data_file("contracts/admin_boundaries.v1.1.yaml"))


def _compact_into_fresh_topic(settings: Settings) -> str:
    """Copy the newest record of every key of the config topic, in offset order (same
    partition), to a fresh topic; returns its name."""
    log = [
        (m.partition(), m.key(), m.value())
        for m in read_topic(settings, settings.topics.contracts, timeout_s=30)
    ]
    last = {key: i for i, (_, key, _) in enumerate(log)}
    fresh = settings.with_(topics=Topics().with_prefix(f"c{uuid.uuid4().hex[:8]}."))
    create_topics(fresh, partitions=3)
    for i, (partition, key, value) in enumerate(log):
        if last[key] == i:
            produce_one(fresh, fresh.topics.contracts, key.decode(), value, partition=partition)
    return fresh.topics.contracts


def _quarantine_reasons(settings: Settings) -> dict[tuple[int, int], str]:
    out = {}
    for msg in read_topic(settings, settings.topics.quarantine, timeout_s=30):
        h = {k: (v or b"").decode() for k, v in msg.headers() or ()}
        out[(int(h["source-partition"]), int(h["source-offset"]))] = h.get("dlq.reason", "")
    return out


def promote_v11(settings: Settings) -> None:
    """The demo's v1.1 promoted to enforcing, v1.0 superseded: the records
    ``contract promote`` writes (without waiting a cadence cycle for evidence)."""
    from worker.control.lifecycle import read_published, write_records
    from worker.core.lifecycle.promotion import decide_promotion

    registry = read_published(settings)
    d = decide_promotion(V11.key, known=registry.published(LAYER), span_s=1e9, confirmed=True)
    assert [(p.contract.version, p.state) for p in d.writes] == [
        ("v1.1", "active"),
        ("v1.0", "superseded"),
    ], d.message
    write_records(settings, d.writes, head=registry.head(LAYER))


def retire_v1(settings: Settings) -> None:
    """v1.0 retired: the record ``contract retire`` writes (its state alone changes)."""
    from dataclasses import replace

    from worker.control.lifecycle import read_published, write_records

    registry = read_published(settings)
    v1 = next(p for p in registry.published(LAYER) if p.contract.key == V1.key)
    write_records(settings, (replace(v1, state="retired"),), head=registry.head(LAYER))


def _fresh_worker_decides(row: Row, running: Lab) -> None:
    """Compact the lab's config topic into a fresh one, start a fresh worker on it, send
    it the Atlantis and an NYC batch, and judge ``row``: Atlantis must be quarantined
    ``contract_history_broken``, NYC admitted, and ``contract list`` on the compacted
    topic must show the layer's BROKEN HISTORY."""
    from dataclasses import replace

    from worker.control.listing import list_versions

    s, t = running.settings, running.settings.topics
    compacted = _compact_into_fresh_topic(s)
    worker = running.start_worker("fresh", "--contracts-topic", compacted)
    now = datetime.now(timezone.utc)
    atlantis = next(e for e in demo_events(now) if e.label == "ab-unknown-continent")
    placed = [
        produce_one(s, t.batches, atlantis.key, atlantis.value),
        produce_one(s, t.batches, "nyc_boroughs", nyc_event("good")),
    ]
    got, row.decide_s = wait_decided(running, placed, 90)
    row.peak_rss_mib = running.peak_rss_mib()
    row.stayed_up = worker.alive()
    _judge(row, placed, got)
    reasons = _quarantine_reasons(s)
    closed = reasons.get(placed[0]) == "contract_history_broken"
    listed = list_versions(s.with_(topics=replace(t, contracts=compacted)), LAYER, now)
    reported = f"BROKEN HISTORY: {LAYER}" in listed
    row.ok = (
        row.lost == 0
        and row.stayed_up
        and closed
        and reported
        and placed[1] not in reasons
        and row.peak_rss_mib < RSS_CEILING_MIB
    )
    row.note = (
        "Atlantis quarantined contract_history_broken"
        + ("; contract list: BROKEN HISTORY" if reported else "; contract list: NO break shown")
        if closed
        else f"Atlantis: {reasons.get(placed[0], 'admitted')}"
    )


def compacted_history(bootstrap: str) -> Row:
    row = Row("config: tombstone + garbage under v1.0, compacted")
    with lab(bootstrap) as running:
        s, t = running.settings, running.settings.topics
        produce_one(s, t.contracts, config_key(V1), None)
        produce_one(s, t.contracts, config_key(V1), os.urandom(300))
        _fresh_worker_decides(row, running)
    return row


def compacted_damage(bootstrap: str, state: str, damage: str) -> Row:
    """A tombstone (``damage`` ``tombstone``) or 300 random bytes (``garbage``) under the
    document key of v1.0 once it is ``superseded`` or ``retired``, compacted."""
    row = Row(f"config: {damage} under {state} v1.0, compacted")
    with lab(bootstrap) as running:
        s, t = running.settings, running.settings.topics
        promote_v11(s)
        if state == "retired":
            retire_v1(s)
        value = None if damage == "tombstone" else os.urandom(300)
        produce_one(s, t.contracts, config_key(V1), value)
        _fresh_worker_decides(row, running)
    return row


def config_flood(bootstrap: str) -> Row:
    row = Row("config: 30 x 1.2 MiB + 1,000 invalid records")
    with lab(bootstrap) as running:
        from confluent_kafka import Producer

        s, t = running.settings, running.settings.topics
        producer = Producer(s.producer())
        big = os.urandom(1_200_000)
        for i in range(30):
            producer.produce(t.contracts, value=big, key=f"junk/v9.{i}/big")
            producer.flush(30)
        for i in range(1000):
            producer.produce(t.contracts, value=os.urandom(300), key=f"junk-{i}")
            producer.poll(0)
        producer.flush(30)
        started = time.monotonic()
        worker = running.start_worker("flood")
        placed = [produce_one(s, t.batches, "nyc_boroughs", nyc_event("good"))]
        got, _ = wait_decided(running, placed, 90)
        row.decide_s = time.monotonic() - started
        row.peak_rss_mib = running.peak_rss_mib()
        row.stayed_up = worker.alive()
        _judge(row, placed, got)
        row.ok = (
            row.lost == 0
            and row.stayed_up
            and row.decide_s < 10.0 + 6.0  # the bootstrap, plus at most a 6 s group join
            and row.peak_rss_mib < RSS_CEILING_MIB
        )
        row.note = "decided within 10 s + a group join" if row.ok else ""
    return row


def forged_signature(bootstrap: str) -> Row:
    import tempfile
    from pathlib import Path

    from tests.io.test_signing import ed25519_pair
    from worker.cli.demo import publish_demo_contracts
    from worker.control.lifecycle import write_records
    from worker.core.lifecycle.policy import Published
    from worker.io.signing import RecordSigning, load_signing_key

    row = Row("config: v1.0 forged with key B, worker verifies A")
    with lab(bootstrap) as running, tempfile.TemporaryDirectory() as keys:
        s, t = running.settings, running.settings.topics
        (a_private, a_public), (b_private, _) = (
            ed25519_pair(Path(keys), "a"),
            ed25519_pair(Path(keys), "b"),
        )
        signed = s.with_(topics=Topics().with_prefix(f"s{uuid.uuid4().hex[:8]}."))
        create_topics(signed, partitions=3)
        signer = RecordSigning(signer=load_signing_key(a_private))
        publish_demo_contracts(signed.with_(signing=signer), out=io.StringIO())
        v1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
        forged = Published(v1, "observing", "active", None, (), datetime.now(timezone.utc), "m")
        mallory = signed.with_(signing=RecordSigning(signer=load_signing_key(b_private)))
        write_records(mallory, (forged,), documents=frozenset({v1.key}))
        worker = running.start_worker(
            "verifying", "--contracts-topic", signed.topics.contracts, "--verify-key", a_public
        )
        atlantis = next(
            e for e in demo_events(datetime.now(timezone.utc)) if e.label == "ab-unknown-continent"
        )
        placed = [
            produce_one(s, t.batches, atlantis.key, atlantis.value),
            produce_one(s, t.batches, "nyc_boroughs", nyc_event("good")),
        ]
        got, row.decide_s = wait_decided(running, placed, 90)
        row.peak_rss_mib = running.peak_rss_mib()
        row.stayed_up = worker.alive()
        _judge(row, placed, got)
        reasons = _quarantine_reasons(s)
        closed = reasons.get(placed[0]) == "contract_history_broken"
        refused = "rejected (bad_signature)" in worker.log.read_text(errors="replace")
        row.ok = (
            row.lost == 0
            and row.stayed_up
            and closed
            and refused
            and placed[1] not in reasons
            and row.peak_rss_mib < RSS_CEILING_MIB
        )
        row.note = (
            "bad_signature refused; Atlantis quarantined contract_history_broken"
            if closed and refused
            else f"refused in log: {refused}; Atlantis: {reasons.get(placed[0], 'admitted')}"
        )
    return row
