"""Instruments of docs/design.md section 7, through the OpenTelemetry API only.

Library code receives a :class:`GateMetrics` built on any ``Meter``; the SDK (readers and
exporters) is configured once, at the entry point, by :func:`configure_sdk` from the
standard ``OTEL_*`` environment. Tests pass a meter of their own ``MeterProvider`` with an
``InMemoryMetricReader``. Attributes are low-cardinality: never a batch id.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from itertools import chain
from typing import Any

from opentelemetry import metrics

from worker.core.lifecycle.slo import SeriesKey, Window
from worker.core.model import ClauseResult, Decision
from worker.ops.gauges import INVALID_LAYER, GateGauges, bounded_layer

__all__ = ["INVALID_LAYER", "DecisionReport", "GateMetrics", "bounded_layer", "configure_sdk"]

#: One routed batch as :meth:`GateMetrics.record_decisions` takes it: its layer label, its
#: decision, its evaluation time in seconds, the objectives of the versions evaluated.
DecisionReport = tuple[str, Decision, float, Mapping[str, float] | None]

#: A counter series: the counter and its attributes, in order.
_Series = tuple[Any, tuple[tuple[str, str], ...]]

METER_NAME = "spatial-contract-gate"

#: Bucket boundaries (seconds) of ``gis.contract.evaluation.duration``.
DURATION_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class GateMetrics(GateGauges):
    """The worker's instruments: the counters and histogram below, and the gauges of
    :class:`worker.ops.gauges.GateGauges` (:attr:`slo`, :meth:`set_lifecycle`, ...).

    ``gis.contract.clause_evaluations_total`` {layer, version, clause, result, mode};
    ``gis.contract.batches_total`` {layer, decision};
    ``gis.contract.version_evaluations_total`` {layer, version, mode, result};
    ``gis.contract.gate_errors_total`` {layer, version, clause, kind, mode} (clauses the gate
    failed to evaluate, reason ``gate_error``: the gate's fault, not the producer's);
    ``gis.contract.config_rejections_total`` {layer, reason} (``layer`` only when known,
    else ``invalid``: the record's layer is untrusted);
    ``gis.contract.config_tombstones_total`` {layer} (null values on the config topic:
    compaction, not a rejection, but each deletes a version from the registry);
    ``gis.contract.evaluation.duration`` histogram in seconds {layer}.

    Observable gauges (values set by the pipeline thread, read at collection time):
    ``gis.contract.attainment`` and ``gis.contract.error_budget_remaining`` {layer,
    version, mode} over the sliding window of :attr:`slo` (:mod:`worker.core.lifecycle.slo`);
    ``gis.contract.objective`` {layer, version, mode} of each active version (for the
    burn-rate rules of ``deploy/prometheus``) and
    ``gis.contract.active_versions`` {layer}, ``gis.contract.overlap_age_cycles`` {layer}
    (only during a major overlap) and ``gis.contract.escalations`` {layer, kind} (0/1,
    :func:`worker.core.lifecycle.escalations.layer_lifecycles`) from :meth:`set_lifecycle`;
    ``gis.contract.consumer_lag`` {topic, partition} from :meth:`set_consumer_lag`;
    ``gis.contract.config_bootstrap_records`` and ``gis.contract.config_bootstrapped``
    (0/1) from :meth:`set_config_bootstrap`. Unit-less gauges carry no unit, so their
    Prometheus names get no suffix.

    Parameters
    ----------
    meter : Meter, optional
        Default: the global meter provider's ``spatial-contract-gate`` meter.
    slo_window : Window, optional
        Bounds of the attainment window (default :class:`worker.core.lifecycle.slo.Window`).
    monotonic : callable, optional
        Monotonic seconds for the SLO window (injectable for tests).
    """

    def __init__(
        self,
        meter: metrics.Meter | None = None,
        *,
        slo_window: Window | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        meter = meter or metrics.get_meter(METER_NAME)
        super().__init__(meter, slo_window=slo_window, monotonic=monotonic)
        self.clause_evaluations = meter.create_counter(
            "gis.contract.clause_evaluations_total",
            unit="{evaluation}",
            description="Clause evaluations by layer, version, clause, result and mode",
        )
        self.batches = meter.create_counter(
            "gis.contract.batches_total",
            unit="{batch}",
            description="Batches routed, by layer and decision (admitted|quarantined)",
        )
        self.version_evaluations = meter.create_counter(
            "gis.contract.version_evaluations_total",
            unit="{evaluation}",
            description="Version verdicts by layer, version, mode and result (pass|break)",
        )
        self.gate_errors = meter.create_counter(
            "gis.contract.gate_errors_total",
            unit="{evaluation}",
            description=(
                "Clause evaluations the gate itself failed (reason gate_error: an exception "
                "inside an evaluator, not the data), by layer, version, clause, kind and mode"
            ),
        )
        self.config_rejections = meter.create_counter(
            "gis.contract.config_rejections_total",
            unit="{record}",
            description="Config-topic records ignored by the worker, by layer and reason",
        )
        self.config_tombstones = meter.create_counter(
            "gis.contract.config_tombstones_total",
            unit="{record}",
            description="Config-topic tombstones (null values) applied, by layer",
        )
        self.evaluation_duration = meter.create_histogram(
            "gis.contract.evaluation.duration",
            unit="s",
            description="Time to evaluate one batch against every active version",
        )

    def record_decision(
        self,
        layer: str,
        decision: Decision,
        duration_s: float,
        objectives: Mapping[str, float] | None = None,
    ) -> None:
        """Count one routed batch: its decision, every verdict and every clause result.

        ``objectives`` (version -> objective of the versions evaluated) feeds the SLO
        window of each verdict whose version it names.
        """
        self.record_decisions([(layer, decision, duration_s, objectives)])

    def record_decisions(self, decisions: Iterable[DecisionReport]) -> None:
        """Count routed batches as :meth:`record_decision` does each, in fewer calls: the
        increments of one counter series are summed and added once (the same totals; an
        ``add`` of the OpenTelemetry SDK hashes its attributes on every call, which was a
        quarter of a worker's CPU on events of one feature). The SLO windows and the
        duration histogram get every batch, in order. ``decisions``: ``(layer, decision,
        duration_s, objectives)`` of each batch, ``objectives`` as in :meth:`record_decision`.
        """
        batches: Counter[tuple[str, str]] = Counter()
        versions: Counter[tuple[str, str, str, bool]] = Counter()
        # per verdict's (layer, version, mode): the clause results of its verdicts, counted
        # per result object (by id) at the end, in C; a group's events share their results
        results: dict[tuple[str, str, str], list[tuple[ClauseResult, ...]]] = {}
        slo_keys: dict[tuple[str, str, str], SeriesKey] = {}
        slo_record = self.slo.record_result
        record_duration = self.evaluation_duration.record
        for layer, decision, duration_s, objectives in decisions:
            batches[(layer, decision.decision)] += 1
            for verdict in decision.verdicts:
                version, mode, clauses = verdict.version, verdict.mode, verdict.clauses
                versions[(layer, version, mode, verdict.passed)] += 1
                if objectives is not None and version in objectives:
                    at = (verdict.layer, version, mode)  # SloTracker.record's key
                    key = slo_keys.get(at)
                    if key is None:
                        key = slo_keys[at] = SeriesKey(*at)
                    slo_record(key, verdict.passed, objectives[version])
                of_series = results.get((layer, version, mode))
                if of_series is None:
                    of_series = results[(layer, version, mode)] = []
                of_series.append(clauses)
            if decision.verdicts:
                record_duration(duration_s, {"layer": layer})
        self._add_summed(batches, versions, results)

    def _add_summed(
        self,
        batches: Counter[tuple[str, str]],
        versions: Counter[tuple[str, str, str, bool]],
        results: dict[tuple[str, str, str], list[tuple[ClauseResult, ...]]],
    ) -> None:
        """Add the counts :meth:`record_decisions` summed: one ``add`` per series, with
        ``batches`` per (layer, decision), ``versions`` per (layer, version, mode, passed)
        and ``results`` the clause results of the verdicts of each (layer, version, mode),
        counted per object (by id: the lists hold them alive, so no id is reused)."""
        counts: dict[_Series, int] = {}
        for (layer, name), n in batches.items():
            _count(counts, n, self.batches, layer=layer, decision=name)
        for (layer, version, mode, passed), n in versions.items():
            _count(counts, n, self.version_evaluations, layer=layer, version=version,
                   mode=mode, result="pass" if passed else "break")  # fmt: skip
        for (layer, version, mode), held in results.items():
            flat = list(chain.from_iterable(held))
            of_id = dict(zip(map(id, flat), flat, strict=True))
            for at_id, n in Counter(map(id, flat)).items():
                for key in self._clause_series(layer, version, mode, of_id[at_id]):
                    counts[key] = counts.get(key, 0) + n
        for (counter, attributes), n in counts.items():
            counter.add(n, dict(attributes))

    def _clause_series(
        self, layer: str, version: str, mode: str, clause: ClauseResult
    ) -> list[_Series]:
        """The (counter, attributes) series one clause result of a verdict counts in."""
        at = (("layer", layer), ("version", version), ("clause", clause.name))
        out: list[_Series] = []
        if clause.gate_error is not None:
            out.append((self.gate_errors, (*at, ("kind", clause.kind), ("mode", mode))))
        out.append((self.clause_evaluations, (*at, ("result", clause.result), ("mode", mode))))
        return out

    def record_config_rejection(
        self, layer: str | None, reason: str, known_layers: Collection[str]
    ) -> None:
        """Count a rejected config record. ``layer`` comes from the untrusted record (its
        key or document): it becomes the label only when it is in ``known_layers`` (the
        layers with an accepted version), else :data:`INVALID_LAYER`, so a stream of
        forged keys cannot grow the series without bound. ``reason`` is one of the
        registry's fixed reasons."""
        self.config_rejections.add(
            1, {"layer": bounded_layer(layer, known_layers), "reason": reason}
        )

    def record_config_tombstone(self, layer: str | None, known_layers: Collection[str]) -> None:
        """Count a tombstone; ``layer`` bounded as in :meth:`record_config_rejection`."""
        self.config_tombstones.add(1, {"layer": bounded_layer(layer, known_layers)})


def _count(counts: dict[_Series, int], n: int, counter: Any, **attributes: str) -> None:
    """``n`` more of ``counter``'s series of ``attributes`` in ``counts``."""
    key = (counter, tuple(attributes.items()))
    counts[key] = counts.get(key, 0) + n


def configure_sdk(service_name: str = "contract-gate", *, prometheus: bool = True) -> Any:
    """Install the OpenTelemetry SDK's MeterProvider from the standard environment.

    An OTLP exporter is added when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
    ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` is set (protocol from
    ``OTEL_EXPORTER_OTLP_PROTOCOL``: ``grpc`` default, or ``http/protobuf``).
    ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` are honoured by the SDK's
    ``Resource``. With ``prometheus`` (default) a ``PrometheusMetricReader`` is added as
    well, so OTLP and the Prometheus scrape endpoint can both be active. Returns the
    provider (call ``shutdown()`` on exit to flush).
    """
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    readers: list[MetricReader] = []
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
    ):
        protocol = os.environ.get(
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
            os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        )
        exporter: Any
        if protocol.startswith("http"):
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

            exporter = OTLPMetricExporter()
        else:
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                OTLPMetricExporter as GrpcExporter,
            )

            exporter = GrpcExporter()
        readers.append(PeriodicExportingMetricReader(exporter))
    if prometheus:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader

        # Registers a collector in prometheus_client's global REGISTRY, which the
        # worker's HTTP server serves on /metrics (worker.ops.http).
        readers.append(PrometheusMetricReader())
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", service_name)})
    from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View

    # The SDK's default buckets (0..10000) suit milliseconds; evaluation duration is in s.
    duration_view = View(
        instrument_name="gis.contract.evaluation.duration",
        aggregation=ExplicitBucketHistogramAggregation(DURATION_BUCKETS_S),
    )
    provider = MeterProvider(metric_readers=readers, resource=resource, views=[duration_view])
    metrics.set_meter_provider(provider)
    return provider
