"""HTTP handlers against a fake worker state (plain values, no Kafka), and the server."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from types import SimpleNamespace
from typing import Any

import pytest
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from prometheus_client import CollectorRegistry

from tests.gate.test_route import WORLD, go
from worker.core.errors import ContractGateError
from worker.core.lifecycle.slo import SeriesKey
from worker.io import codec
from worker.ops.decision_log import DecisionLog
from worker.ops.http import GateHTTPServer, http_port_from
from worker.ops.http_handlers import handle
from worker.ops.metrics import GateMetrics


@dataclass
class FakeRegistry:
    versions_by_layer: dict[str, list[Any]] = field(default_factory=dict)

    def layers(self) -> list[str]:
        return sorted(self.versions_by_layer)

    def versions(self, layer: str | None = None) -> list[Any]:
        return self.versions_by_layer.get(layer or "", [])

    def broken_layers(self) -> dict[str, tuple[str, ...]]:
        return self.breaks

    breaks: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass
class FakeState:
    config: Any = field(default_factory=lambda: SimpleNamespace(bootstrapped=False))
    assigned: set[tuple[str, int]] = field(default_factory=set)
    last_loop_monotonic: float = 100.0
    batches_committed: int = 0
    transactions_aborted: int = 0
    registry: FakeRegistry = field(default_factory=FakeRegistry)


def version(v: str, mode: str, state: str = "active") -> Any:
    return SimpleNamespace(contract=SimpleNamespace(version=v), mode=mode, state=state)


def body(r: Any) -> Any:
    return json.loads(r.body)


def test_healthz_red_when_the_poll_loop_stalls_past_max_poll_interval() -> None:
    s = FakeState(last_loop_monotonic=100.0)
    ok = handle("/healthz", s, now_monotonic=100.0 + 299.9, max_poll_interval_ms=300_000)
    assert ok.status == 200 and body(ok)["status"] == "ok"
    stalled = handle("/healthz", s, now_monotonic=100.0 + 300.5, max_poll_interval_ms=300_000)
    assert stalled.status == 503
    assert body(stalled) == {
        "status": "stalled",
        "seconds_since_poll_loop": 300.5,
        "max_poll_interval_ms": 300_000,
    }


def test_readyz_names_what_is_missing_until_bootstrapped_and_assigned() -> None:
    s = FakeState()
    r = handle("/readyz", s, now_monotonic=0)
    assert r.status == 503 and r.content_type == "application/json"
    missing = body(r)["missing"]
    assert len(missing) == 2 and "config bootstrap" in missing[0] and "partition" in missing[1]

    s.config.bootstrapped = True
    r = handle("/readyz", s, now_monotonic=0)
    assert r.status == 503 and [m.split(" ")[0] for m in body(r)["missing"]] == ["partition"]

    s.assigned = {("gis.batches", 0)}
    r = handle("/readyz/", s, now_monotonic=0)
    assert r.status == 200
    assert body(r) == {
        "ready": True,
        "config_bootstrapped": True,
        "partitions_assigned": 1,
        "missing": [],
    }


def test_readyz_names_why_a_stalled_config_bootstrap_is_not_finished() -> None:
    why = "config bootstrap made no progress on gis.contracts for 60 s (0/1 partitions at EOF)"
    s = FakeState(config=SimpleNamespace(bootstrapped=False, stalled=why))
    r = handle("/readyz", s, now_monotonic=0)
    assert r.status == 503 and body(r)["missing"][0] == f"config bootstrap ({why})"


def test_status_lists_versions_counts_and_last_decisions() -> None:
    log = DecisionLog(maxlen=2, clock=lambda: datetime(2026, 11, 29, 12, tzinfo=timezone.utc))
    admitted = go(codec.encode_batch(WORLD))
    stale = go(
        codec.encode_batch(
            replace(WORLD, batch_id="stale", data_time=datetime(2020, 1, 1, tzinfo=timezone.utc))
        )
    )
    undecodable = go(b"\x00junk")
    for outcome in (admitted, stale, undecodable):
        log(outcome)
    s = FakeState(
        config=SimpleNamespace(bootstrapped=True),
        assigned={("gis.batches", 1), ("gis.batches", 0)},
        batches_committed=3,
        registry=FakeRegistry(
            {"admin_boundaries": [version("v1.0", "enforcing"), version("v1.1", "observing")]}
        ),
    )
    r = handle("/status?verbose=1", s, now_monotonic=101.5, decisions=log)
    assert r.status == 200
    doc = body(r)
    assert doc["ready"] is True
    assert doc["partitions_assigned"] == ["gis.batches[0]", "gis.batches[1]"]
    assert doc["seconds_since_poll_loop"] == 1.5
    assert doc["batches_committed"] == 3
    assert doc["layers"] == {
        "admin_boundaries": [
            {"version": "v1.0", "mode": "enforcing", "state": "active"},
            {"version": "v1.1", "mode": "observing", "state": "active"},
        ]
    }
    # counts cover every decision; the deque keeps the last two, newest first
    # an undecodable event counts under its source key, as `quarantine tail` shows it
    assert doc["decisions"] == {"admin_boundaries": {"admitted": 1, "quarantined": 2}}
    last = doc["last_decisions"]
    assert [e["batch_id"] for e in last] == [None, "stale"]
    assert last[0]["reasons"] == ["decode_error"] and last[0]["layer"] == "admin_boundaries"
    assert last[1]["decision"] == "quarantined" and "v1.0:fresh" in last[1]["broken"]
    assert last[1]["time"] == "2026-11-29T12:00:00+00:00"


def test_status_broken_includes_observing_breaks_of_admitted_batches() -> None:
    log = DecisionLog()
    log(go(codec.encode_batch(WORLD)))
    (entry,), _ = log.snapshot()
    assert entry["decision"] == "admitted"
    assert entry["broken"] == ["v1.1:continent"]  # the observing stricter version


def test_metrics_serves_prometheus_text_with_exporter_names() -> None:
    registry = CollectorRegistry()
    reader = PrometheusMetricReader(registry=registry)
    metrics = GateMetrics(MeterProvider(metric_readers=[reader]).get_meter("t"))
    out = go(codec.encode_batch(WORLD))
    metrics.record_decision("admin_boundaries", out.decision, out.duration_s)
    r = handle("/metrics", FakeState(), now_monotonic=0, metrics_registry=registry)
    assert r.status == 200 and r.content_type.startswith("text/plain")
    text = r.body.decode()
    assert "# TYPE gis_contract_batches_total counter" in text
    assert 'gis_contract_batches_total{decision="admitted",layer="admin_boundaries"' in text
    assert "gis_contract_evaluation_duration_seconds_bucket" in text


def test_unknown_path_is_404_with_the_endpoints() -> None:
    r = handle("/nope", FakeState(), now_monotonic=0)
    assert r.status == 404 and "/readyz" in body(r)["endpoints"]


def test_port_from_flag_env_and_default() -> None:
    assert http_port_from(None, {}) == 8080
    assert http_port_from(None, {"CONTRACT_GATE_HTTP_PORT": "9100"}) == 9100
    assert http_port_from(0, {"CONTRACT_GATE_HTTP_PORT": "9100"}) == 0
    with pytest.raises(ContractGateError, match="not a port number"):
        http_port_from(None, {"CONTRACT_GATE_HTTP_PORT": "http"})


def test_server_answers_on_a_free_port() -> None:
    s = FakeState(config=SimpleNamespace(bootstrapped=True))
    server = GateHTTPServer(s, host="127.0.0.1", port=0).start()
    try:
        url = f"http://127.0.0.1:{server.port}"
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(f"{url}/readyz", timeout=5)
        assert info.value.code == 503
        info.value.close()
        s.assigned = {("gis.batches", 0)}
        with urllib.request.urlopen(f"{url}/readyz", timeout=5) as resp:
            assert resp.status == 200 and json.load(resp)["ready"] is True
    finally:
        server.close()


def test_status_shows_slo_per_version_and_migration_counts() -> None:
    from worker.core.lifecycle.migration import LayerView, MigrationView, VersionCount

    metrics = GateMetrics(MeterProvider(metric_readers=[InMemoryMetricReader()]).get_meter("t"))
    for passed in (True, False, True, True):
        metrics.slo.record_result(SeriesKey("admin_boundaries", "v1.0", "enforcing"), passed, 0.5)
    s = FakeState(
        registry=FakeRegistry(
            {"admin_boundaries": [version("v1.0", "enforcing"), version("v1.1", "observing")]}
        )
    )
    s.metrics = metrics  # type: ignore[attr-defined]
    for v in s.registry.versions("admin_boundaries"):
        v.contract.objective = 0.5
    view = MigrationView(
        {
            "admin_boundaries": LayerView(
                "admin_boundaries",
                (VersionCount("admin_boundaries", "v1", ("v1.0", "v1.1"), oldest=True),),
            )
        }
    )
    doc = body(handle("/status", s, now_monotonic=100.0, migration=lambda: view))
    v10, v11 = doc["layers"]["admin_boundaries"]
    assert v10 == {
        "version": "v1.0",
        "mode": "enforcing",
        "state": "active",
        "objective": 0.5,
        "attainment": 0.75,
        "error_budget_remaining": 0.5,
        "window_evaluated": 4,
    }
    # nothing evaluated yet under v1.1 observing: no figure, never a borrowed one
    assert (v11["attainment"], v11["error_budget_remaining"], v11["window_evaluated"]) == (
        None,
        None,
        0,
    )
    assert doc["migration"][0]["layer"] == "admin_boundaries"
    assert doc["migration"][0]["count"] == 0


def test_readyz_goes_red_while_the_broker_is_unreachable() -> None:
    # issue 10: /readyz stayed 200 through a 30 s broker outage
    import time

    s = FakeState(config=SimpleNamespace(bootstrapped=True), assigned={("gis.batches", 0)})
    assert handle("/readyz", s, now_monotonic=0.0, max_poll_interval_ms=1).status == 200
    s.broker_unreachable_since = time.monotonic() - 12  # type: ignore[attr-defined]
    red = handle("/readyz", s, now_monotonic=0.0, max_poll_interval_ms=1)
    assert red.status == 503
    assert body(red)["missing"] == ["the Kafka broker (unreachable for 12 s)"]


def test_label_sets_lose_their_trailing_comma_but_not_values_containing_one() -> None:
    from worker.ops.http_handlers import strip_trailing_commas

    text = b'x_total{a="1",b="2",} 1.0\ny{v="say \\",}"} 2.0\nz 3.0\n'
    assert strip_trailing_commas(text) == b'x_total{a="1",b="2"} 1.0\ny{v="say \\",}"} 2.0\nz 3.0\n'


def test_a_client_that_resets_the_connection_leaves_no_traceback(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # found by a fresh-user session: every aborted scrape printed a traceback on stderr
    import logging
    import socket
    import struct

    s = FakeState()
    server = GateHTTPServer(s, host="127.0.0.1", port=0).start()
    try:
        with caplog.at_level(logging.DEBUG, logger="worker.ops.http"):
            for _ in range(3):
                sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
                sock.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
                # close with RST instead of FIN before the answer is read
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()
            with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/status") as resp:
                assert resp.status == 200  # the server still answers
            try:  # the path a reset takes, made deterministic
                raise ConnectionResetError(104, "Connection reset by peer")
            except ConnectionResetError:
                server.server.handle_error(None, ("127.0.0.1", 9))
    finally:
        server.close()
    assert "Traceback" not in capsys.readouterr().err
    assert any("went away" in r.getMessage() for r in caplog.records)


def test_status_shows_a_broken_contract_history_with_its_fix() -> None:
    from tests.core.test_history import LAYER, V1, V11, demo, registry
    from worker.core.lifecycle.config_events import BROKEN_FIX
    from worker.core.lifecycle.registry import config_key

    log = demo()
    whole = FakeState(config=SimpleNamespace(bootstrapped=True), registry=registry(log))
    assert body(handle("/status", whole, now_monotonic=0))["history_breaks"] == {}
    log.append((config_key(V1), None))  # a tombstone under the enforcing v1.0
    broken = FakeState(config=SimpleNamespace(bootstrapped=True), registry=registry(log))
    doc = body(handle("/status", broken, now_monotonic=0))
    assert doc["history_breaks"] == {
        LAYER: {
            "breaks": [
                f"{config_key(V1)}: a tombstone where a contract record was",
                f"{config_key(V11)} builds on {config_key(V1)}, which is not on the topic",
            ],
            "more": 0,
            "fix": BROKEN_FIX,
        }
    }


def test_status_history_breaks_are_bounded() -> None:
    lines = tuple(f"key{i}: " + "x" * 1000 for i in range(12))
    fake = FakeRegistry(breaks={f"forged{n:02d}": lines for n in range(25)})
    doc = body(handle("/status", FakeState(registry=fake), now_monotonic=0))
    shown = doc["history_breaks"]
    assert sorted(shown) == [f"forged{n:02d}" for n in range(20)]
    assert shown["forged00"]["more"] == 2
    assert [line.split(":")[0] for line in shown["forged00"]["breaks"]] == [
        f"key{i}" for i in range(10)
    ]
    assert all(len(line) <= 340 for line in shown["forged19"]["breaks"])


@pytest.mark.parametrize(
    "sent",
    [b"", b"GET /sta", b"GET /status HTTP/1.1\r\nHost: x\r\n"],
    ids=["nothing", "half a request line", "headers never ended"],
)
def test_a_silent_client_is_disconnected_and_its_thread_ends(
    monkeypatch: pytest.MonkeyPatch, sent: bytes
) -> None:
    # found by a new-user session: a connection that sends nothing (a TCP probe, a port
    # scan, a half-open client) held a handler thread forever: 200 of them, 200 threads
    import socket
    import threading
    import time

    from worker.ops import http

    monkeypatch.setattr(http, "IDLE_TIMEOUT_S", 0.5)
    server = GateHTTPServer(FakeState(), host="127.0.0.1", port=0).start()
    try:
        before = threading.active_count()
        socks = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(5)]
        for s in socks:
            s.sendall(sent)
        time.sleep(0.2)
        assert threading.active_count() == before + 5  # one handler thread each
        started = time.monotonic()
        for s in socks:
            assert s.recv(65536) == b""  # closed by the server, nothing answered
            s.close()
        assert time.monotonic() - started < 3.0
        deadline = time.monotonic() + 3.0
        while threading.active_count() > before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert threading.active_count() == before
        with pytest.raises(urllib.error.HTTPError) as info:  # FakeState's loop is old: 503
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=5)
        assert info.value.code == 503  # the server still answers
        info.value.close()
    finally:
        server.close()


@pytest.mark.parametrize("length", [10, 3_000, 60_000])
def test_an_unknown_path_is_echoed_clipped(length: int) -> None:
    path = "/" + "x" * length
    r = handle(path, FakeState(), now_monotonic=100.0)
    doc = body(r)
    assert r.status == 404 and len(r.body) < 1_600
    assert doc["error"].startswith(f"no such endpoint /{'x' * min(length, 199)}")
    if length > 300:
        assert f"[clipped: {length + 1} chars in all]" in doc["error"]
