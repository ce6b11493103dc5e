"""The storage of the in-memory broker (:mod:`worker.kafka.memory`): partition logs,
committed offsets, transactions, and the records consumers get (:class:`MemoryMessage`).

Records of a transaction take offsets when produced; its commit or abort marks them and
writes one control marker per partition it wrote (never delivered, as on a real broker).
Failures are raised as confluent-kafka raises them: ``KafkaException(KafkaError(...))``,
including those a test arms for the next client calls (:meth:`MemoryLog.fail_next`, one of
the :class:`BrokerFault` kinds), so the adapter's error mapping
(:func:`worker.kafka.clients.map_kafka_errors`) runs on them as on the real client's.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from types import SimpleNamespace
from typing import Any

from confluent_kafka import TIMESTAMP_CREATE_TIME, KafkaError, KafkaException

from worker.kafka.protocols import Headers

__all__ = [
    "ABORTED",
    "COMMITTED",
    "FAULTABLE",
    "MARKER",
    "OPEN",
    "BrokerFault",
    "MemoryLog",
    "MemoryMessage",
    "Stored",
    "Txn",
    "fail",
]

#: States of a stored record: data visible to every reader, or part of a transaction.
COMMITTED, OPEN, ABORTED, MARKER = "committed", "open", "aborted", "marker"


def fail(code: int, text: str, *, fatal: bool = False) -> KafkaException:
    """The exception confluent-kafka raises for ``code`` (a ``KafkaError`` constant)."""
    return KafkaException(KafkaError(code, text, fatal=fatal))


class BrokerFault(Enum):
    """A failure the memory broker's clients raise on demand (:meth:`MemoryLog.fail_next`):
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


#: The client calls a fault can be armed for (:meth:`MemoryLog.fail_next`).
FAULTABLE = frozenset(
    {
        "init_transactions",
        "begin_transaction",
        "produce",
        "send_offsets_to_transaction",
        "commit_transaction",
        "abort_transaction",
        "seek",
    }
)


@dataclass
class _Armed:
    fault: BrokerFault
    after: int  # calls that pass first
    times: int | None  # calls that fail then (None: every one)


@dataclass(frozen=True)
class MemoryMessage:
    """One record as a consumer gets it (:class:`~worker.kafka.protocols.MessageLike`)."""

    _topic: str
    _partition: int
    _offset: int
    _key: bytes | None = None
    _value: bytes | None = None
    _headers: Headers | None = None
    _timestamp_ms: int = 0
    _error: Any = None

    @classmethod
    def of(
        cls,
        topic: str = "t",
        partition: int = 0,
        offset: int = 0,
        *,
        key: str | bytes | None = None,
        value: bytes | None = None,
        headers: Headers | None = None,
    ) -> MemoryMessage:
        """A record as a consumer gets it, built directly (for code that takes one record:
        the config topic's ``apply``, offsets of a poll batch); a str key is UTF-8 encoded."""
        key = key.encode() if isinstance(key, str) else key
        return cls(topic, partition, offset, key, value, list(headers or []))

    def topic(self) -> str | None:
        return self._topic

    def partition(self) -> int | None:
        return self._partition

    def offset(self) -> int | None:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> Headers | None:
        return self._headers

    def timestamp(self) -> tuple[int, int]:
        return (TIMESTAMP_CREATE_TIME, self._timestamp_ms)

    def error(self) -> Any:
        return self._error


@dataclass
class Stored:
    """One record of a partition log, with its state (``COMMITTED`` ... ``MARKER``)."""

    message: MemoryMessage
    state: str
    txn: int = 0  # the transaction it belongs to (0: none)


@dataclass
class Txn:
    """An open transaction: its records, and the offsets sent to it for ``group``."""

    number: int
    records: list[Stored] = field(default_factory=list)
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    group: str | None = None


