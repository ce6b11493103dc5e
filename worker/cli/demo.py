"""``contract-gate demo``: the whole gate on real data, with a broker it starts itself.

Steps, each printed as it happens: resolve a broker (docs/design.md section 8), create the
topics, publish the demo contracts, start a worker, publish the scenario's batches
(:mod:`worker.cli.scenario`), read the admitted, quarantine and evaluation topics until every
event is accounted for, print a table per batch and per version, stop everything.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TextIO

from worker.cli.demo_page import DemoPage, linger
from worker.cli.lifecycle_output import publish_text
from worker.cli.scenario import DemoEvent, contract_files, demo_events
from worker.control.publish import publish_contract
from worker.core.errors import ContractGateError
from worker.gate.pipeline import Pipeline
from worker.io import codec
from worker.io.reports.text import brief
from worker.kafka.admin import create_topics, produce_one
from worker.kafka.broker_route import start_broker
from worker.kafka.clients import make_consumer
from worker.kafka.settings import Settings, Topics

__all__ = [
    "DemoResult",
    "DemoTimedOut",
    "collect_results",
    "expected_evaluations",
    "publish_demo_contracts",
    "publish_demo_events",
    "run_demo",
]


#: Seconds the demo waits for its worker thread to leave the group before the broker stops.
STOP_WORKER_S = 2.0
#: Seconds the demo's broker (in-memory: nothing to save) has to exit on SIGTERM before
#: it is killed; Tansu takes several seconds with clients still connected.
STOP_BROKER_S = 1.0


@dataclass
class DemoResult:
    """What the output topics say about each event, keyed by its input ``(partition, offset)``."""

    decisions: dict[tuple[int, int], str] = field(default_factory=dict)
    quarantine: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    admitted_headers: dict[tuple[int, int], dict[str, str]] = field(default_factory=dict)
    evaluations: list[dict[str, Any]] = field(default_factory=list)


def _headers(msg: Any) -> dict[str, str]:
    return {k: (v or b"").decode("utf-8", "replace") for k, v in (msg.headers() or [])}


def collect_results(
    settings: Settings, expected: int, evaluations: int, timeout_s: float
) -> DemoResult:
    """Read the admitted, quarantine and evaluation topics until ``expected`` decisions and
    ``evaluations`` distinct (batch, version) evaluation records were seen (or ``timeout_s``
    passes). Duplicates (redelivery after a crash) are kept in ``evaluations``."""
    t = settings.topics
    result = DemoResult()
    consumer = make_consumer(
        settings, reader=True, **{"group.id": f"demo-reader-{uuid.uuid4().hex[:8]}"}
    )
    consumer.subscribe([t.admitted, t.quarantine, t.evaluations])
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and (
            len(result.decisions) < expected
            or len({(e["batch_id"], e["version"]) for e in result.evaluations}) < evaluations
        ):
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            value = msg.value()
            if value is None:
                continue
            h = _headers(msg)
            if msg.topic() == t.evaluations:
                result.evaluations.append(codec.decode_evaluation(value))
                continue
            coord = (int(h["source-partition"]), int(h["source-offset"]))
            if msg.topic() == t.admitted:
                result.decisions[coord] = "admitted"
                result.admitted_headers[coord] = h
            else:
                result.decisions[coord] = "quarantined"
                result.quarantine[coord] = codec.decode_quarantine(value)
    finally:
        consumer.close()
    return result


def publish_demo_contracts(settings: Settings, *, out: TextIO = sys.stdout) -> None:
    """Publish the demo contracts (v1 enforcing, v1.1 observing, nyc v1 enforcing)."""
    for path, mode in contract_files():
        summary = publish_text(publish_contract(settings, path, mode=mode, published_by="demo"))
        print("\n".join(f"  {line}" for line in summary.splitlines()), file=out)


def publish_demo_events(
    settings: Settings, *, out: TextIO = sys.stdout, now: datetime | None = None
) -> list[tuple[DemoEvent, tuple[int, int]]]:
    """Publish the scenario's events; returns each with its ``(partition, offset)``."""
    placed = []
    for event in demo_events(now or datetime.now(timezone.utc)):
        coord = produce_one(settings, settings.topics.batches, event.key, event.value)
        placed.append((event, coord))
        print(
            f"  sent {event.label:<22} {len(event.value) / 1024:8.1f} KiB  {event.description}",
            file=out,
        )
    return placed


def expected_evaluations(
    placed: list[tuple[DemoEvent, tuple[int, int]]], versions_per_layer: dict[str, int]
) -> int:
    """How many evaluation records the events should produce (one per active version)."""
    return sum(versions_per_layer.get(e.key, 0) for e, _ in placed if e.batch_id)


