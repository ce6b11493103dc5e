"""The ``contract-gate`` command line (also ``python -m worker``).

Commands: ``check`` (offline), ``run`` (the worker), ``topics create``,
``contract publish``, ``batch publish``, ``demo``. Every command that talks to Kafka takes
the same connection settings (flags or environment; secrets are never printed). Errors
of this package are reported as one line on stderr with exit code 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from confluent_kafka import KafkaException

from worker.consumers_cli import add_consumers_args, add_retire_args, cmd_consumers, cmd_retire
from worker.errors import ContractGateError
from worker.kafka import Settings, Topics
from worker.lifecycle_cli import LIFECYCLE_COMMANDS, add_lifecycle_args
from worker.quarantine_cli import add_quarantine_args, cmd_quarantine
from worker.verify import add_verify_args, cmd_verify

__all__ = ["build_parser", "main"]

EXIT_ADMITTED, EXIT_QUARANTINED, EXIT_BAD_INPUT = 0, 1, 2
EXIT_BROKEN_PIPE = 128 + 13  # as a shell reports a process ended by SIGPIPE


def _parse_time(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 date-time; use e.g. 2026-11-29T06:00:00+00:00"
        ) from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} has no UTC offset; add one, e.g. {text}+00:00 or {text}Z"
        )
    return value.astimezone(timezone.utc)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return value


def _kv(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE (e.g. security.protocol=SSL)")
    k, v = text.split("=", 1)
    return k.strip(), v


def _add_kafka_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Kafka connection (flags override the environment)")
    g.add_argument(
        "--bootstrap-servers",
        help="host:port list (env KAFKA_BOOTSTRAP_SERVERS; default localhost:9092)",
    )
    g.add_argument(
        "--group-id",
        help="consumer group of the workers (env CONTRACT_GATE_GROUP_ID; default contract-gate)",
    )
    g.add_argument(
        "--transactional-id-prefix", help="prefix of transactional.id (default contract-gate)"
    )
    g.add_argument(
        "--instance-id",
        help="stable id of this worker instance, e.g. the pod name (default host-pid)",
    )
    g.add_argument(
        "--session-timeout-ms", type=int, help="consumer session.timeout.ms (default 45000)"
    )
    g.add_argument(
        "--kafka-property",
        action="append",
        type=_kv,
        default=[],
        metavar="KEY=VALUE",
        help="any librdkafka property for every client, repeatable (env CONTRACT_GATE_KAFKA_<KEY>)",
    )
    d = Topics()
    for field_name, default in d.__dict__.items():
        g.add_argument(
            f"--{field_name}-topic",
            dest=f"topic_{field_name}",
            default=default,
            help=f"(default {default})",
        )


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Settings from the environment, overridden by the flags that were given."""
    topics = Topics(**{k: getattr(args, f"topic_{k}") for k in Topics().__dict__})
    return Settings.from_env(
        bootstrap_servers=args.bootstrap_servers,
        group_id=args.group_id,
        transactional_id_prefix=args.transactional_id_prefix,
        instance_id=args.instance_id,
        session_timeout_ms=args.session_timeout_ms,
        extra=dict(args.kafka_property),
        topics=topics,
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="contract-gate",
        description=(
            "Guard spatial data layers with versioned data contracts: evaluate batches "
            "against every active contract version, admit or quarantine them."
        ),
    )
    parser.add_argument(
        "--log-level",
        default=None,
        help="DEBUG, INFO, WARNING, ERROR (default WARNING; for `run` the worker's own "
        "operational lines, e.g. applied config changes, are shown at INFO)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "check",
        help="evaluate a GeoJSON or GeoParquet file offline against contract files",
        description=(
            "Evaluate a batch file against contract versions without Kafka. Exit 0 when "
            "admitted, 1 when quarantined, 2 on bad input."
        ),
    )
    p.add_argument(
        "batch", help="GeoJSON FeatureCollection (.geojson/.json) or GeoParquet (.parquet)"
    )
    p.add_argument(
        "--contract",
        action="append",
        default=[],
        metavar="FILE",
        help="an enforcing version (repeatable)",
    )
    p.add_argument(
        "--observing",
        action="append",
        default=[],
        metavar="FILE",
        help="an observing version (repeatable)",
    )
    p.add_argument("--crs", help="declared CRS, overriding the file's (GeoJSON default OGC:CRS84)")
    p.add_argument(
        "--axis-order",
        choices=["east_north", "north_east"],
        help="declared axis order (default east_north)",
    )
    p.add_argument(
        "--data-time",
        type=_parse_time,
        help="batch data time, ISO 8601 with offset (default: file mtime)",
    )
    p.add_argument(
        "--now", type=_parse_time, help="evaluation time (default: now), for reproducible checks"
    )
    p.add_argument("--format", choices=["text", "json"], default="text")

    p = sub.add_parser(
        "run",
        help="run the worker (consumer group member)",
        description="Join the consumer group on the batches topic and route every batch.",
    )
    _add_kafka_args(p)
    p.add_argument(
        "--max-batch-events", type=int, default=500, help="events per transaction (default 500)"
    )
    p.add_argument(
        "--max-batch-wait-ms", type=int, default=100, help="poll wait per transaction (default 100)"
    )
    p.add_argument(
        "--config-timeout-s",
        type=float,
        default=60.0,
        help="deadline of the config bootstrap (default 60)",
    )
    p.add_argument(
        "--http-port",
        type=int,
        default=None,
        help="port of /healthz, /readyz, /metrics, /status "
        "(env CONTRACT_GATE_HTTP_PORT; default 8080; 0 disables the server)",
    )
    p.add_argument(
        "--http-host",
        default="0.0.0.0",
        help="address the HTTP server binds (default 0.0.0.0)",
    )

    p = sub.add_parser("topics", help="manage the gate's topics")
    tsub = p.add_subparsers(dest="topics_command", required=True, metavar="ACTION")
    tp = tsub.add_parser(
        "create", help="create the six topics (config and consumers topics compacted)"
    )
    _add_kafka_args(tp)
    tp.add_argument(
        "--partitions",
        type=_positive_int,
        default=3,
        help="partitions of the data topics (default 3)",
    )
    tp.add_argument(
        "--replication-factor",
        type=_positive_int,
        default=1,
        help="replicas per partition (default 1; use 3 on a production cluster)",
    )

    p = sub.add_parser("contract", help="publish contract versions")
    csub = p.add_subparsers(dest="contract_command", required=True, metavar="ACTION")
    cp = csub.add_parser("publish", help="publish a contract version to the config topic")
    _add_kafka_args(cp)
    cp.add_argument("file", help="contract YAML file")
    cp.add_argument("--mode", choices=["enforcing", "observing"], default="enforcing")
    cp.add_argument("--published-by", default=None, help="publisher name (default: $USER)")
    cp.add_argument(
        "--dry-run", action="store_true", help="classify and apply the policy, write nothing"
    )
    add_lifecycle_args(csub, _add_kafka_args)
    add_retire_args(csub, _add_kafka_args)
    add_consumers_args(sub, _add_kafka_args)
    add_quarantine_args(sub, _add_kafka_args)
    add_verify_args(sub, _add_kafka_args)

    p = sub.add_parser("batch", help="publish batch-arrival events")
    bsub = p.add_subparsers(dest="batch_command", required=True, metavar="ACTION")
    bp = bsub.add_parser(
        "publish", help="publish a GeoJSON/GeoParquet file as a batch-arrival event"
    )
    _add_kafka_args(bp)
    bp.add_argument("file", help="GeoJSON FeatureCollection or GeoParquet file")
    bp.add_argument("--layer", required=True, help="layer the batch belongs to (the record key)")
    bp.add_argument(
        "--crs",
        help="declared CRS, e.g. EPSG:2263 (default: the file's; GeoJSON is OGC:CRS84)",
    )
    bp.add_argument(
        "--axis-order",
        choices=["east_north", "north_east"],
        help="how x/y are stored (default east_north: x is longitude/easting)",
    )
    bp.add_argument(
        "--data-time",
        type=_parse_time,
        help="time the data describes, ISO 8601 with offset; freshness is measured from it "
        "(default: the file's modification time)",
    )
    bp.add_argument("--batch-id", help="batch identifier (default: a new UUID)")
    bp.add_argument(
        "--producer", default="contract-gate-cli", help="producer name (default contract-gate-cli)"
    )
    bp.add_argument(
        "--by-reference",
        action="store_true",
        help="send payload_uri (a file:// URI of the file's absolute path; the workers must "
        "be able to read it) instead of inline features",
    )

    p = sub.add_parser(
        "demo",
        help="run the demo on real data with an embedded broker",
        description="Start a broker (KAFKA_BOOTSTRAP_SERVERS, Docker, or embedded "
        "Tansu), publish contracts and real batches, run the worker, print the results.",
    )
    p.add_argument(
        "--timeout-s", type=float, default=90.0, help="give up after this long (default 90)"
    )
    return parser


