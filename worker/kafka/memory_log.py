"""The storage of the in-memory broker (:mod:`worker.kafka.memory`): partition logs,
committed offsets, transactions, and the records consumers get (:class:`MemoryMessage`).

Records of a transaction take offsets when produced; its commit or abort marks them and
writes one control marker per partition it wrote (never delivered, as on a real broker).
Failures are raised as confluent-kafka raises them: ``KafkaException(KafkaError(...))``.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from confluent_kafka import TIMESTAMP_CREATE_TIME, KafkaError, KafkaException

from worker.kafka.protocols import Headers

__all__ = [
    "ABORTED",
    "COMMITTED",
    "MARKER",
    "OPEN",
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
        """A record as a consumer gets it, built directly; a str key is UTF-8 encoded."""
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

    # -- used by the clients of worker.kafka.memory --------------------------------------
    def trip(self, call: str, detail: str = "") -> None:
        """Called by a client before each call a fault can be armed for: nothing here;
        :class:`worker.kafka.memory.MemoryBroker` journals it and raises an armed fault."""

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
