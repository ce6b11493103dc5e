"""A poll batch routed in runs: each run commits while the next one is routed.

The worker's checkpoint discipline is produce, then commit, in one transaction per run of
events, after the run is routed (:mod:`worker.gate.pipeline`). Committing a transaction
is mostly waiting (the broker writes the records and the transaction markers), so while
one run commits on the committer thread, the next events are routed on the caller's.
:func:`route_in_runs` routes the events of one poll batch in order and hands the routed
events to a new transaction (``hand_off``) once the previous transaction has finished, the
run holds at least ``min_run_bytes`` of events and took at least ``min_run_s`` to route.
A transaction costs the client and the broker a few requests whatever its size, and its
wait grows with the bytes it writes (the admitted record is the event): splitting a poll
batch pays only for large events, so a poll batch of small events (under 1 MiB) stays one
transaction. Runs commit strictly in order and never overlap each other; the poll that
follows a poll batch happens only once its last transaction has finished, so a rebalance
(which runs in the poll) never meets a transaction in flight.

The processing deadline (:mod:`worker.gate.deadline`) is kept: once ``deadline_s`` has
passed, no more events are routed (at least one is), the routed ones are committed and
the rest is returned, to be consumed again. A failed transaction ends the poll batch:
its uncommitted events, the events routed meanwhile and the unrouted rest are returned,
in order, for the caller to rewind (consumed again, nothing decided twice).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["MIN_RUN_BYTES", "MIN_RUN_ROUTE_S", "Runs", "route_in_runs"]

#: Least routing time of a run before it gets a transaction of its own, in seconds (the
#: last run of a poll batch is committed whatever it holds).
MIN_RUN_ROUTE_S = 0.05

#: Least bytes of events (values as consumed) in a run before it gets a transaction of its
#: own. Measured on the embedded broker, same events, side by side: one-feature events
#: (700 bytes) were 5% slower with a transaction per 50 ms of routing than with one per
#: poll batch; with this bound they are one transaction again, and 100- and 1,000-feature
#: events (20 kB, 200 kB) were 20-25% faster than with one transaction per poll batch.
MIN_RUN_BYTES = 1024 * 1024

E = TypeVar("E")
O = TypeVar("O")  # noqa: E741 - an outcome
R = TypeVar("R")


@dataclass(frozen=True)
class Runs(Generic[E]):
    """What :func:`route_in_runs` did with one poll batch.

    ``committed``: events committed, a prefix of the batch. ``transactions``: runs handed
    off. ``rest``: the events not committed, in batch order (to be consumed again).
    ``past_deadline``: routing stopped at the deadline. ``failed``: a transaction failed.
    """

    committed: int
    transactions: int
    rest: list[E]
    past_deadline: bool
    failed: bool


def route_in_runs(
    events: Sequence[E],
    route: Callable[[E], O],
    hand_off: Callable[[list[E], list[O]], Future[R]],
    settle: Callable[[R], int],
    *,
    deadline_s: float,
    min_run_s: float = MIN_RUN_ROUTE_S,
    size: Callable[[E], int] | None = None,
    min_run_bytes: int = MIN_RUN_BYTES,
    clock: Callable[[], float] = time.monotonic,
    progress: Callable[[], None] | None = None,
    ready: Callable[[E], bool] | None = None,
) -> Runs[E]:
    """Route ``events`` in order, committing them in runs while the next run is routed.

    Parameters
    ----------
    events : sequence
        One poll batch, in consumption order.
    route : callable
        Decides one event (no I/O to Kafka); never expected to raise.
    hand_off : callable
        Starts the transaction of a run ``(events, outcomes)`` and returns its future
        (e.g. submitted to a one-thread executor); called only when no other run is in
        flight.
    settle : callable
        Takes a finished run's result, on the caller's thread, and returns how many of its
        events were committed (a prefix; all of them unless it failed). Errors it raises
        (fenced, fatal) propagate.
    deadline_s, clock : float, callable
        Processing deadline of the batch, in seconds of ``clock`` from the call.
    min_run_s : float
        Least routing time of a run (seconds) before it is handed off.
    size, min_run_bytes : callable, int
        Bytes of an event, and the least bytes of a run before it is handed off (without
        ``size``, only ``min_run_s`` bounds a run).
    progress : callable, optional
        Called after every routed event (the loop is alive).
    ready : callable, optional
        Asked, once the deadline has passed, whether the next event's outcome is already
        computed (routed ahead: :meth:`worker.gate.ahead.RouteAhead.ready`); such an
        outcome is taken, not thrown away and routed again in the next poll batch.

    Returns
    -------
    Runs
        When this returns or raises, no transaction is in flight.
    """
    started = clock()
    run: tuple[list[E], list[O]] = ([], [])
    run_started = started
    run_bytes = 0
    pending: tuple[list[E], Future[R]] | None = None
    committed = transactions = routed = 0
    past_deadline = False

    def failure(sent: list[E], done: int, unsent: list[E]) -> Runs[E]:
        rest = sent[done:] + unsent + list(events[routed:])
        return Runs(committed, transactions, rest, False, True)

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
                sent, future, pending = pending[0], pending[1], None
                done = settle(future.result())
                committed += done
                if done < len(sent):
                    return failure(sent, done, run[0])
            pending = (run[0], hand_off(*run))
            transactions += 1
            run, run_started, run_bytes = ([], []), clock(), 0
        if pending is not None:
            sent, future, pending = pending[0], pending[1], None
            done = settle(future.result())
            committed += done
            if done < len(sent):
                return failure(sent, done, run[0])
        if run[0]:
            transactions += 1
            done = settle(hand_off(*run).result())
            committed += done
            if done < len(run[0]):
                return failure(run[0], done, [])
    finally:
        if pending is not None:  # route() or settle() raised: let the transaction end first
            with contextlib.suppress(BaseException):
                pending[1].result()
    return Runs(committed, transactions, list(events[routed:]), past_deadline, False)
