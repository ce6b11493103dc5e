"""A real broker for the integration tests, chosen as in docs/design.md section 8.

``KAFKA_BOOTSTRAP_SERVERS`` if set; else testcontainers' Kafka when a Docker engine
answers; else the embedded Tansu broker started on a free loopback port and stopped by
its own process id at the end of the session. Every test works in its own topic prefix
and consumer group, so tests never see each other's records.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest

from tests.broker_timing import SESSION_TIMEOUT_MS
from worker.gate.pipeline import Pipeline
from worker.kafka.admin import create_topics
from worker.kafka.broker_route import RunningBroker, start_broker
from worker.kafka.settings import Settings, Topics


@pytest.fixture(scope="session")
def broker() -> Iterator[RunningBroker]:
    running = start_broker()
    yield running
    running.stop()


@pytest.fixture
def settings(broker: RunningBroker) -> Settings:
    """Settings with a topic prefix and group of this test alone; topics created."""
    prefix = f"t{uuid.uuid4().hex[:8]}."
    s = Settings(
        bootstrap_servers=broker.bootstrap_servers,
        group_id=f"{prefix}gate",
        topics=Topics().with_prefix(prefix),
        session_timeout_ms=SESSION_TIMEOUT_MS,
    )
    create_topics(s, partitions=3)
    return s


class RunningWorker:
    """A Pipeline in a thread of the test, stopped (and its group left) at teardown."""

    def __init__(self, settings: Settings, **kwargs: object) -> None:
        self.pipeline = Pipeline(settings, **kwargs)  # type: ignore[arg-type]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.pipeline.run, args=(self.stop,), daemon=True)

    def start(self) -> RunningWorker:
        self.pipeline.start()
        self.thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "worker thread did not stop"


@pytest.fixture
def start_worker() -> Iterator[object]:
    workers: list[RunningWorker] = []

    def _start(settings: Settings, **kwargs: object) -> RunningWorker:
        w = RunningWorker(settings, **kwargs).start()
        workers.append(w)
        return w

    yield _start
    for w in workers:
        w.close()
