"""Broker reachability from librdkafka callbacks, and deadlines on blocking calls."""

from __future__ import annotations

import json
import logging
import threading
import time

import pytest
from confluent_kafka import KafkaError as CKError

from worker.kafka.clients import ALL_BROKERS_DOWN, TRANSPORT
from worker.kafka.health import BrokerHealth, Watchdog


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def stats(*states: tuple[int, str]) -> str:
    return json.dumps(
        {"brokers": {f"b{n}": {"nodeid": n, "state": s} for n, s in states} | {}},
    )


def test_all_brokers_down_then_up_again(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    health = BrokerHealth(log_every_s=30, clock=clock)
    down = CKError(ALL_BROKERS_DOWN, "1/1 brokers are down")
    with caplog.at_level(logging.WARNING, logger="worker.kafka.health"):
        for _ in range(50):  # librdkafka repeats it on every reconnect attempt
            health.on_error(down)
            clock.now += 0.1
        assert health.unreachable_since == 1000.0
        health.on_stats(stats((-1, "UP")))  # the bootstrap placeholder is not a broker
        assert health.unreachable_since is not None
        clock.now += 30
        health.on_error(down)
        health.on_stats(stats((1, "DOWN"), (2, "UP")))
    assert health.unreachable_since is None
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("Kafka client error _ALL_BROKERS_DOWN: ")
    assert lines[1].endswith("(49 more since the last line)")
    assert lines[2].startswith("Kafka broker reachable again after 35 s")
    assert len(lines) == 3  # 51 errors, two lines: rate-limited


def test_other_errors_are_logged_but_do_not_mark_the_broker_down() -> None:
    health = BrokerHealth()
    health.on_error(CKError(TRANSPORT, "connection reset"))
    assert health.unreachable_since is None
    assert health.last_error is not None and health.last_error.startswith("_TRANSPORT")
    health.on_stats("not json")  # a bad statistics document changes nothing
    assert health.unreachable_since is None


def test_watchdog_fires_once_when_a_call_outlives_its_deadline_plus_grace() -> None:
    clock = Clock()
    fired: list[str] = []
    dog = Watchdog(fired.append, grace_s=15, clock=clock)
    with dog.call("send_offsets_to_transaction", 30):
        clock.now += 44
        assert dog.check() is None
        clock.now += 2
        message = dog.check()
        assert message is not None and message.startswith(
            "send_offsets_to_transaction has blocked for 46 s (its timeout is 30 s)"
        )
        assert dog.check() is None  # once
    assert dog.check() is None


def test_watchdog_thread_calls_on_stuck_for_a_really_blocked_call() -> None:
    fired = threading.Event()
    messages: list[str] = []

    def on_stuck(message: str) -> None:
        messages.append(message)
        fired.set()

    dog = Watchdog(on_stuck, grace_s=0.2, check_every_s=0.05)
    dog.start()
    try:
        with dog.call("commit_transaction", 0.1):
            assert fired.wait(5), "the watchdog never fired"
            time.sleep(0.01)
    finally:
        dog.stop()
    assert messages and messages[0].startswith("commit_transaction has blocked for")
