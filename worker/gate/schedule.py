"""Which events form a run, and when: runs committed while the next is routed; the
processing deadline of a poll batch.

Checkpoint discipline: one transaction per run, after the run is routed
(:mod:`worker.gate.checkpoint`). A commit is mostly waiting, so while one run commits on
the committer thread the next is routed on the loop's. :func:`route_in_runs` submits a run
once the previous one has finished and the run holds ``min_run_bytes`` and took
``min_run_s`` to route (a transaction costs a few requests whatever its size: a poll batch
of small events stays one). Runs commit strictly in order, never overlapping. The loop
never polls while a transaction is in flight: a rebalance runs inside the poll, and the
revoke callback would wait for the transaction while its ``send_offsets_to_transaction``
waits for the group, which waits for the callback (the embedded broker blocked 45 s, stop
39, docs/performance.md). So a batch's last run is held (``hold_last``), the next batch
taken, and only then the run submitted, to commit while that batch is routed
(``carried``; :meth:`worker.gate.processor.Processor.step`). Finished runs are *returned*
(:class:`ScheduledRuns`): nothing calls back into the processor. Large events are routed
ahead on threads (:class:`~worker.gate.route_group.RouteAhead`).

The deadline: past ``max.poll.interval.ms`` the consumer would leave its group. Once
``deadline_s`` has passed, no more events are routed (at least one is), the routed ones are
committed and the rest is returned, for the caller to rewind
(:func:`worker.gate.offsets.rewind`: consumed again, nothing lost, nothing decided twice);
a failed transaction ends the poll batch the same way.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

from worker.gate.checkpoint import Done, Run
from worker.gate.config import GateConfig
from worker.gate.records import Outcome
from worker.gate.route import Router
from worker.gate.route_group import GroupedRoute, RouteAhead
from worker.kafka.protocols import MessageLike

__all__ = [
    "Runs",
    "Schedule",
    "ScheduledRuns",
    "Settled",
    "event_bytes",
    "route_in_runs",
]

E = TypeVar("E")
O = TypeVar("O")  # noqa: E741 - an outcome


class Settled(Protocol):
    """A finished run: how many of its events were committed (a prefix)."""

    @property
    def committed(self) -> int: ...


R = TypeVar("R", bound=Settled)

#: A run in flight: its events and the future of its transaction.
Pending = tuple[list[E], Future[R]]


@dataclass(frozen=True)
class Runs(Generic[E]):
    """What :func:`route_in_runs` did with one poll batch.

    ``committed``: events committed, a prefix of the batch. ``transactions``: runs
    submitted. ``rest``: the events not committed, in batch order (to be consumed again).
    ``past_deadline``: routing stopped at the deadline. ``failed``: a transaction failed.
    ``held``: the last run ``(events, outcomes)``, routed, not submitted (``hold_last``).
    """

    committed: int
    transactions: int
    rest: list[E]
    past_deadline: bool
    failed: bool
    held: tuple[list[E], list[Any]] | None = None


class ScheduledRuns(Generic[E, R]):
    """The finished runs of one poll batch, in order, as they finish; then :attr:`result`.

    Use as ``with route_in_runs(...) as runs: for done in runs: ...``: leaving the block
    early (an error) still waits for the transaction in flight and the events routed ahead.
    """

    def __init__(self, gen: Generator[R, None, Runs[E]], close: Callable[[], None]) -> None:
        self._gen = gen
        self._close = close
        self._result: Runs[E] | None = None

    @property
    def result(self) -> Runs[E]:
        """What was done with the poll batch, once every run was taken (else
        :class:`RuntimeError`)."""
        if self._result is None:
            raise RuntimeError("the runs of the poll batch were not all taken")
        return self._result

    def __iter__(self) -> Iterator[R]:
        return self

    def __next__(self) -> R:
        try:
            return next(self._gen)
        except StopIteration as stop:
            self._result = stop.value
            raise

    def __enter__(self) -> ScheduledRuns[E, R]:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._gen.close()
        self._close()


def route_in_runs(
    events: Sequence[E],
    route: Callable[[E], O],
    submit: Callable[[list[E], list[O]], Future[R]],
    *,
    deadline_s: float,
    min_run_s: float = 0.05,
    size: Callable[[E], int] | None = None,
    min_run_bytes: int = 1024 * 1024,
    clock: Callable[[], float] = time.monotonic,
    progress: Callable[[], None] | None = None,
    ready: Callable[[E], bool] | None = None,
    close: Callable[[], None] = lambda: None,
    carried: Pending[E, R] | None = None,
    hold_last: bool = False,
) -> ScheduledRuns[E, R]:
    """Route ``events`` (one poll batch, in order) in runs, each committed while the next
    is routed. Returns the :class:`ScheduledRuns`: each finished run, then ``result``.

    ``route`` decides one event (no I/O to Kafka, never expected to raise); ``submit``
    starts the transaction of a run ``(events, outcomes)`` and returns its future (a
    :class:`Settled`), only when no other run is in flight. ``deadline_s``: processing
    deadline of the batch, seconds of ``clock`` from the first event. A run is submitted
    once it took ``min_run_s`` seconds to route and holds ``min_run_bytes`` (bytes of an
    event: ``size``; without it only ``min_run_s`` bounds a run). ``progress`` is called
    after every routed event. ``ready`` is asked, past the deadline, whether the next
    event's outcome is computed already (:meth:`RouteAhead.ready`): such an outcome is
    taken, not routed again in the next poll batch. ``close`` is called when the runs are
    left (:meth:`RouteAhead.close`); then no transaction is in flight.

    ``carried``: a run submitted before (the previous poll batch's last), maybe still
    committing: the run in flight as the first run is routed (its events first in ``rest``
    if it failed; not counted in ``committed``). ``hold_last``: when every event was
    routed within the deadline, the last run is not submitted but returned (``held``).
    """

    def runs() -> Generator[R, None, Runs[E]]:
        started = clock()
        run: tuple[list[E], list[O]] = ([], [])
        run_started, run_bytes = started, 0
        pending, theirs = carried, (None if carried is None else carried[0])
        committed = transactions = routed = 0
        past_deadline = False

        def settle(p: Pending[E, R], unsent: list[E]) -> Generator[R, None, Runs[E] | None]:
            """Wait for run ``p``'s transaction and yield it; the poll batch's Runs when it
            committed less than the whole run (``unsent``: routed since, not submitted)."""
            nonlocal committed
            settled = p[1].result()
            yield settled
            committed += 0 if p[0] is theirs else settled.committed
            if settled.committed < len(p[0]):
                rest = p[0][settled.committed :] + unsent + list(events[routed:])
                return Runs(committed, transactions, rest, False, True)
            return None

        try:
            for event in events:
                if routed and clock() - started >= deadline_s and not (ready and ready(event)):
                    past_deadline = True
                    break
                run[0].append(event)
                run[1].append(route(event))
                routed += 1
                run_bytes += min_run_bytes if size is None else size(event)
                if progress is not None:
                    progress()
                if run_bytes < min_run_bytes or clock() - run_started < min_run_s:
                    continue
                if pending is not None:
                    if not pending[1].done():
                        continue
                    sent_future, pending = pending, None
                    if (failed := (yield from settle(sent_future, run[0]))) is not None:
                        return failed
                pending = (run[0], submit(*run))
                transactions += 1
                run, run_started, run_bytes = ([], []), clock(), 0
            if pending is not None:
                sent_future, pending = pending, None
                if (failed := (yield from settle(sent_future, run[0]))) is not None:
                    return failed
            if hold_last and not past_deadline:
                return Runs(committed, transactions, [], False, False, run if run[0] else None)
            if run[0]:
                transactions += 1
                if (failed := (yield from settle((run[0], submit(*run)), []))) is not None:
                    return failed
        finally:
            if pending is not None:  # route() or the caller raised: let the transaction end first
                with contextlib.suppress(BaseException):
                    pending[1].result()
        return Runs(committed, transactions, list(events[routed:]), past_deadline, False)

    return ScheduledRuns(runs(), close)


def _either(first: Callable[[E], bool], second: Callable[[E], bool] | None) -> Callable[[E], bool]:
    """``ready`` asking ``first`` (always: it learns the deadline passed), then ``second``."""
    return first if second is None else (lambda e: first(e) or second(e))


def event_bytes(m: Any) -> int:
    """Bytes of a consumed record's value (0 for a tombstone)."""
    return len(m.value() or b"")


class Schedule:
    """The runs of each poll batch: routed on the loop's thread (large events ahead on
    ``config.routing_threads`` threads), committed on a committer thread; ``config`` also
    gives ``min_ahead_bytes``, ``batch_deadline_s``, ``min_run_bytes``, ``min_run_route_s``.
    """

    def __init__(self, config: GateConfig) -> None:
        self.config = config
        self._committer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gate-commit")
        threads = config.routing_threads
        self._routers = (
            ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gate-route")
            if threads > 1
            else None
        )

    def runs(
        self,
        events: list[MessageLike],
        route: Callable[[MessageLike], Outcome],
        commit: Callable[[Run], Done],
        progress: Callable[[], None] | None = None,
        *,
        carried: Pending[MessageLike, Done] | None = None,
        hold_last: bool = False,
    ) -> ScheduledRuns[MessageLike, Done]:
        """The finished runs of one poll batch (:func:`route_in_runs`), to use in a
        ``with`` block.

        ``route`` decides one event (:class:`worker.gate.route.Router`, safe to call from
        two threads); ``commit`` writes a run in a transaction on the committer thread
        (:meth:`worker.gate.checkpoint.Checkpoint.commit`); ``progress`` is called after
        every routed event; ``carried``, ``hold_last`` as :func:`route_in_runs`'s.
        """
        c = self.config
        ready: Callable[[MessageLike], bool] | None = None
        close: Callable[[], None] = lambda: None  # noqa: E731
        sizes = [event_bytes(e) for e in events]
        # small events in windows (a lone event has nothing to share its facts with)
        if c.group_events > 1 and len(events) > 1 and isinstance(route, Router):
            grouped = GroupedRoute(events, route, config=c, sizes=sizes)
            route, ready = grouped, grouped.ready
        # large events routed ahead, results in order (a batch without one: no wrapper)
        large = [n >= c.min_ahead_bytes for n in sizes]
        if self._routers is not None and any(large):
            ahead = RouteAhead(events, route, self._routers, large=large, depth=c.routing_threads)
            route, close = ahead, ahead.close
            ready = _either(ahead.ready, ready)

        def submit(events: list[MessageLike], outcomes: list[Outcome]) -> Future[Done]:
            return self.submit(commit, Run(events, outcomes))

        return route_in_runs(events, route, submit, deadline_s=c.batch_deadline_s,
                             min_run_s=c.min_run_route_s, size=event_bytes,
                             min_run_bytes=c.min_run_bytes, progress=progress, ready=ready,
                             close=close, carried=carried, hold_last=hold_last)  # fmt: skip

    def submit(self, commit: Callable[[Run], Done], run: Run) -> Future[Done]:
        """``commit(run)`` on the committer thread; only while no other run is in flight."""
        return self._committer.submit(commit, run)

    def close(self) -> None:
        """Shut the thread pools down (idle: a step never returns mid-run)."""
        self._committer.shutdown(wait=True)
        if self._routers is not None:
            self._routers.shutdown(wait=True)
