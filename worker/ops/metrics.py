"""Instruments of DESIGN.md section 7, through the OpenTelemetry API only.

Library code receives a :class:`GateMetrics` built on any ``Meter``; the SDK (readers and
exporters) is configured once, at the entry point, by :func:`configure_sdk` from the
standard ``OTEL_*`` environment. Tests pass a meter of their own ``MeterProvider`` with an
``InMemoryMetricReader``. Attributes are low-cardinality: never a batch id.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from worker.core.lifecycle.policy import ESCALATION_KINDS, Published, layer_lifecycles
from worker.core.lifecycle.slo import SeriesKey, SloTracker, Window
from worker.core.model import Decision

__all__ = ["GateMetrics", "configure_sdk"]

METER_NAME = "spatial-contract-gate"

#: Bucket boundaries (seconds) of ``gis.contract.evaluation.duration``.
DURATION_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


#: The ``layer`` label of a config event whose layer is not a known one.
INVALID_LAYER = "invalid"


def bounded_layer(layer: str | None, known_layers: Collection[str]) -> str:
    """``layer`` when it is one of ``known_layers``, else :data:`INVALID_LAYER`."""
    return layer if layer is not None and layer in known_layers else INVALID_LAYER


class GateMetrics:
    """The worker's instruments.

    ``gis.contract.clause_evaluations_total`` {layer, version, clause, result, mode};
    ``gis.contract.batches_total`` {layer, decision};
    ``gis.contract.version_evaluations_total`` {layer, version, mode, result};
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
    :func:`worker.core.lifecycle.policy.layer_lifecycles`) from :meth:`set_lifecycle`;
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
        self.slo = SloTracker(slo_window, monotonic)
        self._published: tuple[Published, ...] = ()
        self._now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
        self._lag: Mapping[tuple[str, int], int] = {}
        self._config: tuple[int, bool] = (0, False)
        for name, callback, unit, description in (
            (
                "gis.contract.attainment",
                self._observe_attainment,
                "",
                "Passed / evaluated verdicts of a version in its sliding window",
            ),
            (
                "gis.contract.error_budget_remaining",
                self._observe_budget,
                "",
                "1 - failed fraction / (1 - objective) in the window, clamped to [0, 1]",
            ),
            (
                "gis.contract.objective",
                self._observe_objective,
                "",
                "Objective (target attainment) of each active version, from its contract",
            ),
            (
                "gis.contract.active_versions",
                self._observe_active,
                "{version}",
                "Active contract versions of a layer",
            ),
            (
                "gis.contract.overlap_age_cycles",
                self._observe_overlap,
                "",
                "Age of an open major overlap in cadence cycles of the newer major",
            ),
            (
                "gis.contract.escalations",
                self._observe_escalations,
                "",
                "1 when a lifecycle escalation fires (kind=active_versions|overlap_age)",
            ),
            (
                "gis.contract.consumer_lag",
                self._observe_lag,
                "{message}",
                "High watermark minus position per assigned input partition",
            ),
            (
                "gis.contract.config_bootstrap_records",
                self._observe_config_records,
                "{record}",
                "Config-topic records read by this worker",
            ),
            (
                "gis.contract.config_bootstrapped",
                self._observe_config_done,
                "",
                "1 once the config topic was read to its end (partition EOF), else 0",
            ),
        ):
            meter.create_observable_gauge(
                name, callbacks=[callback], unit=unit, description=description
            )
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
        self.batches.add(1, {"layer": layer, "decision": decision.decision})
        for verdict in decision.verdicts:
            self.version_evaluations.add(
                1,
                {
                    "layer": layer,
                    "version": verdict.version,
                    "mode": verdict.mode,
                    "result": "pass" if verdict.passed else "break",
                },
            )
            if objectives is not None and verdict.version in objectives:
                self.slo.record(verdict, objectives[verdict.version])
            for clause in verdict.clauses:
                self.clause_evaluations.add(
                    1,
                    {
                        "layer": layer,
                        "version": verdict.version,
                        "clause": clause.name,
                        "result": clause.result,
                        "mode": verdict.mode,
                    },
                )
        if decision.verdicts:
            self.evaluation_duration.record(duration_s, {"layer": layer})

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

    # -- values of the observable gauges (set by the pipeline thread) ---------------------
    def set_lifecycle(
        self, published: Sequence[Published], now: Callable[[], datetime] | None = None
    ) -> None:
        """The versions on the config topic; SLO series of inactive versions are dropped."""
        self._published = tuple(published)
        if now is not None:
            self._now = now
        self.slo.retain(
            {
                SeriesKey(p.contract.layer, p.contract.version, p.mode)
                for p in self._published
                if p.state == "active"
            }
        )

    def restore_slo(
        self,
        records: Iterable[Mapping[str, Any]],
        objectives: Mapping[tuple[str, str], float],
        now: datetime,
    ) -> int:
        """Refill the SLO windows from evaluation records read at start (a restarted worker
        would otherwise report attainment over an empty window).

        A batch evaluated more than once (redelivery) counts once per series, with its
        last evaluation; records older than the window or of inactive versions are skipped.
        """
        last: dict[tuple[SeriesKey, str], tuple[bool, float]] = {}
        for r in records:
            objective = objectives.get((r["layer"], r["version"]))
            if objective is None:
                continue
            key = SeriesKey(r["layer"], r["version"], r["mode"])
            age_s = (now - r["evaluated_at"]).total_seconds()
            last[(key, r["batch_id"])] = (bool(r["passed"]), age_s)
        return self.slo.restore(
            (key, passed, objectives[(key.layer, key.version)], age_s)
            for (key, _), (passed, age_s) in last.items()
        )

    def set_consumer_lag(self, lag: Mapping[tuple[str, int], int]) -> None:
        """Lag per assigned ``(topic, partition)``; replaces the previous mapping."""
        self._lag = dict(lag)

    def set_config_bootstrap(self, records: int, bootstrapped: bool) -> None:
        self._config = (records, bootstrapped)

    # -- gauge callbacks: read the values above, nothing else -----------------------------
    def _observe_attainment(self, options: CallbackOptions) -> Iterable[Observation]:
        for s in self.slo.snapshot():
            if s.attainment is not None:
                yield Observation(s.attainment, _series_attrs(s.key))

    def _observe_budget(self, options: CallbackOptions) -> Iterable[Observation]:
        for s in self.slo.snapshot():
            if s.error_budget_remaining is not None:
                yield Observation(s.error_budget_remaining, _series_attrs(s.key))

    def _observe_objective(self, options: CallbackOptions) -> Iterable[Observation]:
        for p in self._published:
            if p.state == "active":
                attrs = {"layer": p.contract.layer, "version": p.contract.version, "mode": p.mode}
                yield Observation(p.contract.objective, attrs)

    def _observe_active(self, options: CallbackOptions) -> Iterable[Observation]:
        for lc in layer_lifecycles(self._published, self._now()):
            yield Observation(len(lc.active), {"layer": lc.layer})

    def _observe_overlap(self, options: CallbackOptions) -> Iterable[Observation]:
        for lc in layer_lifecycles(self._published, self._now()):
            if lc.overlap_age_cycles is not None:
                yield Observation(lc.overlap_age_cycles, {"layer": lc.layer})

    def _observe_escalations(self, options: CallbackOptions) -> Iterable[Observation]:
        for lc in layer_lifecycles(self._published, self._now()):
            for kind in ESCALATION_KINDS:
                yield Observation(int(kind in lc.escalations), {"layer": lc.layer, "kind": kind})

    def _observe_lag(self, options: CallbackOptions) -> Iterable[Observation]:
        for (topic, partition), lag in sorted(self._lag.items()):
            yield Observation(lag, {"topic": topic, "partition": str(partition)})

    def _observe_config_records(self, options: CallbackOptions) -> Iterable[Observation]:
        yield Observation(self._config[0])

    def _observe_config_done(self, options: CallbackOptions) -> Iterable[Observation]:
        yield Observation(int(self._config[1]))


def _series_attrs(key: SeriesKey) -> dict[str, str]:
    return {"layer": key.layer, "version": key.version, "mode": key.mode}


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
