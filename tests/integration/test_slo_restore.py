"""A restarted worker's SLO windows are refilled from the evaluations topic (issue 10)."""

from __future__ import annotations

import io
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider

from worker.cli.demo import collect_results, publish_demo_contracts
from worker.cli.scenario import data_file
from worker.core.lifecycle.slo import SeriesKey
from worker.io.codec import encode_batch
from worker.io.payloads import read_batch_file
from worker.kafka.admin import produce_one
from worker.kafka.settings import Settings
from worker.ops.metrics import GateMetrics


def test_attainment_survives_a_restart(settings: Settings, start_worker: Any) -> None:
    publish_demo_contracts(settings, out=io.StringIO())
    nyc = read_batch_file(
        data_file("nyc_boroughs.parquet"), layer="nyc_boroughs", crs="EPSG:2263",
        data_time=datetime.now(timezone.utc),
    )  # fmt: skip
    stale = replace(nyc, data_time=datetime(2000, 1, 1, tzinfo=timezone.utc))
    batches = [replace(nyc, batch_id=f"ok{i}") for i in range(3)]
    batches.append(replace(stale, batch_id="stale"))
    for b in batches:
        produce_one(settings, settings.topics.batches, "nyc_boroughs", encode_batch(b))
    first = start_worker(settings, metrics=GateMetrics(MeterProvider().get_meter("a")))
    result = collect_results(settings, 4, 4, timeout_s=90)
    assert len(result.decisions) == 4
    first.close()

    restarted = GateMetrics(MeterProvider().get_meter("b"))
    start_worker(settings.with_(instance_id="restarted"), metrics=restarted)
    status = restarted.slo.status(SeriesKey("nyc_boroughs", "v1.0", "enforcing"))
    assert status is not None
    assert (status.evaluated, status.passed) == (4, 3)  # from the topic, before any new batch
    assert status.attainment == 0.75
