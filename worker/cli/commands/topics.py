"""``contract-gate topics create``: the gate's six topics and the per-major admitted topics.

Exit 1 when an existing config or consumers topic is not compacted (its records would be
deleted after retention.ms), else 0.
"""

from __future__ import annotations

import argparse
from typing import Any

from worker.cli.args import add_kafka_args, positive_int, settings_from_args
from worker.cli.output import add_format, print_json, wants_json

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``topics`` and its action ``create``."""
    p = sub.add_parser("topics", help="manage the gate's topics")
    tsub = p.add_subparsers(dest="topics_command", required=True, metavar="ACTION")
    tp = tsub.add_parser(
        "create",
        help="create the six topics (config and consumers topics compacted) and the "
        "per-major admitted topics of layers with read_paths: per_major (from the config topic)",
        description="Create the six topics (the config and consumers topics compacted, the "
        "config topic keeping its tombstones) and the per-major admitted topics of layers "
        "with read_paths: per_major (read from the config topic). An existing topic is left "
        "as it is and said so; for the config and consumers topics, with what is wrong in "
        "their compaction settings and the kafka-configs command that fixes it. Exit 1 when "
        "one of them is not compacted (its records would be deleted after retention.ms), "
        "else 0.",
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
    add_format(tp, "each topic with its outcome and whether it is a per-major read path")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Create the topics and print each one's outcome; 1 when one is not compacted."""
    from worker.control.read_paths import create_per_major_topics
    from worker.kafka.admin import NOT_COMPACTED, create_topics

    settings = settings_from_args(args)
    sizes = {"partitions": args.partitions, "replication_factor": args.replication_factor}
    rows = _rows(args, create_topics(settings, **sizes), per_major=False)
    rows += _rows(args, create_per_major_topics(settings, **sizes), per_major=True)
    uncompacted = sum(NOT_COMPACTED in r["outcome"] for r in rows if not r["per_major"])
    if wants_json(args):
        print_json({"topics": rows, "not_compacted": uncompacted})
    return 1 if uncompacted else 0


def _rows(args: argparse.Namespace, outcomes: dict[str, str], *, per_major: bool) -> list[Any]:
    """One row per topic; printed at once as text (so a later failure keeps these lines)."""
    rows = [{"name": n, "outcome": o, "per_major": per_major} for n, o in outcomes.items()]
    for r in rows if not wants_json(args) else []:
        print(f"{r['name']}: {r['outcome']}" + (" (per-major read path)" if per_major else ""))
    return rows
