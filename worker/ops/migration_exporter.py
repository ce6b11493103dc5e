"""Migration gauges exported periodically from the migration view (docs/design.md section 7)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from opentelemetry import metrics

from worker.control.attribution import DEFAULT_STALE_AFTER, migration_view
from worker.control.consumers import GAUGE_NAME
from worker.core.errors import ContractGateError
from worker.core.lifecycle.migration import (
    MigrationView,
)
from worker.core.lifecycle.registry import Registry
from worker.kafka.settings import Settings

log = logging.getLogger(__name__)

__all__ = ["MigrationExporter"]


class MigrationExporter:
    """The worker's export of the migration view (docs/design.md section 7).

    Observable gauges over the latest view, refreshed every ``interval_s`` by a daemon
    thread (admin API + consumers topic):

    * ``gis_consumer_contract_version{consumer="unattributed:<group>", layer, version} = 1``
      for every unattributed group (``version``: the oldest active revision of the layer);
    * ``gis.contract.consumers{layer, version, oldest}``: declared + unattributed
      consumers per active major (``version`` is the major, e.g. ``v1``).

    A failed refresh keeps the previous view and is logged.
    """

    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        *,
        meter: metrics.Meter | None = None,
        interval_s: float = 60.0,
        stale_after: timedelta = DEFAULT_STALE_AFTER,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.interval_s = interval_s
        self.stale_after = stale_after
        self.view = MigrationView()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        meter = meter or metrics.get_meter("spatial-contract-gate.migration")
        meter.create_observable_gauge(
            GAUGE_NAME,
            callbacks=[self._unattributed],
            description="1 for the contract version a consumer reads against; the worker's "
            "rows are unattributed groups, counted against the oldest active version",
        )
        meter.create_observable_gauge(
            "gis.contract.consumers",
            callbacks=[self._counts],
            unit="{consumer}",
            description="Declared + unattributed consumers per layer and active major version",
        )

    def refresh(self) -> MigrationView:
        """Recompute the view now (also called by the thread)."""
        self.view = migration_view(
            self.settings, registry=self.registry, stale_after=self.stale_after
        )
        return self.view

    def _unattributed(self, options: Any) -> Iterable[Any]:
        from opentelemetry.metrics import Observation

        for lv in self.view.layers.values():
            for v in lv.versions:
                for ref in v.unattributed:
                    yield Observation(
                        1,
                        {"consumer": ref.label, "layer": v.layer, "version": v.revisions[0]},
                    )

    def _counts(self, options: Any) -> Iterable[Any]:
        from opentelemetry.metrics import Observation

        for lv in self.view.layers.values():
            for v in lv.versions:
                if v.active:
                    attrs = {
                        "layer": v.layer,
                        "version": v.version,
                        "oldest": str(v.oldest).lower(),
                    }
                    yield Observation(v.count, attrs)

    def start(self) -> MigrationExporter:
        self._thread = threading.Thread(target=self._loop, name="migration-view", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.refresh()
            except ContractGateError as exc:
                log.warning("migration view not refreshed: %s", exc)
            except Exception:  # never let the thread die silently with frozen gauges
                log.exception("migration view not refreshed (unexpected error)")
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
