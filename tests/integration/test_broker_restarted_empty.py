"""A worker whose broker comes back empty notices that the config topic lost what it read
and stays not ready with that reason, without exiting (issue 28 §5): the real embedded
broker, stopped, and a fresh one (in-memory, so empty) started on the same port, with the
gate's topics missing or created again empty."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.broker_timing import SESSION_TIMEOUT_MS
from worker.control.publish import publish_contract
from worker.gate.pipeline import Pipeline
from worker.kafka.admin import create_topics
from worker.kafka.clients import make_producer
from worker.kafka.embedded import EmbeddedBroker, free_port
from worker.kafka.settings import Settings, Topics
from worker.ops.http_handlers import readyz, status

pytestmark = pytest.mark.integration

CONTRACT = Path(__file__).resolve().parents[2] / "worker/data/contracts/admin_boundaries.v1.yaml"


def _until(condition: Callable[[], bool], timeout_s: float) -> float:
    """Seconds until ``condition()`` held; fails after ``timeout_s``."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout_s, f"not within {timeout_s} s"
        time.sleep(0.2)
    return time.monotonic() - started


def _junk_batch(settings: Settings, n: int) -> None:
    """``n`` records the follower refuses (not contract documents), produced in one batch:
    Tansu's ListOffsets watermark is then too low, the Fetch-fed one is not."""
    producer = make_producer(settings)
    for i in range(n):
        producer.produce(settings.topics.contracts, key=f"junk/{i}".encode(), value=b"not json")
    producer.flush(10)


@pytest.mark.parametrize("topics_again", [False, True], ids=["empty", "topics-recreated"])
def test_a_broker_restarted_empty_makes_the_worker_not_ready(topics_again: bool) -> None:
    port = free_port()
    broker = EmbeddedBroker(port=port).start()
    prefix = f"r{uuid.uuid4().hex[:6]}."
    settings = Settings(
        bootstrap_servers=broker.bootstrap_servers,
        group_id=f"{prefix}gate",
        topics=Topics().with_prefix(prefix),
        session_timeout_ms=SESSION_TIMEOUT_MS,
    )
    create_topics(settings, partitions=1)
    publish_contract(settings, CONTRACT, mode="enforcing", published_by="test")
    pipeline = Pipeline(settings)
    pipeline.gate_config = dataclasses.replace(pipeline.gate_config, config_check_interval_s=1.0)
    stop = threading.Event()
    thread = threading.Thread(target=pipeline.run, args=(stop,), daemon=True)
    try:
        pipeline.start()
        thread.start()
        _until(lambda: pipeline.ready, 60)
        _junk_batch(settings, 20)  # one produce batch of 20 records: still intact
        _until(lambda: pipeline.config.read_up_to.get(0, 0) >= 21, 30)
        time.sleep(3)  # a few integrity checks on the intact topic: still ready
        assert pipeline.ready and pipeline.config.lost is None
        assert readyz(pipeline).status == 200

        broker.stop()
        broker = EmbeddedBroker(port=port).start()  # the same address, nothing on it
        if topics_again:
            create_topics(settings, partitions=1)
        seconds = _until(lambda: pipeline.config.lost is not None, 60)

        lost = pipeline.config.lost
        assert lost is not None and settings.topics.contracts in lost
        expected = "ends at offset 0, below the 21" if topics_again else "no longer exists"
        assert expected in lost, lost
        assert not pipeline.ready
        ready = readyz(pipeline)
        assert ready.status == 503
        assert any(lost in m for m in json.loads(ready.body)["missing"])
        doc = json.loads(status(pipeline, time.monotonic(), None).body)
        assert doc["ready"] is False and doc["config_lost"] == lost
        time.sleep(3)
        assert thread.is_alive(), "the worker exited"
        assert pipeline.config.lost == lost and not pipeline.ready  # sticky
        print(f"not ready {seconds:.1f} s after the empty broker answered")
    finally:
        stop.set()
        thread.join(timeout=30)
        broker.stop()
    assert not thread.is_alive()