def _cmd_check(args: argparse.Namespace) -> int:
    from worker.contracts import load_contract
    from worker.evaluate import evaluate
    from worker.features import read_batch_file
    from worker.model import ActiveVersion
    from worker.report import decision_to_json, render_decision

    if not args.contract and not args.observing:
        raise ContractGateError("give at least one --contract FILE (or --observing FILE)")
    if args.crs:
        from worker.spatial import resolve_crs

        resolve_crs(args.crs)  # a --crs that does not resolve is bad input (exit 2)
    versions = [ActiveVersion(load_contract(f), "enforcing") for f in args.contract]
    versions += [ActiveVersion(load_contract(f), "observing") for f in args.observing]
    keys = [v.contract.key for v in versions]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise ContractGateError(
            f"{', '.join(twice)} given more than once; pass each version once (a version is "
            "one document: two files with the same layer/version are an edit in place)"
        )
    layers = {v.contract.layer for v in versions}
    if len(layers) > 1:
        raise ContractGateError(
            f"contracts are for different layers {sorted(layers)}; check one layer at a time"
        )
    batch = read_batch_file(
        args.batch,
        layer=layers.pop(),
        crs=args.crs,
        axis_order=args.axis_order,
        data_time=args.data_time,
    )
    decision = evaluate(batch, versions, now=args.now or datetime.now(timezone.utc))
    if args.format == "json":
        print(json.dumps(decision_to_json(decision), indent=2, default=str))
    else:
        print(
            render_decision(
                decision, title=f"batch {args.batch}: {len(batch.geometries_wkb)} features"
            )
        )
    return EXIT_ADMITTED if decision.admitted else EXIT_QUARANTINED


