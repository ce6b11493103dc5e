"""No poll while a transaction is in flight (:mod:`worker.gate.schedule`).

A rebalance runs inside ``consume()``. With a transaction in flight, the revoke callback
would have to wait for it (else it may commit the offsets of a partition another member
then owns), while its ``send_offsets_to_transaction`` waits for the group, which waits
for this member to leave the callback: the embedded broker blocked it 45 s (stop 39,
docs/performance.md "2026-12-04: the last commit of a poll batch overlapped, reverted").
So the loop polls only once every transaction it began has ended, whatever the runs.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.gate.world import UNDECODABLE, world
from worker.gate.config import GateConfig


@pytest.mark.parametrize("chained_batches", [1, 8])
@pytest.mark.parametrize(
    ("events", "min_run_bytes", "commits"),
    [
        ([(0, UNDECODABLE)] * 6, 1024 * 1024, {3}),  # one transaction per poll batch
        # a run per event: each commits while the next is routed; chained poll batches
        # join a routed event to the next run while the last batch's run still commits
        ([(p % 2, UNDECODABLE + b"x" * 300_000) for p in range(6)], 1, {3, 4, 5, 6}),
    ],
)
def test_the_loop_never_polls_while_a_transaction_is_in_flight(
    events: list[tuple[int, bytes]], min_run_bytes: int, commits: set[int], chained_batches: int
) -> None:
    config = GateConfig(lag_interval_s=float("inf"), max_batch_events=2, max_batch_wait_ms=0,
                        min_run_bytes=min_run_bytes, min_run_route_s=0.0,
                        chained_batches=chained_batches)  # fmt: skip
    w = world(config=config)
    in_flight = threading.Lock()  # held from begin_transaction to its commit's end
    polled_in_flight: list[int] = []
    begin, commit, consume = (w.producer.begin_transaction, w.producer.commit_transaction,
                              w.consumer.consume)  # fmt: skip

    def tracked_begin(*args: Any) -> Any:
        in_flight.acquire()
        return begin(*args)

    def tracked_commit(*args: Any) -> Any:
        try:
            time.sleep(0.05)  # a broker round trip: a poll meanwhile would be seen
            return commit(*args)
        finally:
            in_flight.release()

    def tracked_consume(n: int = 1, timeout: float = -1) -> list[Any]:
        if in_flight.locked():
            polled_in_flight.append(n)
        return consume(n, timeout)

    w.producer.begin_transaction = tracked_begin  # type: ignore[method-assign]
    w.producer.commit_transaction = tracked_commit  # type: ignore[method-assign]
    w.consumer.consume = tracked_consume  # type: ignore[method-assign]
    w.send(*events)
    decided = 0
    while step := w.p.step():
        decided += step
    assert decided == 6
    made = w.broker.calls.count("commit_transaction")
    assert made == 6 if chained_batches == 1 and min_run_bytes == 1 else made in commits
    assert polled_in_flight == []
