"""Large events of a poll batch routed several at a time, results in order.

A worker process routes in one Python thread, but most of the time a large event costs is
spent in GEOS (parse, validity, predicates), and shapely 2 releases the GIL while GEOS
works (shapely's "Multithreading" documentation; pyproj objects are thread-safe since
pyproj 3.1). So while one thread waits on GEOS for one event, a second can run the
Python part (decode, clauses, records) of the next: on the shipped countries, routing
events of 1,000 features two at a time took 0.59 of the time of one at a time (offline).
Small events gain nothing and lose to the threads' contention for the GIL (one-feature
events took 1.7x as long), so an event is routed ahead only from :data:`MIN_AHEAD_BYTES`.

This is not a second consumer: the events are the poll batch's, consumed by this group
member from its assigned partitions, decided in the same order with the same results,
and committed by :func:`worker.gate.runs.route_in_runs` exactly as before. ``route``
must be safe to call from two threads (:func:`worker.gate.route.route` is: it reads
the registry, builds its own batch and facts, and its shared caches tolerate a race by
computing twice).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from typing import Generic, TypeVar

__all__ = ["DEFAULT_ROUTING_THREADS", "MIN_AHEAD_BYTES", "RouteAhead"]

#: Events routed at once by default (``contract-gate run --routing-threads``).
DEFAULT_ROUTING_THREADS = 2

#: Least bytes of an event (its value as consumed) for it to be routed ahead. Measured
#: with one worker on the embedded broker, one routing thread against two, side by side
#: (shipped countries, admin_boundaries v1): events of 100 features (120 kB) 0.95x the
#: events/s, 300 features (325 kB) 1.06x and 1.21x, 1,000 features (1 MB) 1.17x and 1.18x.
#: Offline (``route`` alone) events of 30 features (24 kB) took 1.16x as long.
MIN_AHEAD_BYTES = 256 * 1024

E = TypeVar("E")
O = TypeVar("O")  # noqa: E741 - an outcome


class RouteAhead(Generic[E, O]):
    """``route`` for :func:`worker.gate.runs.route_in_runs`, routing large events ahead.

    Called with the poll batch's events in order (``events[0]``, ``events[1]``, ...),
    it returns each event's outcome, as ``route(event)`` would. When it is asked for
    event ``i``, the events ``i`` to ``i + depth - 1`` that hold at least ``min_bytes``
    are submitted to ``executor`` (``depth`` threads: they are routed at once), and the
    outcome of ``i`` is awaited; a smaller event is routed on the caller's thread.

    Parameters
    ----------
    events : sequence
        The poll batch, in consumption order.
    route : callable
        Decides one event; called from the executor's threads for large events.
    executor : concurrent.futures.Executor
        ``depth`` threads.
    depth : int
        Events in flight at most, 1 or more (default :data:`DEFAULT_ROUTING_THREADS`).
    size : callable
        Bytes of an event.
    min_bytes : int
        Least bytes of an event routed ahead (default :data:`MIN_AHEAD_BYTES`).

    Raises
    ------
    ValueError
        Asked for an event out of order. Whatever ``route`` raises is raised by the call
        that asks for that event's outcome.
    """

    def __init__(
        self,
        events: Sequence[E],
        route: Callable[[E], O],
        executor: Executor,
        *,
        size: Callable[[E], int],
        depth: int = DEFAULT_ROUTING_THREADS,
        min_bytes: int = MIN_AHEAD_BYTES,
    ) -> None:
        if depth < 1:
            raise ValueError(f"depth must be 1 or more, got {depth}")
        self._depth = depth
        self._events = events
        self._route = route
        self._executor = executor
        self._large = [size(e) >= min_bytes for e in events]
        self._ahead: dict[int, Future[O]] = {}
        self._next = 0
        self._submitted = 0
        self._routing_ahead = True

    @property
    def routed_ahead(self) -> int:
        """Events submitted to the executor so far."""
        return self._submitted

    def __call__(self, event: E) -> O:
        i = self._next
        if i >= len(self._events) or self._events[i] is not event:
            raise ValueError("RouteAhead is asked for the poll batch's events in order")
        self._next += 1
        # past the deadline (ready() was asked) nothing more is routed ahead
        last = min(i + self._depth, len(self._events)) if self._routing_ahead else i
        for j in range(i, last):
            if self._large[j] and j not in self._ahead:
                self._ahead[j] = self._executor.submit(self._route, self._events[j])
                self._submitted += 1
        future = self._ahead.pop(i, None)
        return self._route(event) if future is None else future.result()

    def ready(self, event: E) -> bool:
        """Whether the outcome of ``event``, the next one to be asked for, is computed
        already. Asked once the poll batch's deadline has passed
        (:func:`worker.gate.runs.route_in_runs`): from then on no event is routed ahead,
        and an outcome computed already is taken rather than routed again next time."""
        self._routing_ahead = False
        i = self._next
        future = self._ahead.get(i)
        return i < len(self._events) and self._events[i] is event and bool(future and future.done())

    def close(self) -> None:
        """Wait for the events routed ahead and never asked for (the poll batch stopped
        at its deadline or at a failed transaction; they are consumed again): nothing is
        routing once this returns. Their outcomes and errors are dropped."""
        ahead, self._ahead = self._ahead, {}
        for future in ahead.values():
            if not future.cancel():
                future.exception()  # waits; a routing error is dropped with the outcome
