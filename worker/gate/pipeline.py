"""The worker loop: poll a batch of events -> route each -> Kafka transactions.

Checkpoint discipline (as quix-streams): a poll batch of up to ``max_batch_events`` events
(the records already fetched, and while the batch is small those arriving within
``max_batch_wait_ms``: :func:`worker.gate.poll.poll_batch`) is routed in memory, in
runs (:mod:`worker.gate.runs`); in ONE transaction per run, every output record of the
run (admitted or quarantine record, one evaluation record per version) and its consumed
offsets (``send_offsets_to_transaction``, KIP-447) are written and committed, on the
committer thread while the loop routes the next run. A poll batch holding under 1 MiB
of events (or routed within 50 ms) is one run, one transaction. A failure aborts the
transaction and rewinds the consumer to the first uncommitted offset of each partition,
so the rest of the batch is consumed again; order within a partition is preserved. After
:data:`~worker.gate.attempts.MAX_BATCH_ATTEMPTS` failed attempts of the same run it is
committed one event per transaction, and an event whose records Kafka refuses as too
large is quarantined with ``record_too_large`` (:mod:`worker.gate.attempts`). The next
poll (where a rebalance runs) happens only once no transaction is in flight. Kafka
callbacks only log or set flags.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from worker.core.errors import BrokerError, ContractGateError
from worker.core.lifecycle.registry import ConfigEvent, RecordingRegistry
from worker.core.lifecycle.slo import DEFAULT_MAX_VERDICTS
from worker.core.replays import ReplayLedger
from worker.gate.ahead import DEFAULT_ROUTING_THREADS, RouteAhead
from worker.gate.attempts import BatchAttempts, size_refused
from worker.gate.deadline import DEFAULT_BATCH_DEADLINE_S, rewind_offsets
from worker.gate.instruments import Instruments, NullInstruments
from worker.gate.poll import DEFAULT_MAX_BATCH_EVENTS, DEFAULT_MAX_BATCH_WAIT_MS, poll_batch
from worker.gate.records import (
    Outcome,
    OutRecord,
    Source,
    largest_record_bytes,
    record_too_large,
)
from worker.gate.replays import duplicate_replay, read_admitted_replays, replay_forced, replay_of
from worker.gate.route import route
from worker.gate.runs import route_in_runs
from worker.io.payloads import load_payload_chunked
from worker.kafka.config_topic import ConfigFollower
from worker.kafka.evaluations import read_recent_evaluations
from worker.kafka.health import BrokerHealth, Watchdog
from worker.kafka.schema_registry import codec_for, output_kinds
from worker.kafka.settings import Settings

__all__ = ["Pipeline", "partition_lag"]

log = logging.getLogger(__name__)


def _fenced_codes() -> frozenset[int]:
    from confluent_kafka import KafkaError

    return frozenset(
        {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
    )


#: Producer errors meaning a newer producer with the same transactional.id took over
#: (zombie fencing, KIP-98/KIP-447): fatal for this instance, never retried.
_FENCED_CODES = _fenced_codes()

#: Timeouts of the transactional producer calls (seconds).
INIT_TRANSACTIONS_TIMEOUT_S = 30.0
#: Most evaluation records read per partition to rebuild SLO windows at start.
SLO_RESTORE_MAX_PER_PARTITION = 20_000
#: Admitted records read per partition at start for ``replay-of`` headers.
REPLAY_RESTORE_PER_PARTITION = 20_000
SEND_OFFSETS_TIMEOUT_S = 30.0
COMMIT_TIMEOUT_S = 60.0
ABORT_TIMEOUT_S = 30.0
QUEUE_FULL_TIMEOUT_S = 60.0


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


#: Seconds between two consumer-lag refreshes of the loop.
LAG_INTERVAL_S = 1.0
#: Seconds before a missing per-major topic is looked up again.
PER_MAJOR_RECHECK_S = 30.0


def partition_lag(consumer: Any, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """Lag per partition: high watermark minus the consumer's position (next offset).

    Both figures are local to the client, no broker round trip: the position, and
    ``get_watermark_offsets(cached=True)``, whose high watermark librdkafka updates from
    every Fetch response. Partitions without a known watermark or position (nothing
    fetched yet) are left out. A watermark from ListOffsets (``cached=False``) can be too
    low on Tansu after multi-record produce batches (DESIGN.md section 8), so lag computed
    from it would be unreliable there; the Fetch-fed cached value is what is used here.
    """
    from confluent_kafka import KafkaException, TopicPartition

    lag: dict[tuple[str, int], int] = {}
    try:
        positions = consumer.position([TopicPartition(t, p) for t, p in partitions])
        for tp in positions:
            if tp.offset < 0:
                continue
            _, high = consumer.get_watermark_offsets(tp, cached=True)
            if high is not None and high >= 0:
                lag[(tp.topic, tp.partition)] = max(0, high - tp.offset)
    except KafkaException as exc:  # e.g. a partition revoked meanwhile: next refresh
        log.debug("consumer lag not refreshed: %s", exc)
    return lag


class Pipeline:
    """A contract-gate worker: one group member with its transactional producer.

    Parameters
    ----------
    settings : Settings
        Kafka settings (bootstrap, group id, topics, transactional id prefix, extras).
    metrics : Instruments, optional
        Telemetry (:class:`worker.ops.metrics.GateMetrics` in ``contract-gate run``);
        default: nothing recorded.
    clock : callable, optional
        Returns "now" as an aware UTC datetime (freshness); injectable for tests.
    max_batch_events, max_batch_wait_ms : int
        Bounds of one poll batch, hence of one transaction.
    batch_deadline_s : float
        Processing deadline of one poll batch, in seconds (:mod:`worker.gate.deadline`):
        once passed, the events decided so far are committed and the rest consumed again
        in the next step; at least one event is decided per step.
    on_outcome : callable, optional
        Called with each committed :class:`Outcome` (after the commit), e.g. by the demo.
    routing_threads : int
        Events routed at once, 1 or more (:mod:`worker.gate.ahead`: large events only;
        1 routes every event on the loop's thread).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        metrics: Instruments | None = None,
        clock: Callable[[], datetime] = _utcnow,
        max_batch_events: int = DEFAULT_MAX_BATCH_EVENTS,
        max_batch_wait_ms: int = DEFAULT_MAX_BATCH_WAIT_MS,
        batch_deadline_s: float = DEFAULT_BATCH_DEADLINE_S,
        config_timeout_s: float = 60.0,
        on_outcome: Callable[[Outcome], None] | None = None,
        routing_threads: int = DEFAULT_ROUTING_THREADS,
    ) -> None:
        if routing_threads < 1:
            raise ValueError(f"routing_threads must be 1 or more, got {routing_threads}")
        self.settings = settings
        self.routing_threads = routing_threads
        # by-reference payloads: read under the configured roots only (none: refused)
        self._load_payload = functools.partial(load_payload_chunked, policy=settings.payload)
        self.metrics: Instruments = metrics or NullInstruments()
        self.clock = clock
        self.max_batch_events = max_batch_events
        self.max_batch_wait_s = max_batch_wait_ms / 1000.0
        self.batch_deadline_s = batch_deadline_s
        self.config_timeout_s = config_timeout_s
        self.on_outcome = on_outcome
        self.registry = RecordingRegistry()  # keeps published_at, for escalation gauges
        self.config = ConfigFollower(settings, self.registry, self._on_config_event)
        # replaced, never mutated: the HTTP thread may read it while the loop reassigns
        self.assigned: frozenset[tuple[str, int]] = frozenset()
        self.last_loop_monotonic = time.monotonic()
        self.batches_committed = 0
        self.transactions_aborted = 0
        self._lag_at = 0.0
        self._consumer: Any = None
        self._producer: Any = None
        self.health = BrokerHealth()
        self.watchdog: Watchdog | None = None
        self.replays = ReplayLedger()  # originals admitted after a replay: admitted once
        #: per-major topic -> (exists, monotonic time of the check)
        self._per_major_topics: dict[str, tuple[bool, float]] = {}
        #: Schema Registry wire format (``settings.schema_registry``), else plain Avro
        self.schema_registry = codec_for(settings)
        #: the largest record the producer takes (``message.max.bytes``, less framing):
        #: a batch whose records are larger is quarantined when routed, never produced
        self._routed_record_bytes = settings.max_record_bytes()
        self._framed = output_kinds(settings.topics)
        self.attempts = BatchAttempts()
        #: the last failed transaction: its reason and the Kafka error codes seen
        #: (raised ones and those of delivery reports)
        self._failure: tuple[str, set[int]] = ("", set())
        self._max_record_bytes = int(settings.producer().get("message.max.bytes", 0))
        #: partitions revoked during the current poll batch (:meth:`_take_revoked`)
        self._revoked_in_poll: set[tuple[str, int]] = set()
        #: the event :meth:`run` stops on (a poll batch's wait ends when it is set)
        self._stop: threading.Event | None = None
        #: commits a routed run while the loop routes the next (:mod:`worker.gate.runs`)
        self._committer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gate-commit")
        self._routers = (
            ThreadPoolExecutor(max_workers=routing_threads, thread_name_prefix="gate-route")
            if routing_threads > 1
            else None
        )

    @property
    def broker_unreachable_since(self) -> float | None:
        """``time.monotonic()`` since which the broker is unreachable, or None (``/readyz``)."""
        return self.health.unreachable_since

    def _guard(self, name: str, deadline_s: float) -> contextlib.AbstractContextManager[None]:
        """A blocking client call under the watchdog (when :meth:`run` was given one)."""
        if self.watchdog is None:
            return contextlib.nullcontext()
        return self.watchdog.call(name, deadline_s)

    # -- state --------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """Config bootstrapped and at least one input partition assigned."""
        return self.config.bootstrapped and bool(self.assigned)

    def _on_config_event(self, event: ConfigEvent) -> None:
        # label values from untrusted records stay bounded: a layer with an accepted
        # version (or the one a refused/removed version names), else "invalid"
        known = set(self.registry.layers())
        if event.version is not None or event.outcome == "removed":
            known.add(event.layer or "")
        if event.outcome == "rejected":
            self.metrics.record_config_rejection(event.layer, event.reason or "invalid", known)
        if event.tombstone:
            self.metrics.record_config_tombstone(event.layer, known)
        self.metrics.set_config_bootstrap(self.config.records_read, self.config.bootstrapped)
        if event.outcome in ("added", "updated", "removed") and self.config.bootstrapped:
            # during the bootstrap the gauges are set once at its end (start()): per
            # record they cost O(versions) each, 6 s for 1,000 versions
            self.metrics.set_lifecycle(self.registry.published(), self.clock)

    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        self.assigned = self.assigned | {(p.topic, p.partition) for p in partitions}
        log.info("assigned %s", sorted(self.assigned))

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        revoked = {(p.topic, p.partition) for p in partitions}
        self.assigned = self.assigned - revoked
        self._revoked_in_poll |= revoked
        log.info("revoked %s", sorted(revoked))

    def _take_revoked(self) -> frozenset[tuple[str, int]]:
        """The partitions revoked since the last call (:func:`poll_batch` drops the
        records of a revoked partition that it consumed before the rebalance)."""
        revoked, self._revoked_in_poll = frozenset(self._revoked_in_poll), set()
        return revoked

    # -- lifecycle ----------------------------------------------------------------------
    def start(self, progress: Callable[[str], None] | None = None) -> None:
        """Bootstrap the config topic, init transactions, join the consumer group.

        Raises
        ------
        BrokerError
            When the config topic cannot be read to its end or the producer cannot
            initialise transactions.
        """
        from confluent_kafka import Consumer, KafkaException, Producer

        self._warn_missing_roots()
        n = self.config.bootstrap(self.config_timeout_s, progress)
        self.metrics.set_config_bootstrap(n, True)
        self.metrics.set_lifecycle(self.registry.published(), self.clock)
        self._register_schemas()
        self._restore_replays()
        restored = self._restore_slo()
        if progress and restored:
            progress(f"SLO windows restored from {restored} evaluation records")
        if progress:
            layers = ", ".join(
                f"{layer}: " + " ".join(f"{v.contract.version}/{v.mode}" for v in active)
                for layer in self.registry.layers()
                if (active := self.registry.active(layer))
            )
            progress(f"config bootstrapped from {n} records; active versions: {layers or 'none'}")
        try:
            self._producer = Producer(
                self.settings.producer(transactional=True, **self.health.client_config())
            )
            self._producer.init_transactions(INIT_TRANSACTIONS_TIMEOUT_S)
        except KafkaException as exc:
            raise BrokerError(f"cannot initialise transactions: {exc.args[0].str()}") from exc
        self._require_topics()
        self._consumer = Consumer(self.settings.consumer(**self.health.client_config()))
        self._consumer.subscribe(
            [self.settings.topics.batches], on_assign=self._on_assign, on_revoke=self._on_revoke
        )

    def _warn_missing_roots(self) -> None:
        """A WARNING per local payload root that is not a directory (yet): a volume may be
        mounted later, so the worker starts, but a typo would otherwise show only as every
        event by reference quarantined ``payload_unavailable`` (a fresh-user session
        started with a root that did not exist, without a word)."""
        for root in self.settings.payload.roots or ():
            if root.scheme == "file" and not os.path.isdir(root.location):
                log.warning(
                    "payload root %s is not a directory on this host: events whose payload_uri "
                    "lies under it are quarantined payload_unavailable until it exists "
                    "(check --payload-root / CONTRACT_GATE_PAYLOAD_ROOTS, or the volume mount)",
                    root,
                )

    def _require_topics(self) -> None:
        """Fail start-up when a topic the worker consumes or always writes is missing.

        Without it, a missing batches topic was only a consumer WARNING repeated forever
        and a missing output topic an endless abort-and-retry. The worker never creates
        topics (their partitions, retention and compaction are the operator's choice, as
        in Kafka Streams, whose missing source topics also stop the application).

        Raises
        ------
        BrokerError
            Naming every missing topic and ``contract-gate topics create``.
        """
        from confluent_kafka import KafkaException

        t = self.settings.topics
        wanted = [t.batches, t.admitted, t.quarantine, t.evaluations]
        try:
            meta = self._producer.list_topics(timeout=10)
        except KafkaException as exc:
            raise BrokerError(f"cannot list topics: {exc.args[0].str()}") from exc
        missing = [
            name
            for name in wanted
            if (m := meta.topics.get(name)) is None or m.error is not None or not m.partitions
        ]
        if missing:
            raise BrokerError(
                f"topic(s) {', '.join(missing)} do not exist on {self.settings.bootstrap_servers}"
                "; the worker consumes or writes them and never creates topics: create them "
                "with `contract-gate topics create` (same topic flags/environment), or point "
                "the --*-topic flags at the existing ones"
            )

    def _dedupe_replays(self, outcomes: list[Outcome]) -> tuple[list[Outcome], list[str]]:
        """Replace the admission of a replay whose original was admitted already (before,
        or earlier in this poll batch) by a ``duplicate_replay`` quarantine record, unless
        its operator forced it (``replay-force``); returns the outcomes and the originals
        this batch admits."""
        admitted: list[str] = []
        out: list[Outcome] = []
        for outcome in outcomes:
            original = replay_of(outcome.source) if outcome.decision.admitted else None
            if original is None:
                out.append(outcome)
            elif (original in self.replays or original in admitted) and not replay_forced(
                outcome.source
            ):
                out.append(
                    duplicate_replay(
                        outcome,
                        original,
                        self.settings.topics,
                        now=self.clock(),
                        worker_id=self.settings.instance_id,
                        max_record_bytes=self._routed_record_bytes,
                    )
                )
            else:
                admitted.append(original)
                out.append(outcome)
        return out, admitted

    def _restore_replays(self) -> None:
        """Fill the replay ledger from the tail of the admitted topic (bounded)."""
        try:
            found = read_admitted_replays(
                self.settings, REPLAY_RESTORE_PER_PARTITION, timeout_s=30.0
            )
        except BrokerError as exc:
            log.warning("replay ledger starts empty: the admitted topic was not read (%s)", exc)
            return
        self.replays.add(found)

    def _register_schemas(self) -> None:
        """With a Schema Registry: register the schemas of the framed output topics now, so
        producing needs no lookup later (the client caches the ids).

        Raises
        ------
        BrokerError
            The registry refuses a schema or cannot be reached (the message names the
            subject; the worker does not start).
        """
        if self.schema_registry is None:
            return
        for topic, kind in self._framed.items():
            try:
                self.schema_registry.register(topic, kind)
            except ContractGateError as exc:
                raise BrokerError(f"schema registry: {exc}") from None

    def _value(self, record: OutRecord) -> bytes:
        """The bytes to produce: quarantine and evaluation records framed in the Schema
        Registry wire format when one is configured; everything else as routed."""
        kind = self._framed.get(record.topic)
        if self.schema_registry is None or kind is None:
            return record.value
        try:
            return self.schema_registry.frame(record.value, record.topic, kind)
        except ContractGateError as exc:  # the transaction is aborted and retried
            raise BrokerError(f"schema registry: {exc}") from None

    def _restore_slo(self) -> int:
        """Refill the SLO windows from the tail of the evaluations topic (bounded: at most
        the window's verdicts per active version per partition); a failed read is logged,
        never fatal (the windows then start empty, as before)."""
        if isinstance(self.metrics, NullInstruments):
            return 0
        objectives = {
            (v.contract.layer, v.contract.version): v.contract.objective
            for layer in self.registry.layers()
            for v in self.registry.active(layer)
        }
        if not objectives:
            return 0
        tail = min(SLO_RESTORE_MAX_PER_PARTITION, DEFAULT_MAX_VERDICTS * len(objectives))
        try:
            records = read_recent_evaluations(self.settings, tail, timeout_s=30.0)
        except BrokerError as exc:
            log.warning("SLO windows start empty: the evaluations topic was not read (%s)", exc)
            return 0
        return self.metrics.restore_slo(records, objectives, self.clock())

    def run(self, stop: threading.Event, on_stuck: Callable[[str], None] | None = None) -> None:
        """Process poll batches until ``stop`` is set, then leave the group cleanly.

        ``on_stuck`` (optional) is called with a message when a blocking transactional
        call outlives its timeout by 15 s (:class:`~worker.kafka.health.Watchdog`);
        ``contract-gate run`` exits the process there.
        """
        if on_stuck is not None:
            self.watchdog = Watchdog(on_stuck)
            self.watchdog.start()
        self._stop = stop
        try:
            while not stop.is_set():
                self.step()
        finally:
            if self.watchdog is not None:
                self.watchdog.stop()
            self.close()

    def close(self) -> None:
        """Leave the group, flush the producer, close the config reader."""
        from confluent_kafka import KafkaException

        self._committer.shutdown(wait=True)  # idle: a step never returns mid-transaction
        if self._routers is not None:
            self._routers.shutdown(wait=True)  # idle: a step never returns mid-routing
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        if self._producer is not None:
            try:
                self._producer.flush(10)
            except KafkaException as exc:  # e.g. fenced: nothing of ours is left to deliver
                log.warning("producer flush at close failed: %s", exc.args[0].str())
            self._producer = None
        self.config.close()

    # -- one poll batch -----------------------------------------------------------------
    def step(self) -> int:
        """Poll one batch of events and commit its results (one transaction per run:
        :mod:`worker.gate.runs`).

        Returns the number of events committed and counted (0 when nothing arrived; the
        events of an aborted transaction and those after it are consumed again).
        """
        from confluent_kafka import KafkaError

        self.last_loop_monotonic = time.monotonic()
        self.config.poll_updates()
        msgs = poll_batch(
            self._consumer,
            self.max_batch_events,
            self.max_batch_wait_s,
            keep_waiting=self._keep_waiting,
            take_revoked=self._take_revoked,
        )
        if self.last_loop_monotonic - self._lag_at >= LAG_INTERVAL_S:
            self._lag_at = self.last_loop_monotonic
            self.metrics.set_consumer_lag(partition_lag(self._consumer, sorted(self.assigned)))
        events = []
        for m in msgs:
            err = m.error()
            if err is None:
                events.append(m)
            elif err.code() != KafkaError._PARTITION_EOF:
                log.warning("consumer error: %s", err.str())
        if not events:
            return 0
        started = time.perf_counter()
        decided: list[Outcome] = []

        def settle(sent: _Sent) -> int:
            if sent.committed == len(sent.events):
                self._committed(sent, decided)
            else:  # one transaction per event (_commit_each) ended before the last
                self._admitted_once(sent.outcomes[: sent.committed])
            return sent.committed

        # large events are routed two at a time (worker.gate.ahead), results in order
        ahead = (
            None
            if self._routers is None
            else RouteAhead(
                events,
                self._route,
                self._routers,
                size=_event_bytes,
                depth=self.routing_threads,
            )
        )
        try:
            runs = route_in_runs(
                events,
                self._route if ahead is None else ahead,
                self._hand_off,
                settle,
                deadline_s=self.batch_deadline_s,
                size=_event_bytes,
                progress=self._mark_progress,
                ready=None if ahead is None else ahead.ready,
            )
        finally:
            if ahead is not None:
                ahead.close()
        if runs.failed:  # consumed again from its first uncommitted event, in order
            self._seek(rewind_offsets(runs.rest), "an aborted transaction")
        elif runs.rest:  # the deadline passed: the decided prefix is committed
            self._seek(rewind_offsets(runs.rest), "the rest of a poll batch past its deadline")
            log.warning(
                "poll batch deadline of %g s passed after %d events: committed them, "
                "%d events are consumed again",
                self.batch_deadline_s,
                runs.committed,
                len(runs.rest),
            )
        if not decided:
            return 0
        admitted = sum(1 for o in decided if o.decision.admitted)
        log.info(
            "poll batch: %d events, %d admitted, %d quarantined, %.0f ms (committed in %d "
            "transaction%s)",
            len(decided),
            admitted,
            len(decided) - admitted,
            (time.perf_counter() - started) * 1000.0,
            runs.transactions,
            "" if runs.transactions == 1 else "s",
        )
        return len(decided)

    def _hand_off(self, events: list[Any], outcomes: list[Outcome]) -> Future[_Sent]:
        """Start the transaction of a routed run on the committer thread (no other run is
        in flight: :func:`worker.gate.runs.route_in_runs`)."""
        outcomes, admitted_replays = self._dedupe_replays(outcomes)
        return self._committer.submit(self._send, events, outcomes, admitted_replays)

    def _send(self, events: list[Any], outcomes: list[Outcome], admitted: list[str]) -> _Sent:
        """The committer thread's part: :meth:`_commit` one run."""
        return _Sent(events, outcomes, admitted, self._commit(events, outcomes))

    def _committed(self, sent: _Sent, decided: list[Outcome]) -> None:
        """After a run's transaction committed (on the loop's thread): the replay ledger,
        the decision metrics and ``on_outcome``."""
        self.replays.add(sent.admitted)  # only once committed: an abort replays them
        for outcome in sent.outcomes:
            # the versions route() evaluated: config updates are applied only at step start
            objectives = {
                v.contract.version: v.contract.objective
                for v in self.registry.active(outcome.layer or "")
            }
            self.metrics.record_decision(
                outcome.layer_label, outcome.decision, outcome.duration_s, objectives
            )
            if self.on_outcome is not None:
                self.on_outcome(outcome)
        self.batches_committed += len(sent.events)
        decided.extend(sent.outcomes)

    def _admitted_once(self, committed: list[Outcome]) -> None:
        """Enter the originals of the replays admitted by ``committed``, the events that
        :meth:`_commit_each` committed one per transaction before one failed: the rest of
        the run is consumed again, and a replay among the committed must not be admitted
        a second time. (Their decisions are not counted in the metrics.)"""
        originals = [replay_of(o.source) for o in committed if o.decision.admitted]
        self.replays.add([r for r in originals if r is not None])

    def _route(self, m: Any) -> Outcome:
        """Decide one consumed event (:func:`worker.gate.route.route`)."""
        return route(
            Source(
                m.topic(), m.partition(), m.offset(), m.key(), m.value(), tuple(m.headers() or ())
            ),
            self.registry.active,
            self.settings.topics,
            now=self.clock(),
            worker_id=self.settings.instance_id,
            payload_loader=self._load_payload,
            registry=self.schema_registry,
            max_record_bytes=self._routed_record_bytes,
        )

    def _keep_waiting(self) -> bool:
        """While a poll batch waits for events: the loop is alive (``/healthz``), and the
        wait ends as soon as :meth:`run` is asked to stop."""
        self.last_loop_monotonic = time.monotonic()
        return self._stop is None or not self._stop.is_set()

    def _mark_progress(self) -> None:
        """An event was decided: the loop is alive (``/healthz``), however long its poll
        batch takes."""
        self.last_loop_monotonic = time.monotonic()

    def _commit(self, events: list[Any], outcomes: list[Outcome]) -> int:
        """Write every record and the consumed offsets in one transaction; after
        :data:`~worker.gate.attempts.MAX_BATCH_ATTEMPTS` failed attempts of the same
        run, one transaction per event (:meth:`_commit_each`, which replaces the
        outcome of an event refused as too large in ``outcomes``).

        Returns how many of ``events`` were committed, a prefix: fewer than all when a
        transaction was aborted; the caller rewinds the rest, which is consumed again.
        Raises :class:`BrokerError` when this instance must stop: fenced, a fatal producer
        error, or a failed abort (a restart then resumes from the committed offsets, so
        nothing is lost).
        """
        starts = _starts(events)
        if self.attempts.exhausted(starts):
            return self._commit_each(events, outcomes)
        if self._transact(events, outcomes):
            self.attempts.committed((t, p) for t, p, _ in starts)
            return len(events)
        self.attempts.failed(starts)
        return 0

    def _commit_each(self, events: list[Any], outcomes: list[Outcome]) -> int:
        """One transaction per event, in order. An event whose transaction fails because
        Kafka refuses a record as too large gets a ``record_too_large`` quarantine record
        instead (``outcomes[i]`` replaced); any other failure ends it: returns how many
        events were committed before it (their decisions are not counted in the
        metrics)."""
        log.warning(
            "poll batch at %s failed %d times; committing its %d events one per transaction",
            ", ".join(f"{t}[{p}]@{o}" for t, p, o in _starts(events)),
            self.attempts.max_attempts,
            len(events),
        )
        for i, event in enumerate(events):
            if self._transact([event], [outcomes[i]]):
                continue
            reason, codes = self._failure
            if size_refused(codes):
                size = largest_record_bytes(outcomes[i])
                outcomes[i] = record_too_large(
                    outcomes[i],
                    self.settings.topics,
                    record_bytes=size,
                    limit_bytes=self._max_record_bytes,
                    error=reason,
                    now=self.clock(),
                    worker_id=self.settings.instance_id,
                )
                log.error(
                    "%s[%d]@%d: a %d-byte output record was refused as too large (%s); "
                    "quarantined with record_too_large",
                    event.topic(),
                    event.partition(),
                    event.offset(),
                    size,
                    reason,
                )
                if self._transact([event], [outcomes[i]]):
                    continue
            self.attempts.failed(_starts(events[i:]))
            return i
        self.attempts.committed((t, p) for t, p, _ in _starts(events))
        return len(events)

    def _transact(self, events: list[Any], outcomes: list[Outcome]) -> bool:
        """One transaction: the records of ``outcomes`` and the offsets after ``events``.

        Returns False when it failed and was aborted (``self._failure`` holds the reason
        and the Kafka error codes). Raises :class:`BrokerError` as :meth:`_commit`.
        """
        from confluent_kafka import KafkaException, TopicPartition

        next_offsets: dict[tuple[str, int], int] = {}
        for m in events:
            tp = (m.topic(), m.partition())
            next_offsets[tp] = max(next_offsets.get(tp, 0), m.offset() + 1)
        producer = self._producer
        missing = self._missing_per_major_topics(outcomes)
        codes: set[int] = set()

        def delivered(err: Any, _msg: Any) -> None:  # a flag only (callback)
            if err is not None:
                codes.add(err.code())

        try:
            producer.begin_transaction()
            with self._guard("producing the batch's records", QUEUE_FULL_TIMEOUT_S):
                for outcome in outcomes:
                    for r in outcome.records:
                        if r.topic not in missing:
                            _produce(producer, r.topic, r.key, self._value(r), r.headers, delivered)
            with self._guard("send_offsets_to_transaction", SEND_OFFSETS_TIMEOUT_S):
                producer.send_offsets_to_transaction(
                    [TopicPartition(t, p, o) for (t, p), o in next_offsets.items()],
                    self._consumer.consumer_group_metadata(),
                    SEND_OFFSETS_TIMEOUT_S,
                )
            with self._guard("commit_transaction", COMMIT_TIMEOUT_S):
                _commit_transaction(producer)
            self.health.reachable()
            return True
        except KafkaException as exc:
            err = exc.args[0]
            if err.code() in _FENCED_CODES:
                raise BrokerError(
                    f"fenced: another worker with instance id {self.settings.instance_id} "
                    f"(transactional.id {self.settings.transactional_id_prefix}-"
                    f"{self.settings.instance_id}) took over; this one stops without "
                    f"committing its batch, which the other consumes again ({err.str()})"
                ) from exc
            if getattr(err, "fatal", lambda: False)():
                raise BrokerError(
                    f"fatal producer error, worker must restart: {err.str()}"
                ) from exc
            reason = err.str()
            codes.add(err.code())
        except BrokerError as exc:  # ours, e.g. the local queue stayed full
            reason = str(exc)
        except Exception:  # a bug: never leave the transaction open behind the crash
            with contextlib.suppress(Exception):
                producer.abort_transaction(ABORT_TIMEOUT_S)
            raise
        self._failure = (reason, codes)
        self._abort(reason)
        return False

    def _missing_per_major_topics(self, outcomes: list[Outcome]) -> frozenset[str]:
        """Per-major topics of these outcomes that do not exist (checked with a metadata
        request, again every :data:`PER_MAJOR_RECHECK_S` while missing). A produce to a
        missing topic would fail the transaction again and again, so such records are left
        out, with an ERROR naming the topic and the fix; shared topics are never skipped."""
        from confluent_kafka import KafkaException

        wanted = {r.topic for o in outcomes for r in o.records if r.per_major}
        now = time.monotonic()
        missing = set()
        for topic in sorted(wanted):
            known = self._per_major_topics.get(topic)
            if known is None or (not known[0] and now - known[1] > PER_MAJOR_RECHECK_S):
                try:
                    meta = self._producer.list_topics(topic, timeout=5).topics.get(topic)
                    exists = meta is not None and meta.error is None and bool(meta.partitions)
                except KafkaException:
                    exists = known[0] if known else False
                self._per_major_topics[topic] = (exists, now)
                if not exists:
                    log.error(
                        "per-major topic %s does not exist: batches admitted for it are not "
                        "written there; create it with `contract-gate topics create`",
                        topic,
                    )
            if not self._per_major_topics[topic][0]:
                missing.add(topic)
        return frozenset(missing)

    def _abort(self, reason: str) -> None:
        """Abort the open transaction (raises :class:`BrokerError` when that fails)."""
        from confluent_kafka import KafkaException

        log.warning("transaction failed (%s); aborting and consuming the batch again", reason)
        self.transactions_aborted += 1
        try:
            with self._guard("abort_transaction", ABORT_TIMEOUT_S):
                self._producer.abort_transaction(ABORT_TIMEOUT_S)
        except KafkaException as exc:
            raise BrokerError(f"cannot abort transaction: {exc.args[0].str()}") from exc

    def _seek(self, offsets: dict[tuple[str, int], int], why: str) -> None:
        """Seek each still-assigned partition back to its offset; partitions revoked
        meanwhile resume, at their next owner, from the committed offsets."""
        from confluent_kafka import KafkaException, TopicPartition

        for (t, p), offset in offsets.items():
            if (t, p) not in self.assigned:
                continue
            try:
                self._consumer.seek(TopicPartition(t, p, offset))
            except KafkaException as exc:
                # continuing would commit offsets past events never decided: stop instead,
                # a restart resumes from the committed offsets
                raise BrokerError(
                    f"cannot rewind {t}[{p}] to {offset} after {why} "
                    f"({exc.args[0].str()}); stopping so a restart resumes from the "
                    "committed offsets"
                ) from exc


