"""The ``contract-gate`` command line (also ``python -m worker``).

Commands: ``check`` (offline), ``run`` (the worker), ``topics create``,
``contract publish``, ``batch publish``, ``demo``. Every command that talks to Kafka takes
the same connection settings (flags or environment; secrets are never printed). Errors
of this package are reported as one line on stderr with exit code 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from worker import __version__
from worker.cli.args import (
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    add_kafka_args,
    add_payload_args,
    bounded_int,
    parse_time,
    positive_int,
    positive_seconds,
)
from worker.cli.commands.broker import add_broker_args, cmd_broker
from worker.cli.commands.check import (
    cmd_batch,
    cmd_check,
    cmd_contract,
    cmd_demo,
    cmd_run,
    cmd_topics,
)
from worker.cli.commands.consumers import add_consumers_args, add_retire_args, cmd_consumers
from worker.cli.commands.contract.lifecycle import add_lifecycle_args
from worker.cli.commands.quarantine import add_quarantine_args, cmd_quarantine
from worker.cli.commands.verify import add_verify_args, cmd_verify
from worker.core.errors import BrokerError, ContractGateError
from worker.gate.config import GateConfig
from worker.gate.poll import MAX_BATCH_WAIT_MS
from worker.kafka.clients import map_kafka_errors

__all__ = ["build_parser", "main"]

#: The defaults of ``run``'s tuning flags.
GATE = GateConfig()


class GateParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line: what is wrong and where the help is
    (argparse's default prints the whole usage block first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Any = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """As argparse's, but arguments this parser does not know are an error here, so
        ``contract-gate check --bogus`` points to ``contract-gate check --help`` (argparse
        hands them up to the top-level parser, whose message names the top-level help)."""
        known, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return known, extras


_LOG_LEVEL_HELP = (
    "DEBUG, INFO, WARNING, ERROR (default WARNING; for `run` the worker's own "
    "operational lines, e.g. applied config changes and one line per poll batch, are "
    "shown at INFO); accepted before or after the command"
)


#: The levels ``--log-level`` takes (any case).
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _log_level(text: str) -> str:
    """``--log-level``'s value, upper-cased; argparse turns the error into exit 2 with a
    one-line message (a bad level was a ValueError traceback and exit 1, a fresh-user
    finding: for ``check``, 1 means quarantined)."""
    level = text.upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a log level; use one of {', '.join(LOG_LEVELS)}"
        )
    return level


def _layer_name(text: str) -> str:
    """``--layer`` of ``batch publish``: a name a contract can carry, else exit 2 (a batch
    of layer "bad layer/../x" was published though no contract can govern it: a
    fresh-user finding)."""
    from worker.core.contracts.schema import layer_name_pattern

    if not layer_name_pattern().search(text):
        raise argparse.ArgumentTypeError(
            f"{text[:200]!r} is not a layer name: use letters, digits, '.', '_' and '-' (at "
            "most 200), as a contract's layer"
        )
    return text


def _log_level_everywhere(parser: argparse.ArgumentParser) -> None:
    """Accept ``--log-level`` after the command too (``contract-gate run --log-level
    DEBUG``): every subcommand parser gets it, defaulting to what was given before."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                if not any("--log-level" in a.option_strings for a in sub._actions):
                    sub.add_argument(
                        "--log-level",
                        default=argparse.SUPPRESS,
                        type=_log_level,
                        help=_LOG_LEVEL_HELP,
                    )
                _log_level_everywhere(sub)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = GateParser(
        prog="contract-gate",
        description=(
            "Guard spatial data layers with versioned data contracts: evaluate batches "
            "against every active contract version, admit or quarantine them."
        ),
    )
    parser.add_argument("--log-level", default=None, type=_log_level, help=_LOG_LEVEL_HELP)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "check",
        help="evaluate a GeoJSON or GeoParquet file offline against contract files",
        description=(
            "Evaluate a batch file against contract versions without Kafka. A GeoParquet "
            "file is evaluated chunk by chunk as the worker evaluates a by-reference payload "
            "(memory bounded by a chunk, not the file), unless --offenders or --html need "
            "every geometry; other formats are read whole. Exit 0 when admitted, 1 when "
            "quarantined, 2 on bad input."
        ),
    )
    p.add_argument(
        "batch",
        help="GeoJSON FeatureCollection or GeoParquet file: a path, file:// or s3:// URI (S3 "
        "through the standard AWS environment); with the formats extra also a local "
        "Shapefile (.shp, or a .zip holding one), GeoPackage or FlatGeobuf",
    )
    add_payload_args(p, roots=False)
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
        type=parse_time,
        help="batch data time, ISO 8601 with offset (default: file mtime)",
    )
    p.add_argument(
        "--now", type=parse_time, help="evaluation time (default: now), for reproducible checks"
    )
    p.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="text: every verdict in words (default); json: one document with every clause's "
        "result, measured and expected values, and the offending features",
    )
    p.add_argument(
        "--id-column",
        metavar="COLUMN",
        help="attribute column whose values name features in the offending-feature lists "
        "(default: the contract's id_column, else the GeoJSON id member, else the row index)",
    )
    p.add_argument(
        "--offenders",
        metavar="FILE",
        help="write the offending features as a GeoJSON FeatureCollection (the broken "
        "clauses as properties; open it in QGIS); the batch file is then read whole (a "
        "GeoParquet file is otherwise evaluated one row group chunk at a time, in bounded "
        "memory)",
    )
    p.add_argument(
        "--html",
        metavar="FILE",
        help="write one self-contained HTML page: a map of the batch in the contract CRS "
        "with the offending features by clause, the verdicts in words, the offenders table; "
        "the batch file is then read whole, as with --offenders",
    )

    p = sub.add_parser(
        "run",
        help="run the worker (consumer group member)",
        description="Join the consumer group on the batches topic and route every batch.",
    )
    add_kafka_args(p)
    add_payload_args(p)
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
        help="after SIGTERM or Ctrl-C, seconds to finish the open transaction and leave the "
        "group before the process exits anyway with status 143 (default 30; keep it below "
        "the pod's terminationGracePeriodSeconds)",
    )
    p.add_argument(
        "--http-port",
        type=bounded_int(0, 65535),
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
        "create",
        help="create the six topics (config and consumers topics compacted) and the "
        "per-major admitted topics of layers with read_paths: per_major (from the config topic)",
    )
    add_kafka_args(tp)
    tp.add_argument(
        "--partitions",
        type=positive_int,
        default=3,
        help="partitions of the data topics (default 3)",
    )
    tp.add_argument(
        "--replication-factor",
        type=positive_int,
        default=1,
        help="replicas per partition (default 1; use 3 on a production cluster)",
    )

    p = sub.add_parser(
        "contract",
        help="contract versions: publish, classify, review, evidence, promote, list, retire",
    )
    csub = p.add_subparsers(dest="contract_command", required=True, metavar="ACTION")
    cp = csub.add_parser("publish", help="publish a contract version to the config topic")
    add_kafka_args(cp)
    cp.add_argument("file", help="contract YAML file")
    cp.add_argument(
        "--mode",
        choices=["enforcing", "observing"],
        default=None,
        help="default: the document's `mode`, else enforcing",
    )
    cp.add_argument("--published-by", default=None, help="publisher name (default: $USER)")
    cp.add_argument(
        "--dry-run", action="store_true", help="classify and apply the policy, write nothing"
    )
    add_lifecycle_args(csub, add_kafka_args)
    add_retire_args(csub, add_kafka_args)
    add_consumers_args(sub, add_kafka_args)
    add_quarantine_args(sub, add_kafka_args)
    add_verify_args(sub, add_kafka_args)
    add_broker_args(sub)

    p = sub.add_parser("batch", help="publish batch-arrival events")
    bsub = p.add_subparsers(dest="batch_command", required=True, metavar="ACTION")
    bp = bsub.add_parser(
        "publish", help="publish a GeoJSON/GeoParquet file as a batch-arrival event"
    )
    add_kafka_args(bp)
    bp.add_argument(
        "file",
        help="GeoJSON FeatureCollection or GeoParquet file (with the formats extra also "
        "Shapefile, GeoPackage, FlatGeobuf)",
    )
    bp.add_argument(
        "--layer",
        required=True,
        type=_layer_name,
        help="layer the batch belongs to (the record key): letters, digits, '.', '_' and '-', "
        "as a contract's layer",
    )
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
        type=parse_time,
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
        help="send payload_uri (a file:// URI of the file's absolute path, or FILE itself "
        "when it is a file:// or s3:// URI; it must lie under the workers' --payload-root) "
        "instead of inline features",
    )
    bp.add_argument(
        "--upload",
        metavar="URI",
        help="copy FILE to s3://bucket/prefix/ (or file:///dir/) as <batch id>/<file name> "
        "first and announce that copy (implies --by-reference)",
    )
    add_payload_args(bp, roots=False)

    p = sub.add_parser(
        "demo",
        help="run the demo on real data with an embedded broker",
        description="Start a broker (KAFKA_BOOTSTRAP_SERVERS, Docker, or embedded "
        "Tansu), publish contracts and real batches, run the worker, print the results.",
    )
    p.add_argument(
        "--timeout-s", type=float, default=90.0, help="give up after this long (default 90)"
    )
    _log_level_everywhere(parser)
    return parser


COMMANDS: dict[str, Any] = {
    "check": cmd_check,
    "run": cmd_run,
    "topics": cmd_topics,
    "contract": cmd_contract,
    "batch": cmd_batch,
    "demo": cmd_demo,
    "consumers": cmd_consumers,
    "quarantine": cmd_quarantine,
    "verify": cmd_verify,
    "broker": cmd_broker,
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
        with map_kafka_errors():  # a client error nothing below gave context to
            return int(COMMANDS[args.command](args))
    except BrokerError as exc:
        if exc.detail is not None and str(exc) == exc.detail:  # librdkafka's text alone
            # e.g. an unknown --kafka-property refused when a client is built
            print(
                f"contract-gate {args.command}: Kafka error: {exc}; check --bootstrap-servers, "
                "--kafka-property and CONTRACT_GATE_KAFKA_* settings",
                file=sys.stderr,
            )
        else:
            print(f"contract-gate {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ContractGateError as exc:
        print(f"contract-gate {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # the reader of our output went away (e.g. `| head`): stop quietly, as a shell tool
        # would; point stdout at /dev/null so the interpreter's final flush cannot fail
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
