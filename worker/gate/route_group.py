"""Route the small events of a poll batch in groups: their facts computed together.

A one-feature event paid GEOS's per-call overhead and the facts' Python once per event
(parse, validity, types, bounds, area of use: about 30% of routing it). :func:`route_group`
decodes a window of events, evaluates those of one layer, one set of active versions and
one geometry metadata (:func:`worker.core.evaluate_group.group_key`) as one group
(:func:`worker.core.evaluate_group.evaluate_group`: the facts over all their features,
each event measured and decided on its own), and builds each event's records. Every
outcome is the one :func:`worker.gate.route.route` gives the event alone (the same
decision, records, reasons; a test compares them on mixed poll batches): undecodable
events, layers without a contract, events read by reference and events of 64 features or
more are decided alone, in place.

:class:`GroupedRoute` is the schedule's ``route`` for one poll batch: asked for an event
it routes the window of up to ``group_events`` small events (``group_bytes`` of values)
from there, in one call, and hands their outcomes out in order. A window ends after the
first event read by reference, so a poll batch's deadline is overrun by at most one such
payload, as one by one.

:class:`RouteAhead` routes the large events of a poll batch ahead on threads. Most of a
large event's cost is GEOS, and shapely 2 releases the GIL while GEOS works (pyproj
objects are thread-safe since 3.1), so a second thread can run the Python part of the next
event meanwhile: events of 1,000 shipped countries routed two at a time took 0.59 of the
time of one at a time. Small events lose to the threads' contention for the GIL (1.7x as
long), so only events of ``min_ahead_bytes`` are routed ahead. It is not a second
consumer: the same events, decided in the same order with the same results, committed
exactly as before (:mod:`worker.gate.schedule`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from datetime import datetime
from typing import Generic, TypeVar

from worker.core.evaluate_group import evaluate_group, group_key
from worker.core.lifecycle.read_paths import opts_in
from worker.core.model import ActiveVersion, Batch, Decision
from worker.gate.config import GateConfig
from worker.gate.records import Outcome, Source
from worker.gate.route import Decoded, Router, decide_alone, decode_source, outcome_of, refusal
from worker.io import codec
from worker.io.codec.event_groups import batches_from_events
from worker.kafka.protocols import MessageLike

__all__ = ["GroupedRoute", "RouteAhead", "route_group"]

E = TypeVar("E")
O = TypeVar("O")  # noqa: E741 - an outcome


def route_group(router: Router, sources: Sequence[Source], *, now: datetime) -> list[Outcome]:
    """The outcomes of ``sources`` (in order) routed by ``router``'s settings at ``now``:
    those of a prefix of ``sources`` that ends with the first event read by reference
    (all of them when none is). Never raises for bad input (see :func:`route`)."""
    decoded: list[Decoded] = []
    decode_s: list[float] = []
    started = time.perf_counter()
    pre = _pre_decoded(sources, router.wire is None)
    shared_s = (time.perf_counter() - started) / len(sources)  # the window's, shared evenly
    for source, batch_or_error in zip(sources, pre, strict=True):
        started = time.perf_counter()
        decoded.append(decode_source(source, router.loader, router.wire, batch_or_error))
        decode_s.append(time.perf_counter() - started + shared_s)
        batch = decoded[-1].batch
        if batch is not None and (decoded[-1].chunked is not None or batch.payload_uri):
            break
    started = time.perf_counter()
    decided = _decide(router, decoded, now)
    each_s = (time.perf_counter() - started) / len(decoded)  # the group's, shared evenly
    s, out = router.settings, []
    # a prefix of sources was decoded
    for source, d, (decision, per_major, versions), own_s in zip(
        sources, decoded, decided, decode_s, strict=False
    ):
        out.append(outcome_of(source, d, decision, per_major, versions, router.active_versions,
                              s.topics, now=now, worker_id=s.instance_id,
                              max_record_bytes=router.max_record_bytes,
                              duration_s=own_s + each_s))  # fmt: skip
    return out


def _pre_decoded(sources: Sequence[Source], plain: bool) -> list[Batch | Exception | None]:
    """The Batch of each source's value, or what decoding it raised, the events' columns
    built together (:func:`~worker.io.codec.event_groups.batches_from_events`); None for a
    null value and for every event in the Schema Registry wire format (``plain`` False),
    decoded by :func:`~worker.gate.route.decode_source` itself."""
    out: list[Batch | Exception | None] = [None] * len(sources)
    if not plain:
        return out
    records, at = [], []
    for i, source in enumerate(sources):
        if source.value is None:
            continue
        try:
            records.append(codec.decode_event(source.value))
            at.append(i)
        except Exception as exc:  # decode_source raises it as its own
            out[i] = exc
    for i, batch in zip(at, batches_from_events(records, derive_schemas=True), strict=True):
        out[i] = batch
    return out


Decided = tuple[Decision, bool, Sequence[ActiveVersion]]


def _decide(router: Router, decoded: list[Decoded], now: datetime) -> list[Decided]:
    """``(decision, per-major copies, versions)`` of each decoded event: alone, or in the
    group of its layer, versions and :func:`group_key`."""
    out: dict[int, Decided] = {}
    groups: dict[tuple[object, ...], tuple[Sequence[ActiveVersion], list[int]]] = {}
    for i, d in enumerate(decoded):
        versions: Sequence[ActiveVersion] = ()
        if d.failed is None and d.batch is not None:
            versions = router.active_versions(d.batch.layer)
        key = _group(d, versions)
        if key is None:
            out[i] = (*decide_alone(d, versions, now, router.chunk_pool), versions)
        else:
            groups.setdefault(key, (versions, []))[1].append(i)
    for versions, members in groups.values():
        batches = [b for b in (decoded[i].batch for i in members) if b is not None]
        per_major = opts_in(v.contract for v in versions)
        for i, decision in zip(members, evaluate_group(batches, versions, now=now), strict=True):
            out[i] = (decision, per_major, versions)
    return [out[i] for i in range(len(decoded))]


def _group(d: Decoded, versions: Sequence[ActiveVersion]) -> tuple[object, ...] | None:
    """The group of a decoded event, or None when it is decided alone."""
    batch = d.batch
    if d.failed is not None or batch is None or d.chunked is not None or batch.payload_uri:
        return None
    if refusal(batch, versions) is not None:
        return None
    key = group_key(batch)
    if key is None:
        return None
    return (batch.layer, key, *(id(v) for v in versions))


class GroupedRoute:
    """``route`` of one poll batch's ``events`` for :func:`worker.gate.schedule.route_in_runs`,
    routing its small events in windows (:func:`route_group`).

    Events of ``config.min_ahead_bytes`` or more (``sizes``: bytes of each event's value,
    in order, else :class:`ValueError`; routed ahead on threads) and events not of this
    poll batch are routed alone by ``router``, on the caller's thread (safe from several
    threads); small events are asked for in order, from the loop's thread. A window holds
    at most ``config.group_events`` small events and ``config.group_bytes`` bytes of their
    values, at least one event.
    """

    def __init__(
        self,
        events: Sequence[MessageLike],
        router: Router,
        *,
        config: GateConfig,
        sizes: Sequence[int],
    ) -> None:
        if len(sizes) != len(events):
            raise ValueError(f"{len(sizes)} sizes for {len(events)} events")
        self._events = events
        self._router = router
        self._most = config.group_events
        self._most_bytes = config.group_bytes
        self._sizes = sizes
        self._small = [n < config.min_ahead_bytes for n in sizes]
        self._index = {id(e): i for i, e in enumerate(events)}
        self._done: dict[int, Outcome] = {}

    def __call__(self, event: MessageLike) -> Outcome:
        i = self._index.get(id(event))
        if i is None or not self._small[i] or self._events[i] is not event:
            return self._router(event)
        out = self._done.pop(i, None)
        if out is None:
            window = self._window(i)
            sources = [_source(self._events[j]) for j in window]
            outcomes = route_group(self._router, sources, now=self._router.clock())
            self._done.update(zip(window[1:], outcomes[1:], strict=False))
            out = outcomes[0]
        return out

    def _window(self, i: int) -> list[int]:
        """The small events from ``i`` on (``i`` first), at most ``group_events`` of them
        and ``group_bytes`` of values (at least ``i``)."""
        window: list[int] = []
        held, sizes, small = 0, self._sizes, self._small
        for j in range(i, len(self._events)):
            if not small[j]:
                continue
            held += sizes[j]
            if window and held > self._most_bytes:
                break
            window.append(j)
            if len(window) >= self._most:
                break
        return window

    def ready(self, event: MessageLike) -> bool:
        """Whether the outcome of ``event`` is computed already (in a window routed)."""
        i = self._index.get(id(event))
        return i is not None and i in self._done


def _source(m: MessageLike) -> Source:
    """The :class:`Source` of a consumed record (as :class:`Router` builds it)."""
    return Source(m.topic(), m.partition(), m.offset(), m.key(), m.value(),  # type: ignore[arg-type]
                  tuple(m.headers() or ()))  # fmt: skip


class RouteAhead(Generic[E, O]):
    """``route`` for :func:`route_in_runs`, routing large events ahead.

    Called with the poll batch's ``events`` in order, it returns each event's outcome, as
    ``route(event)`` would. Asked for event ``i``, it submits the events ``i`` to
    ``i + depth - 1`` (``depth`` >= 1, :attr:`GateConfig.routing_threads`) that are
    ``large`` (one flag per event: at least :attr:`GateConfig.min_ahead_bytes`) to
    ``executor`` (``depth`` threads, routing them at once) and awaits the outcome of ``i``;
    a small event is routed on the caller's thread.

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
        large: Sequence[bool],
        depth: int = 2,
    ) -> None:
        if depth < 1:
            raise ValueError(f"depth must be 1 or more, got {depth}")
        if len(large) != len(events):
            raise ValueError(f"{len(large)} large flags for {len(events)} events")
        self._depth = depth
        self._events = events
        self._route = route
        self._executor = executor
        self._large = list(large)
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
        (:func:`route_in_runs`): from then on no event is routed ahead,
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
