"""worker.kafka.config_topic.ConfigFollower without a broker: how applied records are logged.

(Not test_config_topic.py: that basename is taken by tests/integration/test_config_topic.py.)
"""

from __future__ import annotations

import logging
import sys

import pytest

from worker.cli.scenario import data_file
from worker.control.publish import contract_record
from worker.core.contracts.parse import parse_contract
from worker.core.lifecycle.registry import Registry
from worker.io.codec import encode_contract_record
from worker.io.contract_files import load_contract
from worker.kafka import config_topic
from worker.kafka.config_topic import ConfigFollower
from worker.kafka.memory import MemoryBroker, MemoryMessage
from worker.kafka.settings import Settings


def _rec(key: str, value: bytes | None) -> MemoryMessage:
    return MemoryMessage.of(key=key, value=value)


def _read_through(
    follower: ConfigFollower, records: list[MemoryMessage], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Apply ``records`` in order through the follower's public :meth:`bootstrap`, reading
    them from a :class:`MemoryBroker` instead of a real one."""
    broker = MemoryBroker()
    topic = follower.settings.topics.contracts
    broker.create_topic(topic)
    producer = broker.producer()
    for r in records:
        producer.produce(topic, value=r.value(), key=r.key())
    monkeypatch.setattr(
        config_topic,
        "make_consumer",
        lambda settings, reader: broker.consumer("config-reader", partition_eof=True),
    )
    follower.bootstrap(timeout_s=5)


def _edit_in_place() -> tuple[MemoryMessage, MemoryMessage]:
    v1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
    edited = parse_contract(v1.text.replace("changelog:", "changelog: edited"), source="e")
    assert edited.key == v1.key and edited.digest != v1.digest
    return (
        _rec(v1.key, encode_contract_record(contract_record(v1, mode="enforcing"))),
        _rec(v1.key, encode_contract_record(contract_record(edited, mode="enforcing"))),
    )


@pytest.mark.parametrize(("quiet", "level"), [(False, logging.WARNING), (True, logging.DEBUG)])
def test_rejections_are_warnings_for_the_worker_and_debug_for_cli_reads(
    quiet: bool, level: int, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # found by a fresh-user session: CLI reads printed the worker's WARNING about an edit in
    # place on the config topic, which read as if the command itself had failed
    original, edited = _edit_in_place()
    follower = ConfigFollower(Settings(), Registry(), quiet_rejections=quiet)
    caplog.set_level(logging.DEBUG, logger="worker.kafka.config_topic")
    _read_through(follower, [original, edited], monkeypatch)
    rejected = [r for r in caplog.records if "rejected (edit_in_place)" in r.getMessage()]
    assert [r.levelno for r in rejected] == [level]


def test_read_config_is_quiet_about_rejections(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[ConfigFollower] = []
    monkeypatch.setattr(
        ConfigFollower, "bootstrap", lambda self, t, *a, **k: made.append(self) or 0
    )
    config_topic.read_config(Settings(), Registry())
    assert [f.quiet_rejections for f in made] == [True]


def test_each_applied_change_is_logged_at_info_with_the_active_versions(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # found by a fresh-user session: worker logs never mentioned live config changes
    v1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
    v11 = load_contract(data_file("contracts/admin_boundaries.v1.1.yaml"))

    def rec(c: object, mode: str, state: str = "active") -> bytes:
        return encode_contract_record(contract_record(c, mode=mode, state=state))  # type: ignore[arg-type]

    follower = ConfigFollower(Settings(), Registry())
    caplog.set_level(logging.DEBUG, logger="worker.kafka.config_topic")
    records = [
        _rec(v1.key, rec(v1, "enforcing")),
        _rec(v11.key, rec(v11, "observing")),
        _rec(v11.key, rec(v11, "observing")),  # unchanged: DEBUG only
        _rec(v11.key, rec(v11, "enforcing")),
        _rec(v1.key, rec(v1, "enforcing", "superseded")),
        _rec(v1.key, None),
        _rec(v11.key, None),  # the only enforcing version
    ]
    _read_through(follower, records, monkeypatch)
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    tail = "; active versions of admin_boundaries: "
    assert info == [
        f"config added: admin_boundaries/v1.0 enforcing active{tail}v1.0 enforcing",
        f"config added: admin_boundaries/v1.1 observing active{tail}v1.0 enforcing, v1.1 observing",
        f"config updated: admin_boundaries/v1.1 observing/active -> enforcing/active{tail}"
        "v1.0 enforcing, v1.1 enforcing",
        f"config updated: admin_boundaries/v1.0 enforcing/active -> enforcing/superseded{tail}"
        "v1.1 enforcing",
    ]
    # a tombstone is refused and breaks the layer's history (issue 30): a WARNING each
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "config record admin_boundaries/v1.0 rejected (tombstone): tombstone for "
        "admin_boundaries/v1.0 refused: a contract record is never deleted; layer "
        "admin_boundaries fails closed (contract_history_broken)",
        "config record admin_boundaries/v1.1 rejected (unretired_tombstone): tombstone for "
        "admin_boundaries/v1.1 refused: a contract record is never deleted (admin_boundaries/"
        "v1.1 is enforcing and active: retire it with `contract-gate contract retire`, the "
        "zero-consumer gate); layer admin_boundaries fails closed (contract_history_broken)",
    ]


@pytest.mark.parametrize(
    ("argv", "expected"), [([], logging.INFO), (["--log-level", "ERROR"], logging.NOTSET)]
)
def test_run_shows_the_workers_info_lines_unless_a_level_is_given(
    argv: list[str], expected: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an explicit --log-level applies to the root logger alone (the worker logger inherits)
    from worker.cli import main as cli

    seen: list[int] = []
    monkeypatch.setattr(
        cli.COMMANDS["run"], "run", lambda args: seen.append(logging.getLogger("worker").level) or 0
    )
    worker_logger = logging.getLogger("worker")
    try:
        assert cli.main([*argv, "run"]) == 0
    finally:
        worker_logger.setLevel(logging.NOTSET)
    assert seen == [expected]


def test_other_commands_keep_the_warning_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from worker.cli import main as cli

    seen: list[int] = []
    monkeypatch.setattr(
        cli.COMMANDS["topics"],
        "run",
        lambda args: seen.append(logging.getLogger("worker").level) or 0,
    )
    assert cli.main(["topics", "create"]) == 0
    assert seen == [logging.NOTSET]


class _SilentConsumer:
    """A consumer of one partition that never returns a record (a stalled broker)."""

    def poll(self, timeout: float) -> None:
        return None

    def close(self) -> None:
        pass


def test_a_stalled_bootstrap_reports_each_stall_and_keeps_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    follower = ConfigFollower(Settings(), Registry())

    def _open(self: ConfigFollower) -> _SilentConsumer:
        self.partitions_total = 1
        return _SilentConsumer()

    monkeypatch.setattr(ConfigFollower, "_open", _open)
    stalls: list[str] = []
    follower.bootstrap(0.4, on_stall=stalls.append, should_stop=lambda: len(stalls) >= 2)
    assert len(stalls) == 2 and not follower.bootstrapped
    assert stalls[0] == (
        "config bootstrap made no progress on gis.contracts for 0.4 s "
        "(0/1 partitions at EOF, 0 records read)"
    )
    assert follower.stalled == stalls[1]


def test_without_on_stall_a_bootstrap_without_progress_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from worker.core.errors import BrokerError

    def _open(self: ConfigFollower) -> _SilentConsumer:
        self.partitions_total = 1
        return _SilentConsumer()

    monkeypatch.setattr(ConfigFollower, "_open", _open)
    with pytest.raises(BrokerError, match=r"made no progress on gis\.contracts"):
        ConfigFollower(Settings(), Registry()).bootstrap(0.3)


def test_oversized_records_are_rejected_before_they_are_decoded() -> None:
    from worker.io.config_records import apply_config_value

    event = apply_config_value(Registry(), "a/v1.0/x", b"\x00" * 2000, max_bytes=1024)
    assert (event.outcome, event.reason) == ("rejected", "oversized_record")
    assert event.message == (
        "config record a/v1.0/x: 2008 bytes, more than the 1024 a config record may have "
        "(not decoded)"
    )


def test_the_size_bound_comes_from_the_environment() -> None:
    from worker.core.errors import BrokerError
    from worker.kafka.config_topic import config_max_record_bytes

    assert config_max_record_bytes({}) == 1 << 20
    assert config_max_record_bytes({"CONTRACT_GATE_CONFIG_MAX_RECORD_BYTES": "4096"}) == 4096
    with pytest.raises(BrokerError, match="not a positive number of bytes"):
        config_max_record_bytes({"CONTRACT_GATE_CONFIG_MAX_RECORD_BYTES": "1MB"})


def test_a_document_of_too_many_clauses_is_refused_fast() -> None:
    import time

    from worker.io.config_records import apply_config_value

    v1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
    clauses = "\n".join(
        f"  - {{name: c{i}, kind: domain, column: c, values: {{A: a}}}}" for i in range(3000)
    )
    text = v1.text.split("clauses:")[0] + "clauses:\n" + clauses + "\n"
    record = {**contract_record(v1, mode="enforcing"), "document": text}
    started = time.perf_counter()
    event = apply_config_value(Registry(), v1.key, encode_contract_record(record))
    assert time.perf_counter() - started < 5.0  # 10 s before the clause bound; 2.2 s at load 10
    assert (event.outcome, event.reason) == ("rejected", "invalid_contract")
    assert "3000 clauses, more than the 256 a contract may have" in event.message


def test_a_parse_over_its_budget_is_interrupted() -> None:
    import time

    from worker.core.errors import ContractError
    from worker.io.config_records import parse_budget

    started = time.perf_counter()
    with (
        pytest.raises(ContractError, match=r"^a test: document not parsed within 0\.2 s"),
        parse_budget(0.2, "a test"),
    ):
        while True:
            pass
    assert time.perf_counter() - started < 1.0


class _Key:
    """A weakly referable key whose death runs ``WeakKeyDictionary``'s callback."""


@pytest.mark.parametrize("round_", range(4))
def test_a_budget_alarm_never_lands_in_a_weakref_callback(round_: int) -> None:
    """Seen once in the suite: the alarm's exception raised inside ``WeakKeyDictionary``'s
    removal callback, where Python swallows it and reports it as unraisable (an error under
    pytest's warnings as errors). The parse below spends most of its bytecodes in such
    callbacks; the budget must still end it, with no unraisable exception."""
    import gc
    import time
    import weakref

    from worker.core.errors import ContractError
    from worker.io.config_records import parse_budget

    unraisable: list[object] = []
    previous_hook = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    started = time.perf_counter()
    try:
        with (
            pytest.raises(ContractError, match=r"document not parsed within 0\.1 s"),
            parse_budget(0.1, "a test"),
        ):
            table: weakref.WeakKeyDictionary[_Key, int] = weakref.WeakKeyDictionary()
            while True:
                for i in range(200):
                    table[_Key()] = i  # the key dies at once: remove() runs
        gc.collect()
    finally:
        sys.unraisablehook = previous_hook
    assert unraisable == []
    assert time.perf_counter() - started < 1.0


def test_the_integrity_check_asks_the_given_client_for_the_topics_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """check_intact(metadata=...) asks that client, not the follower's reader (whose
    requests wait behind its long-poll fetch on a real broker): a client of a broker that
    no longer has the topic makes the check report the loss (on the second check in a
    row), while the follower's own reader finds it intact."""
    v1, _ = _edit_in_place()
    follower = ConfigFollower(Settings(), Registry())
    _read_through(follower, [v1], monkeypatch)
    assert follower.read_up_to == {0: 1}
    topic = follower.settings.topics.contracts
    emptied = MemoryBroker()  # a broker restarted empty: the config topic is gone
    for _ in range(2):  # the default: the follower's own reader, on the broker it read
        assert follower.check_intact() is None
    assert follower.check_intact(metadata=emptied.producer()) is None  # once: suspect only
    assert follower.check_intact(metadata=emptied.producer()) == (
        f"config topic {topic} no longer exists on the broker"
    )
    assert follower.lost is not None