class MemoryLog:
    """The storage of :class:`~worker.kafka.memory.MemoryBroker`: topics of partitions,
    committed offsets per group, transactions; thread-safe.

    Parameters
    ----------
    clock_ms : callable, optional
        Wall-clock milliseconds stamped on produced records (default: a counter from 1).
    """

    def __init__(self, clock_ms: Callable[[], int] | None = None) -> None:
        self.lock = threading.RLock()
        self._logs: dict[str, list[list[Stored]]] = {}
        self._committed: dict[str, dict[tuple[str, int], int]] = {}
        self._ticks = 0
        self._clock_ms = clock_ms
        self._txns = 0
        self._armed: dict[str, list[_Armed]] = {}
        #: every call of :data:`FAULTABLE` made by a client, in order, as attempted (those
        #: that raised included): ``"produce out"``, ``"commit_transaction"``, ``"seek in[0]@7"``
        self.calls: list[str] = []

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create ``name`` with ``partitions`` empty partitions (an existing one is kept)."""
        with self.lock:
            self._logs.setdefault(name, [[] for _ in range(partitions)])

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        """``{(topic, partition): next offset}`` committed by ``group_id``."""
        with self.lock:
            return dict(self._committed.get(group_id, {}))

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """``(low, high)``: 0 and the offset the next record of the partition will take."""
        return (0, len(self.log(topic, partition)))

    def metadata(self, topic: str | None = None) -> Any:
        """Cluster metadata shaped as confluent-kafka's (``.topics[name].partitions``)."""
        with self.lock:
            names = [topic] if topic is not None else sorted(self._logs)
            topics = {}
            for name in names:
                parts = self._logs.get(name)
                topics[name] = SimpleNamespace(
                    topic=name,
                    partitions={p: SimpleNamespace(id=p) for p in range(len(parts or []))},
                    error=None
                    if parts is not None
                    else KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, f"unknown topic {name}"),
                )
            return SimpleNamespace(topics=topics, brokers={0: "memory"})

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

    # -- used by the clients of worker.kafka.memory --------------------------------------
    def trip(self, call: str, detail: str = "") -> None:
        """Record ``call`` in :attr:`calls`; raise the fault armed for it, if one fires."""
        with self.lock:
            self.calls.append(f"{call} {detail}".rstrip())
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

    def log(self, topic: str, partition: int) -> list[Stored]:
        """The stored records of one partition (raises ``_UNKNOWN_PARTITION``)."""
        parts = self._logs.get(topic)
        if parts is None or not 0 <= partition < len(parts):
            raise fail(KafkaError._UNKNOWN_PARTITION, f"unknown partition {topic}[{partition}]")
        return parts[partition]

    def append(
        self,
        topic: str,
        partition: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: Headers | None,
        txn: Txn | None,
    ) -> MemoryMessage:
        """Store one record (in ``txn`` when given, else committed) and return it; with no
        ``partition``, the key's CRC-32 chooses it (partition 0 for no key). Text keys and
        values are stored UTF-8 encoded, as confluent-kafka's producer takes them."""
        key = key.encode() if isinstance(key, str) else key
        value = value.encode() if isinstance(value, str) else value
        with self.lock:
            parts = self._logs.get(topic)
            if parts is None:
                raise fail(KafkaError._UNKNOWN_TOPIC, f"unknown topic {topic}")
            if partition is None:
                partition = zlib.crc32(key) % len(parts) if key is not None else 0
            log = self.log(topic, partition)
            self._ticks += 1
            stamp = self._clock_ms() if self._clock_ms else self._ticks
            msg = MemoryMessage(topic, partition, len(log), key, value, headers, stamp)
            log.append(Stored(msg, OPEN if txn else COMMITTED, txn.number if txn else 0))
            if txn is not None:
                txn.records.append(log[-1])
            return msg

    def new_txn(self, group: str | None = None) -> Txn:
        """A new open transaction (numbered from 1)."""
        with self.lock:
            self._txns += 1
            return Txn(self._txns, group=group)

    def end(self, txn: Txn, commit: bool) -> None:
        """Commit or abort ``txn``: its records' state, one marker per partition it wrote,
        and (on commit) its offsets as its group's committed offsets."""
        with self.lock:
            for stored in txn.records:
                stored.state = COMMITTED if commit else ABORTED
            for topic, p in sorted({(s.message._topic, s.message._partition) for s in txn.records}):
                log = self.log(topic, p)
                log.append(Stored(MemoryMessage(topic, p, len(log)), MARKER))
            if commit and txn.group is not None:
                self._committed.setdefault(txn.group, {}).update(txn.offsets)
