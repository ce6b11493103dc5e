"""Instruments record the decision of a routed batch with the attributes of DESIGN.md s.7."""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tests.test_routing import WORLD, go
from worker import codec
from worker.metrics import GateMetrics


def points(reader: InMemoryMetricReader) -> dict[str, list[tuple[dict, float]]]:
    data = reader.get_metrics_data()
    out: dict[str, list[tuple[dict, float]]] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                out[m.name] = [
                    (dict(p.attributes), getattr(p, "value", getattr(p, "count", None)))
                    for p in m.data.data_points
                ]
    return out


def test_counts_per_clause_version_and_decision() -> None:
    reader = InMemoryMetricReader()
    metrics = GateMetrics(MeterProvider(metric_readers=[reader]).get_meter("test"))
    out = go(codec.encode_batch(WORLD))
    metrics.record_decision("admin_boundaries", out.decision, out.duration_s)
    metrics.record_config_rejection("admin_boundaries", "edit_in_place")
    p = points(reader)
    assert p["gis.contract.batches_total"] == [
        ({"layer": "admin_boundaries", "decision": "admitted"}, 1)
    ]
    clause_points = {
        (a["version"], a["clause"], a["result"], a["mode"]): v
        for a, v in p["gis.contract.clause_evaluations_total"]
    }
    assert len(clause_points) == 18  # 9 clauses x 2 versions
    assert clause_points[("v1.1", "continent", "break", "observing")] == 1
    assert clause_points[("v1.0", "continent", "pass", "enforcing")] == 1
    versions = {(a["version"], a["result"]) for a, _ in p["gis.contract.version_evaluations_total"]}
    assert versions == {("v1.0", "pass"), ("v1.1", "break")}
    assert p["gis.contract.config_rejections_total"] == [
        ({"layer": "admin_boundaries", "reason": "edit_in_place"}, 1)
    ]
    assert p["gis.contract.evaluation.duration"][0][1] == 1
