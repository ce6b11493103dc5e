"""The demo scenario through a real worker: /metrics and /status carry the SLO series.

Seven admin_boundaries batches are evaluated (ab-real admitted, six quarantined); the
undecodable event (keyed admin_boundaries by its producer) is quarantined under its source
key, as `quarantine tail` shows it, with no verdict. So over the scenario v1.0 (enforcing)
attains 1/7 and v1.1 (observing, which the real data already breaks) 0, each against its
own objective of 0.99, in separate series.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.test_http import get, wait_for
from worker.cli.demo import publish_demo_contracts, publish_demo_events
from worker.kafka.settings import Settings
from worker.ops.decision_log import DecisionLog
from worker.ops.http import GateHTTPServer
from worker.ops.metrics import GateMetrics

Samples = dict[str, dict[frozenset[tuple[str, str]], float]]


def scrape(url: str) -> Samples:
    """``/metrics`` as {sample name: {labels without otel_scope_*: value}}."""
    status, body = get(f"{url}/metrics")
    assert status == 200
    out: Samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            labels = frozenset(
                (k, v) for k, v in s.labels.items() if not k.startswith("otel_scope_")
            )
            out.setdefault(s.name, {})[labels] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[name][frozenset(labels.items())]


def test_demo_scenario_metrics_and_status(settings: Settings, start_worker: Any) -> None:
    publish_demo_contracts(settings, out=io.StringIO())
    registry = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    decisions = DecisionLog()
    worker = start_worker(
        settings, metrics=GateMetrics(provider.get_meter("t")), on_outcome=decisions
    )
    server = GateHTTPServer(
        worker.pipeline,
        host="127.0.0.1",
        port=0,
        decisions=decisions,
        metrics_registry=registry,
    ).start()
    url = f"http://127.0.0.1:{server.port}"
    try:
        placed = publish_demo_events(settings, out=io.StringIO())
        wait_for(lambda: worker.pipeline.batches_committed >= len(placed), timeout_s=90)
        m = scrape(url)

        batches = "gis_contract_batches_total"
        # six contract breaks plus the undecodable event, counted under its source key
        assert value(m, batches, decision="quarantined", layer="admin_boundaries") == 7
        assert value(m, batches, decision="admitted", layer="admin_boundaries") == 1
        assert value(m, batches, decision="admitted", layer="nyc_boroughs") == 1
        # a layer without a contract is counted under "unknown": event layers are a
        # producer's, and forged ones must not grow the series
        assert value(m, batches, decision="quarantined", layer="unknown") == 1
        assert not any(("layer", "road_network") in k for k in m[batches])

        att, budget = "gis_contract_attainment", "gis_contract_error_budget_remaining"
        ab = {"layer": "admin_boundaries"}
        assert value(m, att, **ab, version="v1.0", mode="enforcing") == pytest.approx(1 / 7)
        assert value(m, att, **ab, version="v1.1", mode="observing") == 0
        assert value(m, att, layer="nyc_boroughs", version="v1.0", mode="enforcing") == 1
        # 6/7 failed against a 1 % budget: spent (clamped at 0); nyc untouched
        assert value(m, budget, **ab, version="v1.0", mode="enforcing") == 0
        assert value(m, budget, **ab, version="v1.1", mode="observing") == 0
        assert value(m, budget, layer="nyc_boroughs", version="v1.0", mode="enforcing") == 1
        assert len(m[att]) == 3  # one series per (layer, version, mode), no batch ids

        assert value(m, "gis_contract_active_versions", **ab) == 2
        assert value(m, "gis_contract_active_versions", layer="nyc_boroughs") == 1
        assert set(m["gis_contract_escalations"].values()) == {0}
        assert len(m["gis_contract_escalations"]) == 4  # 2 layers x 2 kinds
        assert "gis_contract_overlap_age_cycles" not in m  # no major overlap
        assert value(m, "gis_contract_config_bootstrapped") == 1
        assert value(m, "gis_contract_config_bootstrap_records") == 3

        # lag per assigned input partition, refreshed every second by the loop: all caught up
        def caught_up() -> bool:
            lag = scrape(url).get("gis_contract_consumer_lag", {})
            return bool(lag) and set(lag.values()) == {0}

        wait_for(caught_up)
        lag = scrape(url)["gis_contract_consumer_lag"]
        assert {dict(k)["topic"] for k in lag} == {settings.topics.batches}

        doc = json.loads(get(f"{url}/status")[1])
        v10, v11 = doc["layers"]["admin_boundaries"]
        assert (v10["version"], v10["mode"], v10["objective"]) == ("v1.0", "enforcing", 0.99)
        assert v10["attainment"] == pytest.approx(1 / 7) and v10["window_evaluated"] == 7
        assert v10["error_budget_remaining"] == 0
        assert (v11["version"], v11["mode"], v11["attainment"]) == ("v1.1", "observing", 0)
    finally:
        server.close()
