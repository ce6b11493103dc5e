"""One batch-arrival event from poll to commit, on the in-memory broker, traced.

The shape issue 25 asks of the data plane (docs/architecture.md, "one event's path"): the
processor is entered once (its ``step``) and never called back by the modules it calls, and
the event's path touches few worker modules (the pure core counted as one; the in-memory
broker, which stands for confluent-kafka's client, not counted): at most 10,
:data:`MAX_MODULES`, a ratchet that may only go down (17 before the data plane was
reshaped: docs/architecture-data-plane.md lists the modules and their roles). Only the
loop's thread is traced: the transaction itself runs on the committer thread.

The path is traced with :func:`sys.setprofile` over a real step: a real contract on
the config registry, a real inline event of the shipped countries, the real router, the
real checkpoint writing to :class:`worker.kafka.memory.MemoryBroker` in a transaction.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from types import FrameType
from typing import Any

import pytest

from worker.cli.scenario import contract_files, data_file
from worker.control.publish import contract_record
from worker.core.lifecycle.registry import RecordingRegistry
from worker.gate.config import GateConfig
from worker.gate.processor import Processor
from worker.io import codec
from worker.io.config_records import apply_config_value
from worker.io.contract_files import load_contract
from worker.io.payloads import read_batch_file
from worker.kafka.memory import MemoryBroker
from worker.kafka.protocols import TopicPartition
from worker.kafka.settings import Settings

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
#: Worker modules one event's path touches (the core counted as one): may only shrink.
#: 11 since stop 43: the BatchArrival reader written for its fields
#: (``worker.io.codec.arrival_reader``, about 7.5 us an event less than fastavro's) does not
#: fit in ``codec.events`` or ``codec.avro`` (400 and 300 lines).
MAX_MODULES = 11
#: The same counted on every thread, the committer's transaction included (26 before the
#: data plane was reshaped; 20 with the reader): may only shrink.
MAX_MODULES_EVERY_THREAD = 20
#: The in-memory broker stands for the Kafka client: not a hop of the worker's own.
#: Worker modules a poll batch of two small events touches on the loop's thread: they are
#: routed as one group (``worker.gate.route_group``, their columns built together by
#: ``worker.io.codec.event_groups``). 12 when grouping landed (stop 35), 13 with the reader
#: (stop 43): may only shrink.
MAX_MODULES_GROUPED = 13
BROKER_DOUBLE = ("worker.kafka.memory", "worker.kafka.memory_consumer", "worker.kafka.memory_log")


def _world_event(batch_id: str | None = None) -> bytes:
    contract = load_contract(contract_files()[0][0])
    batch = read_batch_file(
        str(data_file("admin_boundaries.parquet")),
        layer=contract.layer,
        data_time=NOW,
    )
    if batch_id is not None:
        batch = dataclasses.replace(batch, batch_id=batch_id)
    return codec.encode_batch(batch)


@pytest.fixture
def one_event() -> Iterator[tuple[Processor, MemoryBroker, Settings]]:
    """A processor on the memory broker, one contract active, one event waiting."""
    settings = Settings(instance_id="pod-0")
    t = settings.topics
    broker = MemoryBroker()
    for name in (t.batches, t.admitted, t.quarantine, t.evaluations):
        broker.create_topic(name, 1)
    contract = load_contract(contract_files()[0][0])
    producer = broker.producer(f"{settings.transactional_id_prefix}-{settings.instance_id}")
    producer.init_transactions()
    consumer = broker.consumer(settings.group_id)
    consumer.subscribe([t.batches])
    p = Processor(
        GateConfig(lag_interval_s=float("inf")),
        settings,
        consumer=consumer,
        producer=producer,
        clock=lambda: NOW,
    )
    assert isinstance(p.registry, RecordingRegistry)
    record = codec.encode_contract_record(contract_record(contract, mode="enforcing"))
    assert apply_config_value(p.registry, contract.key, record).outcome == "added"
    p.assignment.on_assign(consumer, [TopicPartition(t.batches, 0)])
    plain = broker.producer()
    plain.produce(t.batches, value=_world_event(), key=contract.layer.encode())
    yield p, broker, settings
    p.close()


def _trace(call: Any, *, every_thread: bool = False) -> tuple[Any, list[tuple[str, str]]]:
    """``call()`` with every Python call into a worker module recorded as (caller module,
    callee module); calls within one module are left out. ``every_thread``: also in the
    threads started meanwhile (the committer's and the routers')."""
    edges: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        callee = frame.f_globals.get("__name__", "")
        caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back else ""
        if callee.startswith("worker.") and callee != caller:
            edges.append((caller, callee))

    sys.setprofile(profile)
    if every_thread:
        threading.setprofile(profile)
    try:
        result = call()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return result, edges


def _hop(module: str) -> str:
    """The core is one hop (pure functions, whatever their module); other modules count
    one each."""
    return "worker.core" if module.startswith("worker.core") else module


def test_one_event_is_decided_and_committed_in_one_transaction(
    one_event: tuple[Processor, MemoryBroker, Settings],
) -> None:
    p, broker, settings = one_event
    t = settings.topics
    assert p.step() == 1
    out = broker.consumer("reader")
    out.assign([TopicPartition(t.quarantine, 0), TopicPartition(t.admitted, 0)])
    records = [m for m in out.consume(10, timeout=0) if m.error() is None]
    assert [m.topic() for m in records] == [t.admitted]  # v1.0 admits the 177 countries
    admitted = codec.decode_event(records[0].value())
    assert admitted["layer"] == "admin_boundaries" and admitted["feature_count"] == 177
    assert broker.committed(settings.group_id) == {(t.batches, 0): 1}  # inside the txn


def _modules(edges: list[tuple[str, str]]) -> set[str]:
    return {
        _hop(m)
        for edge in edges
        for m in edge
        if m.startswith("worker.") and m not in BROKER_DOUBLE
    }


def test_one_event_touches_at_most_eleven_modules_and_enters_the_processor_once(
    one_event: tuple[Processor, MemoryBroker, Settings],
) -> None:
    p, _broker, _settings = one_event
    committed, edges = _trace(p.step)
    assert committed == 1
    modules = _modules(edges)
    assert "worker.core" in modules and "worker.gate.checkpoint" in modules  # traced for real
    assert len(modules) <= MAX_MODULES, sorted(modules)
    into_processor = [e for e in edges if e[1] == "worker.gate.processor"]
    assert into_processor == [("tests.gate.test_one_event", "worker.gate.processor")], (
        f"the processor is entered once, by its caller: {into_processor}"
    )


def test_one_event_on_every_thread_transaction_included_touches_few_modules(
    one_event: tuple[Processor, MemoryBroker, Settings],
) -> None:
    p, _broker, _settings = one_event
    committed, edges = _trace(p.step, every_thread=True)
    assert committed == 1
    modules = _modules(edges)
    assert {"worker.gate.producing", "worker.kafka.clients"} <= modules  # the committer's
    assert len(modules) <= MAX_MODULES_EVERY_THREAD, sorted(modules)


def test_two_small_events_are_routed_as_one_group_touching_at_most_thirteen_modules(
    one_event: tuple[Processor, MemoryBroker, Settings],
) -> None:
    p, broker, settings = one_event
    plain = broker.producer()
    plain.produce(settings.topics.batches, value=_world_event("world-2"), key=b"admin_boundaries")
    committed, edges = _trace(p.step)
    assert committed == 2
    modules = _modules(edges)
    assert "worker.gate.route_group" in modules, sorted(modules)  # the grouped path, for real
    assert len(modules) <= MAX_MODULES_GROUPED, sorted(modules)
    into_processor = [e for e in edges if e[1] == "worker.gate.processor"]
    assert into_processor == [("tests.gate.test_one_event", "worker.gate.processor")]
    assert broker.committed(settings.group_id) == {(settings.topics.batches, 0): 2}
