"""The worker's HTTP server: /healthz, /readyz, /metrics, /status and the operator page (/).

The endpoints are pure handlers in :mod:`worker.ops.http_handlers`; this module serves them
(GET only) from a ``ThreadingHTTPServer`` whose handler threads only read state, and picks
the port from ``--http-port`` or ``CONTRACT_GATE_HTTP_PORT`` (default 8080).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from worker.core._util.text import clip
from worker.core.errors import ContractGateError
from worker.kafka.settings import Settings
from worker.ops.decision_log import DecisionLog
from worker.ops.http_handlers import (
    DEFAULT_MAX_POLL_INTERVAL_MS,
    ENDPOINTS,
    GateState,
    _json,
    handle,
)
from worker.ops.operator_routes import operator_response

__all__ = ["DEFAULT_HTTP_PORT", "GateHTTPServer", "http_port_from", "start_http_server"]

log = logging.getLogger(__name__)

DEFAULT_HTTP_PORT = 8080
#: Seconds a connection may stay silent (no request yet, half a request line, headers that
#: never end, or a reader that stops reading the answer) before the server closes it: each
#: connection holds a handler thread, and probes and scrapes send their request at once.
IDLE_TIMEOUT_S = 10.0


class _QuietServer(ThreadingHTTPServer):
    """A client that goes away mid-request (a scrape or probe timeout) is routine: one
    DEBUG line, not a traceback on stderr; anything else one WARNING line."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
            log.debug("http: client %s went away: %s", client_address, exc)
        else:
            log.warning("http: request from %s failed: %r", client_address, exc)


class GateHTTPServer:
    """A ``ThreadingHTTPServer`` on ``host:port`` in a daemon thread.

    ``port`` 0 binds a free port (read it back from :attr:`port`). Call :meth:`start`,
    then :meth:`close` on exit.
    """

    def __init__(
        self,
        state: GateState,
        *,
        host: str = "0.0.0.0",
        port: int = DEFAULT_HTTP_PORT,
        max_poll_interval_ms: int = DEFAULT_MAX_POLL_INTERVAL_MS,
        decisions: DecisionLog | None = None,
        metrics_registry: Any = None,
    ) -> None:
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            timeout = IDLE_TIMEOUT_S  # socket timeout per read or write of the connection

            def do_GET(self) -> None:
                try:
                    route = self.path.split("?", 1)[0].rstrip("/") or "/"
                    r = operator_response(route, outer.operator) or handle(
                        self.path,
                        outer.state,
                        now_monotonic=time.monotonic(),
                        max_poll_interval_ms=outer.max_poll_interval_ms,
                        decisions=outer.decisions,
                        metrics_registry=outer.metrics_registry,
                        migration=outer.migration,
                    )
                except Exception as exc:  # a handler bug must not kill the server thread
                    log.exception("HTTP %s failed", clip(self.path, 200))
                    r = _json(500, {"error": f"{type(exc).__name__}: {exc}"})
                self.send_response(r.status)
                self.send_header("Content-Type", r.content_type)
                self.send_header("Content-Length", str(len(r.body)))
                self.end_headers()
                self.wfile.write(r.body)

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("http: " + format, *args)

        self.state = state
        self.max_poll_interval_ms = max_poll_interval_ms
        self.decisions = decisions
        self.metrics_registry = metrics_registry
        #: Source of the migration view on /status (set it once the exporter exists).
        self.migration: Callable[[], Any] | None = None
        #: The operator page's source (:class:`worker.ops.operator.OverviewSource`): serves
        #: ``/``, ``/overview.json`` and ``/batch/...`` when set.
        self.operator: Any = None
        self._server = _QuietServer((host, port), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="contract-gate-http", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def server(self) -> ThreadingHTTPServer:
        """The underlying ``http.server`` server; its ``handle_error`` logs a client that
        went away (connection reset, broken pipe) at DEBUG instead of a traceback."""
        return self._server

    def start(self) -> GateHTTPServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def http_port_from(flag: int | None, env: Mapping[str, str] | None = None) -> int:
    """The HTTP port: the flag if given, else ``CONTRACT_GATE_HTTP_PORT``, else 8080.

    Raises
    ------
    ContractGateError
        When the environment value is not an integer in 0..65535.
    """
    env = os.environ if env is None else env
    text = str(flag) if flag is not None else env.get("CONTRACT_GATE_HTTP_PORT", "")
    if not text:
        return DEFAULT_HTTP_PORT
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise ContractGateError(
            f"HTTP port {text!r} is not a port number 0..65535 (0 disables the server)",
            field="--http-port",
            fix="give a port number 0..65535 (0 disables the server)",
        )
    return port


def start_http_server(
    state: GateState,
    settings: Settings,
    port_flag: int | None,
    host: str = "0.0.0.0",
    decisions: DecisionLog | None = None,
) -> GateHTTPServer | None:
    """Start the worker's HTTP server as ``contract-gate run`` does; None when disabled.

    The port comes from :func:`http_port_from` (0 disables); ``/healthz`` uses the
    consumer's ``max.poll.interval.ms`` (``settings.extra``, default 300000).
    """
    port = http_port_from(port_flag)
    if port == 0:
        return None
    interval = int(settings.extra.get("max.poll.interval.ms", DEFAULT_MAX_POLL_INTERVAL_MS))
    try:
        server = GateHTTPServer(
            state, host=host, port=port, max_poll_interval_ms=interval, decisions=decisions
        )
    except OSError as exc:
        raise ContractGateError(
            f"cannot serve HTTP on {host}:{port}: {exc.strerror}",
            field="--http-port",
            fix="give a free port, or 0 to disable the server",
        ) from exc
    log.info("HTTP endpoints on %s:%d: %s", host, server.port, ", ".join(ENDPOINTS))
    return server.start()