def _cmd_run(args: argparse.Namespace) -> int:
    from worker.consumers import MigrationExporter
    from worker.http import DecisionLog, start_http_server
    from worker.kafka import describe_settings
    from worker.metrics import GateMetrics, configure_sdk
    from worker.pipeline import Pipeline

    settings = settings_from_args(args)
    provider = configure_sdk()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"contract-gate worker: {describe_settings(settings)}", file=sys.stderr)
    decisions = DecisionLog()  # the last decisions and counts shown on /status
    pipeline = Pipeline(
        settings,
        metrics=GateMetrics(),
        max_batch_events=args.max_batch_events,
        max_batch_wait_ms=args.max_batch_wait_ms,
        config_timeout_s=args.config_timeout_s,
        on_outcome=decisions,
    )
    http = start_http_server(pipeline, settings, args.http_port, args.http_host, decisions)
    exporter = MigrationExporter(settings, pipeline.registry)  # unattributed groups, counts
    if http is not None:
        http.migration = lambda: exporter.view  # migration counts on /status
    try:
        pipeline.start(progress=lambda s: print(s, file=sys.stderr))
        exporter.start()
        print("worker running; SIGTERM or Ctrl-C stops it", file=sys.stderr)
        pipeline.run(stop)
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


def _cmd_topics(args: argparse.Namespace) -> int:
    from worker.kafka import create_topics

    settings = settings_from_args(args)
    for name, outcome in create_topics(
        settings, partitions=args.partitions, replication_factor=args.replication_factor
    ).items():
        print(f"{name}: {outcome}")
    return 0


def _cmd_contract(args: argparse.Namespace) -> int:
    from worker.publish import publish_contract

    if args.contract_command in LIFECYCLE_COMMANDS:
        return int(LIFECYCLE_COMMANDS[args.contract_command](args))
    if args.contract_command == "retire":
        return cmd_retire(args)

    settings = settings_from_args(args)
    print(
        publish_contract(
            settings,
            args.file,
            mode=args.mode,
            published_by=args.published_by,
            dry_run=args.dry_run,
        )
    )
    return 0


def _cmd_batch(args: argparse.Namespace) -> int:
    from worker.publish import publish_batch_file

    settings = settings_from_args(args)
    print(
        publish_batch_file(
            settings,
            args.file,
            layer=args.layer,
            crs=args.crs,
            axis_order=args.axis_order,
            data_time=args.data_time,
            batch_id=args.batch_id,
            producer=args.producer,
            by_reference=args.by_reference,
        )
    )
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from worker.demo import run_demo

    def _terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds run_demo's finally: the broker is stopped

    signal.signal(signal.SIGTERM, _terminate)
    return run_demo(timeout_s=args.timeout_s)


COMMANDS: dict[str, Any] = {
    "check": _cmd_check,
    "run": _cmd_run,
    "topics": _cmd_topics,
    "contract": _cmd_contract,
    "batch": _cmd_batch,
    "demo": _cmd_demo,
    "consumers": cmd_consumers,
    "quarantine": cmd_quarantine,
    "verify": cmd_verify,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``contract-gate``; returns the process exit code."""
    args = build_parser().parse_args(argv)
    level = (args.log_level or "WARNING").upper()
    logging.getLogger("librdkafka").setLevel(
        logging.DEBUG if level == "DEBUG" else logging.CRITICAL
    )
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.log_level is None and args.command == "run":
        logging.getLogger("worker").setLevel(logging.INFO)  # the worker's operational lines
    try:
        return int(COMMANDS[args.command](args))
    except ContractGateError as exc:
        print(f"contract-gate {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KafkaException as exc:  # e.g. an unknown --kafka-property, translated at the edge
        err = exc.args[0] if exc.args else exc
        text = err.str() if hasattr(err, "str") else str(err)
        print(
            f"contract-gate {args.command}: Kafka error: {text}; check --bootstrap-servers, "
            "--kafka-property and CONTRACT_GATE_KAFKA_* settings",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # the reader of our output went away (e.g. `| head`): stop quietly, as a shell tool
        # would; point stdout at /dev/null so the interpreter's final flush cannot fail
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
