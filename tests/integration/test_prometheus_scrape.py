"""A real Prometheus scrapes a real worker; the recording rules give attainment per version.

The worker evaluates ``nyc_boroughs`` v1.0 (enforcing, freshness PT6H) and v1.1 (observing,
freshness PT1H) with its HTTP server on a free port. Prometheus (the Debian binary, started
here on a free loopback port, stopped by its pid) scrapes it every second and evaluates
``deploy/prometheus/*.yml`` every second. Warm-up batches create every series first (a
counter's first sample carries no increase); the measured batches then give v1.0 3 passes
in 4 and v1.1 2 in 4, which ``gis:contract_version_attainment:ratio_rate1h`` must show,
and the burn rate divides by the objective the worker exports (0.99).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry

from worker.cli.scenario import data_file
from worker.control.publish import publish_contract
from worker.gate.pipeline import Pipeline
from worker.io.codec import encode_batch
from worker.io.payloads import read_batch_file
from worker.kafka.admin import produce_one
from worker.kafka.embedded import free_port
from worker.kafka.settings import Settings
from worker.ops.decision_log import DecisionLog
from worker.ops.http import GateHTTPServer
from worker.ops.metrics import GateMetrics

PROMETHEUS = shutil.which("prometheus") or (
    "/usr/bin/prometheus" if Path("/usr/bin/prometheus").exists() else None
)
RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"

pytestmark = pytest.mark.skipif(
    PROMETHEUS is None, reason="prometheus binary not installed (apt-get install prometheus)"
)


def wait_for(
    what: str, predicate: Callable[[], Any], timeout_s: float, why: Callable[[], str] = str
) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what}: not met within {timeout_s:.0f} s {why()}"
        time.sleep(0.25)


def scrape_health(url: str) -> str:
    """The scrape target's health and last error, for failure messages."""
    with urllib.request.urlopen(f"{url}/api/v1/targets", timeout=5) as resp:
        doc = json.loads(resp.read())
    return json.dumps(
        [
            {k: t.get(k) for k in ("scrapeUrl", "health", "lastError")}
            for t in doc["data"]["activeTargets"]
        ]
    )


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[Callable[[int], str]]:
    """Start Prometheus scraping ``127.0.0.1:<port>``; returns its base URL."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(target_port: int) -> str:
        assert PROMETHEUS is not None
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(p) for p in sorted(RULES.glob("*.yml")) if ".test." not in p.name],
            "scrape_configs": [
                {
                    "job_name": "contract-gate",
                    "scrape_timeout": "1s",
                    "static_configs": [{"targets": [f"127.0.0.1:{target_port}"]}],
                }
            ],
        }
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
        port = free_port()
        with (tmp_path / "prometheus.log").open("wb") as log:
            procs.append(
                subprocess.Popen(
                    [
                        PROMETHEUS,
                        f"--config.file={tmp_path / 'prometheus.yml'}",
                        f"--storage.tsdb.path={tmp_path / 'data'}",
                        f"--web.listen-address=127.0.0.1:{port}",
                        "--log.level=warn",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        url = f"http://127.0.0.1:{port}"

        def ready() -> bool:
            assert procs[-1].poll() is None, (tmp_path / "prometheus.log").read_text()
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as resp:
                    return bool(resp.status == 200)
            except OSError:
                return False

        wait_for("prometheus ready", ready, 15)
        return url

    yield start
    for proc in procs:  # our own process, by its pid
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def query(url: str, promql: str) -> dict[tuple[str, str], float]:
    """Instant query; ``(version, mode) -> value`` of each series of the result."""
    q = urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=5) as resp:
        doc = json.loads(resp.read())
    assert doc["status"] == "success", doc
    return {
        (r["metric"].get("version", ""), r["metric"].get("mode", "")): float(r["value"][1])
        for r in doc["data"]["result"]
    }


def test_prometheus_scrapes_the_worker_and_records_attainment_per_version(
    settings: Settings, prometheus: Callable[[int], str], tmp_path: Path
) -> None:
    v1 = data_file("contracts/nyc_boroughs.v1.yaml")
    stricter = tmp_path / "nyc_boroughs.v1.1.yaml"
    text = v1.read_text()
    assert "version: v1\n" in text and "max_age: PT6H" in text
    stricter.write_text(
        text.replace("version: v1\n", "version: v1.1\n").replace("max_age: PT6H", "max_age: PT1H")
    )
    publish_contract(settings, v1, published_by="t")
    publish_contract(settings, stricter, mode="observing", published_by="t")

    registry = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    pipeline = Pipeline(settings, metrics=GateMetrics(provider.get_meter("t")))
    server = GateHTTPServer(
        pipeline, host="127.0.0.1", port=0, decisions=DecisionLog(), metrics_registry=registry
    ).start()
    stop = threading.Event()
    thread = threading.Thread(target=pipeline.run, args=(stop,), daemon=True)
    sent = 0

    def send(age: timedelta) -> None:
        nonlocal sent
        sent += 1
        batch = read_batch_file(
            data_file("nyc_boroughs.parquet"),
            layer="nyc_boroughs",
            data_time=datetime.now(timezone.utc) - age,
            batch_id=f"nyc-scrape-{sent}",
        )
        produce_one(settings, settings.topics.batches, "nyc_boroughs", encode_batch(batch))

    fresh, three_hours, ten_hours = (timedelta(minutes=5), timedelta(hours=3), timedelta(hours=10))
    try:
        pipeline.start()
        thread.start()
        # warm-up: both pass / v1.1 breaks / both break -> all four counter series exist
        for age in (fresh, three_hours, ten_hours):
            send(age)
        wait_for("warm-up committed", lambda: pipeline.batches_committed >= 3, 30)

        url = prometheus(server.port)
        series = 'count(gis_contract_version_evaluations_total{layer="nyc_boroughs"})'
        wait_for(
            "four series scraped",
            lambda: query(url, series) == {("", ""): 4.0},
            15,
            lambda: scrape_health(url),
        )

        # measured: v1.0 passes 3 of 4 (only the 10 h old batch breaks), v1.1 2 of 4
        for age in (fresh, fresh, three_hours, ten_hours):
            send(age)
        wait_for("measured batches committed", lambda: pipeline.batches_committed >= 7, 30)

        expected = {("v1.0", "enforcing"): 0.75, ("v1.1", "observing"): 0.5}
        rule = 'gis:contract_version_attainment:ratio_rate1h{layer="nyc_boroughs"}'

        def attainment() -> dict[tuple[str, str], float] | None:
            got = query(url, rule)
            close = got.keys() == expected.keys() and all(
                abs(got[k] - v) < 1e-9 for k, v in expected.items()
            )
            return got if close else None

        wait_for(f"{rule} == {expected}", attainment, 20)
        # the objective gauge reaches Prometheus: burn rate = (1 - 0.75) / (1 - 0.99)
        burn = query(url, 'gis:contract_version_error_budget:burn_rate1h{layer="nyc_boroughs"}')
        assert burn[("v1.0", "enforcing")] == pytest.approx(25.0)
    finally:
        stop.set()
        if thread.is_alive():
            thread.join(timeout=30)
        else:
            pipeline.close()
        server.close()
