"""The transaction discipline of Checkpoint.commit and Processor.step, with in-memory
doubles of the clients injected through the constructor.

Real-broker behaviour (crash, fencing, scale-out) is in tests/integration; these cover the
failure branches a real broker rarely produces on demand: an abortable commit error, a
retriable commit timeout, a failed rewind, a fenced producer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import pytest
from confluent_kafka import KafkaError as CKError
from confluent_kafka import KafkaException

from tests.fakes import FakeRecord
from worker.core.errors import BrokerError
from worker.core.model import Decision
from worker.gate.checkpoint import Run
from worker.gate.config import GateConfig
from worker.gate.processor import Processor
from worker.gate.route import Outcome, OutRecord, Source
from worker.gate.startup import warn_missing_roots
from worker.kafka.clients import STATE, TIMED_OUT
from worker.kafka.protocols import TopicPartition
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
        self.calls.append(f"produce {topic}")

    def poll(self, timeout: float = 0) -> int:
        return 0

    def send_offsets_to_transaction(self, offsets: Any, meta: Any, timeout: float) -> None:
        self.offsets = [(tp.topic, tp.partition, tp.offset) for tp in offsets]
        self.calls.append("send_offsets")

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
            raise KafkaException(CKError(STATE, "partition not assigned"))
        self.seeks.append((tp.topic, tp.partition, tp.offset))


def pipeline_with(
    producer: FakeProducer,
    consumer: FakeConsumer,
    settings: Settings | None = None,
    assigned: tuple[int, ...] = (0, 1),
    **kw: Any,
) -> Processor:
    """A processor on the doubles (no lag probe), assigned partitions ``in[assigned]``."""
    p = Processor(
        GateConfig(lag_interval_s=float("inf")),
        settings or Settings(instance_id="pod-0"),
        consumer=consumer,  # type: ignore[arg-type]
        producer=producer,  # type: ignore[arg-type]
        **kw,
    )
    p.assignment.on_assign(consumer, [TopicPartition("in", i) for i in assigned])
    return p


def commit(p: Processor, events: list[Any], outcomes: list[Outcome]) -> int:
    """Events committed by ``p.checkpoint.commit`` of one run."""
    return p.checkpoint.commit(Run(events, outcomes)).committed


NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
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
    assert commit(pipeline_with(producer, consumer), EVENTS, OUTCOMES) == 3
    assert producer.produced == ["out", "out", "out"]
    assert sorted(producer.offsets) == [("in", 0, 12), ("in", 1, 8)]
    # 1 produce, 2 send offsets, 3 commit: in that order, in one transaction
    assert producer.calls == ["begin", *["produce out"] * 3, "send_offsets", "commit"]


def test_abortable_commit_error_aborts_and_the_step_rewinds_to_the_first_offsets() -> None:
    producer = FakeProducer([CKError(TIMED_OUT, "x", txn_requires_abort=True)])
    consumer = PollingConsumer(batches=[[_polled(10), _polled(11), _polled(7, partition=1)]])
    # partition 1 was revoked meanwhile: its next owner resumes
    p = polling_pipeline(producer, consumer, assigned=(0,))
    assert p.step() == 0
    assert producer.calls == ["begin", *["produce gis.batches.quarantine"] * 3, "send_offsets",
                              "commit", "abort"]  # fmt: skip
    assert consumer.seeks == [("in", 0, 10)]
    assert p.transactions_aborted == 1 and p.batches_committed == 0


def test_retriable_commit_error_is_retried_not_aborted() -> None:
    producer = FakeProducer([CKError(TIMED_OUT, "slow", retriable=True)])
    assert commit(pipeline_with(producer, FakeConsumer()), EVENTS, OUTCOMES) == 3
    assert [c for c in producer.calls if not c.startswith("produce")] == [
        "begin", "send_offsets", "commit", "commit"
    ]  # fmt: skip


def test_a_failed_rewind_stops_the_worker_instead_of_skipping_the_batch() -> None:
    producer = FakeProducer([CKError(TIMED_OUT, "x", txn_requires_abort=True)])
    consumer = PollingConsumer(batches=[[_polled(10), _polled(11)]], seek_fails=True)
    with pytest.raises(BrokerError, match=r"cannot rewind in\[0\] to 10"):
        polling_pipeline(producer, consumer).step()


def test_fenced_producer_is_fatal_for_the_instance() -> None:
    producer = FakeProducer([CKError(CKError.PRODUCER_FENCED, "newer producer")])
    with pytest.raises(BrokerError, match="fenced: another worker with instance id pod-0"):
        commit(pipeline_with(producer, FakeConsumer()), EVENTS, OUTCOMES)
    assert "abort" not in producer.calls


def _polled(offset: int, partition: int = 0) -> FakeRecord:
    return FakeRecord("in", partition, offset, key=b"roads", value=b"\x00not avro")


@dataclass
class PollingConsumer(FakeConsumer):
    batches: list[list[Any]] = field(default_factory=list)

    def consume(self, n: int, timeout: float) -> list[Any]:
        return self.batches.pop(0) if self.batches else []


def polling_pipeline(producer: FakeProducer, consumer: PollingConsumer, **kw: Any) -> Processor:
    """A processor polling ``consumer`` (the config topic is never read: not started)."""
    return pipeline_with(producer, consumer, **kw)


def test_each_committed_poll_batch_logs_one_info_line(caplog: pytest.LogCaptureFixture) -> None:
    consumer = PollingConsumer(batches=[[_polled(1), _polled(2)]])
    p = polling_pipeline(FakeProducer(), consumer)
    with caplog.at_level("INFO", logger="worker.gate.housekeeping"):
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
        super().produce(topic, **kw)


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
        assert commit(p, EVENTS, outcomes) == 0
    assert producer.produced == ["out"] * MAX_BATCH_ATTEMPTS
    producer.produced.clear()
    done = p.checkpoint.commit(Run(EVENTS, outcomes))  # one transaction per event now
    assert done.committed == 3 and done.complete
    outcomes = done.outcomes
    quarantine = Settings().topics.quarantine
    assert producer.produced == ["out", quarantine, "out"]
    assert outcomes[1].decision.reasons[0].code == "record_too_large"
    message = outcomes[1].decision.reasons[0].message
    assert "batch b-big is 5065 bytes" in message  # value and key, and 64 of framing
    assert f"message.max.bytes is {16 * 1024 * 1024 + 1024 * 1024} bytes" in message
    assert outcomes[0].decision.admitted and outcomes[2].decision.admitted
    assert sorted(producer.offsets) == [("in", 1, 8)]  # the last event's own transaction
    assert p.checkpoint.attempts.attempts(("in", 0, 10)) == 0  # forgotten once committed


def test_a_record_above_the_producers_own_limit_is_quarantined_when_routed() -> None:
    """The producer's message.max.bytes is known: an event whose records would exceed it
    is quarantined at routing, in the poll batch's one transaction, never aborted (on
    Tansu an aborted transaction's records reach read_committed readers)."""
    limit = 2000
    producer = SizeLimitedProducer(max_bytes=limit)
    big = FakeRecord("in", 0, 30, key=b"roads", value=b"\x00not avro" + b"z" * 5000)
    consumer = PollingConsumer(batches=[[big, _polled(31)]])
    decided: list[Outcome] = []
    settings = Settings(instance_id="pod-0", extra={"message.max.bytes": str(limit)})
    p = pipeline_with(producer, consumer, settings, (0,), on_outcome=decided.append)
    assert p.step() == 2
    assert "abort" not in producer.calls and producer.calls.count("commit") == 1
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
            raise KafkaException(CKError(TIMED_OUT, "x", txn_requires_abort=True))


