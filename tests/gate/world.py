"""A worker on the in-memory broker for the loop's unit tests: real clients, no fakes.

:func:`world` builds a :class:`~worker.gate.processor.Processor` whose consumer and
transactional producer are :class:`worker.kafka.memory.MemoryBroker`'s, subscribed to
the batches topic (``partitions`` partitions) with the processor's rebalance callback;
failure branches are armed on the broker (``w.broker.fail_next(...)``) and what happened
is read back from it: the records committed on a topic, the group's committed offsets,
the client calls made (``w.broker.calls``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from worker.core.model import Decision
from worker.gate.checkpoint import Done, Run
from worker.gate.config import GateConfig
from worker.gate.processor import Processor
from worker.gate.records import Outcome, OutRecord, Source
from worker.kafka.memory import MemoryBroker, MemoryMessage, MemoryProducer
from worker.kafka.memory_consumer import MemoryConsumer
from worker.kafka.protocols import TopicPartition
from worker.kafka.settings import Settings

#: The value of an event the router refuses (``decode_error``: one quarantine record).
UNDECODABLE = b"\x00not avro"
#: The topic of the records :func:`admitted` outcomes carry.
OUT = "out"


@dataclass
class World:
    """A processor on a memory broker (see the module docstring)."""

    broker: MemoryBroker
    settings: Settings
    consumer: MemoryConsumer
    producer: MemoryProducer
    p: Processor

    @property
    def batches(self) -> str:
        """The input topic."""
        return self.settings.topics.batches

    def send(self, *events: tuple[int, bytes], key: bytes = b"roads") -> None:
        """Produce ``(partition, value)`` events to the batches topic (committed); the
        broker's call journal is cleared afterwards."""
        plain = self.broker.producer()
        for partition, value in events:
            plain.produce(self.batches, value=value, key=key, partition=partition)
        self.broker.calls.clear()

    def poll(self, n: int = 100) -> list[MemoryMessage]:
        """What the processor's consumer gets (the rebalance runs on the first call); the
        broker's call journal is cleared afterwards."""
        msgs = [m for m in self.consumer.consume(n, timeout=0) if m.error() is None]
        self.broker.calls.clear()
        return msgs

    def commit(self, events: Sequence[Any], outcomes: list[Outcome]) -> Done:
        """One run committed by the processor's checkpoint."""
        return self.p.checkpoint.commit(Run(list(events), outcomes))

    def read(self, topic: str) -> list[MemoryMessage]:
        """The committed records of every partition of ``topic``, as a read_committed
        consumer of another group reads them."""
        reader = self.broker.consumer("reader")
        parts = self.broker.metadata(topic).topics[topic].partitions
        reader.assign([TopicPartition(topic, p, 0) for p in parts])
        return [m for m in reader.consume(10_000, timeout=0) if m.error() is None]

    def positions(self) -> list[tuple[int, int]]:
        """``(partition, next offset)`` of the processor's consumer on the batches topic."""
        parts = sorted(self.broker.metadata(self.batches).topics[self.batches].partitions)
        tps = self.consumer.position([TopicPartition(self.batches, p) for p in parts])
        return [(tp.partition, tp.offset) for tp in tps]


def world(
    *,
    partitions: int = 2,
    settings: Settings | None = None,
    max_message_bytes: int | None = None,
    config: GateConfig | None = None,
    **kw: Any,
) -> World:
    """A processor (no lag probe, config topic not read) on a fresh memory broker whose
    topics exist; ``max_message_bytes`` bounds its producer's records; ``kw`` go to
    :class:`Processor` (``router``, ``on_outcome``, ...)."""
    s = settings or Settings(instance_id="pod-0")
    broker = MemoryBroker()
    broker.create_topic(s.topics.batches, partitions)
    for name in (OUT, s.topics.admitted, s.topics.quarantine, s.topics.evaluations):
        broker.create_topic(name, 1)
    producer = broker.producer(
        f"{s.transactional_id_prefix}-{s.instance_id}", max_message_bytes=max_message_bytes
    )
    producer.init_transactions()
    consumer = broker.consumer(s.group_id)
    config = config or GateConfig(lag_interval_s=float("inf"))
    p = Processor(config, s, consumer=consumer, producer=producer, **kw)
    consumer.subscribe([s.topics.batches], on_assign=p.assignment.on_assign)
    broker.calls.clear()
    return World(broker, s, consumer, producer, p)


def admitted(m: Any, value: bytes = b"x", batch_id: str = "b") -> Outcome:
    """An admitted outcome of the consumed record ``m`` with one record to :data:`OUT`."""
    source = Source(m.topic(), m.partition(), m.offset(), None, b"x")
    return Outcome(source, "l", batch_id, Decision("admitted", ()),
                   (OutRecord(OUT, "l", value, []),), 0.0)  # fmt: skip
