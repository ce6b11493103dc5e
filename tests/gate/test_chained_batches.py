"""Poll batches taken one after another in one step, each batch's last run committing
while the next is routed (``GateConfig.chained_batches``, :meth:`Processor._route_batches`).

Every case reads back what a read_committed consumer of another group sees and the
group's committed offsets: each event decided exactly once, nothing lost, offsets in order,
also when the carried transaction fails and when a rebalance revokes a partition while
the next batch is taken.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest

from tests.gate.world import UNDECODABLE, World, world
from worker.gate.config import GateConfig
from worker.gate.processor import Processor
from worker.io import codec
from worker.kafka.memory import BrokerFault
from worker.kafka.protocols import TopicPartition
from worker.kafka.settings import Settings


def _config(chained: int, max_batch_events: int = 3) -> GateConfig:
    return GateConfig(lag_interval_s=float("inf"), max_batch_events=max_batch_events,
                      max_batch_wait_ms=0, chained_batches=chained)  # fmt: skip


def _events(per_partition: dict[int, int]) -> list[tuple[int, bytes]]:
    """Undecodable events (one quarantine record each), told apart by their bytes."""
    return [(p, UNDECODABLE + f"{p}-{i}".encode()) for p, n in per_partition.items()
            for i in range(n)]  # fmt: skip


def _decided(w: World) -> Counter[tuple[int, int]]:
    """How many committed quarantine records name each ``(partition, offset)``."""
    records = w.read(w.settings.topics.quarantine)
    rows = [codec.decode_quarantine(m.value()) for m in records]
    return Counter((r["source_partition"], r["source_offset"]) for r in rows)


def _drain(p: Processor, steps: int = 20) -> list[int]:
    return [n for n in (p.step() for _ in range(steps)) if n]


@pytest.mark.parametrize("chained", [1, 2, 3, 8])
def test_each_event_is_decided_once_in_one_transaction_per_poll_batch(chained: int) -> None:
    w = world(config=_config(chained))
    w.send(*_events({0: 7, 1: 5}))
    steps = _drain(w.p)
    # 12 events in poll batches of 3: 4 batches, at most ``chained`` of them in a step
    assert sum(steps) == 12 and len(steps) == -(-4 // chained)
    assert w.broker.calls.count("begin_transaction") == 4
    assert w.broker.calls.count("commit_transaction") == 4
    assert _decided(w) == Counter({(p, o): 1 for p, n in ((0, 7), (1, 5)) for o in range(n)})
    assert w.broker.committed(w.settings.group_id) == {(w.batches, 0): 7, (w.batches, 1): 5}


def test_the_next_batch_is_taken_before_the_last_run_begins_its_transaction() -> None:
    w = world(config=_config(8))
    w.send(*_events({0: 6}))
    order: list[str] = []
    consume, begin = w.consumer.consume, w.producer.begin_transaction

    def traced_consume(n: int = 1, timeout: float = -1) -> list[Any]:
        got = consume(n, timeout)
        order.append(f"consume {len([m for m in got if m.error() is None])}")
        return got

    def traced_begin(*args: Any) -> Any:
        order.append("begin")
        return begin(*args)

    w.consumer.consume = traced_consume  # type: ignore[method-assign]
    w.producer.begin_transaction = traced_begin  # type: ignore[method-assign]
    assert w.p.step() == 6
    # the poll; the 2nd batch taken before the 1st one's transaction; nothing left to take
    assert order == ["consume 3", "consume 3", "begin", "consume 0", "begin"]


@pytest.mark.parametrize(("sent", "takes"), [(2, 0), (3, 1), (5, 1), (7, 2)])
def test_only_a_full_poll_batch_has_the_next_one_taken_before_its_commit(
    sent: int, takes: int
) -> None:
    w = world(config=_config(8))
    w.send(*_events({0: sent}))
    timeouts: list[float] = []
    consume = w.consumer.consume

    def traced(n: int = 1, timeout: float = -1) -> list[Any]:
        timeouts.append(timeout)
        return consume(n, timeout)

    w.consumer.consume = traced  # type: ignore[method-assign]
    assert w.p.step() == sent
    # the poll, then one take after each full batch of 3 (a batch of fewer is committed,
    # and the next poll waits for more to gather)
    assert len(timeouts) == 1 + takes
    assert w.broker.calls.count("commit_transaction") == -(-sent // 3)


def test_a_failed_carried_transaction_rewinds_both_batches_and_loses_nothing() -> None:
    w = world(config=_config(8))
    w.send(*_events({0: 9}))
    # the first batch's transaction fails while the second batch is routed
    w.broker.fail_next("commit_transaction", BrokerFault.ABORTABLE)
    assert w.p.step() == 0  # the chain ends at the failure: nothing committed
    assert w.p.transactions_aborted == 1
    assert w.read(w.settings.topics.quarantine) == []
    assert w.positions()[0] == (0, 0)  # both batches rewound to the first event
    assert sum(_drain(w.p)) == 9
    assert _decided(w) == Counter({(0, o): 1 for o in range(9)})
    assert w.broker.committed(w.settings.group_id) == {(w.batches, 0): 9}


@pytest.mark.parametrize("protocol", ["cooperative", "eager"])
def test_a_partition_revoked_while_the_next_batch_is_taken_goes_to_its_next_owner(
    protocol: str,
) -> None:
    w = world(config=_config(2, max_batch_events=4))
    w.send(*_events({0: 2, 1: 6}))
    consume, calls = w.consumer.consume, []
    p0, p1 = TopicPartition(w.batches, 0), TopicPartition(w.batches, 1)

    def rebalancing_consume(n: int = 1, timeout: float = -1) -> list[Any]:
        calls.append(n)
        if len(calls) == 2:  # the take after the 1st batch: partition 0 moves elsewhere
            if protocol == "cooperative":  # only partition 0 revoked; 1 keeps its position
                (kept,) = w.consumer.position([p1])
                w.consumer.assign([kept])
                w.p.assignment.on_revoke(w.consumer, [p0])
            else:  # all revoked, partition 1 assigned again: read from its committed offset
                w.p.assignment.on_revoke(w.consumer, [p0, p1])
                w.consumer.assign([p1])
                w.p.assignment.on_assign(w.consumer, [p1])
        return consume(n, timeout)

    w.consumer.consume = rebalancing_consume  # type: ignore[method-assign]
    decided = w.p.step()
    # partition 0's routed events were not committed: its next owner decides them
    assert (w.batches, 0) not in w.broker.committed(w.settings.group_id)
    assert {p for p, _ in _decided(w)} == {1} and decided == sum(_decided(w).values()) > 0
    s = Settings(instance_id="pod-1")
    producer = w.broker.producer(f"{s.transactional_id_prefix}-{s.instance_id}")
    producer.init_transactions()
    consumer = w.broker.consumer(s.group_id)
    owner = Processor(_config(2), s, consumer=consumer, producer=producer)
    consumer.assign([p0])
    owner.assignment.on_assign(consumer, [p0])
    assert sum(_drain(w.p)) + sum(_drain(owner)) == 8 - decided
    assert _decided(w) == Counter({(p, o): 1 for p, n in ((0, 2), (1, 6)) for o in range(n)})
    assert w.broker.committed(w.settings.group_id) == {(w.batches, 0): 2, (w.batches, 1): 6}


def test_no_batch_is_taken_once_the_loop_is_asked_to_stop() -> None:
    w = world(config=_config(8))
    w.send(*_events({0: 9}))
    stop = w.p.liveness.stop = threading.Event()
    stop.set()
    assert w.p.step() == 3  # the polled batch is committed; none is taken after it
    assert w.broker.committed(w.settings.group_id) == {(w.batches, 0): 3}


def test_chained_batches_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="chained_batches must be 1 or more, got 0"):
        GateConfig(chained_batches=0)
