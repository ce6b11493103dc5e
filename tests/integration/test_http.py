"""A real worker with its HTTP server: /readyz 503 -> 200, /metrics after a batch."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry

from worker.cli.scenario import data_file
from worker.control.publish import publish_contract
from worker.gate.pipeline import Pipeline
from worker.io.codec import encode_batch
from worker.io.payloads import read_batch_file
from worker.kafka.admin import produce_one
from worker.kafka.settings import Settings
from worker.ops.decision_log import DecisionLog
from worker.ops.http import GateHTTPServer
from worker.ops.metrics import GateMetrics


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()


def wait_for(predicate, timeout_s: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.2)


def test_readyz_turns_green_and_metrics_count_a_batch(settings: Settings) -> None:
    publish_contract(settings, data_file("contracts/nyc_boroughs.v1.yaml"), published_by="t")
    registry = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    decisions = DecisionLog()
    pipeline = Pipeline(
        settings, metrics=GateMetrics(provider.get_meter("t")), on_outcome=decisions
    )
    server = GateHTTPServer(
        pipeline, host="127.0.0.1", port=0, decisions=decisions, metrics_registry=registry
    ).start()
    url = f"http://127.0.0.1:{server.port}"
    stop = threading.Event()
    thread = threading.Thread(target=pipeline.run, args=(stop,), daemon=True)
    try:
        status, body = get(f"{url}/readyz")
        assert status == 503
        assert len(json.loads(body)["missing"]) == 2
        assert get(f"{url}/healthz")[0] == 200

        pipeline.start()
        thread.start()
        wait_for(lambda: get(f"{url}/readyz")[0] == 200)

        nyc = read_batch_file(
            data_file("nyc_boroughs.parquet"),
            layer="nyc_boroughs",
            data_time=datetime.now(timezone.utc) - timedelta(minutes=5),
            batch_id="nyc-http",
        )
        produce_one(settings, settings.topics.batches, "nyc_boroughs", encode_batch(nyc))
        wait_for(lambda: pipeline.batches_committed >= 1)

        status, text = get(f"{url}/metrics")
        assert status == 200
        assert b'gis_contract_batches_total{decision="admitted",layer="nyc_boroughs"' in text, (
            text.decode()[:2000]
        )
        doc = json.loads(get(f"{url}/status")[1])
        assert doc["ready"] and doc["batches_committed"] == 1
        assert doc["layers"]["nyc_boroughs"] == [
            {
                "version": "v1.0",
                "mode": "enforcing",
                "state": "active",
                "objective": 0.99,
                "attainment": 1.0,
                "error_budget_remaining": 1.0,
                "window_evaluated": 1,
            }
        ]
        assert doc["last_decisions"][0]["batch_id"] == "nyc-http"
        assert doc["last_decisions"][0]["decision"] == "admitted"
    finally:
        stop.set()
        if thread.is_alive():
            thread.join(timeout=30)
        else:
            pipeline.close()
        server.close()
