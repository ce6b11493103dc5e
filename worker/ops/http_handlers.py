"""The HTTP endpoints as pure functions of a :class:`GateState` and a monotonic now.

* ``/healthz``: 200 while the poll loop makes progress, i.e. the pipeline's
  ``last_loop_monotonic`` is newer than ``max.poll.interval.ms`` (default 300000 ms, the
  consumer's own liveness bound); 503 when the loop stalled.
* ``/readyz``: 200 when the config topic is bootstrapped and input partitions are
  assigned; 503 before, with a JSON body naming what is missing.
* ``/metrics``: Prometheus text exposition of a ``prometheus_client`` registry (the OTel
  SDK's ``PrometheusMetricReader`` feeds it, see :func:`worker.ops.metrics.configure_sdk`).
* ``/status``: JSON: readiness, versions per layer (mode, state and, when the state has
  ``metrics`` (a :class:`worker.ops.metrics.GateMetrics`), objective, attainment, error budget
  remaining and verdicts in the SLO window), the layers whose contract history is broken
  (``history_breaks``: every batch of them quarantined ``contract_history_broken``, issue 30),
  batch counts, the migration counts per major
  (when a ``migration`` view source is given) and the last decisions (kept by a
  :class:`worker.ops.decision_log.DecisionLog` fed by the pipeline's ``on_outcome``).

:class:`GateState` is anything shaped like :class:`worker.gate.pipeline.Pipeline`; the
handlers are unit-tested with plain values.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from worker.core._util.jsonsafe import dumps_json
from worker.core._util.text import clip
from worker.core.lifecycle.config_events import BROKEN_FIX
from worker.ops.decision_log import DecisionLog

__all__ = ["DEFAULT_MAX_POLL_INTERVAL_MS", "GateState", "Response", "handle"]
#: librdkafka's default ``max.poll.interval.ms``: the loop is unhealthy past this silence.
DEFAULT_MAX_POLL_INTERVAL_MS = 300_000

JSON_TYPE = "application/json"


class _ConfigState(Protocol):
    @property
    def bootstrapped(self) -> bool: ...


class _VersionView(Protocol):
    @property
    def mode(self) -> str: ...

    @property
    def state(self) -> str: ...

    @property
    def contract(self) -> Any: ...


class _RegistryView(Protocol):
    def layers(self) -> Sequence[str]: ...

    def versions(self, layer: str | None = None) -> Sequence[_VersionView]: ...

    def broken_layers(self) -> Mapping[str, Sequence[str]]: ...


class GateState(Protocol):
    """What the handlers read of a worker (a :class:`worker.gate.pipeline.Pipeline` fits)."""

    @property
    def config(self) -> _ConfigState: ...

    @property
    def assigned(self) -> Collection[tuple[str, int]]: ...

    @property
    def last_loop_monotonic(self) -> float: ...

    @property
    def batches_committed(self) -> int: ...

    @property
    def transactions_aborted(self) -> int: ...

    @property
    def registry(self) -> _RegistryView: ...


@dataclass(frozen=True)
class Response:
    """An HTTP response: status code, content type and body bytes."""

    status: int
    content_type: str
    body: bytes


def _json(status: int, doc: Any) -> Response:
    return Response(status, JSON_TYPE, (dumps_json(doc, indent=2, default=str) + "\n").encode())


def healthz(state: GateState, now_monotonic: float, max_poll_interval_ms: int) -> Response:
    silent_s = now_monotonic - state.last_loop_monotonic
    limit_s = max_poll_interval_ms / 1000.0
    ok = silent_s <= limit_s
    return _json(
        200 if ok else 503,
        {
            "status": "ok" if ok else "stalled",
            "seconds_since_poll_loop": round(silent_s, 3),
            "max_poll_interval_ms": max_poll_interval_ms,
        },
    )


def readyz(state: GateState) -> Response:
    missing = []
    if not state.config.bootstrapped:
        stalled = getattr(state.config, "stalled", None)
        missing.append(
            f"config bootstrap ({stalled})"
            if stalled
            else "config bootstrap (the config topic is not read to its end yet)"
        )
    lost = getattr(state.config, "lost", None)
    if lost:
        missing.append(f"config topic intact ({lost})")
    if not state.assigned:
        missing.append("partition assignment (no input partition assigned to this worker)")
    down_since = getattr(state, "broker_unreachable_since", None)
    if down_since is not None:
        missing.append(
            f"the Kafka broker (unreachable for {max(0.0, time.monotonic() - down_since):.0f} s)"
        )
    return _json(
        503 if missing else 200,
        {
            "ready": not missing,
            "config_bootstrapped": state.config.bootstrapped,
            "partitions_assigned": len(state.assigned),
            "missing": missing,
        },
    )


def _slo_fields(state: GateState) -> dict[tuple[str, str, str], dict[str, Any]] | None:
    """SLO figures per (layer, version, mode), None when the state has no GateMetrics."""
    tracker = getattr(getattr(state, "metrics", None), "slo", None)
    if tracker is None:
        return None
    return {
        (s.key.layer, s.key.version, s.key.mode): {
            "attainment": s.attainment,
            "error_budget_remaining": s.error_budget_remaining,
            "window_evaluated": s.evaluated,
        }
        for s in tracker.snapshot()
    }


#: ``/status`` ``history_breaks`` bounds, as ``contract list``'s: forged layers and keys
#: cannot grow the document
_MAX_BROKEN_LAYERS, _MAX_BREAK_LINES, _MAX_BREAK_CHARS = 20, 10, 300


def history_breaks(registry: _RegistryView) -> dict[str, dict[str, Any]]:
    """Layer -> ``{"breaks": [line, ...], "more": n, "fix": text}`` for every layer whose
    contract history is broken (issue 30: the worker quarantines each of its batches
    ``contract_history_broken``); at most 20 layers, 10 lines of 300 characters each,
    ``more`` counting the lines left out. Empty when every history is whole."""
    broken = sorted(registry.broken_layers().items())[:_MAX_BROKEN_LAYERS]
    return {
        layer: {
            "breaks": [clip(line, _MAX_BREAK_CHARS) for line in lines[:_MAX_BREAK_LINES]],
            "more": max(0, len(lines) - _MAX_BREAK_LINES),
            "fix": BROKEN_FIX,
        }
        for layer, lines in broken
    }


def status(
    state: GateState,
    now_monotonic: float,
    decisions: DecisionLog | None,
    migration: Callable[[], Any] | None = None,
) -> Response:
    slo = _slo_fields(state)
    empty = {"attainment": None, "error_budget_remaining": None, "window_evaluated": 0}
    layers: dict[str, list[dict[str, Any]]] = {}
    for layer in state.registry.layers():
        layers[layer] = [
            {"version": v.contract.version, "mode": v.mode, "state": v.state}
            | (
                {}
                if slo is None
                else {"objective": v.contract.objective}
                | slo.get((layer, v.contract.version, v.mode), empty)
            )
            for v in state.registry.versions(layer)
        ]
    last, counts = decisions.snapshot() if decisions is not None else ([], {})
    lost = getattr(state.config, "lost", None)
    extra: dict[str, Any] = {}
    if migration is not None:
        from worker.core.lifecycle.migration import view_to_json

        extra["migration"] = view_to_json(migration())
    return _json(
        200,
        {
            "ready": state.config.bootstrapped and not lost and bool(state.assigned),
            "config_bootstrapped": state.config.bootstrapped,
            "config_lost": lost,
            "partitions_assigned": sorted(f"{t}[{p}]" for t, p in state.assigned),
            "seconds_since_poll_loop": round(now_monotonic - state.last_loop_monotonic, 3),
            "batches_committed": state.batches_committed,
            "transactions_aborted": state.transactions_aborted,
            "decisions": counts,
            "layers": layers,
            "history_breaks": history_breaks(state.registry),
            **extra,
            "last_decisions": last,
        },
    )


_TRAILING_COMMA = re.compile(rb'(?<!\\)",\}')


def strip_trailing_commas(text: bytes) -> bytes:
    """Prometheus text with every label set closed without a trailing comma
    (``{a="1",}`` -> ``{a="1"}``): some prometheus_client versions write the comma, which
    the text format tolerates but strict parsers and people reading it do not. A ``",}``
    inside a label value is escaped (``\\"``) and left alone."""
    return _TRAILING_COMMA.sub(b'"}', text)


def _prometheus_text(registry: Any) -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

    text = strip_trailing_commas(generate_latest(registry or REGISTRY))
    return Response(200, CONTENT_TYPE_LATEST, text)


def handle(
    path: str,
    state: GateState,
    *,
    now_monotonic: float,
    max_poll_interval_ms: int = DEFAULT_MAX_POLL_INTERVAL_MS,
    decisions: DecisionLog | None = None,
    metrics_registry: Any = None,
    migration: Callable[[], Any] | None = None,
) -> Response:
    """The response to ``GET path`` (query strings ignored); 404 for unknown paths.

    ``metrics_registry`` is the ``prometheus_client`` registry served on ``/metrics``
    (default: its global ``REGISTRY``, where ``PrometheusMetricReader`` registers).
    ``migration`` returns the latest :class:`worker.core.lifecycle.migration.MigrationView` for
    ``/status`` (e.g. ``lambda: exporter.view`` of a ``MigrationExporter``).
    """
    route = path.split("?", 1)[0].rstrip("/") or "/"
    if route == "/healthz":
        return healthz(state, now_monotonic, max_poll_interval_ms)
    if route == "/readyz":
        return readyz(state)
    if route == "/status":
        return status(state, now_monotonic, decisions, migration)
    if route == "/metrics":
        return _prometheus_text(metrics_registry)
    return _json(404, {"error": f"no such endpoint {clip(route, 200)}", "endpoints": ENDPOINTS})


ENDPOINTS = ["/healthz", "/readyz", "/metrics", "/status"]