def _commit_transaction(producer: Any) -> None:
    """``commit_transaction``, called again while librdkafka says the error is retriable
    (its documented contract for a timed-out commit), up to :data:`COMMIT_TIMEOUT_S`."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + COMMIT_TIMEOUT_S
    while True:
        try:
            producer.commit_transaction(max(1.0, deadline - time.monotonic()))
            return
        except KafkaException as exc:
            err = exc.args[0]
            if not err.retriable() or time.monotonic() > deadline:
                raise
            log.warning("commit_transaction: %s; retrying", err.str())


@dataclass(frozen=True)
class _Sent:
    """A run's transaction as the committer thread ended it: the run's events, its
    outcomes as committed (replays deduplicated), the originals it admits, and how many of
    its events were committed (all, unless a transaction was aborted)."""

    events: list[Any]
    outcomes: list[Outcome]
    admitted: list[str]
    committed: int


def _event_bytes(m: Any) -> int:
    """Bytes of a consumed record's value (0 for a tombstone)."""
    return len(m.value() or b"")


def _starts(events: list[Any]) -> list[tuple[str, int, int]]:
    """``(topic, partition, first offset)`` of each partition of a poll batch."""
    first: dict[tuple[str, int], int] = {}
    for m in events:
        first.setdefault((m.topic(), m.partition()), m.offset())
    return [(t, p, o) for (t, p), o in first.items()]


def _produce(
    producer: Any,
    topic: str,
    key: Any,
    value: bytes,
    headers: Any,
    on_delivery: Callable[[Any, Any], None] | None = None,
) -> None:
    """Produce one record; while the local queue is full (BufferError), serve delivery
    reports until there is room (a poll batch of large records can exceed
    ``queue.buffering.max.kbytes``). ``on_delivery`` gets each delivery report."""
    deadline = time.monotonic() + QUEUE_FULL_TIMEOUT_S
    while True:
        try:
            producer.produce(topic, key=key, value=value, headers=headers, on_delivery=on_delivery)
            producer.poll(0)
            return
        except BufferError:
            if time.monotonic() > deadline:
                raise BrokerError(
                    f"local producer queue full for 60 s producing to {topic}"
                ) from None
            producer.poll(0.5)
