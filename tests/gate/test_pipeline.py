"""The transaction discipline of Checkpoint.commit and Processor.step on the in-memory
broker (:mod:`tests.gate.world`): real clients, failures armed on the broker.

Real-broker behaviour (crash, fencing, scale-out) is in tests/integration; these cover the
failure branches a real broker rarely produces on demand: an abortable commit error, a
retriable commit timeout, a failed rewind, a fenced producer, a record too large. Each is
raised by the memory broker's client as confluent-kafka raises it (``KafkaException``
wrapping a ``KafkaError``), so the adapter's error mapping runs as in production.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

import pytest

from tests.gate.world import OUT, UNDECODABLE, World, admitted, world
from worker.core.errors import BrokerError, InstanceFenced
from worker.gate.attempts import MAX_BATCH_ATTEMPTS
from worker.gate.replays import dedupe_replays
from worker.gate.route import REPLAY_OF, Outcome, Source
from worker.gate.startup import warn_missing_roots
from worker.kafka.memory import BrokerFault
from worker.kafka.settings import Settings

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)


def three_events(w: World) -> list[Any]:
    """Two events on partition 0, one on partition 1, as the processor consumes them."""
    w.send((0, b"e0"), (0, b"e1"), (1, b"e2"))
    return w.poll()


def test_commit_writes_every_record_and_the_next_offsets() -> None:
    w = world()
    events = three_events(w)
    assert w.commit(events, [admitted(m) for m in events]).committed == 3
    assert [m.value() for m in w.read(OUT)] == [b"x"] * 3
    assert w.broker.committed(w.settings.group_id) == {(w.batches, 0): 2, (w.batches, 1): 1}
    # 1 produce, 2 send offsets, 3 commit: in that order, in one transaction
    assert w.broker.calls == ["begin_transaction", *[f"produce {OUT}"] * 3,
                              "send_offsets_to_transaction", "commit_transaction"]  # fmt: skip


def test_abortable_commit_error_aborts_and_the_step_rewinds_to_the_first_offsets() -> None:
    w = world()
    w.send((0, UNDECODABLE), (0, UNDECODABLE), (1, UNDECODABLE))
    w.broker.fail_next("commit_transaction", BrokerFault.ABORTABLE)
    assert w.p.step() == 0
    quarantine = w.settings.topics.quarantine
    assert w.broker.calls == [
        "begin_transaction", *[f"produce {quarantine}"] * 3, "send_offsets_to_transaction",
        "commit_transaction", "abort_transaction",
        f"seek {w.batches}[0]@0", f"seek {w.batches}[1]@0",
    ]  # fmt: skip
    assert w.p.transactions_aborted == 1 and w.p.batches_committed == 0
    assert w.read(quarantine) == [] and w.broker.committed(w.settings.group_id) == {}
    assert w.p.step() == 3  # consumed again, in order, and committed this time
    assert len(w.read(quarantine)) == 3


def test_retriable_commit_error_is_retried_not_aborted() -> None:
    w = world()
    events = three_events(w)
    w.broker.fail_next("commit_transaction", BrokerFault.RETRIABLE)
    assert w.commit(events, [admitted(m) for m in events]).committed == 3
    assert [c for c in w.broker.calls if not c.startswith("produce")] == [
        "begin_transaction", "send_offsets_to_transaction", "commit_transaction",
        "commit_transaction",
    ]  # fmt: skip
    assert len(w.read(OUT)) == 3


def test_a_failed_rewind_stops_the_worker_instead_of_skipping_the_batch() -> None:
    w = world()
    w.send((0, UNDECODABLE), (0, UNDECODABLE))
    w.broker.fail_next("commit_transaction", BrokerFault.ABORTABLE)
    w.broker.fail_next("seek", BrokerFault.STATE)
    with pytest.raises(BrokerError, match=rf"cannot rewind {w.batches}\[0\] to 0"):
        w.p.step()


@pytest.mark.parametrize("how", ["newer producer", "injected at commit"])
def test_fenced_producer_is_fatal_for_the_instance(how: str) -> None:
    w = world()
    events = three_events(w)
    if how == "newer producer":  # a second worker with the same instance id starts
        s = w.settings
        w.broker.producer(f"{s.transactional_id_prefix}-{s.instance_id}").init_transactions()
        w.broker.calls.clear()
    else:
        w.broker.fail_next("commit_transaction", BrokerFault.FENCED)
    with pytest.raises(InstanceFenced, match="fenced: another worker with instance id pod-0"):
        w.commit(events, [admitted(m) for m in events])
    assert "abort_transaction" not in w.broker.calls
    assert w.read(OUT) == []


def test_each_committed_poll_batch_logs_one_info_line(caplog: pytest.LogCaptureFixture) -> None:
    w = world()
    w.send((0, UNDECODABLE), (0, UNDECODABLE))
    with caplog.at_level("INFO", logger="worker.gate.housekeeping"):
        assert w.p.step() == 2
        assert w.p.step() == 0  # nothing polled: no line
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("poll batch")]
    assert len(lines) == 1
    assert lines[0].startswith("poll batch: 2 events, 0 admitted, 2 quarantined, ")
    assert lines[0].split(", ")[3].endswith(" ms (committed in 1 transaction)")


def test_a_record_refused_as_too_large_is_quarantined_after_three_attempts() -> None:
    w = world(max_message_bytes=2000)  # the producer refuses records above it at produce()
    events = three_events(w)
    outcomes = [admitted(m) for m in events]
    outcomes[1] = admitted(events[1], value=b"y" * 5000, batch_id="b-big")
    for _ in range(MAX_BATCH_ATTEMPTS):  # the whole batch fails (the caller rewinds it)
        assert w.commit(events, outcomes).committed == 0
    assert w.broker.calls.count("abort_transaction") == MAX_BATCH_ATTEMPTS
    assert w.read(OUT) == []  # every attempt aborted
    w.broker.calls.clear()
    done = w.commit(events, outcomes)  # one transaction per event now
    assert done.committed == 3 and done.complete
    assert [m.value() for m in w.read(OUT)] == [b"x", b"x"]
    (quarantined,) = w.read(w.settings.topics.quarantine)
    assert quarantined.headers()[0] == ("dlq.reason", b"record_too_large")  # type: ignore[index]
    # one transaction per event; the refused one aborted, then quarantined in its own
    assert [w.broker.calls.count(c) for c in ("commit_transaction", "abort_transaction")] == [3, 1]
    reason = done.outcomes[1].decision.reasons[0]
    assert reason.code == "record_too_large"
    assert "batch b-big is 5065 bytes" in reason.message  # value and key, and 64 of framing
    assert f"message.max.bytes is {16 * 1024 * 1024 + 1024 * 1024} bytes" in reason.message
    assert done.outcomes[0].decision.admitted and done.outcomes[2].decision.admitted
    assert w.broker.committed(w.settings.group_id) == {(w.batches, 0): 2, (w.batches, 1): 1}
    assert w.p.checkpoint.attempts.attempts((w.batches, 0, 0)) == 0  # forgotten once committed


def test_a_record_above_the_producers_own_limit_is_quarantined_when_routed() -> None:
    """The producer's message.max.bytes is known: an event whose records would exceed it
    is quarantined at routing, in the poll batch's one transaction, never aborted (on
    Tansu an aborted transaction's records reach read_committed readers)."""
    limit = 2000
    decided: list[Outcome] = []
    settings = Settings(instance_id="pod-0", extra={"message.max.bytes": str(limit)})
    w = world(settings=settings, max_message_bytes=limit, on_outcome=decided.append)
    w.send((0, UNDECODABLE + b"z" * 5000), (0, UNDECODABLE))
    assert w.p.step() == 2
    assert "abort_transaction" not in w.broker.calls
    assert w.broker.calls.count("commit_transaction") == 1
    assert [o.decision.reasons[0].code for o in decided] == ["decode_error", "decode_error"]
    assert len(decided[0].records[0].value) <= limit - 1024  # the original is not carried
    assert len(w.read(settings.topics.quarantine)) == 2