def _print_tables(
    placed: list[tuple[DemoEvent, tuple[int, int]]], result: DemoResult, out: TextIO
) -> None:
    print("\nPer batch", file=out)
    print(f"  {'batch':<22} {'layer':<17} {'decision':<12} why", file=out)
    for event, coord in placed:
        decision = result.decisions.get(coord, "MISSING")
        why = ""
        if decision == "quarantined":
            q = result.quarantine[coord]
            why = "; ".join(
                f"{r['version']} broke {r['clause']} "
                f"({brief(r.get('kind'), r.get('measured'), r['message'])})"
                if r.get("clause")
                # a reason of the whole event (no clause) is all there is to say: more room
                else f"{r['code']}: {brief(None, None, r['message'], limit=200)}"
                for r in q["reasons"]
            )
            if q["diagnoses"]:
                why += f"  [{'; '.join(q['diagnoses'])}]"
        elif decision == "admitted":
            h = result.admitted_headers[coord]
            why = f"passed {h['contract-versions-enforced']}"
            observed = [
                f"{ev['version']} ({ev['mode']}) broke {c['name']} "
                f"({brief(c.get('kind'), c.get('measured'), c.get('message', ''))})"
                for ev in result.evaluations
                if ev["batch_id"] == event.batch_id and ev["mode"] == "observing"
                for c in ev["clauses"]
                if c["result"] == "break"
            ]
            if observed:
                why += "; " + "; ".join(dict.fromkeys(observed))
        print(f"  {event.label:<22} {event.key:<17} {decision:<12} {why}", file=out)
    stats: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    broken_by: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for ev in result.evaluations:
        k = (ev["layer"], ev["version"], ev["mode"])
        stats[k][0] += 1
        stats[k][1] += int(ev["passed"])
        broken_by[k] |= {c["name"] for c in ev["clauses"] if c["result"] == "break"}
    print("\nPer version", file=out)
    print(
        f"  {'layer':<17} {'version':<8} {'mode':<10} {'evaluated':>9} {'passed':>6} "
        f"{'attainment':>10}  clauses that broke",
        file=out,
    )
    for (layer, version, mode), (n, ok) in sorted(stats.items()):
        print(
            f"  {layer:<17} {version:<8} {mode:<10} {n:>9} {ok:>6} {ok / n:>10.1%}  "
            f"{', '.join(sorted(broken_by[(layer, version, mode)])) or '-'}",
            file=out,
        )


class DemoTimedOut(ContractGateError):
    """The demo did not finish within its ``--timeout-s`` (raised by the command's timer)."""


def run_demo(*, timeout_s: float = 90.0, out: TextIO = sys.stdout, serve_s: float = 0.0) -> int:
    """Run the demo end to end; returns 0 when every event got its decision.

    ``timeout_s`` bounds the broker start and the wait for decisions; the command adds a
    timer over the whole run (:class:`DemoTimedOut`). Whatever ends the run (the timer,
    Ctrl-C, an error), the worker thread is stopped before the broker it uses. The worker's
    operator page is served on a free loopback port while the demo runs (its address is
    printed), and ``serve_s`` seconds more after the results.
    """
    started = time.monotonic()

    def remaining_s() -> float:
        return max(1.0, timeout_s - (time.monotonic() - started))

    print("contract-gate demo: real spatial batches through a contract gate on Kafka", file=out)
    broker = start_broker(timeout_s=remaining_s())
    print(f"broker: {broker.kind} at {broker.bootstrap_servers}", file=out)
    prefix = "" if broker.kind != "external" else f"demo-{uuid.uuid4().hex[:6]}."
    settings = Settings(
        bootstrap_servers=broker.bootstrap_servers,
        group_id=f"{prefix}contract-gate-demo",
        topics=Topics().with_prefix(prefix),
        session_timeout_ms=6000,
    )
    stop = threading.Event()
    worker_thread: threading.Thread | None = None
    page = DemoPage(settings, out)
    try:
        print(
            "topics:", ", ".join(f"{k} ({v})" for k, v in create_topics(settings).items()), file=out
        )
        # Contracts first, so the worker's bootstrap sees them; then the worker; then batches.
        print("contracts:", file=out)
        publish_demo_contracts(settings, out=out)
        pipeline = Pipeline(settings, metrics=page.metrics(), on_outcome=page.recent)
        pipeline.start(progress=lambda s: print(f"worker: {s}", file=out))
        page.start(pipeline)
        worker_thread = threading.Thread(target=pipeline.run, args=(stop,), daemon=True)
        worker_thread.start()
        print("batches:", file=out)
        placed = publish_demo_events(settings, out=out)
        per_layer = {
            layer: len(pipeline.registry.active(layer)) for layer in pipeline.registry.layers()
        }
        n_eval = expected_evaluations(placed, per_layer)
        print(
            f"  waiting for {len(placed)} decisions and {n_eval} evaluation records ...", file=out
        )
        result = collect_results(settings, len(placed), n_eval, remaining_s())
        _print_tables(placed, result, out)
        missing = [e.label for e, c in placed if c not in result.decisions]
        elapsed = time.monotonic() - started
        if missing:
            print(f"\nno decision within the timeout for: {', '.join(missing)}", file=out)
            return 1
        print(
            f"\ndemo finished in {elapsed:.1f} s: {len(placed)} events, every one decided", file=out
        )
        linger(page, serve_s, out)
        return 0
    finally:
        try:
            page.close()
            stop.set()  # the worker first, while its broker still answers
            if worker_thread is not None:
                worker_thread.join(timeout=STOP_WORKER_S)
        finally:
            broker.stop(STOP_BROKER_S)
