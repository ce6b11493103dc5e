"""Zombie fencing: a second worker with the same instance id (transactional.id) takes over;
the first one stops with a clear error instead of retrying (found by a fresh-user session:
it logged "aborting and consuming again", then timed out after 30 s)."""

from __future__ import annotations

import io
import time
from datetime import datetime, timezone

import pytest

from worker.cli.demo import publish_demo_contracts
from worker.cli.scenario import data_file
from worker.core.errors import BrokerError
from worker.gate.pipeline import Pipeline
from worker.io.codec import encode_batch
from worker.io.payloads import read_batch_file
from worker.kafka.admin import produce_one
from worker.kafka.settings import Settings


def test_a_fenced_worker_stops_with_a_clear_error(settings: Settings) -> None:
    publish_demo_contracts(settings, out=io.StringIO())
    same = settings.with_(instance_id="pod-0")
    first = Pipeline(same)
    first.start()
    second = Pipeline(same)
    try:
        second.start()  # init_transactions with the same transactional.id fences `first`
        nyc = read_batch_file(
            data_file("nyc_boroughs.parquet"), layer="nyc_boroughs", crs="EPSG:2263",
            data_time=datetime.now(timezone.utc),
        )  # fmt: skip
        for p in range(3):
            produce_one(
                settings, settings.topics.batches, "nyc_boroughs", encode_batch(nyc), partition=p
            )
        started = time.monotonic()
        with pytest.raises(BrokerError, match="fenced: another worker with instance id pod-0"):
            while time.monotonic() - started < 45:
                first.step()
        assert time.monotonic() - started < 40
    finally:
        first.close()
        second.close()