def test_after_events_committed_one_by_one_a_failure_rewinds_only_the_uncommitted() -> None:
    w = world()
    w.send((0, UNDECODABLE), (0, UNDECODABLE), (1, UNDECODABLE), (1, UNDECODABLE))
    # the first transaction commits, every later one fails and is aborted
    w.broker.fail_next("commit_transaction", BrokerFault.ABORTABLE, after=1, times=None)
    for _ in range(MAX_BATCH_ATTEMPTS):  # the batch failed often: event by event now
        w.p.checkpoint.attempts.failed([(w.batches, 0, 0), (w.batches, 1, 0)])
    assert w.p.step() == 0  # in[0]@0 committed alone, then in[0]@1 failed
    assert w.broker.committed(w.settings.group_id) == {(w.batches, 0): 1}
    seeks = sorted(c for c in w.broker.calls if c.startswith("seek"))
    assert seeks == [f"seek {w.batches}[0]@1", f"seek {w.batches}[1]@0"]
    assert w.positions() == [(0, 1), (1, 0)]


def test_a_replay_committed_before_a_failure_one_per_transaction_is_admitted_once() -> None:
    def routed(m: Any) -> Outcome:
        headers = ((REPLAY_OF, b"orig-1"),) if (m.partition(), m.offset()) == (0, 0) else ()
        return replace(admitted(m), source=Source(m.topic(), m.partition(), m.offset(), None,
                                                  b"x", headers))  # fmt: skip

    w = world(router=routed)
    w.send((0, b"a"), (0, b"b"), (1, b"c"))
    # in[0]@0 commits alone, in[0]@1 fails
    w.broker.fail_next("commit_transaction", BrokerFault.ABORTABLE, after=1, times=None)
    for _ in range(MAX_BATCH_ATTEMPTS):
        w.p.checkpoint.attempts.failed([(w.batches, 0, 0), (w.batches, 1, 0)])
    assert w.p.step() == 0
    seeks = sorted(c for c in w.broker.calls if c.startswith("seek"))
    assert seeks == [f"seek {w.batches}[0]@1", f"seek {w.batches}[1]@0"]  # the rest only
    # the replay's admission is committed: a second replay of orig-1 is a duplicate
    assert "orig-1" in w.p.replays
    first = w.read(w.batches)[0]
    again, originals = dedupe_replays([routed(first)], w.p.replays, Settings().topics,
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
