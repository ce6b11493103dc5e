"""State the loop shares with the consumer's callbacks and the HTTP server: the assigned
partitions (:class:`Assignment`), the loop's last sign of life (:class:`Liveness`), and the
consumer lag (:func:`partition_lag`)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from worker.core.errors import BrokerError
from worker.kafka.clients import map_kafka_errors
from worker.kafka.protocols import TopicPartition

__all__ = ["Assignment", "Liveness", "partition_lag"]

log = logging.getLogger(__name__)


class Assignment:
    """The input partitions assigned to this member, kept by the rebalance callbacks
    (which only set these flags)."""

    def __init__(self) -> None:
        # replaced, never mutated: the HTTP thread may read it while the loop reassigns
        self.assigned: frozenset[tuple[str, int]] = frozenset()
        #: partitions revoked during the current poll batch (:meth:`take_revoked`)
        self._revoked: set[tuple[str, int]] = set()

    def on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        """``on_assign`` of the consumer."""
        self.assigned = self.assigned | {(p.topic, p.partition) for p in partitions}
        log.info("assigned %s", sorted(self.assigned))

    def on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        """``on_revoke`` of the consumer."""
        revoked = {(p.topic, p.partition) for p in partitions}
        self.assigned = self.assigned - revoked
        self._revoked |= revoked
        log.info("revoked %s", sorted(revoked))

    def take_revoked(self) -> frozenset[tuple[str, int]]:
        """The partitions revoked since the last call (:func:`worker.gate.poll.poll_batch`
        drops the records of a revoked partition that it consumed before the rebalance)."""
        revoked, self._revoked = frozenset(self._revoked), set()
        return revoked


class Liveness:
    """The loop's last sign of life (``time.monotonic()``, read by ``/healthz``) and the
    event it stops on."""

    def __init__(self) -> None:
        self.last_monotonic = time.monotonic()
        self.stop: threading.Event | None = None

    def beat(self) -> None:
        """The loop is alive (an event was decided, or a poll batch is being waited for)."""
        self.last_monotonic = time.monotonic()

    def keep_waiting(self) -> bool:
        """While a poll batch waits for events: alive, and False once asked to stop."""
        self.beat()
        return self.stop is None or not self.stop.is_set()


def partition_lag(consumer: Any, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """Lag per partition: high watermark minus the consumer's position (next offset).

    Both figures are local to the client, no broker round trip: the position, and
    ``get_watermark_offsets(cached=True)``, whose high watermark librdkafka updates from
    every Fetch response. Partitions without a known watermark or position (nothing
    fetched yet) are left out. A watermark from ListOffsets (``cached=False``) can be too
    low on Tansu after multi-record produce batches, so lag computed from it would be
    unreliable there; the Fetch-fed cached value is what is used here.
    """
    lag: dict[tuple[str, int], int] = {}
    try:
        with map_kafka_errors():
            positions = consumer.position([TopicPartition(t, p) for t, p in partitions])
            for tp in positions:
                if tp.offset < 0:
                    continue
                _, high = consumer.get_watermark_offsets(tp, cached=True)
                if high is not None and high >= 0:
                    lag[(tp.topic, tp.partition)] = max(0, high - tp.offset)
    except BrokerError as exc:  # e.g. a partition revoked meanwhile: next refresh
        log.debug("consumer lag not refreshed: %s", exc)
    return lag
