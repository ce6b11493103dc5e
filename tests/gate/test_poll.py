"""The poll-batch policy (:func:`worker.gate.housekeeping.poll_batch`) against a scripted
local queue: librdkafka's ``consume(n, timeout)`` semantics (return once ``n`` records
are there or ``timeout`` has passed) on a simulated clock. The pipeline that calls it runs
on a real broker in ``tests/integration``."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from worker.gate.config import GateConfig
from worker.gate.housekeeping import IDLE_WAIT_S, poll_batch

DEFAULT_READY_BYTES = GateConfig().ready_bytes


@dataclass
class _Record:
    payload: bytes | None
    where: tuple[str, int] = ("batches", 0)
    offset: int = 0

    def value(self) -> bytes | None:
        return self.payload

    def topic(self) -> str:
        return self.where[0]

    def partition(self) -> int:
        return self.where[1]


@dataclass
class _Queue:
    """Records arriving at given times (seconds) in librdkafka's local queue."""

    arrivals: list[tuple[float, _Record]]
    now: float = 0.0
    calls: list[tuple[int, float]] = field(default_factory=list)
    #: (time, partitions): a rebalance revoking them, run by the first consume() whose
    #: window reaches that time (librdkafka serves rebalances inside consume())
    rebalances: list[tuple[float, frozenset[tuple[str, int]]]] = field(default_factory=list)
    revoked: set[tuple[str, int]] = field(default_factory=set)

    def take_revoked(self) -> frozenset[tuple[str, int]]:
        taken, self.revoked = frozenset(self.revoked), set()
        return taken

    def clock(self) -> float:
        return self.now

    def consume(self, n: int, timeout: float) -> list[_Record]:
        self.calls.append((n, timeout))
        due = [t for t, _ in self.arrivals[:n]]
        # returns when the n-th record has arrived or the timeout has passed
        until = self.now + timeout
        if len(due) == n and due[-1] <= until:
            until = max(self.now, due[-1])
        self.now = until
        while self.rebalances and self.rebalances[0][0] <= self.now:
            self.revoked |= self.rebalances.pop(0)[1]
        taken = [r for t, r in self.arrivals[:n] if t <= self.now]
        del self.arrivals[: len(taken)]
        return taken


def _records(count: int, size: int, at: float = 0.0) -> list[tuple[float, _Record]]:
    return [(at, _Record(b"x" * size)) for _ in range(count)]


def test_records_already_fetched_are_taken_without_waiting() -> None:
    big = DEFAULT_READY_BYTES // 3 + 1
    q = _Queue(_records(3, big) + _records(5, big, at=0.05))
    got = poll_batch(q, 500, 0.1, clock=q.clock)
    assert len(got) == 3 and q.now == 0.0 and q.calls == [(500, 0)]


def test_a_small_batch_waits_in_slices_until_it_holds_enough_bytes() -> None:
    q = _Queue(_records(2, 1000) + _records(4, DEFAULT_READY_BYTES // 4, at=0.035))
    got = poll_batch(q, 500, 0.1, clock=q.clock)
    assert len(got) == 6
    assert q.now == pytest.approx(0.04)  # the slice in which the last record arrived
    assert all(timeout <= 0.01 for _, timeout in q.calls)


def test_a_small_batch_waits_no_longer_than_the_window() -> None:
    q = _Queue(_records(1, 100) + _records(1, 100, at=0.5))
    got = poll_batch(q, 500, 0.1, clock=q.clock)
    assert len(got) == 1 and q.now == pytest.approx(0.1)
    assert len(q.arrivals) == 1  # the late record is left for the next poll batch


def test_never_more_than_max_events_and_error_events_count_as_empty() -> None:
    q = _Queue([(0.0, _Record(None)), *_records(9, 10, at=0.02)])
    got = poll_batch(q, 4, 0.1, clock=q.clock)
    assert len(got) == 4 and got[0].value() is None
    assert len(q.arrivals) == 6


def test_no_wait_window_takes_only_what_is_queued() -> None:
    q = _Queue(_records(2, 10) + _records(1, 10, at=0.001))
    assert len(poll_batch(q, 500, 0.0, clock=q.clock)) == 2 and q.calls == [(500, 0)]


def test_an_idle_worker_blocks_for_a_first_record_whatever_the_window() -> None:
    # --max-batch-wait-ms 0 made an idle worker spin at 100% CPU (a new-user finding)
    q = _Queue(_records(1, 10, at=0.05))
    got = poll_batch(q, 500, 0.0, clock=q.clock)
    assert len(got) == 1 and q.now == pytest.approx(0.05)
    empty = _Queue([])
    assert poll_batch(empty, 500, 0.0, clock=empty.clock) == []
    assert empty.now == pytest.approx(IDLE_WAIT_S) and 11 <= len(empty.calls) <= 12


def test_the_wait_ends_when_the_worker_stops() -> None:
    q = _Queue(_records(1, 10, at=50.0))
    answers = iter([True, True, False])
    got = poll_batch(q, 500, 60.0, clock=q.clock, keep_waiting=lambda: next(answers))
    assert got == [] and q.now == pytest.approx(0.02)


def test_records_of_a_partition_revoked_during_the_poll_batch_are_dropped() -> None:
    # records of partitions 0 and 1 come in two consume() calls; a rebalance at 15 ms
    # revokes partition 0: the records of partition 0 an earlier call returned belong to
    # its next owner now, which reads them again from the committed offset
    early = [(0.0, _Record(b"x", ("batches", p), o)) for p in (0, 1) for o in (10, 11)]
    late = [(0.012, _Record(b"y", ("batches", 1), 12))]
    q = _Queue(early + late, rebalances=[(0.015, frozenset({("batches", 0)}))])
    got = poll_batch(q, 500, 0.1, clock=q.clock, take_revoked=q.take_revoked)
    assert [(r.partition(), r.offset) for r in got] == [(1, 10), (1, 11), (1, 12)]
    assert q.now == pytest.approx(0.02)  # the batch ends at the call that saw the rebalance


def test_records_returned_by_the_call_that_saw_the_rebalance_are_kept() -> None:
    # librdkafka already drops the stale records of the call in which a rebalance runs
    # (version barrier): what that call returns is of the new assignment
    q = _Queue(
        [(0.008, _Record(b"x", ("batches", 0), 40))],
        rebalances=[(0.005, frozenset({("batches", 0)}))],
    )
    got = poll_batch(q, 500, 0.1, clock=q.clock, take_revoked=q.take_revoked)
    assert [(r.partition(), r.offset) for r in got] == [(0, 40)]


def test_a_revocation_before_the_poll_batch_drops_nothing() -> None:
    q = _Queue([(0.0, _Record(b"x", ("batches", 3), 7))])
    q.revoked.add(("batches", 3))  # revoked and given back before this poll batch
    got = poll_batch(q, 1, 0.1, clock=q.clock, take_revoked=q.take_revoked)
    assert [(r.partition(), r.offset) for r in got] == [(3, 7)]
