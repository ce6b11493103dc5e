"""``contract-gate consumers declare|assert|status``: who reads which contract version.

A consumer is its Kafka consumer group id: it declares the version it reads against,
checks admitted records against it, and the migration view counts consumers per version
(:mod:`worker.control.consumers`, :mod:`worker.control.attribution`).
"""

from __future__ import annotations

import argparse

from worker.cli.args import add_kafka_args, add_stale, bounded_int, positive_int
from worker.cli.output import add_format, print_json, wants_json
from worker.core._util.jsonsafe import dumps_json

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``consumers`` and its actions."""
    p = sub.add_parser(
        "consumers",
        help="consumer declarations and the migration view",
        description="A consumer is its Kafka consumer group id. Declare the contract version "
        "it reads against, check admitted records against it, count consumers per version.",
    )
    s = p.add_subparsers(dest="consumers_command", required=True, metavar="ACTION")

    d = s.add_parser(
        "declare",
        help="declare the contract version a consumer reads against",
        description="Declare the contract version CONSUMER (its Kafka consumer group id) "
        "reads LAYER against, on the consumers topic: the count of consumers per version "
        "that retirement waits for.",
    )
    add_kafka_args(d)
    d.add_argument("consumer", help="the consumer's Kafka consumer group id")
    d.add_argument("layer")
    d.add_argument("version", help="v<major>[.<minor>], e.g. v2")
    d.add_argument(
        "--force",
        action="store_true",
        help="declare even if LAYER has no published version of VERSION's major on the "
        "config topic (refused otherwise)",
    )
    add_format(d, "the declaration and where it was written (topic, partition, offset)")

    a = s.add_parser(
        "assert",
        help="check admitted records of a layer were admitted under a version",
        description="Exit 0 when every checked record of the admitted topic passed an "
        "enforcing revision of VERSION's major (at least its minor), 2 otherwise (also when "
        "no record of LAYER is found). Checks the latest --last records of LAYER, or the one "
        "record at --partition/--offset, which must be of LAYER.",
    )
    add_kafka_args(a)
    a.add_argument("layer")
    a.add_argument("version", help="the version the reader was built for")
    a.add_argument(
        "--last",
        type=positive_int,
        default=10,
        help="the latest N records of LAYER to check (default 10)",
    )
    # bounded: a negative offset is a librdkafka logical one (-1: the end), not a record
    a.add_argument(
        "--partition",
        type=bounded_int(0, 2**31 - 1),
        help="check the record at this partition ...",
    )
    a.add_argument("--offset", type=bounded_int(0, 2**63 - 1), help="... and this offset")
    add_format(a, "the layer, the version, the records checked and the summary line")

    st = s.add_parser(
        "status",
        help="consumers per layer and version: declared, unattributed, stale",
        description="Per layer and major version: the count (declared + unattributed, the "
        "retirement condition) and the consumers by name. Unattributed: groups with committed "
        "offsets on the admitted topic that never declared for the layer, counted against "
        "the oldest active version of every layer (the conservative rule: offsets do not "
        "say which layers it read); next to each, the layers of the records before its "
        "committed offsets (up to 200 per partition, read for at most 5 s): evidence, "
        "not a count.",
    )
    add_kafka_args(st)
    st.add_argument("layer", nargs="?", help="only this layer")
    st.add_argument(
        "--format", choices=["text", "json"], default="text", help="text (default) or json"
    )
    add_stale(st)
    p.set_defaults(handler=run)


def _version(args: argparse.Namespace) -> dict[str, str]:
    return {"version": args.version}


def run(args: argparse.Namespace) -> int:
    """Declare, assert or show the migration view as ``args.consumers_command`` says."""
    from worker.cli.args import settings_from_args
    from worker.control.attribution import migration_view
    from worker.control.consumers import check_admitted, declare
    from worker.core.lifecycle.migration import MigrationView, render_view, view_to_json

    settings = settings_from_args(args)
    if args.consumers_command == "declare":
        partition, offset = declare(
            settings, args.consumer, args.layer, args.version, force=args.force
        )
        where = {"topic": settings.topics.consumers, "partition": partition, "offset": offset}
        if wants_json(args):
            print_json({"consumer": args.consumer, "layer": args.layer, **_version(args), **where})
        else:
            print(
                f"declared {args.consumer} reads {args.layer} against {args.version} "
                f"at {settings.topics.consumers}[{partition}]@{offset}"
            )
        return 0
    if args.consumers_command == "assert":
        summary = check_admitted(
            settings,
            args.layer,
            args.version,
            last=args.last,
            partition=args.partition,
            offset=args.offset,
        )
        if wants_json(args):  # a record not admitted under the version is an error (exit 2)
            checked = int(summary.split(" ", 1)[0])
            doc = {"layer": args.layer, **_version(args), "checked": checked, "passed": True}
            print_json({**doc, "summary": summary})
        else:
            print(summary)
        return 0
    view = migration_view(settings, stale_after=args.stale_after, with_layers_read=True)
    if args.layer:
        view = MigrationView({k: v for k, v in view.layers.items() if k == args.layer})
    if args.format == "json":
        print(dumps_json(view_to_json(view), indent=2))
    else:
        print(render_view(view))
    return 0
