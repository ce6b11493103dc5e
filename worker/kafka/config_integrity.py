"""Has the config topic lost what the worker read from it?

A broker that comes back empty (the dev broker restarted with in-memory storage, a cluster
restored without ``gis.contracts``) leaves a worker that enforces versions the broker no
longer has, and whose next transaction fails. :func:`lost_reason` compares what the
follower read (the next offset per partition) with what the broker now holds: the topic
gone, fewer partitions, or a partition whose high watermark is below the offset already
read (the topic was recreated, or its offsets reset). A broker that does not answer is not
a loss (:class:`worker.kafka.health.BrokerHealth` covers that): the answer is then None.

The topic's metadata is asked of a client that is not long-polling (the worker's
producer): a broker answers the requests of one connection in order, so a metadata
request on the follower's own connection waited behind its fetch at the end of the topic,
up to ``fetch.wait.max.ms`` (librdkafka's 500 ms; 462 ms median on the embedded broker,
0.8 ms through the producer). The check runs on the worker's loop every
``config_check_interval_s``, so that wait was the loop's (3% of it on one-feature events).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from worker.core.errors import BrokerError
from worker.kafka.clients import UNKNOWN_TOPIC_OR_PART, map_kafka_errors
from worker.kafka.protocols import ConsumerLike, TopicPartition

__all__ = ["TopicLister", "lost_reason"]

log = logging.getLogger(__name__)


class TopicLister(Protocol):
    """A client that answers metadata requests (a producer, a consumer, an admin client)."""

    def list_topics(self, topic: str | None = ..., timeout: float = ...) -> Any: ...


def lost_reason(
    consumer: ConsumerLike,
    topic: str,
    read_up_to: Mapping[int, int],
    timeout_s: float = 1.0,
    metadata: TopicLister | None = None,
) -> str | None:
    """Why ``topic`` no longer holds what was read from it, or None when it still does (or
    when the broker does not answer within ``timeout_s`` seconds).

    Parameters
    ----------
    consumer : ConsumerLike
        The follower's reader: the high watermarks of its last fetches are used (cached,
        no request), and its metadata unless ``metadata`` is given.
    topic : str
        The config topic.
    read_up_to : mapping
        Partition -> the next offset after the last record (or partition end) read.
    timeout_s : float
        Longest wait for the metadata, seconds.
    metadata : TopicLister, optional
        The client asked for the topic's metadata (default: ``consumer``); one whose
        connection is not held by a long-poll fetch answers at once.
    """
    try:
        with map_kafka_errors():
            meta = (metadata or consumer).list_topics(topic, timeout=timeout_s)
    except BrokerError as exc:
        log.debug("config topic check skipped: %s", exc)
        return None
    tmeta = meta.topics.get(topic)
    error = getattr(tmeta, "error", None)
    if tmeta is None or (error is not None and error.code() == UNKNOWN_TOPIC_OR_PART):
        return f"config topic {topic} no longer exists on the broker"
    if error is not None:
        return None  # e.g. a leader election: asked again next time
    missing = sorted(set(read_up_to) - set(tmeta.partitions))
    if missing:
        return f"config topic {topic} lost partitions {missing} (recreated with fewer)"
    for partition, offset in sorted(read_up_to.items()):
        # the high watermark of the reader's last Fetch response, not ListOffsets': Tansu
        # answers ListOffsets with a watermark too low after a multi-record produce batch
        # (50 records in one batch: 1), which would read as a loss here
        try:
            with map_kafka_errors():
                _, high = consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), cached=True
                )
        except BrokerError as exc:
            log.debug("config topic check skipped: %s", exc)
            return None
        if high is not None and 0 <= high < offset:
            return (
                f"config topic {topic}[{partition}] ends at offset {high}, below the {offset} "
                "already read: the topic was recreated or its log lost (a broker restarted "
                "empty?)"
            )
    return None
