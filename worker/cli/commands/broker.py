"""``contract-gate broker``: the embedded Tansu broker in the foreground, for development.

Starts the broker of the ``embedded`` extra (:class:`worker.kafka.embedded.EmbeddedBroker`)
on a given or free port, prints the ``export KAFKA_BOOTSTRAP_SERVERS=...`` line the other
commands need, creates the six topics on request, and stops the broker process (by its
own id) on Ctrl-C or SIGTERM. Storage is in memory unless ``--storage`` names one of
Tansu's durable engines (S3 or PostgreSQL), whose data survive a restart.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from worker.cli.args import EXIT_BAD_INPUT, positive_int

__all__ = ["register", "run"]


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (0..65535; 0 = a free one)")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``broker`` and its arguments."""
    p = sub.add_parser(
        "broker",
        help="run the embedded Kafka-compatible broker (Tansu) in the foreground, for development",
        description=(
            "Start the embedded Tansu broker (extra `embedded`) and keep it in the foreground "
            "until Ctrl-C or SIGTERM. Prints the `export KAFKA_BOOTSTRAP_SERVERS=...` line "
            "for the other commands. Not for production: use a Kafka cluster there."
        ),
    )
    p.add_argument(
        "--port", type=_port, default=0, help="TCP port to listen on (default 0: a free one)"
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on and advertise (default 127.0.0.1, loopback only)",
    )
    p.add_argument(
        "--storage",
        default="memory://tansu/",
        metavar="URL",
        help="Tansu storage engine: memory://tansu/ (default; lost on stop), s3://BUCKET/ "
        "(AWS_* environment, AWS_ENDPOINT for a local S3-compatible server) or "
        "postgres://USER:PASSWORD@HOST/DB; both of those survive a restart",
    )
    p.add_argument(
        "--create-topics",
        action="store_true",
        help="create the six gate topics once the broker answers (as `topics create`)",
    )
    p.add_argument(
        "--partitions",
        type=positive_int,
        default=3,
        help="partitions of the data topics with --create-topics (default 3)",
    )
    # Ctrl-C is this command's normal stop (exit 0 after "broker stopped"), not an interrupt
    p.set_defaults(handler=run, stops_on_sigint=True)


def run(args: argparse.Namespace) -> int:
    """Run the broker until a signal; 0 after a clean stop, 2 when the broker died."""
    from worker.kafka.admin import create_topics
    from worker.kafka.embedded import EmbeddedBroker, redact_url
    from worker.kafka.settings import Settings

    stop = threading.Event()

    def _abort(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # while starting: start() stops the process

    signal.signal(signal.SIGTERM, _abort)
    signal.signal(signal.SIGINT, _abort)
    broker = EmbeddedBroker(port=args.port, host=args.host, storage_engine=args.storage)
    broker.start()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        assert broker.process is not None
        print(
            f"Tansu broker pid {broker.process.pid} listening on {broker.bootstrap_servers}, "
            f"storage {redact_url(args.storage)}, log {broker.log_path}",
            file=sys.stderr,
        )
        if args.create_topics:
            settings = Settings(bootstrap_servers=broker.bootstrap_servers)
            for name, outcome in create_topics(settings, partitions=args.partitions).items():
                print(f"{name}: {outcome}", file=sys.stderr)
        print(f"export KAFKA_BOOTSTRAP_SERVERS={broker.bootstrap_servers}", flush=True)
        print("broker running; Ctrl-C or SIGTERM stops it", file=sys.stderr, flush=True)
        while not stop.wait(0.5):
            code = broker.process.poll()
            if code is not None:
                print(
                    f"contract-gate broker: error: the broker exited with code {code}; "
                    f"last lines of {broker.log_path}: {broker.log_tail()}",
                    file=sys.stderr,
                )
                return EXIT_BAD_INPUT
    finally:
        broker.stop()
    print("broker stopped", file=sys.stderr)
    return 0
