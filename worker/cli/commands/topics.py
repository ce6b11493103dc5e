"""``contract-gate topics create``: the gate's six topics and the per-major admitted topics.

Exit 1 when an existing config or consumers topic is not compacted (its records would be
deleted after retention.ms), else 0.
"""

from __future__ import annotations

import argparse

from worker.cli.args import add_kafka_args, positive_int, settings_from_args

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``topics`` and its action ``create``."""
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
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Create the topics and print each one's outcome; 1 when one is not compacted."""
    from worker.kafka.admin import NOT_COMPACTED, create_topics

    settings = settings_from_args(args)
    uncompacted = 0
    for name, outcome in create_topics(
        settings, partitions=args.partitions, replication_factor=args.replication_factor
    ).items():
        print(f"{name}: {outcome}")
        uncompacted += NOT_COMPACTED in outcome
    from worker.control.read_paths import create_per_major_topics

    for name, outcome in create_per_major_topics(
        settings, partitions=args.partitions, replication_factor=args.replication_factor
    ).items():
        print(f"{name}: {outcome} (per-major read path)")
    return 1 if uncompacted else 0
