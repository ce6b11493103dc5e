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
from dataclasses import dataclass
from enum import Enum
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from worker.kafka.memory_consumer import MemoryConsumer
from worker.kafka.memory_log import (
    MemoryLog,
    MemoryMessage,
    Txn,
    fail,
)
from worker.kafka.protocols import Headers, TopicPartition

__all__ = ["FAULTABLE", "BrokerFault", "MemoryBroker", "MemoryMessage", "MemoryProducer"]


class BrokerFault(Enum):
    """A failure the memory broker's clients raise on demand (:meth:`MemoryBroker.fail_next`):
    ``KafkaException`` wrapping the ``KafkaError`` (code and flags) librdkafka gives it."""

    #: a transactional call failed; the transaction must be aborted (``txn_requires_abort``)
    ABORTABLE = (KafkaError._TIMED_OUT, "txn_requires_abort")
    #: a call timed out and may be called again (``retriable``: commit_transaction's contract)
    RETRIABLE = (KafkaError._TIMED_OUT, "retriable")
    #: a newer producer with the same ``transactional.id`` took over (``fatal``)
    FENCED = (KafkaError._FENCED, "fatal")
    #: the call is not valid in the client's state (e.g. a seek on a partition not assigned)
    STATE = (KafkaError._STATE, "")
    #: the record is larger than ``message.max.bytes`` (refused at ``produce``)
    TOO_LARGE = (KafkaError.MSG_SIZE_TOO_LARGE, "")

    def exception(self, call: str) -> KafkaException:
        """The exception ``call`` raises for this fault."""
        code, flag = self.value
        flags = {flag: True} if flag else {}
        return KafkaException(KafkaError(code, f"{call}: {self.name.lower()} (injected)", **flags))


#: The client calls a fault can be armed for (:meth:`MemoryBroker.fail_next`).
FAULTABLE = frozenset({"init_transactions", "begin_transaction", "produce",
                       "send_offsets_to_transaction", "commit_transaction",
                       "abort_transaction", "seek"})  # fmt: skip


#: Most calls :attr:`MemoryBroker.calls` keeps (the latest), so a long run stays bounded.
MAX_CALLS = 10_000


@dataclass
class _Armed:
    fault: BrokerFault
    after: int  # calls that pass first
    times: int | None  # calls that fail then (None: every one)


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
        self._armed: dict[str, list[_Armed]] = {}
        #: every :data:`FAULTABLE` call of a client, in order, as attempted (those that
        #: raised too): ``"produce out"``, ``"commit_transaction"``, ``"seek in[0]@7"``
        self.calls: list[str] = []

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

    def fail_next(
        self, call: str, fault: BrokerFault, *, times: int | None = 1, after: int = 0
    ) -> None:
        """Arm ``fault`` for the client call named ``call`` (one of :data:`FAULTABLE`, on
        any client of this broker): after ``after`` calls that pass, the next ``times``
        calls (None: every one) raise it before doing anything. Faults armed for the same
        call fire in the order armed.

        Raises
        ------
        ValueError
            ``call`` is not one of :data:`FAULTABLE`, ``times`` below 1, ``after`` below 0.
        """
        if call not in FAULTABLE:
            raise ValueError(f"no fault can be armed for {call!r}: one of {sorted(FAULTABLE)}")
        if (times is not None and times < 1) or after < 0:
            raise ValueError(
                f"times must be 1 or more (or None), after 0 or more: {times}, {after}"
            )
        with self.lock:
            self._armed.setdefault(call, []).append(_Armed(fault, after, times))

    def trip(self, call: str, detail: str = "") -> None:
        """Record ``call`` in :attr:`calls`; raise the fault armed for it, if one fires."""
        with self.lock:
            self.calls.append(f"{call} {detail}".rstrip())
            del self.calls[:-MAX_CALLS]  # bounded: the latest calls are kept
            queue = self._armed.get(call)
            if not queue:
                return
            armed = queue[0]
            if armed.after > 0:
                armed.after -= 1
                return
            if armed.times is not None:
                armed.times -= 1
                if armed.times == 0:
                    queue.pop(0)
        raise armed.fault.exception(call)

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
