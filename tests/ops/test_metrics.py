"""Instruments record the decision of a routed batch with the attributes of docs/design.md s.7."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tests.gate.test_route import NOW, V1, V11, WORLD, go
from worker.core.lifecycle.policy import Published
from worker.io import codec
from worker.ops.metrics import GateMetrics


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
    metrics.record_config_rejection("admin_boundaries", "edit_in_place", {"admin_boundaries"})
    metrics.record_config_rejection("forged-1", "invalid_record", {"admin_boundaries"})
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
        ({"layer": "admin_boundaries", "reason": "edit_in_place"}, 1),
        ({"layer": "invalid", "reason": "invalid_record"}, 1),  # an unknown layer: bounded
    ]
    assert p["gis.contract.evaluation.duration"][0][1] == 1


def test_slo_escalation_lag_and_bootstrap_gauges() -> None:
    reader = InMemoryMetricReader()
    metrics = GateMetrics(MeterProvider(metric_readers=[reader]).get_meter("test"))
    objectives = {"v1.0": V1.contract.objective, "v1.1": V11.contract.objective}
    stale = codec.encode_batch(replace(WORLD, data_time=NOW - timedelta(days=2)))
    for value in (codec.encode_batch(WORLD), stale, stale, stale):
        out = go(value)
        metrics.record_decision("admin_boundaries", out.decision, out.duration_s, objectives)
    opened = NOW - timedelta(hours=18)
    v2 = replace(V1.contract, version="v2.0", major=2, minor=0)
    metrics.set_lifecycle(
        [
            Published(V1.contract, "enforcing", "active", None, (), opened, "t"),
            Published(V11.contract, "observing", "active", "tightening", (), opened, "t"),
            Published(v2, "observing", "active", "major", (), opened, "t"),
        ],
        lambda: NOW,
    )
    metrics.set_consumer_lag({("gis.batches", 0): 3, ("gis.batches", 1): 0})
    metrics.set_config_bootstrap(3, True)
    p = points(reader)

    def by_version(name: str) -> dict[tuple[str, str], float]:
        return {
            (a["version"], a["mode"]): v for a, v in p[name] if a["layer"] == "admin_boundaries"
        }

    # v1.0 enforcing: 1 of 4 passed; v1.1 observing breaks on every batch (real data)
    assert by_version("gis.contract.attainment") == {
        ("v1.0", "enforcing"): 0.25,
        ("v1.1", "observing"): 0.0,
    }
    assert by_version("gis.contract.error_budget_remaining") == {
        ("v1.0", "enforcing"): 0.0,
        ("v1.1", "observing"): 0.0,
    }
    assert p["gis.contract.active_versions"] == [({"layer": "admin_boundaries"}, 3)]
    # each active version's own objective, per mode (the burn-rate rules divide by it)
    assert by_version("gis.contract.objective") == {
        ("v1.0", "enforcing"): V1.contract.objective,
        ("v1.1", "observing"): V11.contract.objective,
        ("v2.0", "observing"): V1.contract.objective,
    }
    # v2.0 published 18 h ago, cadence PT6H: three cycles of overlap
    assert p["gis.contract.overlap_age_cycles"] == [({"layer": "admin_boundaries"}, 3.0)]
    assert sorted((a["kind"], v) for a, v in p["gis.contract.escalations"]) == [
        ("active_versions", 1),
        ("overlap_age", 1),
    ]
    assert sorted((a["partition"], v) for a, v in p["gis.contract.consumer_lag"]) == [
        ("0", 3),
        ("1", 0),
    ]
    assert p["gis.contract.config_bootstrap_records"] == [({}, 3)]
    assert p["gis.contract.config_bootstrapped"] == [({}, 1)]

    # retiring v1.1 drops its series; a single version: no overlap, no escalation
    metrics.set_lifecycle([Published(V1.contract, "enforcing", "active", None, (), opened, "t")])
    p = points(reader)
    assert set(by_version("gis.contract.attainment")) == {("v1.0", "enforcing")}
    assert set(by_version("gis.contract.objective")) == {("v1.0", "enforcing")}
    assert "gis.contract.overlap_age_cycles" not in p or not p["gis.contract.overlap_age_cycles"]
    assert {v for _, v in p["gis.contract.escalations"]} == {0}


def test_restore_slo_counts_each_batch_once_and_only_active_versions() -> None:
    from datetime import timedelta

    from opentelemetry.sdk.metrics import MeterProvider

    from worker.core.lifecycle.slo import SeriesKey
    from worker.ops.metrics import GateMetrics

    now = datetime(2026, 11, 30, 12, tzinfo=timezone.utc)

    def rec(batch: str, version: str, passed: bool, minutes: int) -> dict[str, object]:
        return {
            "layer": "admin_boundaries",
            "version": version,
            "mode": "enforcing",
            "batch_id": batch,
            "passed": passed,
            "evaluated_at": now - timedelta(minutes=minutes),
        }

    metrics = GateMetrics(MeterProvider().get_meter("t"))
    restored = metrics.restore_slo(
        [
            rec("b1", "v1.0", False, 30),
            rec("b1", "v1.0", True, 20),  # redelivered after an abort: the last one counts
            rec("b2", "v1.0", True, 10),
            rec("b3", "v0.9", False, 5),  # a version no longer active
        ],
        {("admin_boundaries", "v1.0"): 0.99},
        now,
    )
    assert restored == 2
    s = metrics.slo.status(SeriesKey("admin_boundaries", "v1.0", "enforcing"))
    assert s is not None and (s.evaluated, s.passed) == (2, 2)


def test_record_decisions_sums_to_the_same_series_as_one_call_per_batch() -> None:
    """A run's decisions recorded in one call (increments summed per series) give every
    counter, histogram and SLO gauge the values of one record_decision per batch; the
    quarantined batches (stale data) break v1.0 while the fresh one passes it."""
    objectives = {"v1.0": V1.contract.objective, "v1.1": V11.contract.objective}
    stale = codec.encode_batch(replace(WORLD, data_time=NOW - timedelta(days=2)))
    outs = [go(v) for v in (codec.encode_batch(WORLD), stale, stale, codec.encode_batch(WORLD))]
    runs = [("admin_boundaries", o.decision, o.duration_s, objectives) for o in outs]
    runs.append(("other_layer", outs[1].decision, outs[1].duration_s, None))
    readers = [InMemoryMetricReader(), InMemoryMetricReader()]
    one, summed = (GateMetrics(MeterProvider(metric_readers=[r]).get_meter("t")) for r in readers)
    for run in runs:
        one.record_decision(*run)
    summed.record_decisions(runs)

    def canonical(reader: InMemoryMetricReader) -> dict[str, list[tuple[list, float]]]:
        return {
            name: sorted((sorted(a.items()), v) for a, v in pts)
            for name, pts in points(reader).items()
        }

    by_one, by_summed = canonical(readers[0]), canonical(readers[1])
    assert by_summed == by_one
    batches = dict((tuple(a), v) for a, v in by_summed["gis.contract.batches_total"])
    assert batches == {
        (("decision", "admitted"), ("layer", "admin_boundaries")): 2,
        (("decision", "quarantined"), ("layer", "admin_boundaries")): 2,
        (("decision", "quarantined"), ("layer", "other_layer")): 1,
    }
    attainment = {
        dict(a)["version"]: v
        for a, v in by_summed["gis.contract.attainment"]
        if dict(a)["layer"] == "admin_boundaries"
    }
    assert attainment == {"v1.0": 0.5, "v1.1": 0.0}
    assert sum(v for _, v in by_summed["gis.contract.evaluation.duration"]) == 5


def test_a_groups_shared_results_are_counted_once_per_batch_in_each_series() -> None:
    """Decisions of a group of small batches share their clause result objects: each is
    counted once per batch and version that holds it, in the series of its clause, result
    and mode (and a gate error in its own), as counted one result at a time."""
    from collections import Counter

    from tests.catalogue import NOW as AT
    from tests.catalogue import active
    from tests.core.test_shared_facts import EVERYTHING, _small_batches
    from worker.core.evaluate_group import evaluate_group

    batches = _small_batches()
    versions = [active(EVERYTHING), active(EVERYTHING, mode="observing")]
    decisions = evaluate_group(batches, versions, now=AT)
    by_name = [{r.name: r for r in d.verdicts[0].clauses} for d in decisions]
    assert by_name[1]["valid"] is by_name[2]["valid"]  # shared objects, for real
    reader = InMemoryMetricReader()
    metrics = GateMetrics(MeterProvider(metric_readers=[reader]).get_meter("t"))
    metrics.record_decisions(("L", d, 0.001, None) for d in decisions)
    want: Counter[tuple[str, str, str]] = Counter()
    errors: Counter[tuple[str, str]] = Counter()
    for d in decisions:
        for v in d.verdicts:
            for c in v.clauses:
                want[(c.name, c.result, v.mode)] += 1
                if c.gate_error is not None:
                    errors[(c.name, v.mode)] += 1
    pts = points(reader)
    got = {(a["clause"], a["result"], a["mode"]): n
           for a, n in pts["gis.contract.clause_evaluations_total"]}  # fmt: skip
    assert got == dict(want) and sum(got.values()) == len(batches) * 2 * len(EVERYTHING.clauses)
    assert {(a["clause"], a["mode"]): n for a, n in pts["gis.contract.gate_errors_total"]} == {
        ("bad", "enforcing"): len(batches),
        ("bad", "observing"): len(batches),
    }
    assert dict(errors) == {("bad", "enforcing"): len(batches), ("bad", "observing"): len(batches)}
