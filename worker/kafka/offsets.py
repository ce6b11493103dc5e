"""Offsets, read without a group: the watermarks of a topic and the committed offsets of
every consumer group the broker lists (confluent-kafka adapter).

Clients are built by :mod:`worker.kafka.clients`; errors of confluent-kafka are
translated to :class:`worker.core.errors.BrokerError` at this boundary
(:func:`~worker.kafka.clients.map_kafka_errors`).
"""

from __future__ import annotations

from worker.core.errors import BrokerError
from worker.kafka.clients import make_admin, make_consumer, map_kafka_errors
from worker.kafka.protocols import TopicPartition
from worker.kafka.settings import Settings

__all__ = ["group_offsets", "watermarks"]


def watermarks(settings: Settings, topic: str) -> dict[int, tuple[int, int]]:
    """``{partition: (low, high)}`` offsets of ``topic`` (ListOffsets: only a starting
    point for a read that still ends on partition EOF, docs/design.md section 8).

    Raises
    ------
    BrokerError
        The topic does not exist or the broker does not answer.
    """
    consumer = make_consumer(settings, reader=True)
    try:
        with map_kafka_errors(f"reading {topic} failed"):
            meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
            if meta is None or meta.error is not None or not meta.partitions:
                raise BrokerError(
                    f"topic {topic} does not exist; create it with `contract-gate topics create`"
                )
            marks: dict[int, tuple[int, int]] = {}
            for p in sorted(meta.partitions):
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                marks[p] = (int(low), int(high))
            return marks
    finally:
        consumer.close()


def group_offsets(settings: Settings, timeout_s: float) -> dict[str, list[tuple[str, int, int]]]:
    """Every consumer group the broker lists, with its committed offsets (Kafka admin API).

    Returns
    -------
    dict of group id to ``(topic, partition, committed offset)`` triples; an offset below
    0 means nothing is committed there. A group without offsets maps to ``[]``.

    Raises
    ------
    BrokerError
        The broker does not answer the admin requests within ``timeout_s`` seconds each.
    """
    from confluent_kafka import ConsumerGroupTopicPartitions

    admin = make_admin(settings)
    out: dict[str, list[tuple[str, int, int]]] = {}
    try:
        listed = admin.list_consumer_groups(request_timeout=timeout_s).result()
        for group in sorted({g.group_id for g in listed.valid}):
            out[group] = []
            futures = admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group)], request_timeout=timeout_s
            )
            for fut in futures.values():
                result = fut.result()
                out[group] += [
                    (str(tp.topic), int(tp.partition), int(tp.offset))
                    for tp in result.topic_partitions or []
                ]
    except Exception as exc:
        raise BrokerError(f"cannot list consumer groups and their offsets: {exc}") from exc
    return out
