"""The loop's housekeeping around routing and committing: one poll batch, the consumer
state it reads, and what the loop reports.

- :func:`poll_batch`: take the records already fetched, wait only while the batch is small.
  ``Consumer.consume(n, timeout)`` returns when ``n`` records are there or ``timeout`` has
  passed. Called with the poll-batch bounds (500 events, 100 ms), it left the worker idle
  for the whole window whenever fewer than 500 large events were queued, although
  librdkafka had fetched them while the previous batch was being routed: 100 ms per poll
  batch of 1 MB events, about 5 ms an event. So what is queued is taken at once, and more
  is awaited, in short slices, only while the batch is small in both events and bytes.
- A rebalance runs inside ``consume()``. librdkafka drops the records of a revoked
  assignment that one ``consume()`` call has gathered (its version barrier,
  confluentinc/librdkafka#3269, for confluent-kafka-python#1013), but not those an earlier
  call returned: a poll batch made of several calls would commit records of a partition it
  no longer owns while the partition's next owner decides them too. So the records of a
  partition revoked during the poll batch (:class:`Assignment`, set by the rebalance
  callbacks) that earlier calls returned are dropped, and the batch ends there.
- :class:`Liveness` is the loop's last sign of life (``/healthz``), :func:`partition_lag`
  the consumer lag, :class:`Instruments` the telemetry calls (implemented in
  :mod:`worker.ops.metrics`), and :func:`report_decisions`, :func:`report_config_event`,
  :func:`log_batch` what the loop reports once something is done.

Tuning defaults are :class:`worker.gate.config.GateConfig`'s.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from worker.core.errors import BrokerError
from worker.core.lifecycle.config_events import ConfigEvent
from worker.core.lifecycle.policy import Published
from worker.core.lifecycle.registry import RecordingRegistry
from worker.core.model import Decision
from worker.gate.config import GateConfig
from worker.gate.records import Outcome
from worker.kafka.clients import PARTITION_EOF, map_kafka_errors
from worker.kafka.protocols import TopicPartition

__all__ = [
    "IDLE_WAIT_S",
    "Assignment",
    "Instruments",
    "Liveness",
    "NullInstruments",
    "hand_over",
    "log_batch",
    "partition_lag",
    "poll_batch",
    "report_config_event",
    "report_decisions",
    "without_errors",
    "without_revoked",
]

log = logging.getLogger(__name__)

Partition = tuple[str, int]

_DEFAULTS = GateConfig()

#: Longest single wait while a small batch fills (seconds).
_SLICE_S = 0.01

#: Longest wait for a first record when none is queued (seconds), whatever ``wait_s``: an
#: idle worker blocks here instead of spinning (``--max-batch-wait-ms 0`` made one run at
#: 100% CPU).
IDLE_WAIT_S = 0.1


def _value_bytes(messages: Sequence[Any]) -> int:
    return sum(len(m.value() or b"") for m in messages)


def poll_batch(
    consumer: Any,
    max_events: int,
    wait_s: float,
    *,
    ready_bytes: int = _DEFAULTS.ready_bytes,
    clock: Callable[[], float] = time.monotonic,
    keep_waiting: Callable[[], bool] | None = None,
    take_revoked: Callable[[], frozenset[Partition]] | None = None,
) -> list[Any]:
    """The records of one poll batch (one transaction) from a subscribed ``consumer``
    (:class:`~worker.kafka.protocols.ConsumerLike`), error events included (the caller
    sorts them): those librdkafka had fetched (up to ``max_events`` >= 1), then, while
    fewer than ``max_events`` records and ``ready_bytes`` bytes of values are held, those
    that arrive within ``wait_s`` seconds (>= 0) of ``clock`` (monotonic). When nothing is
    queued, the first record is awaited up to ``max(wait_s, IDLE_WAIT_S)``.

    ``keep_waiting`` is called between waits (every 10 ms at most; the worker marks its
    loop alive there): False ends the wait at once. ``take_revoked`` returns the
    ``(topic, partition)`` pairs revoked since its last call (:meth:`Assignment.take_revoked`):
    their records returned by an earlier ``consume()`` of this batch are dropped, and the
    batch ends.
    """
    started = clock()
    if take_revoked is not None:
        take_revoked()  # revoked before this poll batch: none of its records is held
    messages: list[Any] = []
    held = 0
    timeout_s = 0.0
    while True:
        more = consumer.consume(max_events - len(messages), timeout=timeout_s)
        revoked = take_revoked() if take_revoked is not None else frozenset()
        if revoked:
            return without_revoked(messages, revoked) + list(more)
        messages.extend(more)
        held += _value_bytes(more)
        if len(messages) >= max_events or held >= ready_bytes:
            return messages
        window_s = wait_s if messages else max(wait_s, IDLE_WAIT_S)
        left_s = window_s - (clock() - started)
        if left_s <= 0 or (keep_waiting is not None and not keep_waiting()):
            return messages
        timeout_s = min(_SLICE_S, left_s)


def without_errors(messages: Sequence[Any]) -> list[Any]:
    """``messages`` less their error events (logged, but partition EOF)."""
    events = []
    for m in messages:
        err = m.error()
        if err is None:
            events.append(m)
        elif err.code() != PARTITION_EOF:
            log.warning("consumer error: %s", err.str())
    return events


def without_revoked(messages: Sequence[Any], revoked: frozenset[Partition]) -> list[Any]:
    """``messages`` less the records of ``revoked`` partitions (logged when any)."""
    kept = [m for m in messages if (m.topic(), m.partition()) not in revoked]
    if len(kept) < len(messages):
        log.warning(
            "a rebalance revoked %s during a poll batch: %d records of them, consumed "
            "before it, are dropped (read again from the committed offsets by the "
            "partitions' next owner)",
            ", ".join(f"{t}[{p}]" for t, p in sorted(revoked)),
            len(messages) - len(kept),
        )
    return kept


class Assignment:
    """The input partitions assigned to this member, kept by the rebalance callbacks
    (which only set these flags)."""

    def __init__(self) -> None:
        # replaced, never mutated: the HTTP thread may read it while the loop reassigns
        self.assigned: frozenset[tuple[str, int]] = frozenset()
        #: partitions revoked during the current poll batch (:meth:`take_revoked`)
        self._revoked: set[tuple[str, int]] = set()

    def on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        """``on_assign`` of the consumer."""
        self.assigned = self.assigned | {(p.topic, p.partition) for p in partitions}
        log.info("assigned %s", sorted(self.assigned))

    def on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        """``on_revoke`` of the consumer."""
        revoked = {(p.topic, p.partition) for p in partitions}
        self.assigned = self.assigned - revoked
        self._revoked |= revoked
        log.info("revoked %s", sorted(revoked))

    def take_revoked(self) -> frozenset[tuple[str, int]]:
        """The partitions revoked since the last call (:func:`poll_batch`
        drops the records of a revoked partition that it consumed before the rebalance)."""
        revoked, self._revoked = frozenset(self._revoked), set()
        return revoked


class Liveness:
    """The loop's last sign of life (``time.monotonic()``, read by ``/healthz``) and the
    event it stops on."""

    def __init__(self) -> None:
        self.last_monotonic = time.monotonic()
        self.stop: threading.Event | None = None

    def beat(self) -> None:
        """The loop is alive (an event was decided, or a poll batch is being waited for)."""
        self.last_monotonic = time.monotonic()

    def keep_waiting(self) -> bool:
        """While a poll batch waits for events: alive, and False once asked to stop."""
        self.beat()
        return self.stop is None or not self.stop.is_set()


def partition_lag(consumer: Any, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """Lag per partition: high watermark minus the consumer's position (next offset),
    both local to the client: ``get_watermark_offsets(cached=True)`` is fed by every Fetch
    response (a ListOffsets watermark, ``cached=False``, can be too low on Tansu after
    multi-record produce batches). Partitions without a known watermark or position
    (nothing fetched yet) are left out."""
    lag: dict[tuple[str, int], int] = {}
    try:
        with map_kafka_errors():
            positions = consumer.position([TopicPartition(t, p) for t, p in partitions])
            for tp in positions:
                if tp.offset < 0:
                    continue
                _, high = consumer.get_watermark_offsets(tp, cached=True)
                if high is not None and high >= 0:
                    lag[(tp.topic, tp.partition)] = max(0, high - tp.offset)
    except BrokerError as exc:  # e.g. a partition revoked meanwhile: next refresh
        log.debug("consumer lag not refreshed: %s", exc)
    return lag


class Instruments(Protocol):
    """The telemetry calls of the loop (:class:`~worker.gate.processor.Processor`);
    :class:`worker.ops.metrics.GateMetrics` implements them with OpenTelemetry instruments.
    The bodies here record nothing: :class:`NullInstruments` inherits them."""

    def record_decision(
        self,
        layer: str,
        decision: Decision,
        duration_s: float,
        objectives: Mapping[str, float] | None = None,
    ) -> None:
        """One routed batch: its decision, verdicts, clause results; ``duration_s`` in s."""
        return None

    def record_decisions(
        self, decisions: Iterable[tuple[str, Decision, float, Mapping[str, float] | None]]
    ) -> None:
        """Routed batches, ``(layer, decision, duration_s, objectives)`` each, in order:
        as :meth:`record_decision` each (an implementation may sum a run's increments)."""
        for layer, decision, duration_s, objectives in decisions:
            self.record_decision(layer, decision, duration_s, objectives)

    def record_config_rejection(
        self, layer: str | None, reason: str, known_layers: Collection[str]
    ) -> None:
        """One config record the registry rejected, with the rejection reason; ``layer``
        (from the untrusted record) is a label only when in ``known_layers``."""
        return None

    def record_config_tombstone(self, layer: str | None, known_layers: Collection[str]) -> None:
        """One tombstone applied from the config topic (``layer`` bounded as above)."""
        return None

    def set_lifecycle(
        self, published: Sequence[Published], now: Callable[[], datetime] | None = None
    ) -> None:
        """The versions now on the config topic (any state)."""
        return None

    def set_consumer_lag(self, lag: Mapping[tuple[str, int], int]) -> None:
        """Records behind the high watermark per assigned ``(topic, partition)``."""
        return None

    def set_config_bootstrap(self, records: int, bootstrapped: bool) -> None:
        """Config records read so far and whether the bootstrap reached partition EOF."""
        return None

    def set_history_breaks(
        self, breaks: Mapping[str, tuple[str, ...]], known_layers: Collection[str]
    ) -> None:
        """Layer -> breaks of its contract history (issue 30); ``layer`` bounded as above."""
        return None

    def restore_slo(
        self,
        records: Iterable[Mapping[str, Any]],
        objectives: Mapping[tuple[str, str], float],
        now: datetime,
    ) -> int:
        """Refill SLO windows from decoded evaluation records at start; returns how many
        verdicts were restored (``objectives``: ``(layer, version) -> objective`` of the
        active versions; records of other versions are ignored)."""
        return 0


class NullInstruments(Instruments):
    """:class:`Instruments` that record nothing (a loop without telemetry)."""


def report_config_event(
    metrics: Instruments,
    registry: RecordingRegistry,
    event: ConfigEvent,
    bootstrap: tuple[int, bool],
    clock: Callable[[], datetime],
) -> None:
    """Telemetry of one config record (``bootstrap``: records read so far, and whether the
    config topic was read to its end). Label values from untrusted records stay bounded: a
    layer with an accepted version (or the one a refused/removed version names), else
    ``invalid``."""
    known = set(registry.layers())
    if event.version is not None or event.outcome == "removed":
        known.add(event.layer or "")
    if event.outcome == "rejected":
        metrics.record_config_rejection(event.layer, event.reason or "invalid", known)
    if event.tombstone:
        metrics.record_config_tombstone(event.layer, known)
    metrics.set_config_bootstrap(*bootstrap)
    metrics.set_history_breaks(registry.broken_layers(), known)  # fails closed: issue 30
    if event.outcome in ("added", "updated", "removed") and bootstrap[1]:
        # during the bootstrap the gauges are set once at its end (start()): per record
        # they cost O(versions) each, 6 s for 1,000 versions
        metrics.set_lifecycle(registry.published(), clock)


def report_decisions(
    metrics: Instruments,
    registry: RecordingRegistry,
    outcomes: list[Outcome],
    on_outcome: Callable[[Outcome], None] | None,
) -> None:
    """The decisions of a committed run: recorded in one ``record_decisions`` call (with
    the objectives of the versions evaluated), then handed to ``on_outcome``
    (:func:`hand_over`: at once to those with a ``many`` method,
    :class:`worker.ops.decision_log.DecisionLog` and :func:`worker.ops.operator.fan_out`)."""
    objectives: dict[str, dict[str, float]] = {}
    for outcome in outcomes:
        # the versions route() evaluated: config updates are applied only at step start
        layer = outcome.layer or ""
        if layer not in objectives:
            active = registry.active(layer)
            objectives[layer] = {v.contract.version: v.contract.objective for v in active}
    metrics.record_decisions(
        (o.layer_label, o.decision, o.duration_s, objectives[o.layer or ""]) for o in outcomes
    )
    if on_outcome is not None:
        hand_over(on_outcome, outcomes)


def hand_over(on_outcome: Callable[[Outcome], None], outcomes: Sequence[Outcome]) -> None:
    """``on_outcome`` of each of ``outcomes`` in order: ``on_outcome.many(outcomes)`` once
    when it has that method (which must do what the calls for each would), else a call
    each."""
    many = getattr(on_outcome, "many", None)
    if many is not None:
        many(outcomes)
        return
    for outcome in outcomes:
        on_outcome(outcome)


def log_batch(decided: list[Outcome], transactions: int, started: float, batches: int = 1) -> None:
    """One INFO line per loop step that committed something: ``decided`` in
    ``transactions`` transactions, over ``batches`` poll batches taken one after another;
    ``started`` is the ``time.perf_counter()`` of its start."""
    if not decided:
        return
    admitted = sum(1 for o in decided if o.decision.admitted)
    log.info(
        "%s: %d events, %d admitted, %d quarantined, %.0f ms (committed in %d transaction%s)",
        "poll batch" if batches == 1 else f"{batches} poll batches",
        len(decided),
        admitted,
        len(decided) - admitted,
        (time.perf_counter() - started) * 1000.0,
        transactions,
        "" if transactions == 1 else "s",
    )
