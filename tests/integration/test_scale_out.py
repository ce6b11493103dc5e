"""Two workers in one consumer group share the input partitions; nothing is lost."""

from __future__ import annotations

import io
import time
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from worker.cli.demo import collect_results, publish_demo_contracts
from worker.cli.scenario import data_file
from worker.io.codec import encode_batch
from worker.io.features import read_batch_file
from worker.kafka.client import produce_one
from worker.kafka.settings import Settings


def test_second_worker_shares_partitions_and_nothing_is_lost(
    settings: Settings, start_worker: Any
) -> None:
    publish_demo_contracts(settings, out=io.StringIO())
    first = start_worker(settings.with_(instance_id="w1"))
    second = start_worker(settings.with_(instance_id="w2"))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (first.pipeline.ready and second.pipeline.ready):
        time.sleep(0.2)
    assert first.pipeline.assigned and second.pipeline.assigned
    assert not (first.pipeline.assigned & second.pipeline.assigned)
    assert len(first.pipeline.assigned | second.pipeline.assigned) == 3

    nyc = read_batch_file(
        data_file("nyc_boroughs.parquet"),
        layer="nyc_boroughs",
        crs="EPSG:2263",
        data_time=datetime.now(timezone.utc),
    )
    placed = []
    for i in range(30):
        value = encode_batch(replace(nyc, batch_id=f"nyc-{i}"))
        placed.append(
            produce_one(settings, settings.topics.batches, "nyc_boroughs", value, partition=i % 3)
        )
    result = collect_results(settings, len(placed), len(placed), timeout_s=60)
    assert set(result.decisions) == set(placed)
    assert set(result.decisions.values()) == {"admitted"}
    assert sorted(ev["batch_id"] for ev in result.evaluations) == sorted(
        f"nyc-{i}" for i in range(30)
    )
    assert first.pipeline.batches_committed > 0 and second.pipeline.batches_committed > 0
    assert first.pipeline.batches_committed + second.pipeline.batches_committed == 30
