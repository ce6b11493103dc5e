"""The transaction discipline of Pipeline._commit and step, with in-memory doubles of the
clients.

Real-broker behaviour (crash, fencing, scale-out) is in tests/integration; these cover the
failure branches a real broker rarely produces on demand: an abortable commit error, a
retriable commit timeout, a failed rewind, a fenced producer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import KafkaError as CKError
from confluent_kafka import KafkaException

from tests.fakes import FakeRecord
from worker.core.errors import BrokerError
from worker.core.model import Decision
from worker.gate.pipeline import Pipeline
from worker.gate.route import Outcome, OutRecord, Source
from worker.kafka.settings import Settings


@dataclass
class FakeProducer:
    commit_errors: list[CKError] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    produced: list[str] = field(default_factory=list)
    offsets: list[Any] = field(default_factory=list)

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def produce(self, topic: str, **kw: Any) -> None:
        self.produced.append(topic)

    def poll(self, timeout: float = 0) -> int:
        return 0

    def send_offsets_to_transaction(self, offsets: Any, meta: Any, timeout: float) -> None:
        self.offsets = [(tp.topic, tp.partition, tp.offset) for tp in offsets]

    def commit_transaction(self, timeout: float) -> None:
        self.calls.append("commit")
        if self.commit_errors:
            raise KafkaException(self.commit_errors.pop(0))

    def abort_transaction(self, timeout: float) -> None:
        self.calls.append("abort")


@dataclass
class FakeConsumer:
    seek_fails: bool = False
    seeks: list[tuple[str, int, int]] = field(default_factory=list)

    def consumer_group_metadata(self) -> object:
        return object()

    def seek(self, tp: Any) -> None:
        if self.seek_fails:
            raise KafkaException(CKError(CKError._STATE, "partition not assigned"))
        self.seeks.append((tp.topic, tp.partition, tp.offset))


def pipeline_with(producer: FakeProducer, consumer: FakeConsumer) -> Pipeline:
    p = Pipeline(Settings(instance_id="pod-0"))
    p._producer, p._consumer = producer, consumer
    p.assigned = frozenset({("in", 0), ("in", 1)})
    return p


EVENTS = [FakeRecord("in", 0, 10), FakeRecord("in", 0, 11), FakeRecord("in", 1, 7)]
OUTCOMES = [
    Outcome(
        Source("in", m.partition(), m.offset(), None, b"x"),
        "l",
        "b",
        Decision("admitted", ()),
        (OutRecord("out", "l", b"x", []),),
        0.0,
    )
    for m in EVENTS
]


def test_commit_writes_every_record_and_the_next_offsets() -> None:
    producer, consumer = FakeProducer(), FakeConsumer()
    assert pipeline_with(producer, consumer)._commit(EVENTS, OUTCOMES) == 3
    assert producer.produced == ["out", "out", "out"]
    assert sorted(producer.offsets) == [("in", 0, 12), ("in", 1, 8)]
    assert producer.calls == ["begin", "commit"]


def test_abortable_commit_error_aborts_and_the_step_rewinds_to_the_first_offsets() -> None:
    producer = FakeProducer([CKError(CKError._TIMED_OUT, "x", txn_requires_abort=True)])
    consumer = PollingConsumer(batches=[[_polled(10), _polled(11), _polled(7, partition=1)]])
    p = polling_pipeline(producer, consumer)
    p.assigned = frozenset({("in", 0)})  # partition 1 was revoked meanwhile: its next owner resumes
    assert p.step() == 0
    assert producer.calls == ["begin", "commit", "abort"]
    assert consumer.seeks == [("in", 0, 10)]
    assert p.transactions_aborted == 1 and p.batches_committed == 0


def test_retriable_commit_error_is_retried_not_aborted() -> None:
    producer = FakeProducer([CKError(CKError._TIMED_OUT, "slow", retriable=True)])
    assert pipeline_with(producer, FakeConsumer())._commit(EVENTS, OUTCOMES) == 3
    assert producer.calls == ["begin", "commit", "commit"]


def test_a_failed_rewind_stops_the_worker_instead_of_skipping_the_batch() -> None:
    producer = FakeProducer([CKError(CKError._TIMED_OUT, "x", txn_requires_abort=True)])
    consumer = PollingConsumer(batches=[[_polled(10), _polled(11)]], seek_fails=True)
    with pytest.raises(BrokerError, match=r"cannot rewind in\[0\] to 10"):
        polling_pipeline(producer, consumer).step()


def test_fenced_producer_is_fatal_for_the_instance() -> None:
    producer = FakeProducer([CKError(CKError.PRODUCER_FENCED, "newer producer")])
    with pytest.raises(BrokerError, match="fenced: another worker with instance id pod-0"):
        pipeline_with(producer, FakeConsumer())._commit(EVENTS, OUTCOMES)
    assert "abort" not in producer.calls


def _polled(offset: int, partition: int = 0) -> FakeRecord:
    return FakeRecord("in", partition, offset, key=b"roads", value=b"\x00not avro")


@dataclass
class PollingConsumer(FakeConsumer):
    batches: list[list[Any]] = field(default_factory=list)

    def consume(self, n: int, timeout: float) -> list[Any]:
        return self.batches.pop(0) if self.batches else []


class NoConfigUpdates:
    def poll_updates(self) -> None:
        return None


def polling_pipeline(producer: FakeProducer, consumer: PollingConsumer) -> Pipeline:
    p = pipeline_with(producer, consumer)
    p.config = NoConfigUpdates()  # type: ignore[assignment]
    p._lag_at = float("inf")  # no lag probe in these tests
    return p


def test_each_committed_poll_batch_logs_one_info_line(caplog: pytest.LogCaptureFixture) -> None:
    consumer = PollingConsumer(batches=[[_polled(1), _polled(2)]])
    p = polling_pipeline(FakeProducer(), consumer)
    with caplog.at_level("INFO", logger="worker.gate.pipeline"):
        assert p.step() == 2
        assert p.step() == 0  # nothing polled: no line
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("poll batch")]
    assert len(lines) == 1
    assert lines[0].startswith("poll batch: 2 events, 0 admitted, 2 quarantined, ")
    assert lines[0].split(", ")[3].endswith(" ms (committed in 1 transaction)")


@dataclass
class SizeLimitedProducer(FakeProducer):
    """Refuses a record above ``max_bytes`` at produce(), as librdkafka does against its
    ``message.max.bytes``."""

    max_bytes: int = 2000

    def produce(self, topic: str, **kw: Any) -> None:
        if len(kw["value"]) > self.max_bytes:
            raise KafkaException(
                CKError(CKError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large")
            )
        self.produced.append(topic)


def test_a_record_refused_as_too_large_is_quarantined_after_three_attempts() -> None:
    from worker.gate.attempts import MAX_BATCH_ATTEMPTS

    producer, consumer = SizeLimitedProducer(), FakeConsumer()
    p = pipeline_with(producer, consumer)
    outcomes = list(OUTCOMES)
    big = outcomes[1]
    outcomes[1] = Outcome(
        big.source, "l", "b-big", big.decision, (OutRecord("out", "l", b"y" * 5000, []),), 0.0
    )
    for _ in range(MAX_BATCH_ATTEMPTS):  # the whole batch fails (the caller rewinds it)
        assert p._commit(EVENTS, outcomes) == 0
    assert producer.produced == ["out"] * MAX_BATCH_ATTEMPTS
    producer.produced.clear()
    assert p._commit(EVENTS, outcomes) == 3  # one transaction per event now
    quarantine = Settings().topics.quarantine
    assert producer.produced == ["out", quarantine, "out"]
    assert outcomes[1].decision.reasons[0].code == "record_too_large"
    message = outcomes[1].decision.reasons[0].message
    assert "batch b-big is 5065 bytes" in message  # value and key, and 64 of framing
    assert f"message.max.bytes is {16 * 1024 * 1024 + 1024 * 1024} bytes" in message
    assert outcomes[0].decision.admitted and outcomes[2].decision.admitted
    assert sorted(producer.offsets) == [("in", 1, 8)]  # the last event's own transaction
    assert p.attempts.attempts(("in", 0, 10)) == 0  # forgotten once committed


def test_a_record_above_the_producers_own_limit_is_quarantined_when_routed() -> None:
    """The producer's message.max.bytes is known: an event whose records would exceed it
    is quarantined at routing, in the poll batch's one transaction, never aborted (on
    Tansu an aborted transaction's records reach read_committed readers)."""
    limit = 2000
    producer = SizeLimitedProducer(max_bytes=limit)
    big = FakeRecord("in", 0, 30, key=b"roads", value=b"\x00not avro" + b"z" * 5000)
    consumer = PollingConsumer(batches=[[big, _polled(31)]])
    p = Pipeline(Settings(instance_id="pod-0", extra={"message.max.bytes": str(limit)}))
    p._producer, p._consumer = producer, consumer
    p.assigned = frozenset({("in", 0)})
    p.config = NoConfigUpdates()  # type: ignore[assignment]
    p._lag_at = float("inf")
    decided: list[Outcome] = []
    p.on_outcome = decided.append
    assert p.step() == 2
    assert producer.calls == ["begin", "commit"]  # one transaction, no abort
    assert [o.decision.reasons[0].code for o in decided] == ["decode_error", "decode_error"]
    record = decided[0].records[0]
    assert len(record.value) <= limit - 1024  # the original is not carried
    assert decided[1].records[0].value is not None


