"""An in-memory Kafka broker: partitions, offsets, consumer groups and transactions.

For unit tests and offline runs of code typed against :mod:`worker.kafka.protocols`
(arroyo's ``backends/local`` and quix-streams' message stubs are the model). One process,
one consumer per group (it is assigned every partition of what it subscribes to), no
rebalancing, no retention. What it keeps of Kafka's semantics:

- offsets are per partition, from 0; a transaction's records take offsets when produced,
  and its commit or abort writes a control marker that takes one offset more and is never
  delivered (as on a real broker, so offsets have gaps after transactions);
- a ``read_committed`` consumer (the default, as the gate's) stops at the first record of
  an open transaction and skips aborted records; ``read_uncommitted`` sees them all;
- offsets sent to a transaction (``send_offsets_to_transaction``) become the group's
  committed offsets when the transaction commits, never on abort;
- a second ``init_transactions`` with the same ``transactional.id`` aborts the first
  producer's open transaction and fences it (its next call raises ``_FENCED``);
- a producer made with ``max_message_bytes`` refuses a larger record at ``produce`` with
  ``MSG_SIZE_TOO_LARGE``, as librdkafka does against ``message.max.bytes``.

Failure branches a real broker rarely produces on demand are armed by the test:
``broker.fail_next("commit_transaction", BrokerFault.ABORTABLE)`` makes the next commit
raise what librdkafka raises for an abortable error (:class:`BrokerFault`: ``ABORTABLE``,
``RETRIABLE``, ``FENCED``, ``STATE``, ``TOO_LARGE``; calls: :data:`FAULTABLE`), and
:attr:`MemoryBroker.calls` lists the client calls made, in order.

Consumers are :class:`worker.kafka.memory_consumer.MemoryConsumer`. Failures are raised
as confluent-kafka raises them (``KafkaException`` carrying a ``KafkaError``), so
:func:`worker.kafka.clients.map_kafka_errors` maps them the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import KafkaError

from worker.kafka.memory_consumer import MemoryConsumer
from worker.kafka.memory_log import (
    FAULTABLE,
    BrokerFault,
    MemoryLog,
    MemoryMessage,
    Txn,
    fail,
)
from worker.kafka.protocols import Headers, TopicPartition

__all__ = ["FAULTABLE", "BrokerFault", "MemoryBroker", "MemoryMessage", "MemoryProducer"]


class MemoryBroker(MemoryLog):
    """An in-memory broker handing out consumers and producers (see the module's notes).

    Parameters
    ----------
    clock_ms : callable, optional
        Wall-clock milliseconds stamped on produced records (default: a counter from 1).
    """

    def __init__(self, clock_ms: Callable[[], int] | None = None) -> None:
        super().__init__(clock_ms)
        self._owners: dict[str, MemoryProducer] = {}  # transactional.id -> current producer

    def consumer(
        self, group_id: str, *, read_committed: bool = True, partition_eof: bool = False
    ) -> MemoryConsumer:
        """A consumer of group ``group_id``; ``partition_eof`` reports each end reached."""
        return MemoryConsumer(self, group_id, read_committed, partition_eof)

    def producer(
        self, transactional_id: str | None = None, *, max_message_bytes: int | None = None
    ) -> MemoryProducer:
        """A producer; with ``transactional_id`` it must ``init_transactions`` first; with
        ``max_message_bytes`` it refuses a record whose key and value hold more bytes."""
        return MemoryProducer(self, transactional_id, max_message_bytes)

    def _fence(self, transactional_id: str, producer: MemoryProducer) -> None:
        with self.lock:
            old = self._owners.get(transactional_id)
            if old is not None and old is not producer:
                old._fenced = True
                if old._txn is not None:
                    self.end(old._txn, commit=False)
                    old._txn = None
            self._owners[transactional_id] = producer


class MemoryProducer:
    """A producer of a :class:`MemoryBroker` (:class:`~worker.kafka.protocols.
    TransactionalProducerLike`); without a ``transactional_id`` every record is committed
    when produced. Delivery callbacks run in ``poll``, ``flush`` and at a transaction's end.
    """

    def __init__(
        self, broker: MemoryBroker, transactional_id: str | None, max_message_bytes: int | None
    ) -> None:
        self._broker = broker
        self.transactional_id = transactional_id
        self._max_bytes = max_message_bytes
        self._txn: Txn | None = None
        self._ready = transactional_id is None
        self._fenced = False
        self._reports: list[tuple[Callable[[Any, Any], None], MemoryMessage]] = []

    def _check(self, *, in_txn: bool | None = None) -> None:
        if self._fenced:
            raise fail(KafkaError._FENCED, "fenced by a newer producer with the same "
                        f"transactional.id {self.transactional_id}", fatal=True)  # fmt: skip
        if in_txn is not None and not self._ready:
            raise fail(KafkaError._STATE, "init_transactions() was not called")
        if in_txn is not None and (self._txn is not None) != in_txn:
            state = "no transaction is open" if in_txn else "a transaction is already open"
            raise fail(KafkaError._STATE, state)

    def produce(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        headers: Headers | None = None,
        on_delivery: Callable[[Any, Any], None] | None = None,
        *,
        partition: int | None = None,
    ) -> None:
        self._broker.trip("produce", topic)
        self._check(in_txn=True if self.transactional_id else None)
        size = len(key or b"") + len(value or b"")
        if self._max_bytes is not None and size > self._max_bytes:
            raise fail(KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large")
        msg = self._broker.append(topic, partition, key, value, headers, self._txn)
        if on_delivery is not None:
            self._reports.append((on_delivery, msg))

    def poll(self, timeout: float = -1) -> int:
        reports, self._reports = self._reports, []
        for callback, msg in reports:
            callback(None, msg)
        return len(reports)

    def flush(self, timeout: float = -1) -> int:
        self.poll(0)
        return 0

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        return self._broker.metadata(topic)

    def init_transactions(self, timeout: float = -1) -> None:
        self._broker.trip("init_transactions")
        if self.transactional_id is None:
            raise fail(KafkaError._NOT_CONFIGURED, "no transactional.id")
        self._check()
        self._broker._fence(self.transactional_id, self)
        self._ready = True

    def begin_transaction(self) -> None:
        self._broker.trip("begin_transaction")
        self._check(in_txn=False)
        self._txn = self._broker.new_txn()

    def send_offsets_to_transaction(
        self, positions: Sequence[TopicPartition], group_metadata: Any, timeout: float = -1
    ) -> None:
        self._broker.trip("send_offsets_to_transaction")
        self._check(in_txn=True)
        assert self._txn is not None
        self._txn.group = group_metadata.group_id
        self._txn.offsets.update({(tp.topic, tp.partition): tp.offset for tp in positions})

    def commit_transaction(self, timeout: float = -1) -> None:
        self._broker.trip("commit_transaction")
        self._end(commit=True)

    def abort_transaction(self, timeout: float = -1) -> None:
        self._broker.trip("abort_transaction")
        self._end(commit=False)

    def _end(self, *, commit: bool) -> None:
        self._check(in_txn=True)
        assert self._txn is not None
        self.poll(0)
        self._broker.end(self._txn, commit)
        self._txn = None
