"""The worker loop: poll a batch of events -> route each -> commit in Kafka transactions.

One :meth:`Processor.step` is a list of named calls, each returning a value: the config
topic's updates, one poll batch (:func:`worker.gate.housekeeping.poll_batch`), its runs
routed in order and committed one transaction each (:mod:`worker.gate.schedule`,
:mod:`worker.gate.route`, :mod:`worker.gate.checkpoint`), each committed run reported
(:mod:`worker.gate.housekeeping`: metrics, ``on_outcome``), the rest rewound
(:mod:`worker.gate.offsets`). While the consumer is behind, the batches fetched meanwhile
follow in the same step, each one's last transaction committing while the next is routed
(:meth:`Processor._route_batches`). Kafka callbacks only log or set flags.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

from worker.core.errors import BrokerError
from worker.core.lifecycle.config_events import ConfigEvent
from worker.core.lifecycle.registry import RecordingRegistry
from worker.core.replays import ReplayLedger
from worker.gate import housekeeping, startup
from worker.gate.checkpoint import Checkpoint, Done, Run
from worker.gate.config import GateConfig
from worker.gate.housekeeping import Instruments
from worker.gate.offsets import rewind
from worker.gate.producing import Guard
from worker.gate.records import Outcome
from worker.gate.replays import restore_ledger
from worker.gate.route import Router
from worker.gate.schedule import Pending, Runs, Schedule, event_bytes
from worker.kafka.clients import map_kafka_errors
from worker.kafka.config_topic import ConfigFollower
from worker.kafka.health import BrokerHealth, Watchdog
from worker.kafka.protocols import ConsumerLike, MessageLike, TransactionalProducerLike
from worker.kafka.schema_registry import codec_for, output_kinds
from worker.kafka.settings import Settings

__all__ = ["Processor"]

log = logging.getLogger(__name__)


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Processor:
    """A contract-gate worker: one group member with its transactional producer.

    Parameters
    ----------
    config : GateConfig
        Tuning values and timeouts of the loop.
    settings : Settings
        Kafka settings (bootstrap, group id, topics, transactional id prefix, extras).
    consumer, producer : ConsumerLike, TransactionalProducerLike, optional
        Clients to use as given (subscribed; transactions initialised); default: built by
        :meth:`start` (:func:`worker.gate.startup.make_clients`).
    metrics : Instruments, optional
        Telemetry (:class:`worker.ops.metrics.GateMetrics` in ``contract-gate run``);
        default: nothing recorded.
    clock : callable, optional
        Returns "now" as an aware UTC datetime (freshness); injectable for tests.
    on_outcome : callable, optional
        Called with each committed :class:`Outcome` (after the commit), e.g. by the demo.
    router : callable, optional
        Decides one consumed record; default :class:`worker.gate.route.Router` of the
        settings and the registry's active versions.
    """

    def __init__(
        self,
        config: GateConfig,
        settings: Settings,
        *,
        consumer: ConsumerLike | None = None,
        producer: TransactionalProducerLike | None = None,
        metrics: Instruments | None = None,
        clock: Callable[[], datetime] = _utcnow,
        on_outcome: Callable[[Outcome], None] | None = None,
        router: Callable[[MessageLike], Outcome] | None = None,
    ) -> None:
        self.gate_config = config
        self.settings = settings
        self.metrics: Instruments = metrics or housekeeping.NullInstruments()
        self.clock = clock
        self.on_outcome = on_outcome
        self.registry = RecordingRegistry()  # keeps published_at, for escalation gauges
        self.config = ConfigFollower(settings, self.registry, self._on_config_event)
        self.assignment = housekeeping.Assignment()
        self.liveness = housekeeping.Liveness()
        self.health = BrokerHealth()
        self.guard = Guard()
        self.replays = ReplayLedger()  # originals admitted after a replay: admitted once
        #: Schema Registry wire format (``settings.schema_registry``), else plain Avro
        self.wire = codec_for(settings)
        self._framed = output_kinds(settings.topics)
        n = config.eval_threads  # the chunks of a by-reference payload, measured on n threads
        self._eval_pool = ThreadPoolExecutor(n, "gate-eval") if n > 1 else None
        self.route = router or Router.for_settings(
            settings, self.registry.active, clock, self.wire, (self._eval_pool, n)
        )
        self.schedule = Schedule(config)
        self.batches_committed = 0
        self._lag_at = 0.0
        self._checked_at = time.monotonic()
        self.consumer = consumer
        self.producer = producer
        self._checkpoint: Checkpoint | None = None
        if consumer is not None and producer is not None:
            self._connect(consumer, producer)

    # -- state read by the HTTP server ----------------------------------------------------
    @property
    def assigned(self) -> frozenset[tuple[str, int]]:
        """The input partitions assigned to this member."""
        return self.assignment.assigned

    @property
    def last_loop_monotonic(self) -> float:
        """``time.monotonic()`` of the loop's last sign of life (``/healthz``)."""
        return self.liveness.last_monotonic

    @property
    def transactions_aborted(self) -> int:
        """Transactions aborted so far."""
        return 0 if self._checkpoint is None else self._checkpoint.aborted

    @property
    def broker_unreachable_since(self) -> float | None:
        """Monotonic time since which the broker is unreachable, or None (``/readyz``)."""
        return self.health.unreachable_since

    @property
    def ready(self) -> bool:
        """Config bootstrapped and intact, and at least one input partition assigned."""
        return self.config.bootstrapped and self.config.lost is None and bool(self.assigned)

    @property
    def checkpoint(self) -> Checkpoint:
        """The transactions of this worker (:class:`~worker.gate.checkpoint.Checkpoint`).

        Raises
        ------
        BrokerError
            Before :meth:`start` built the clients (none were given).
        """
        if self._checkpoint is None:
            raise BrokerError("the worker has no Kafka clients yet: call start() first")
        return self._checkpoint

    def _on_config_event(self, event: ConfigEvent) -> None:
        bootstrap = (self.config.records_read, self.config.bootstrapped)
        housekeeping.report_config_event(self.metrics, self.registry, event, bootstrap, self.clock)

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, progress: Callable[[str], None] | None = None) -> None:
        """Bootstrap the config topic, restore state, init transactions, join the group.

        Raises
        ------
        BrokerError
            When the config topic cannot be read to its end, a schema cannot be
            registered, the producer cannot initialise transactions or a topic is missing.
        """
        c, s = self.gate_config, self.settings
        startup.warn_missing_roots(s)
        # made now, initialised after the config is read: it connects meanwhile
        producer = startup.new_producer(s, self.health) if self._checkpoint is None else None
        # a stalled bootstrap keeps the worker up and not ready (/readyz names the reason)
        n = self.config.bootstrap(c.config_timeout_s, progress, on_stall=progress or log.info)
        self.metrics.set_config_bootstrap(n, True)
        self.metrics.set_lifecycle(self.registry.published(), self.clock)
        startup.register_schemas(self.wire, self._framed)
        restore_ledger(self.replays, s, c.replay_restore_per_partition, c.restore_timeout_s)
        restored = startup.restore_slo(self.metrics, self.registry, s, c, self.clock())
        if progress and restored:
            progress(f"SLO windows restored from {restored} evaluation records")
        if progress:
            summary = startup.active_summary(self.registry)
            progress(f"config bootstrapped from {n} records; active versions: {summary}")
        if self._checkpoint is None:
            a = self.assignment
            rebalance = (a.on_assign, a.on_revoke)
            self._connect(*startup.make_clients(s, c, self.health, rebalance, producer))
        startup.freeze_heap()

    def _connect(self, consumer: ConsumerLike, producer: TransactionalProducerLike) -> None:
        self.consumer, self.producer = consumer, producer
        self._checkpoint = Checkpoint(self.gate_config, self.settings, producer, consumer,
                                      self.replays, self.clock, self.wire, self._framed,
                                      self.health, self.guard)  # fmt: skip

    def run(self, stop: threading.Event, on_stuck: Callable[[str], None] | None = None) -> None:
        """Process poll batches until ``stop`` is set, then leave the group cleanly.

        ``on_stuck`` (optional) is called with a message when a blocking transactional
        call outlives its timeout by 15 s (:class:`~worker.kafka.health.Watchdog`);
        ``contract-gate run`` exits the process there.
        """
        watchdog = None if on_stuck is None else Watchdog(on_stuck)
        if watchdog is not None:
            watchdog.start()
        self.guard.watchdog = watchdog
        self.liveness.stop = stop
        try:
            while not stop.is_set():
                self.step()
        finally:
            if watchdog is not None:
                watchdog.stop()
            self.close()

    def close(self) -> None:
        """Leave the group, flush the producer, close the config reader, give the objects
        frozen at start back to the collector (:func:`~worker.gate.startup.freeze_heap`)."""
        startup.thaw_heap()
        self.schedule.close()
        if self._eval_pool is not None:
            self._eval_pool.shutdown(wait=True)
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None
        if self.producer is not None:
            try:
                with map_kafka_errors():
                    self.producer.flush(self.gate_config.close_flush_timeout_s)
            except BrokerError as exc:  # e.g. fenced: nothing of ours is left to deliver
                log.warning("producer flush at close failed: %s", exc.detail)
            self.producer = None
        self.config.close()

    # -- one poll batch -------------------------------------------------------------------
    def step(self) -> int:
        """Poll one batch of events and commit its results, one transaction per run (and,
        when the batch filled, the batches fetched meanwhile: :meth:`_route_batches`).

        Returns
        -------
        int
            Events committed and counted (0 when nothing arrived; the events of an aborted
            transaction and those after it are consumed again).
        """
        self.liveness.beat()
        if self._config_lost():  # no batch is decided on versions the broker lost
            stop = self.liveness.stop
            if stop is not None:
                stop.wait(0.5)
            return 0
        self.config.poll_updates()  # contract changes apply between poll batches
        events = self._poll()  # list[MessageLike]; error events logged, not returned
        self._refresh_lag()
        if not events:
            return 0
        return self._route_batches(events)

    def _route_batches(self, events: list[MessageLike]) -> int:
        """Route and commit the poll batch ``events`` in runs, and the poll batches taken
        after it from the records fetched already (at most ``chained_batches`` in all):
        each batch's last run is held back until the next batch is taken
        (:meth:`_take_next`, with no transaction in flight, so a rebalance there waits for
        nothing), then committed while that batch is routed. Returns the events committed;
        nothing is in flight on return."""
        commit = self.checkpoint.commit  # 1 produce 2 send offsets 3 commit | abort
        carried: Pending[MessageLike, Done] | None = None  # a batch's last run, committing
        decided: list[Outcome] = []
        started, batches, transactions = time.perf_counter(), 0, 0
        try:
            while events or carried:
                batches += 1 if events else 0  # a pass that only settles the carried run
                hold = batches < self.gate_config.chained_batches and self._behind(events)
                with self.schedule.runs(events, self.route, commit, self.liveness.beat,
                                        carried=carried, hold_last=hold) as runs:  # fmt: skip
                    carried = None  # theirs now: leaving the block waits for it
                    for done in runs:  # in order; the next run is routed while one commits
                        decided += self._report(done)
                self._rewind(runs.result)  # the rest is consumed again
                transactions += runs.result.transactions
                held, events = runs.result.held, []
                if held is not None:
                    events, run = self._take_next(Run(*held))
                    if run.events:
                        carried = (run.events, self.schedule.submit(commit, run))
                        transactions += 1
                    if events:
                        self.config.poll_updates()  # contract changes apply between poll batches
        finally:
            if carried is not None:  # raised between two poll batches: let it commit first
                with contextlib.suppress(BaseException):
                    decided += self._report(carried[1].result())
            housekeeping.log_batch(decided, transactions, started, batches)
        return len(decided)

    def _behind(self, events: list[MessageLike]) -> bool:
        """Whether ``events`` filled a poll batch (``max_batch_events`` events or
        ``ready_bytes`` of values): the consumer is behind, so the next batch is taken
        before this one's last transaction. A batch that did not fill is committed before
        the next poll, which waits for events to gather (``max_batch_wait_ms``): under a
        light load the loop does not commit one small transaction after another."""
        c = self.gate_config
        if len(events) >= c.max_batch_events:
            return True
        return sum(map(event_bytes, events)) >= c.ready_bytes

    def _take_next(self, held: Run) -> tuple[list[MessageLike], Run]:
        """The next poll batch from the records fetched already (no wait; none once the
        loop is asked to stop), and ``held`` (the last run of a routed batch, not yet
        submitted) less the events of partitions a rebalance in this poll revoked: their
        next owner reads them from the committed offsets."""
        stop, consumer = self.liveness.stop, self.consumer
        if consumer is None or (stop is not None and stop.is_set()):
            return [], held
        self.assignment.take_revoked()  # callbacks run only inside consume(): none here
        msgs = consumer.consume(self.gate_config.max_batch_events, timeout=0)
        revoked = self.assignment.take_revoked()
        if revoked:
            kept = {id(m) for m in housekeeping.without_revoked(held.events, revoked)}
            pairs = [
                (m, o) for m, o in zip(held.events, held.outcomes, strict=True) if id(m) in kept
            ]
            held = Run([m for m, _ in pairs], [o for _, o in pairs])
        return housekeeping.without_errors(msgs), held

    def _config_lost(self) -> bool:
        """True once the config topic lost what the worker read (checked at most every
        ``config_check_interval_s``; sticky: :meth:`ConfigFollower.check_intact`)."""
        if self.config.lost is not None:
            return True
        now = time.monotonic()
        if now - self._checked_at < self.gate_config.config_check_interval_s:
            return False
        self._checked_at = now
        # the topic's metadata through the producer: on the follower's own connection the
        # request waited behind its long-poll fetch, up to 500 ms of the loop per check
        if self.config.check_intact(metadata=self.producer) is None:
            return False
        self.metrics.set_config_bootstrap(self.config.records_read, False)
        return True

    def _poll(self) -> list[MessageLike]:
        """One poll batch (:func:`~worker.gate.housekeeping.poll_batch`) less its error events.

        The loop is marked alive as the poll starts: the config checks before it can take a
        broker round trip, and a poll that finds a full batch queued returns at once."""
        self.liveness.beat()
        c = self.gate_config
        msgs = housekeeping.poll_batch(self.consumer, c.max_batch_events, c.max_batch_wait_s,
                                       ready_bytes=c.ready_bytes,
                                       keep_waiting=self.liveness.keep_waiting,
                                       take_revoked=self.assignment.take_revoked)  # fmt: skip
        return housekeeping.without_errors(msgs)

    def _refresh_lag(self) -> None:
        """The consumer lag gauge, at most once per ``lag_interval_s``."""
        now = self.liveness.last_monotonic
        if now - self._lag_at >= self.gate_config.lag_interval_s:
            self._lag_at = now
            self.metrics.set_consumer_lag(
                housekeeping.partition_lag(self.consumer, sorted(self.assigned))
            )

    def _report(self, done: Done) -> list[Outcome]:
        """The decisions of a fully committed run (metrics, ``on_outcome``); none for a
        run that failed part way (its committed events are not counted)."""
        if not done.complete:
            return []
        housekeeping.report_decisions(self.metrics, self.registry, done.outcomes, self.on_outcome)
        self.batches_committed += len(done.events)
        return done.outcomes

    def _rewind(self, runs: Runs[MessageLike]) -> None:
        """Seek back to the first uncommitted event of each partition of the poll batch."""
        if runs.failed:  # consumed again from its first uncommitted event, in order
            rewind(self.consumer, runs.rest, self.assigned, "an aborted transaction")  # type: ignore[arg-type]
        elif runs.rest:  # the deadline passed: the decided prefix is committed
            why = "the rest of a poll batch past its deadline"
            rewind(self.consumer, runs.rest, self.assigned, why)  # type: ignore[arg-type]
            log.warning(
                "poll batch deadline of %g s passed after %d events: committed them, "
                "%d events are consumed again",
                self.gate_config.batch_deadline_s,
                runs.committed,
                len(runs.rest),
            )