@dataclass
class FailingFrom(FakeProducer):
    """Commits ``ok`` transactions, then every commit fails and needs an abort."""

    ok: int = 0

    def commit_transaction(self, timeout: float) -> None:
        self.calls.append("commit")
        if self.calls.count("commit") > self.ok:
            raise KafkaException(CKError(CKError._TIMED_OUT, "x", txn_requires_abort=True))


def test_after_events_committed_one_by_one_a_failure_rewinds_only_the_uncommitted() -> None:
    from worker.gate.attempts import MAX_BATCH_ATTEMPTS

    polled = [_polled(10), _polled(5, partition=1), _polled(11), _polled(6, partition=1)]
    producer = FailingFrom(ok=1)
    consumer = PollingConsumer(batches=[list(polled)])
    p = polling_pipeline(producer, consumer)
    for start in (("in", 0, 10), ("in", 1, 5)):  # the batch failed often: event by event now
        p.attempts._failed[start] = MAX_BATCH_ATTEMPTS
    assert p.step() == 0  # in[0]@10 committed alone, then in[1]@5 failed
    assert producer.offsets == [("in", 1, 6)]  # the failed one's (aborted)
    assert sorted(consumer.seeks) == [("in", 0, 11), ("in", 1, 5)]


def test_a_replay_committed_before_a_failure_one_per_transaction_is_admitted_once() -> None:
    from worker.gate.attempts import MAX_BATCH_ATTEMPTS
    from worker.gate.route import REPLAY_OF

    polled = [_polled(10), _polled(11), _polled(7, partition=1)]
    producer = FailingFrom(ok=1)  # in[0]@10 commits alone, in[0]@11 fails
    consumer = PollingConsumer(batches=[list(polled)])
    p = polling_pipeline(producer, consumer)

    def admitted(m: Any) -> Outcome:
        headers = ((REPLAY_OF, b"orig-1"),) if m.offset() == 10 else ()
        source = Source(m.topic(), m.partition(), m.offset(), None, b"x", headers)
        record = OutRecord("out", "l", b"x", [])
        return Outcome(source, "l", "b", Decision("admitted", ()), (record,), 0.0)

    p._route = admitted  # type: ignore[method-assign]
    for start in (("in", 0, 10), ("in", 1, 7)):
        p.attempts._failed[start] = MAX_BATCH_ATTEMPTS
    assert p.step() == 0
    assert sorted(consumer.seeks) == [("in", 0, 11), ("in", 1, 7)]  # the rest only
    # the replay's admission is committed: a second replay of orig-1 is a duplicate
    assert "orig-1" in p.replays
    again, originals = p._dedupe_replays([admitted(polled[0])])
    assert originals == [] and again[0].decision.reasons[0].code == "duplicate_replay"


def test_a_local_payload_root_that_is_not_a_directory_is_named_at_start(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # a fresh-user session started a worker on a root that did not exist, without a word
    missing = tmp_path / "nonexistent"
    s = Settings.from_env({}, payload_roots=[tmp_path.as_uri(), missing.as_uri()])
    with caplog.at_level("WARNING", logger="worker.gate.pipeline"):
        Pipeline(s)._warn_missing_roots()
    (line,) = [r.getMessage() for r in caplog.records]
    assert f"payload root {missing.as_uri()}" in line and "not a directory" in line