def test_after_events_committed_one_by_one_a_failure_rewinds_only_the_uncommitted() -> None:
    from worker.gate.attempts import MAX_BATCH_ATTEMPTS

    polled = [_polled(10), _polled(5, partition=1), _polled(11), _polled(6, partition=1)]
    producer = FailingFrom(ok=1)
    consumer = PollingConsumer(batches=[list(polled)])
    p = polling_pipeline(producer, consumer)
    for _ in range(MAX_BATCH_ATTEMPTS):  # the batch failed often: event by event now
        p.checkpoint.attempts.failed([("in", 0, 10), ("in", 1, 5)])
    assert p.step() == 0  # in[0]@10 committed alone, then in[1]@5 failed
    assert producer.offsets == [("in", 1, 6)]  # the failed one's (aborted)
    assert sorted(consumer.seeks) == [("in", 0, 11), ("in", 1, 5)]


def test_a_replay_committed_before_a_failure_one_per_transaction_is_admitted_once() -> None:
    from worker.gate.attempts import MAX_BATCH_ATTEMPTS
    from worker.gate.replays import dedupe_replays
    from worker.gate.route import REPLAY_OF

    polled = [_polled(10), _polled(11), _polled(7, partition=1)]
    producer = FailingFrom(ok=1)  # in[0]@10 commits alone, in[0]@11 fails
    consumer = PollingConsumer(batches=[list(polled)])

    def admitted(m: Any) -> Outcome:
        headers = ((REPLAY_OF, b"orig-1"),) if m.offset() == 10 else ()
        source = Source(m.topic(), m.partition(), m.offset(), None, b"x", headers)
        record = OutRecord("out", "l", b"x", [])
        return Outcome(source, "l", "b", Decision("admitted", ()), (record,), 0.0)

    p = polling_pipeline(producer, consumer, router=admitted)
    for _ in range(MAX_BATCH_ATTEMPTS):
        p.checkpoint.attempts.failed([("in", 0, 10), ("in", 1, 7)])
    assert p.step() == 0
    assert sorted(consumer.seeks) == [("in", 0, 11), ("in", 1, 7)]  # the rest only
    # the replay's admission is committed: a second replay of orig-1 is a duplicate
    assert "orig-1" in p.replays
    again, originals = dedupe_replays([admitted(polled[0])], p.replays, Settings().topics,
                                      now=NOW, worker_id="w")  # fmt: skip
    assert originals == [] and again[0].decision.reasons[0].code == "duplicate_replay"


def test_a_local_payload_root_that_is_not_a_directory_is_named_at_start(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # a fresh-user session started a worker on a root that did not exist, without a word
    missing = tmp_path / "nonexistent"
    s = Settings.from_env({}, payload_roots=[tmp_path.as_uri(), missing.as_uri()])
    with caplog.at_level("WARNING", logger="worker.gate.startup"):
        warn_missing_roots(s)
    (line,) = [r.getMessage() for r in caplog.records]
    assert f"payload root {missing.as_uri()}" in line and "not a directory" in line
