"""Which consumers read which major: declarations plus the Kafka admin API (DESIGN.md 5, 7).

:func:`migration_view` counts declared and unattributed consumers per layer and major
version (:mod:`worker.core.migration`, pure) from the consumers topic and the admin API
(this module is the thin adapter).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

from worker.core.errors import ContractGateError, KafkaError
from worker.core.migration import (
    Declaration,
    MigrationView,
    build_view,
)
from worker.core.registry import Registry
from worker.io.codec import decode_consumer_declaration
from worker.kafka.client import read_topic
from worker.kafka.settings import Settings

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_STALE_AFTER", "consumer_groups", "migration_view", "read_declarations"]

#: Declarations whose group is gone and that are older than this are shown as stale.
DEFAULT_STALE_AFTER = timedelta(days=7)


# -- reading topics -------------------------------------------------------------------------


def read_declarations(settings: Settings, timeout_s: float = 30.0) -> list[Declaration]:
    """The latest declaration per ``consumer/layer`` key (tombstones remove the key)."""
    latest: dict[str, Declaration] = {}
    for msg in read_topic(settings, settings.topics.consumers, timeout_s=timeout_s):
        key = (msg.key() or b"").decode("utf-8", "replace")
        if msg.value() is None:
            latest.pop(key, None)
            continue
        try:
            rec = decode_consumer_declaration(msg.value())
        except ContractGateError as exc:
            log.warning("consumer declaration %s ignored: %s", key, exc)
            continue
        latest[key] = Declaration(
            rec["consumer"], rec["layer"], rec["version"], _aware(rec["declared_at"])
        )
    return list(latest.values())


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def consumer_groups(settings: Settings, timeout_s: float = 10.0) -> tuple[set[str], set[str]]:
    """``(existing, reading)``: every group the broker lists, and the groups among them with
    committed offsets on the admitted topic (Kafka admin API).

    Raises
    ------
    KafkaError
        When the broker does not answer the admin requests.
    """
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admitted = settings.topics.admitted
    admin = AdminClient(settings.base())
    try:
        listed = admin.list_consumer_groups(request_timeout=timeout_s).result()
        existing = {g.group_id for g in listed.valid}
        reading: set[str] = set()
        for group in sorted(existing):
            futures = admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group)], request_timeout=timeout_s
            )
            for fut in futures.values():
                result = fut.result()
                if any(
                    tp.topic == admitted and tp.offset >= 0 for tp in result.topic_partitions or []
                ):
                    reading.add(group)
    except Exception as exc:
        raise KafkaError(f"cannot list consumer groups and their offsets: {exc}") from exc
    return existing, reading


def migration_view(
    settings: Settings,
    *,
    registry: Registry | None = None,
    stale_after: timedelta = DEFAULT_STALE_AFTER,
    now: datetime | None = None,
) -> MigrationView:
    """Declared, unattributed and stale consumers per layer and major version.

    The gate's own groups (``settings.group_id`` and its ``-reader-`` prefix) are never
    consumers.
    """
    from worker.kafka.publish import read_registry

    registry = registry if registry is not None else read_registry(settings)
    active = {
        layer: [v.contract.version for v in registry.active(layer)] for layer in registry.layers()
    }
    existing, reading = consumer_groups(settings)
    return build_view(
        active,
        read_declarations(settings),
        reading,
        existing,
        now=now or datetime.now(timezone.utc),
        stale_after=stale_after,
        excluded=[settings.group_id],
        excluded_prefixes=[f"{settings.group_id}-reader-"],
    )


def _watermarks(settings: Settings, topic: str) -> dict[int, tuple[int, int]]:
    """``{partition: (low, high)}`` of ``topic`` (ListOffsets: only a starting point for a
    read that still ends on partition EOF, DESIGN.md section 8).

    Raises
    ------
    KafkaError
        The topic does not exist or the broker does not answer.
    """
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer(settings.reader())
    try:
        meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            raise KafkaError(
                f"topic {topic} does not exist; create it with `contract-gate topics create`"
            )
        marks: dict[int, tuple[int, int]] = {}
        for p in sorted(meta.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            marks[p] = (int(low), int(high))
        return marks
    except KafkaException as exc:
        raise KafkaError(f"reading {topic} failed: {exc.args[0].str()}") from exc
    finally:
        consumer.close()
