"""The loop's CPU per event: the processor on the in-memory broker, no Kafka.

``python -m benchmarks.loop_cpu [--features N] [--events N] [--rounds N]`` runs
:class:`worker.gate.processor.Processor` on :class:`worker.kafka.memory.MemoryBroker` (4
partitions) over the benchmark's events (:func:`benchmarks.broker.make_events`), the
``admin_boundaries`` v1 contract enforcing, :class:`worker.ops.metrics.GateMetrics` on an
SDK ``MeterProvider``, the ``/status`` decision log as ``on_outcome`` and a clock one
minute after the events' data time. One warm-up round, then ``--rounds`` rounds, each
with the heap frozen as ``Processor.start`` does. Prints one line per round: the CPU time
of the loop's thread (``time.thread_time``) per event, in ms, and the load average.

The committer thread's transaction is not counted (it runs on its own thread); the broker
double keeps every record as Python objects, which librdkafka does not. Compare branches by
alternating them in separate processes (``PYTHONPATH`` picks the worktree).
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import timedelta

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from benchmarks.broker import make_events
from benchmarks.common import NOW
from worker.cli.scenario import data_file
from worker.control.publish import contract_record
from worker.gate.config import GateConfig
from worker.gate.processor import Processor
from worker.gate.startup import freeze_heap
from worker.io import codec
from worker.io.config_records import apply_config_value
from worker.io.contract_files import load_contract
from worker.kafka.memory import MemoryBroker
from worker.kafka.settings import Settings
from worker.ops.decision_log import DecisionLog
from worker.ops.metrics import GateMetrics

PARTITIONS = 4


def one_round(events: list[bytes], tag: str) -> float:
    """Route and commit ``events`` on a fresh broker and processor; the loop thread's CPU
    seconds per event."""
    settings = Settings(instance_id=f"pod-{tag}")
    t = settings.topics
    broker = MemoryBroker()
    broker.create_topic(t.batches, PARTITIONS)
    for name in (t.admitted, t.quarantine, t.evaluations):
        broker.create_topic(name, 1)
    producer = broker.producer(f"{settings.transactional_id_prefix}-{settings.instance_id}")
    producer.init_transactions()
    consumer = broker.consumer(settings.group_id)
    metrics = GateMetrics(MeterProvider(metric_readers=[InMemoryMetricReader()]).get_meter("b"))
    clock_at = NOW + timedelta(seconds=60)
    p = Processor(
        GateConfig(lag_interval_s=float("inf")),
        settings,
        consumer=consumer,
        producer=producer,
        metrics=metrics,
        clock=lambda: clock_at,
        on_outcome=DecisionLog(),
    )
    consumer.subscribe([t.batches], on_assign=p.assignment.on_assign)
    contract = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
    record = codec.encode_contract_record(contract_record(contract, mode="enforcing"))
    apply_config_value(p.registry, contract.key, record)
    plain = broker.producer()
    for i, value in enumerate(events):
        plain.produce(t.batches, value=value, key=b"admin_boundaries", partition=i % PARTITIONS)
    decided = 0
    started = time.thread_time()
    while decided < len(events):
        decided += p.step()
    spent = time.thread_time() - started
    p.close()
    return spent / len(events)


def main() -> None:
    """Print the loop's CPU per event of each round (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--features", type=int, default=1)
    ap.add_argument("--events", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    events = make_events(args.features, args.events)
    one_round(events, "warm")
    for r in range(args.rounds):
        freeze_heap()  # as Processor.start does; close() gives it back
        per_event_s = one_round(events, str(r))
        print(f"{per_event_s * 1000:.3f} ms/event load {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
