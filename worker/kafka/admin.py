"""The thin confluent-kafka adapter: topic creation, one-record produce, group-less reads
(the offsets of a topic and of every consumer group: :mod:`worker.kafka.offsets`).

Clients are built by :mod:`worker.kafka.clients`; errors of confluent-kafka are
translated to :class:`worker.core.errors.BrokerError` at this boundary
(:func:`~worker.kafka.clients.map_kafka_errors`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from worker.core.errors import BrokerError
from worker.kafka.clients import (
    OFFSET_BEGINNING,
    PARTITION_EOF,
    TOPIC_ALREADY_EXISTS,
    UNKNOWN_TOPIC_OR_PART,
    broker_error,
    make_admin,
    make_consumer,
    make_producer,
    map_kafka_errors,
)
from worker.kafka.protocols import TopicPartition
from worker.kafka.settings import MAX_MESSAGE_BYTES, Settings
from worker.kafka.topic_checks import NOT_COMPACTED, TOMBSTONES_DROPPED, compaction_problem

__all__ = [
    "NOT_COMPACTED",
    "READ_TO_END_FETCH_WAIT_MS",
    "TOMBSTONES_DROPPED",
    "create_topics",
    "produce_one",
    "read_topic",
]


def create_topics(
    settings: Settings,
    *,
    partitions: int = 3,
    replication_factor: int = 1,
    timeout_s: float = 30,
    names: Sequence[str] | None = None,
) -> dict[str, str]:
    """Create the six topics of docs/design.md section 6; existing topics are left alone.

    The config (``gis.contracts``) and consumers topics are compacted, the config topic
    keeping its tombstones (:data:`CONFIG_TOMBSTONE_RETENTION_MS`); every topic accepts
    records up to :data:`MAX_MESSAGE_BYTES`. Returns ``{topic: "created" | "exists"}``.
    ``names`` given: create those data topics instead (``partitions`` each, not
    compacted), e.g. the per-major admitted topics of :mod:`worker.control.read_paths`.

    Raises
    ------
    BrokerError
        When the broker refuses a topic for another reason than that it exists.
    """
    from confluent_kafka.admin import NewTopic

    t = settings.topics
    big = {"max.message.bytes": str(MAX_MESSAGE_BYTES + 1024 * 1024)}
    compacted = {**big, "cleanup.policy": "compact"}
    keeps_tombstones = {**compacted, "delete.retention.ms": str(CONFIG_TOMBSTONE_RETENTION_MS)}
    specs = {
        t.batches: (partitions, big),
        t.admitted: (partitions, big),
        t.quarantine: (partitions, big),
        t.evaluations: (partitions, big),
        t.contracts: (1, keeps_tombstones),
        t.consumers: (1, compacted),
    }
    if names is not None:
        specs = {name: (partitions, big) for name in names}
    admin = make_admin(settings)
    with map_kafka_errors(
        f"cannot reach Kafka at {settings.bootstrap_servers}",
        hint="check --bootstrap-servers / KAFKA_BOOTSTRAP_SERVERS",
    ):
        admin.list_topics(timeout=min(10.0, timeout_s))
    with map_kafka_errors():
        futures = admin.create_topics(
            [NewTopic(name, n, replication_factor, config=cfg) for name, (n, cfg) in specs.items()],
            request_timeout=timeout_s,
        )
    outcome: dict[str, str] = {}
    for name, fut in futures.items():
        try:
            with map_kafka_errors(f"cannot create topic {name}"):
                fut.result()
            outcome[name] = "created"
        except BrokerError as exc:
            if exc.code != TOPIC_ALREADY_EXISTS:
                raise
            outcome[name] = "exists"
    for name, (_, cfg) in specs.items():
        if outcome[name] == "exists" and cfg.get("cleanup.policy") == "compact":
            outcome[name] += compaction_problem(admin, name, cfg, timeout_s)
    return outcome


#: ``delete.retention.ms`` of the config topic that :func:`create_topics` creates: 100 years.
#: Kafka's cleaner drops a tombstone once it is older than this (Kafka's default: 24 h), and
#: a dropped tombstone of a layer's newest record leaves no trace of the damaged record it
#: replaced (docs/reliability-history.md, "Limit"). The config topic holds one record per
#: version, so keeping its tombstones costs a few bytes each.
CONFIG_TOMBSTONE_RETENTION_MS = 100 * 365 * 24 * 3600 * 1000

#: ``fetch.wait.max.ms`` of :func:`read_topic`'s reads to the end (librdkafka: 500): an
#: empty partition's EOF came after a whole wait, 0.5 s of a worker's start per topic read.
READ_TO_END_FETCH_WAIT_MS = 50


def produce_one(
    settings: Settings,
    topic: str,
    key: str | None,
    value: bytes | None,
    *,
    headers: list[tuple[str, str | bytes | None]] | None = None,
    partition: int | None = None,
    timeout_s: float = 30,
) -> tuple[int, int]:
    """Produce one record and wait for its delivery; returns ``(partition, offset)``.

    ``partition`` None lets the default partitioner choose (by key hash).

    Raises
    ------
    BrokerError
        When delivery fails or does not complete within ``timeout_s``.
    """
    result: dict[str, Any] = {}

    def on_delivery(err: Any, msg: Any) -> None:  # callback: only records the outcome
        result["err"], result["msg"] = err, msg

    producer = make_producer(settings)
    try:  # a missing topic is said at once, with the fix (the delivery waited timeout_s)
        meta = producer.list_topics(topic, timeout=min(10.0, timeout_s)).topics.get(topic)
    except Exception:  # unreachable: the delivery below says so, naming the setting
        meta = None
    else:
        unknown = meta is not None and meta.error is not None
        if unknown and meta.error.code() == UNKNOWN_TOPIC_OR_PART:
            raise BrokerError(
                f"topic {topic} does not exist; create it with `contract-gate topics create`"
            )
    try:
        extra: dict[str, Any] = {} if partition is None else {"partition": partition}
        producer.produce(
            topic,
            key=key,  # type: ignore[arg-type]  # librdkafka encodes str keys and headers
            value=value,
            headers=headers,  # type: ignore[arg-type]
            on_delivery=on_delivery,
            **extra,
        )
    except Exception as exc:
        raise BrokerError(f"cannot produce to {topic}: {exc}") from exc
    with map_kafka_errors(f"cannot produce to {topic}"):
        remaining = producer.flush(timeout_s)
    if remaining or "msg" not in result:
        raise BrokerError(
            f"record to {topic} not delivered within {timeout_s:.0f} s: is Kafka reachable "
            f"at {settings.bootstrap_servers}? (--bootstrap-servers / KAFKA_BOOTSTRAP_SERVERS)"
        )
    if result["err"] is not None:
        raise broker_error(result["err"], f"record to {topic} refused")
    return int(result["msg"].partition()), int(result["msg"].offset())


def read_topic(
    settings: Settings,
    topic: str,
    *,
    start: Mapping[int, int] | None = None,
    tail: int | None = None,
    timeout_s: float = 30.0,
    follow: bool = False,
    stop: threading.Event | None = None,
) -> Iterator[Any]:
    """Yield the records of ``topic`` with a group-less reader (assign, no commits).

    Every partition is read from its beginning, from ``start[partition]`` when given, or
    from ``tail`` records before its high watermark. Without ``follow`` the iteration
    ends when every partition reached EOF (``enable.partition.eof``: never a ListOffsets
    figure alone, docs/design.md section 8); with it, it goes on until ``stop`` is set or the
    caller stops iterating.

    Raises
    ------
    BrokerError
        The topic does not exist, a read fails, or EOF is not reached on every partition
        within ``timeout_s`` seconds (without ``follow``).
    """
    # a read to the end: the broker answers a fetch at the end of a partition after
    # fetch.wait.max.ms (librdkafka's 500 ms), and that answer is the partition's EOF;
    # a follower keeps the default (fewer idle fetches)
    waits = {} if follow else {"fetch.wait.max.ms": READ_TO_END_FETCH_WAIT_MS}
    consumer = make_consumer(settings, reader=True, **waits)
    try:
        with map_kafka_errors(f"reading {topic} failed"):
            meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
            if meta is None or meta.error is not None or not meta.partitions:
                raise BrokerError(
                    f"topic {topic} does not exist; create it with `contract-gate topics create`"
                )
            assignment = []
            for p in sorted(meta.partitions):
                offset = OFFSET_BEGINNING
                if start is not None and p in start:
                    # within the partition: an offset past its end was out of range, and its
                    # EOF never came (`consumers assert --offset 999999` waited timeout_s)
                    low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                    offset = min(max(start[p], low), high)
                elif tail is not None:
                    low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                    offset = max(low, high - tail)
                assignment.append(TopicPartition(topic, p, offset))
            consumer.assign(assignment)
            at_eof: set[int] = set()
            deadline = time.monotonic() + timeout_s
            while stop is None or not stop.is_set():
                if not follow and len(at_eof) == len(assignment):
                    return
                if not follow and time.monotonic() > deadline:
                    raise BrokerError(
                        f"{topic} not read to its end within {timeout_s:.0f} s "
                        f"({len(at_eof)}/{len(assignment)} partitions at EOF)"
                    )
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                err = msg.error()
                if err is not None:
                    if err.code() == PARTITION_EOF:
                        at_eof.add(int(msg.partition() or 0))
                        continue
                    raise broker_error(err, f"reading {topic} failed")
                at_eof.discard(int(msg.partition() or 0))
                yield msg
    finally:
        consumer.close()
