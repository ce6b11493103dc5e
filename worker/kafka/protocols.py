"""What the gate needs of a Kafka client, as typing protocols: the one seam to Kafka.

The data plane (:mod:`worker.gate`) and the control plane (:mod:`worker.control`) are typed
against these protocols, never against ``confluent_kafka`` classes: the real clients are
built in :mod:`worker.kafka.clients` (inside its error-mapping context) and the in-memory
broker of :mod:`worker.kafka.memory` implements the same protocols, transactions included,
for unit tests and offline runs (the shape of quix-streams'
``RawConfluentKafkaMessageProto`` and arroyo's ``backends/abstract.py``).

Only the methods the gate calls are listed, with confluent-kafka's signatures (timeouts in
seconds, as librdkafka's Python binding takes them). ``TopicPartition`` is confluent-kafka's
own value type, re-exported here so that modules outside :mod:`worker.kafka` never import
``confluent_kafka``: it is a plain value (topic, partition, offset), built without a broker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from confluent_kafka import TopicPartition

__all__ = [
    "ConsumerLike",
    "MessageLike",
    "ProducerLike",
    "TopicPartition",
    "TransactionalProducerLike",
]

#: Record headers as confluent-kafka gives and takes them: (name, value) pairs.
Headers = list[tuple[str, bytes | None]]


@runtime_checkable
class MessageLike(Protocol):
    """One consumed record (``confluent_kafka.Message``): accessors, not attributes."""

    def topic(self) -> str | None: ...
    def partition(self) -> int | None: ...
    def offset(self) -> int | None: ...
    def key(self) -> bytes | None: ...
    def value(self) -> bytes | None: ...
    def headers(self) -> Headers | None: ...
    def timestamp(self) -> tuple[int, int]: ...
    def error(self) -> Any: ...


@runtime_checkable
class ConsumerLike(Protocol):
    """A consumer-group member (``confluent_kafka.Consumer``) as the gate uses it."""

    def subscribe(
        self,
        topics: list[str],
        on_assign: Callable[..., None] = ...,
        on_revoke: Callable[..., None] = ...,
        on_lost: Callable[..., None] = ...,
    ) -> None: ...
    def assign(self, partitions: list[TopicPartition]) -> None: ...
    def poll(self, timeout: float = ...) -> MessageLike | None: ...
    def consume(self, num_messages: int = ..., timeout: float = ...) -> Sequence[MessageLike]: ...
    def seek(self, partition: TopicPartition) -> None: ...
    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]: ...
    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = ..., cached: bool = ...
    ) -> tuple[int, int]: ...
    def consumer_group_metadata(self) -> Any: ...
    def list_topics(self, topic: str | None = ..., timeout: float = ...) -> Any: ...
    def close(self) -> None: ...


@runtime_checkable
class ProducerLike(Protocol):
    """A producer (``confluent_kafka.Producer``) as the gate uses it."""

    def produce(
        self,
        topic: str,
        value: bytes | None = ...,
        key: bytes | None = ...,
        headers: Headers | None = ...,
        on_delivery: Callable[[Any, Any], None] | None = ...,
    ) -> None: ...
    def poll(self, timeout: float = ...) -> int: ...
    def flush(self, timeout: float = ...) -> int: ...
    def list_topics(self, topic: str | None = ..., timeout: float = ...) -> Any: ...


@runtime_checkable
class TransactionalProducerLike(ProducerLike, Protocol):
    """A producer with a ``transactional.id``: Kafka transactions (KIP-98), offsets
    committed inside them (KIP-447: ``send_offsets_to_transaction`` with the consumer's
    group metadata)."""

    def init_transactions(self, timeout: float = ...) -> None: ...
    def begin_transaction(self) -> None: ...
    def send_offsets_to_transaction(
        self, positions: Sequence[TopicPartition], group_metadata: Any, timeout: float = ...
    ) -> None: ...
    def commit_transaction(self, timeout: float = ...) -> None: ...
    def abort_transaction(self, timeout: float = ...) -> None: ...
