"""The worker's operator page during ``contract-gate demo`` (:class:`DemoPage`, :func:`linger`).

The demo's worker serves its HTTP endpoints and operator page on a free loopback port,
with the migration view refreshed every 2 s; ``demo --serve-s`` keeps them up after the
tables are printed. The demo itself is :mod:`worker.cli.demo`.
"""

from __future__ import annotations

import time
from typing import Any, TextIO

from worker.gate.pipeline import Pipeline
from worker.kafka.settings import Settings

__all__ = ["DemoPage", "linger"]


class DemoPage:
    """The worker's operator page during the demo: its HTTP server on a free loopback port
    and the migration view refreshed every 2 s."""

    def __init__(self, settings: Settings, out: TextIO) -> None:
        from worker.ops.operator import RecentQuarantines

        self.recent = RecentQuarantines()
        self.settings = settings
        self.out = out
        self.server: Any = None
        self.exporter: Any = None

    def metrics(self) -> Any:
        """The worker's metrics on a meter of the demo's own (SLO figures on the page)."""
        from opentelemetry.sdk.metrics import MeterProvider

        from worker.ops.metrics import GateMetrics

        return GateMetrics(MeterProvider().get_meter("contract-gate-demo"))

    def start(self, pipeline: Pipeline) -> None:
        """Serve ``pipeline``'s endpoints and operator page and start the migration view;
        prints the page's address."""
        from worker.ops.http import GateHTTPServer
        from worker.ops.migration_exporter import MigrationExporter
        from worker.ops.operator import OverviewSource

        self.exporter = MigrationExporter(self.settings, pipeline.registry, interval_s=2.0)
        server = GateHTTPServer(pipeline, host="127.0.0.1", port=0)
        server.migration = lambda: self.exporter.view
        server.operator = OverviewSource(pipeline, self.recent, lambda: self.exporter.view)
        self.server = server.start()
        self.exporter.start()
        print(f"operator page: http://127.0.0.1:{server.port}/", file=self.out)

    def close(self) -> None:
        """Stop the migration view and the HTTP server (those started)."""
        if self.exporter is not None:
            self.exporter.stop()
        if self.server is not None:
            self.server.close()


def linger(page: DemoPage, serve_s: float, out: TextIO) -> None:
    """Keep the worker and its page up ``serve_s`` seconds (Ctrl-C ends it sooner)."""
    if serve_s <= 0 or page.server is None:
        return
    print(
        f"serving the operator page at http://127.0.0.1:{page.server.port}/ for "
        f"{serve_s:.0f} s (Ctrl-C stops)",
        file=out,
    )
    try:
        time.sleep(serve_s)
    except KeyboardInterrupt:
        print("stopped", file=out)
