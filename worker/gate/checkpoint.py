"""Checkpoint.commit(run): the records of a run and its offsets in one Kafka transaction.

Checkpoint discipline (as quix-streams' ``checkpointing/checkpoint.py``): every output
record of a run (admitted or quarantine record, one evaluation record per version,
per-major records) and its consumed offsets (``send_offsets_to_transaction``, KIP-447) are
written and committed in ONE transaction. A failure aborts the transaction; the caller
rewinds the consumer to the first uncommitted offset of each partition
(:func:`worker.gate.offsets.rewind`),
so the rest of the poll batch is consumed again, in order. After ``max_batch_attempts``
failed attempts of the same run (:mod:`worker.gate.attempts`) it is committed one event
per transaction, and an event whose records Kafka refuses as too large is quarantined with
``record_too_large``. Kafka callbacks only set flags.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from worker.core.errors import BrokerError, ContractGateError, InstanceFenced
from worker.core.replays import ReplayLedger
from worker.gate.attempts import BatchAttempts, largest_record_bytes, record_too_large, size_refused
from worker.gate.config import GateConfig
from worker.gate.offsets import next_offsets, starts
from worker.gate.producing import Guard, commit_transaction, produce_record
from worker.gate.records import Outcome, OutRecord
from worker.gate.replays import admitted_originals, dedupe_replays
from worker.gate.topics import PerMajorTopics
from worker.kafka.clients import FENCED_CODES, map_kafka_errors
from worker.kafka.health import BrokerHealth
from worker.kafka.protocols import ConsumerLike, MessageLike, TransactionalProducerLike
from worker.kafka.settings import Settings

if TYPE_CHECKING:
    from worker.kafka.wire import RegistryCodec

__all__ = ["Checkpoint", "Done", "Run"]

log = logging.getLogger(__name__)


def _fenced_codes() -> frozenset[int]:
    return FENCED_CODES


#: Producer errors meaning a newer producer with the same transactional.id took over
#: (zombie fencing, KIP-98/KIP-447): fatal for this instance, never retried.
_FENCED_CODES = _fenced_codes()


@dataclass(frozen=True)
class Run:
    """Routed events of a poll batch, in order, and their outcomes (same length)."""

    events: list[MessageLike]
    outcomes: list[Outcome]


@dataclass(frozen=True)
class Done:
    """A run as :meth:`Checkpoint.commit` ended it: its events, its outcomes as committed
    (replays deduplicated, refused records quarantined), the replayed originals it admits,
    and how many of its events were committed (a prefix: all unless a transaction failed)."""

    events: list[MessageLike]
    outcomes: list[Outcome]
    admitted: list[str]
    committed: int

    @property
    def complete(self) -> bool:
        """Every event of the run was committed."""
        return self.committed == len(self.events)


@dataclass
class Checkpoint:
    """Writes runs in Kafka transactions: 1 produce, 2 send offsets, 3 commit; else abort.

    Parameters
    ----------
    config : GateConfig
        Timeouts (``*_timeout_s``), ``max_batch_attempts``, ``per_major_recheck_s``.
    settings : Settings
        Topics, instance id, transactional id prefix, ``message.max.bytes``.
    producer, consumer : TransactionalProducerLike, ConsumerLike
        The transactional producer (transactions initialised) and the consumer whose
        group metadata the offsets are committed for.
    ledger : ReplayLedger
        Originals of admitted replays: read to deduplicate, added to once committed.
    clock : callable
        Aware UTC "now" of the records built here.
    wire : RegistryCodec, optional
        Frames quarantine and evaluation records (Schema Registry); ``framed`` maps their
        topics to record kinds.
    """

    config: GateConfig
    settings: Settings
    producer: TransactionalProducerLike
    consumer: ConsumerLike
    ledger: ReplayLedger
    clock: Callable[[], datetime]
    wire: RegistryCodec | None = None
    framed: dict[str, str] = field(default_factory=dict)
    health: BrokerHealth = field(default_factory=BrokerHealth)
    guard: Guard = field(default_factory=Guard)
    #: transactions aborted so far
    aborted: int = 0
    attempts: BatchAttempts = field(init=False)
    per_major: PerMajorTopics = field(init=False)
    #: the last failed transaction: its reason and the Kafka error codes seen
    _failure: tuple[str, set[int]] = field(default=("", set()), init=False)

    def __post_init__(self) -> None:
        self.attempts = BatchAttempts(self.config.max_batch_attempts)
        self.per_major = PerMajorTopics(self.producer, self.config.per_major_recheck_s)

    def commit(self, run: Run) -> Done:
        """Commit one run (replays deduplicated first: :func:`dedupe_replays`).

        Returns
        -------
        Done
            ``committed`` is how many of ``run.events`` were committed, a prefix; the
            caller rewinds the rest (:func:`~worker.gate.offsets.rewind`), which is consumed again.

        Raises
        ------
        BrokerError
            This instance must stop: fenced, a fatal producer error, or a failed abort (a
            restart resumes from the committed offsets, so nothing is lost).
        """
        s = self.settings
        outcomes, admitted = dedupe_replays(run.outcomes, self.ledger, s.topics,
                                            now=self.clock(), worker_id=s.instance_id,
                                            max_record_bytes=s.max_record_bytes())  # fmt: skip
        first = starts(run.events)
        if self.attempts.exhausted(first):
            committed = self._commit_each(run.events, outcomes)
        elif self._transact(run.events, outcomes):
            self.attempts.committed((t, p) for t, p, _ in first)
            committed = len(run.events)
        else:
            self.attempts.failed(first)
            committed = 0
        # only once committed: an aborted run is consumed again
        complete = committed == len(run.events)
        self.ledger.add(admitted if complete else admitted_originals(outcomes[:committed]))
        return Done(run.events, outcomes, admitted, committed)

    def _commit_each(self, events: list[MessageLike], outcomes: list[Outcome]) -> int:
        """One transaction per event, in order. An event whose transaction fails because
        Kafka refuses a record as too large gets a ``record_too_large`` quarantine record
        instead (``outcomes[i]`` replaced); any other failure ends it: returns how many
        events were committed before it."""
        log.warning(
            "poll batch at %s failed %d times; committing its %d events one per transaction",
            ", ".join(f"{t}[{p}]@{o}" for t, p, o in starts(events)),
            self.attempts.max_attempts,
            len(events),
        )
        for i, event in enumerate(events):
            if self._transact([event], [outcomes[i]]):
                continue
            reason, codes = self._failure
            if size_refused(codes):
                outcomes[i] = self._too_large(event, outcomes[i], reason)
                if self._transact([event], [outcomes[i]]):
                    continue
            self.attempts.failed(starts(events[i:]))
            return i
        self.attempts.committed((t, p) for t, p, _ in starts(events))
        return len(events)

    def _too_large(self, event: MessageLike, outcome: Outcome, reason: str) -> Outcome:
        """``outcome`` replaced by a ``record_too_large`` quarantine (logged at ERROR)."""
        size = largest_record_bytes(outcome)
        log.error(
            "%s[%d]@%d: a %d-byte output record was refused as too large (%s); "
            "quarantined with record_too_large",
            event.topic(),
            event.partition(),
            event.offset(),
            size,
            reason,
        )
        limit = int(self.settings.producer().get("message.max.bytes", 0))
        return record_too_large(outcome, self.settings.topics, record_bytes=size,
                                limit_bytes=limit, error=reason, now=self.clock(),
                                worker_id=self.settings.instance_id)  # fmt: skip

    def _transact(self, events: list[MessageLike], outcomes: list[Outcome]) -> bool:
        """One transaction: the records of ``outcomes`` and the offsets after ``events``.

        Returns False when it failed and was aborted (``self._failure`` holds the reason
        and the Kafka error codes). Raises :class:`BrokerError` as :meth:`commit`.
        """
        c, producer = self.config, self.producer
        missing = self.per_major.missing(outcomes)
        codes: set[int] = set()

        def delivered(err: Any, _msg: Any) -> None:  # a flag only (callback)
            if err is not None:
                codes.add(err.code())

        try:
            with map_kafka_errors():  # the client's errors as BrokerError (code, flags)
                self._steps(events, outcomes, delivered, missing)
            self.health.reachable()
            return True
        except BrokerError as exc:  # the client's (detail set) or ours (queue stayed full)
            reason = str(exc) if exc.detail is None else self._fatal_or_reason(exc, codes)
        except Exception:  # a bug: never leave the transaction open behind the crash
            with contextlib.suppress(Exception):
                producer.abort_transaction(c.abort_timeout_s)
            raise
        # else: abort (the caller rewinds)
        self._failure = (reason, codes)
        self._abort(reason)
        return False

    def _steps(
        self,
        events: list[MessageLike],
        outcomes: list[Outcome],
        delivered: Callable[[Any, Any], None],
        missing: Container[str],
    ) -> None:
        """The transaction's numbered steps (raise the client's errors as they come)."""
        c, producer = self.config, self.producer
        producer.begin_transaction()  # 0. begin
        # 1. produce every record of the run
        with self.guard.call("producing the batch's records", c.queue_full_timeout_s):
            for r in (r for o in outcomes for r in o.records if r.topic not in missing):
                produce_record(producer, r, self._value(r), delivered, c.queue_full_timeout_s)
        # 2. send the offsets after the run's events, inside the transaction (KIP-447)
        with self.guard.call("send_offsets_to_transaction", c.send_offsets_timeout_s):
            producer.send_offsets_to_transaction(
                next_offsets(events),
                self.consumer.consumer_group_metadata(),
                c.send_offsets_timeout_s,
            )
        # 3. commit the transaction (retried while librdkafka says it is retriable)
        with self.guard.call("commit_transaction", c.commit_timeout_s):
            commit_transaction(producer, c.commit_timeout_s)

    def _fatal_or_reason(self, exc: BrokerError, codes: set[int]) -> str:
        """The reason of a failed transaction (its code added to ``codes``); raises
        :class:`InstanceFenced` when the producer is fenced, :class:`BrokerError` when its
        error is fatal."""
        s = self.settings
        if exc.code in _FENCED_CODES:
            raise InstanceFenced(
                f"fenced: another worker with instance id {s.instance_id} "
                f"(transactional.id {s.transactional_id_prefix}-{s.instance_id}) took over; "
                "this one stops without committing its batch, which the other consumes "
                f"again ({exc.detail})",
                code=exc.code,
                detail=exc.detail,
            ) from exc
        if exc.fatal:
            raise BrokerError(
                f"fatal producer error, worker must restart: {exc.detail}", detail=exc.detail
            ) from exc
        if exc.code is not None:
            codes.add(exc.code)
        return str(exc.detail)

    def _value(self, record: OutRecord) -> bytes:
        """The bytes to produce: quarantine and evaluation records framed in the Schema
        Registry wire format when one is configured; everything else as routed."""
        kind = self.framed.get(record.topic)
        if self.wire is None or kind is None:
            return record.value
        try:
            return self.wire.frame(record.value, record.topic, kind)
        except ContractGateError as exc:  # the transaction is aborted and retried
            raise BrokerError(f"schema registry: {exc}") from None

    def _abort(self, reason: str) -> None:
        """Abort the open transaction (raises :class:`BrokerError` when that fails)."""
        log.warning("transaction failed (%s); aborting and consuming the batch again", reason)
        self.aborted += 1
        timeout_s = self.config.abort_timeout_s
        try:
            with self.guard.call("abort_transaction", timeout_s), map_kafka_errors():
                self.producer.abort_transaction(timeout_s)
        except BrokerError as exc:
            if exc.detail is None:  # ours (the watchdog): as it is
                raise
            raise BrokerError(
                f"cannot abort transaction: {exc.detail}", code=exc.code, detail=exc.detail
            ) from exc
