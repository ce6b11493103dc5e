"""The observable gauges of the worker (docs/design.md section 7), through the OpenTelemetry API.

:class:`GateGauges` holds the values the pipeline thread sets (lifecycle, SLO windows,
consumer lag, config bootstrap) and registers one observable gauge per figure, whose
callback reads them at collection time. :class:`worker.ops.metrics.GateMetrics` adds the
counters and the histogram.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from worker.core.lifecycle.escalations import ESCALATION_KINDS, layer_lifecycles
from worker.core.lifecycle.policy import Published
from worker.core.lifecycle.slo import SeriesKey, SloTracker, Window

__all__ = ["GateGauges"]


#: The ``layer`` label of a config event whose layer is not a known one.
INVALID_LAYER = "invalid"


def bounded_layer(layer: str | None, known_layers: Collection[str]) -> str:
    """``layer`` when it is one of ``known_layers``, else :data:`INVALID_LAYER`."""
    return layer if layer is not None and layer in known_layers else INVALID_LAYER


class GateGauges:
    """The worker's observable gauges and the values they read.

    ``gis.contract.attainment`` and ``gis.contract.error_budget_remaining`` {layer,
    version, mode} over the sliding window of :attr:`slo` (:mod:`worker.core.lifecycle.slo`);
    ``gis.contract.objective`` {layer, version, mode} of each active version;
    ``gis.contract.active_versions``, ``gis.contract.overlap_age_cycles`` and
    ``gis.contract.escalations`` {layer} from :meth:`set_lifecycle`;
    ``gis.contract.consumer_lag`` from :meth:`set_consumer_lag`;
    ``gis.contract.config_bootstrap_records`` and ``gis.contract.config_bootstrapped``
    from :meth:`set_config_bootstrap`.

    Parameters
    ----------
    meter : Meter
        The meter the gauges are created on.
    slo_window : Window, optional
        Bounds of the attainment window (default :class:`worker.core.lifecycle.slo.Window`).
    monotonic : callable, optional
        Monotonic seconds for the SLO window (injectable for tests).
    """

    def __init__(
        self,
        meter: metrics.Meter,
        *,
        slo_window: Window | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.slo = SloTracker(slo_window, monotonic)
        self._published: tuple[Published, ...] = ()
        self._now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
        self._lag: Mapping[tuple[str, int], int] = {}
        self._config: tuple[int, bool] = (0, False)
        self._history_breaks: dict[str, int] = {}
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
            (
                "gis.contract.config_history_broken",
                self._observe_history_breaks,
                "",
                "Breaks of a layer's contract history (every batch quarantined while > 0)",
            ),
        ):
            meter.create_observable_gauge(
                name, callbacks=[callback], unit=unit, description=description
            )

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

    @property
    def consumer_lag(self) -> Mapping[tuple[str, int], int]:
        """The last measured lag per (topic, partition), in events (the operator page)."""
        return self._lag

    def set_consumer_lag(self, lag: Mapping[tuple[str, int], int]) -> None:
        """Lag per assigned ``(topic, partition)``; replaces the previous mapping."""
        self._lag = dict(lag)

    def set_history_breaks(
        self, breaks: Mapping[str, tuple[str, ...]], known_layers: Collection[str]
    ) -> None:
        """The breaks per layer (issue 30); layers not in ``known_layers`` (forged keys)
        add up under ``layer="invalid"``. A layer whose history is whole again reports 0."""
        counts: dict[str, int] = dict.fromkeys(self._history_breaks, 0)
        for layer, lines in breaks.items():
            label = bounded_layer(layer, known_layers)
            counts[label] = counts.get(label, 0) + len(lines)
        self._history_breaks = counts

    def _observe_history_breaks(self, options: CallbackOptions) -> Iterable[Observation]:
        for layer, count in sorted(self._history_breaks.items()):
            yield Observation(count, {"layer": layer})

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
