"""``contract-gate consumers declare|assert|status`` and ``contract-gate contract retire``.

Kept apart from :mod:`worker.cli.main` so the shared entry point only needs a few lines:
:func:`add_consumers_args` registers the ``consumers`` command, :func:`add_retire_args`
the ``retire`` action under ``contract``; :func:`cmd_consumers` and :func:`cmd_retire`
handle them (each returns an exit code; errors of this package reach ``cli.main``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from worker.core._util.jsonsafe import dumps_json

__all__ = ["add_consumers_args", "add_retire_args", "cmd_consumers", "cmd_retire"]

AddKafkaArgs = Callable[[argparse.ArgumentParser], None]


def _hours(text: str) -> timedelta:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of hours (e.g. 168)") from None
    return timedelta(hours=value)


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return value


def _add_stale(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--stale-after-hours",
        type=_hours,
        default=timedelta(days=7),
        dest="stale_after",
        metavar="HOURS",
        help="a declaration whose group no longer exists and older than this is shown as "
        "stale, not counted (default 168)",
    )


def add_consumers_args(sub: Any, add_kafka_args: AddKafkaArgs) -> None:
    """Register the ``consumers`` command and its actions."""
    p = sub.add_parser(
        "consumers",
        help="consumer declarations and the migration view",
        description="A consumer is its Kafka consumer group id. Declare the contract version "
        "it reads against, check admitted records against it, count consumers per version.",
    )
    s = p.add_subparsers(dest="consumers_command", required=True, metavar="ACTION")

    d = s.add_parser("declare", help="declare the contract version a consumer reads against")
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
        type=_at_least_one,
        default=10,
        help="the latest N records of LAYER to check (default 10)",
    )
    a.add_argument("--partition", type=int, help="check the record at this partition ...")
    a.add_argument("--offset", type=int, help="... and this offset")

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
    _add_stale(st)


def add_retire_args(csub: Any, add_kafka_args: AddKafkaArgs) -> None:
    """Register ``retire`` under ``contract``."""
    r = csub.add_parser(
        "retire",
        help="retire a major version once no consumer reads against it",
        description="Retire every active revision of VERSION's major when declared + "
        "unattributed consumers on it are zero; otherwise refuse (exit 2) naming them. "
        "Refused too when no active enforcing version would remain (promote the new major "
        "first). There is no date option.",
    )
    add_kafka_args(r)
    r.add_argument("layer")
    r.add_argument("version", help="the major to retire, e.g. v1")
    r.add_argument(
        "--retired-by",
        default=None,
        help="name shown in the summary (the record keeps its original publisher: the "
        "ContractRecord has no field for who retired it)",
    )
    _add_stale(r)


def cmd_consumers(args: argparse.Namespace) -> int:
    from worker.cli.args import settings_from_args
    from worker.control.attribution import migration_view
    from worker.control.consumers import check_admitted, declare
    from worker.core.lifecycle.migration import MigrationView, render_view, view_to_json

    settings = settings_from_args(args)
    if args.consumers_command == "declare":
        partition, offset = declare(
            settings, args.consumer, args.layer, args.version, force=args.force
        )
        print(
            f"declared {args.consumer} reads {args.layer} against {args.version} "
            f"at {settings.topics.consumers}[{partition}]@{offset}"
        )
        return 0
    if args.consumers_command == "assert":
        print(
            check_admitted(
                settings,
                args.layer,
                args.version,
                last=args.last,
                partition=args.partition,
                offset=args.offset,
            )
        )
        return 0
    view = migration_view(settings, stale_after=args.stale_after, with_layers_read=True)
    if args.layer:
        view = MigrationView({k: v for k, v in view.layers.items() if k == args.layer})
    if args.format == "json":
        print(dumps_json(view_to_json(view), indent=2))
    else:
        print(render_view(view))
    return 0


def cmd_retire(args: argparse.Namespace) -> int:
    from worker.cli.args import settings_from_args
    from worker.control.retirement import retire

    settings = settings_from_args(args)
    print(
        retire(
            settings,
            args.layer,
            args.version,
            retired_by=args.retired_by,
            stale_after=args.stale_after,
        )
    )
    return 0
