"""``contract-gate run``: the worker, a member of the consumer group on the batches topic.

Builds the pipeline (:mod:`worker.gate`) from the flags and the environment, serves
/healthz, /readyz, /metrics, /status and the operator page (/), and routes every batch
until SIGTERM or Ctrl-C; a SIGTERM not honoured within ``--stop-grace-s`` ends the process
with status 143, a stuck client call with 75. Ctrl-C (SIGINT) is an interactive stop: the
same clean stop, but bounded by :data:`worker.cli.interrupt.INTERRUPT_GRACE_S`, then the
line ``interrupted`` and status 130.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any

from worker.cli.args import add_kafka_args, bounded_int, positive_seconds, settings_from_args
from worker.cli.payload_args import add_eval_threads, add_payload_args
from worker.cli.signing_args import add_signing_args
from worker.gate.config import MAX_BATCH_WAIT_MS, GateConfig

__all__ = ["register", "run"]

#: The defaults of ``run``'s tuning flags.
GATE = GateConfig()


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``run`` and its arguments."""
    p = sub.add_parser(
        "run",
        help="run the worker (consumer group member)",
        description="Join the consumer group on the batches topic and route every batch.",
    )
    add_kafka_args(p)
    add_payload_args(p)
    add_signing_args(p, sign=False)
    p.add_argument(
        "--max-batch-events",
        type=bounded_int(1, 1_000_000),
        default=GATE.max_batch_events,
        help=f"events per transaction, 1..1000000 (default {GATE.max_batch_events})",
    )
    p.add_argument(
        "--max-batch-wait-ms",
        type=bounded_int(0, MAX_BATCH_WAIT_MS),
        default=GATE.max_batch_wait_ms,
        help="longest wait for a poll batch (one transaction) to fill, ms: the events "
        "already fetched are taken at once, and more are awaited only while the batch "
        f"holds under {GATE.ready_bytes // 2**20} MiB; 0..{MAX_BATCH_WAIT_MS} (default "
        f"{GATE.max_batch_wait_ms}). An idle worker waits for events whatever the value, "
        "and contract changes are applied between poll batches",
    )
    p.add_argument(
        "--routing-threads",
        type=bounded_int(1, 8),
        default=GATE.routing_threads,
        help="events routed at once, 1..8: events of "
        f"{GATE.min_ahead_bytes // 1024} KiB or more are routed on this "
        "many threads while GEOS releases the GIL (a second core helps large events); "
        "smaller events and 1 route on the poll loop's thread alone "
        f"(default {GATE.routing_threads})",
    )
    add_eval_threads(p)
    p.add_argument(
        "--chained-batches",
        type=bounded_int(1, 64),
        default=GATE.chained_batches,
        help="poll batches routed back to back, 1..64: once a full batch is routed (the "
        "worker is behind), the events already fetched are taken as the next one and the "
        "batch's last transaction commits while that one is routed (never polling while a "
        "transaction is in flight); 1 commits each batch before the next poll "
        f"(default {GATE.chained_batches})",
    )
    p.add_argument(
        "--batch-deadline-s",
        type=positive_seconds,
        default=GATE.batch_deadline_s,
        help="processing deadline of one poll batch, seconds: once passed, the events "
        "decided so far are committed and the rest consumed again in the next poll (at "
        "least one event is decided per poll); keep it well below max.poll.interval.ms "
        f"(default {GATE.batch_deadline_s:.0f})",
    )
    p.add_argument(
        "--config-timeout-s",
        type=positive_seconds,
        default=GATE.config_timeout_s,
        help=f"deadline of the config bootstrap (default {GATE.config_timeout_s:.0f})",
    )
    p.add_argument(
        "--stop-grace-s",
        type=positive_seconds,
        default=GATE.stop_grace_s,
        help="after SIGTERM, seconds to finish the open transaction and leave the "
        "group before the process exits anyway with status 143 (default 30; keep it below "
        "the pod's terminationGracePeriodSeconds). Ctrl-C stops the same way within 1.5 s, "
        "then prints `interrupted` and exits 130",
    )
    p.add_argument(
        "--http-port",
        type=bounded_int(0, 65535),
        default=None,
        help="port of /healthz, /readyz, /metrics, /status and the operator page / "
        "(env CONTRACT_GATE_HTTP_PORT; default 8080; 0 disables the server)",
    )
    p.add_argument(
        "--http-host",
        default="0.0.0.0",
        help="address the HTTP server binds (default 0.0.0.0)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the worker until a stop signal; returns 0 after a clean stop."""
    from worker.gate.processor import Processor
    from worker.kafka.redaction import describe_settings
    from worker.ops.decision_log import DecisionLog
    from worker.ops.http import start_http_server
    from worker.ops.metrics import GateMetrics, configure_sdk
    from worker.ops.migration_exporter import MigrationExporter
    from worker.ops.operator import OverviewSource, RecentQuarantines, fan_out

    settings = settings_from_args(args)
    provider = configure_sdk()
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        if signum == signal.SIGINT and getattr(args, "interrupts", None) is not None:
            args.interrupts.mark()  # Ctrl-C: `interrupted`, status 130, within 2 s
        if stop.is_set():
            return
        stop.set()
        # a loop stuck in a blocking client call must not outlive the pod's grace period
        timer = threading.Timer(
            args.stop_grace_s,
            _force_exit,
            (f"did not stop within {args.stop_grace_s:.0f} s of the signal", 143),
        )
        timer.daemon = True
        timer.start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    threads = (
        f"routing threads {args.routing_threads} "
        f"(events of {GATE.min_ahead_bytes // 1024} KiB or more)"
        if args.routing_threads > 1
        else "routing on the poll loop's thread"
    )
    print(f"contract-gate worker: {describe_settings(settings)}; {threads}", file=sys.stderr)
    decisions = DecisionLog()  # the last decisions and counts shown on /status
    config = GateConfig(
        max_batch_events=args.max_batch_events,
        max_batch_wait_ms=args.max_batch_wait_ms,
        batch_deadline_s=args.batch_deadline_s,
        config_timeout_s=args.config_timeout_s,
        routing_threads=args.routing_threads,
        chained_batches=args.chained_batches,
        eval_threads=args.eval_threads,
        stop_grace_s=args.stop_grace_s,
    )
    recent = RecentQuarantines()  # the operator page's last quarantined batches, rates
    pipeline = Processor(
        config, settings, metrics=GateMetrics(), on_outcome=fan_out(decisions, recent)
    )
    http = start_http_server(pipeline, settings, args.http_port, args.http_host, decisions)
    exporter = MigrationExporter(settings, pipeline.registry)  # unattributed groups, counts
    if http is not None:
        http.migration = lambda: exporter.view  # migration counts on /status
        http.operator = OverviewSource(pipeline, recent, lambda: exporter.view)
        print(f"operator page: http://{_page_host(args.http_host)}:{http.port}/", file=sys.stderr)
    try:
        pipeline.start(progress=lambda s: print(s, file=sys.stderr))
        exporter.start()
        print("worker running; SIGTERM or Ctrl-C stops it", file=sys.stderr)
        pipeline.run(stop, on_stuck=lambda message: _force_exit(message, 75))
    finally:
        exporter.stop()
        pipeline.close()  # also when start() failed; a no-op after run()
        if http is not None:
            http.close()
    provider.shutdown()
    print(
        f"worker stopped after {pipeline.batches_committed} events "
        f"({pipeline.transactions_aborted} transactions aborted)",
        file=sys.stderr,
    )
    return 0


def _page_host(host: str) -> str:
    """The host to print in the page's address: a wildcard bind is reached on localhost."""
    return "localhost" if host in ("0.0.0.0", "::", "") else host


def _force_exit(message: str, status: int) -> None:
    """End the process now (the worker is stuck): status 75 for a stuck client call,
    143 for a stop signal not honoured in time. Nothing is lost: the open transaction is
    aborted by the broker or fenced by the restarted worker, and the batch is consumed
    again from the committed offsets."""
    print(f"contract-gate worker: {message}; exiting with status {status}", file=sys.stderr)
    sys.stderr.flush()
    os._exit(status)
