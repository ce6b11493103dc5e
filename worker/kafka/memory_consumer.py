"""The consumer of the in-memory broker (:class:`worker.kafka.memory.MemoryBroker`).

One consumer per group, assigned every partition of what it subscribes to, from the
group's committed offsets (else the earliest); a ``read_committed`` consumer stops at the
first record of an open transaction and skips aborted records (see
:mod:`worker.kafka.memory` for the semantics kept).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError

from worker.kafka.clients import OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID, PARTITION_EOF
from worker.kafka.memory_log import ABORTED, MARKER, OPEN, MemoryLog, MemoryMessage, fail
from worker.kafka.protocols import TopicPartition

__all__ = ["MemoryConsumer"]


@dataclass(frozen=True)
class _GroupMetadata:
    """What ``consumer_group_metadata()`` hands to ``send_offsets_to_transaction``."""

    group_id: str


class MemoryConsumer:
    """A consumer of a :class:`~worker.kafka.memory.MemoryBroker`
    (:class:`~worker.kafka.protocols.ConsumerLike`).

    ``subscribe`` assigns every partition of the topics at the next ``poll``, from the
    group's committed offsets (else the earliest); ``poll`` never blocks: it returns the
    next record, a partition-EOF event, or None.
    """

    def __init__(
        self, broker: MemoryLog, group_id: str, read_committed: bool, partition_eof: bool
    ) -> None:
        self._broker = broker
        self.group_id = group_id
        self._read_committed = read_committed
        self._partition_eof = partition_eof
        self._positions: dict[tuple[str, int], int] = {}
        self._eof_sent: set[tuple[str, int]] = set()
        self._subscribed: list[str] = []
        self._on_assign: Callable[..., None] | None = None
        self._rebalance_due = False
        self._closed = False

    def _check(self) -> None:
        if self._closed:
            raise RuntimeError("Consumer closed")

    def _resolve(self, tp: TopicPartition) -> int:
        low, high = self._broker.watermarks(tp.topic, tp.partition)
        if tp.offset >= 0:
            return min(tp.offset, high)
        if tp.offset == OFFSET_END:
            return high
        if tp.offset == OFFSET_BEGINNING:
            return low
        return self._broker.committed(self.group_id).get((tp.topic, tp.partition), low)

    def subscribe(
        self,
        topics: list[str],
        on_assign: Callable[..., None] | None = None,
        on_revoke: Callable[..., None] | None = None,
        on_lost: Callable[..., None] | None = None,
    ) -> None:
        self._check()
        self._subscribed, self._on_assign, self._rebalance_due = list(topics), on_assign, True

    def assign(self, partitions: list[TopicPartition]) -> None:
        self._check()
        self._positions = {(tp.topic, tp.partition): self._resolve(tp) for tp in partitions}
        self._eof_sent.clear()

    def _rebalance(self) -> None:
        if not self._rebalance_due:
            return
        self._rebalance_due = False
        meta = self._broker.metadata()
        parts = [
            TopicPartition(t, p, OFFSET_INVALID)
            for t in self._subscribed
            if t in meta.topics
            for p in sorted(meta.topics[t].partitions)
        ]
        self._positions = {}
        if self._on_assign is not None:
            self._on_assign(self, parts)
        if not self._positions:  # the callback did not assign: librdkafka assigns them
            self.assign(parts)

    def _next(self, key: tuple[str, int]) -> MemoryMessage | None:
        log = self._broker.log(*key)
        pos = self._positions[key]
        with self._broker.lock:
            while pos < len(log):
                stored = log[pos]
                hidden = stored.state == MARKER or (
                    self._read_committed and stored.state == ABORTED
                )
                if not hidden and self._read_committed and stored.state == OPEN:
                    break  # the last stable offset: nothing beyond it is readable yet
                pos += 1
                if not hidden:
                    self._positions[key] = pos
                    self._eof_sent.discard(key)
                    return stored.message
        self._positions[key] = pos
        if self._partition_eof and key not in self._eof_sent and pos == len(log):
            self._eof_sent.add(key)
            eof = KafkaError(PARTITION_EOF, f"{key[0]} [{key[1]}] reached end at offset {pos}")
            return MemoryMessage(key[0], key[1], pos, _error=eof)
        return None

    def poll(self, timeout: float = -1) -> MemoryMessage | None:
        self._check()
        self._rebalance()
        for key in sorted(self._positions):
            msg = self._next(key)
            if msg is not None:
                return msg
        return None

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[MemoryMessage]:
        out: list[MemoryMessage] = []
        while len(out) < num_messages and (msg := self.poll(0)) is not None:
            out.append(msg)
        return out

    def seek(self, partition: TopicPartition) -> None:
        self._check()
        key = (partition.topic, partition.partition)
        self._broker.trip("seek", f"{key[0]}[{key[1]}]@{partition.offset}")
        if key not in self._positions:
            raise fail(KafkaError._STATE, f"{key[0]} [{key[1]}] is not assigned")
        self._positions[key] = self._resolve(partition)
        self._eof_sent.discard(key)

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        self._check()
        return [
            TopicPartition(
                tp.topic,
                tp.partition,
                self._positions.get((tp.topic, tp.partition), OFFSET_INVALID),
            )
            for tp in partitions
        ]

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        self._check()
        return self._broker.watermarks(partition.topic, partition.partition)

    def consumer_group_metadata(self) -> Any:
        return _GroupMetadata(self.group_id)

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        return self._broker.metadata(topic)

    def close(self) -> None:
        self._closed = True
