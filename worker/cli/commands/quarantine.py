"""``contract-gate quarantine tail|show|replay``: work the quarantine topic.

One line per quarantined batch, the full record with measured versus expected (and its
offending features as GeoJSON or one HTML page), and replay of the original event to the
batches topic (:mod:`worker.ops.quarantine`). Errors of this package reach ``cli.main``.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from worker.cli.args import add_kafka_args, offending_features, write_output
from worker.cli.payload_args import add_payload_args
from worker.core._util.jsonsafe import dumps_json
from worker.core.errors import BrokerError, ContractGateError

if TYPE_CHECKING:
    from worker.kafka.settings import Settings

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``quarantine`` and its actions."""
    p = sub.add_parser(
        "quarantine",
        help="list, inspect and replay quarantined batches",
        description="Work the quarantine topic: one line per quarantined batch, the full "
        "record with measured versus expected, and replay of the original event.",
    )
    p.set_defaults(handler=run)
    s = p.add_subparsers(dest="quarantine_command", required=True, metavar="ACTION")

    t = s.add_parser(
        "tail",
        help="one line per quarantined batch: time, layer, batch id, what broke, diagnosis",
        description="Print every record of the quarantine topic as an aligned table "
        "ordered by quarantine time across partitions (replays marked), then stop; with "
        "--follow print each record as it arrives (oldest first per partition) until Ctrl-C.",
    )
    add_kafka_args(t)
    t.add_argument("--layer", help="only this layer")
    t.add_argument("--follow", "-f", action="store_true", help="keep printing new records")
    t.add_argument("--format", choices=["text", "json"], default="text", help="json: one per line")

    for name, text in (
        ("show", "the full quarantine record, measured versus expected"),
        ("replay", "republish the original event to the batches topic (header replay-of)"),
    ):
        a = s.add_parser(
            name,
            help=text,
            description=f"{text[0].upper()}{text[1:]}. BATCH_ID selects the latest record of "
            "that batch; PARTITION@OFFSET selects a record of the quarantine topic (for "
            "undecodable events, which have no batch id)."
            + (
                " The worker re-evaluates the event like any other, under the contract "
                "versions active now."
                if name == "replay"
                else ""
            ),
        )
        add_kafka_args(a)
        if name == "show":
            a.add_argument("batch", metavar="BATCH_ID", help="batch id, or PARTITION@OFFSET")
            a.add_argument(
                "--format", choices=["text", "json"], default="text", help="text (default) or json"
            )
            a.add_argument(
                "--geojson",
                metavar="FILE",
                help="write the offending features as a GeoJSON FeatureCollection (the "
                "broken clauses as properties; open it in QGIS)",
            )
            a.add_argument(
                "--html",
                metavar="FILE",
                help="write one self-contained HTML page: a map of the batch with the "
                "offending features by clause, the reasons in words, the offenders table",
            )
            add_payload_args(a)  # --geojson/--html of a by-reference batch read its payload
            continue
        a.add_argument("batch", metavar="BATCH_ID", nargs="?", help="batch id, or PARTITION@OFFSET")
        a.add_argument(
            "--all-since",
            type=_since,
            metavar="TIME",
            help="instead of BATCH_ID: every batch quarantined at or after TIME (ISO 8601 "
            "with offset, e.g. 2026-11-29T06:00:00+00:00), the latest record of each",
        )
        a.add_argument("--layer", help="with --all-since: only this layer")
        a.add_argument(
            "--force",
            action="store_true",
            help="replay even a batch already on the admitted topic: the worker admits it "
            "again if it passes (header replay-force), even after an earlier replay of it",
        )


def _since(text: str) -> Any:
    from worker.cli.args import parse_time

    return parse_time(text)


def _replay_all(args: argparse.Namespace, settings: Any) -> int:
    """``replay --all-since``: exit 0 when every selected batch was replayed, 1 when some
    were refused (already admitted, or no original bytes)."""
    from worker.core.errors import ContractGateError
    from worker.ops.quarantine import read_quarantine
    from worker.ops.replay import (
        check_not_admitted,
        entries_since,
        read_admitted,
        replay,
        replay_headers,
    )

    entries = list(read_quarantine(settings, layer=args.layer))
    selected, _unreadable = entries_since(entries, args.all_since)
    # a replayed undecodable event quarantined again by an older worker names its original
    # only in the replay-of header of its copy on the batches topic
    selected, _unreadable = entries_since(
        entries, args.all_since, replay_headers(settings, selected)
    )
    digests: dict[str, str] = {}
    admitted = read_admitted(settings, digests=digests)
    replayed = refused = 0
    for entry in selected:
        name = entry.batch_id or f"{entry.partition}@{entry.offset}"
        try:
            if not args.force:
                check_not_admitted(entry, admitted, digests)
            partition, offset = replay(settings, entry, force=args.force)
        except ContractGateError as exc:
            if isinstance(exc, BrokerError):
                raise
            refused += 1
            print(f"not replayed {name}: {exc}")
            continue
        replayed += 1
        print(
            f"replayed {name} (from {entry.coordinates}) to "
            f"{settings.topics.batches}[{partition}]@{offset}"
        )
    scope = f" of layer {args.layer}" if args.layer else ""
    print(
        f"{replayed} batch(es){scope} quarantined since {args.all_since.isoformat()} replayed, "
        f"{refused} not replayed; the worker re-evaluates them"
    )
    return 1 if refused else 0


def _write_pictures(args: argparse.Namespace, entry: Any, settings: Settings) -> None:
    """``show --geojson FILE`` and ``--html FILE``: from the original event's features."""
    from worker.io.reports.offenders import offenders_collection, offenders_of_record
    from worker.ops.quarantine import entry_batch

    batch = entry_batch(entry, settings)
    reasons = entry.record["reasons"]
    if args.geojson:
        doc = offenders_collection(batch, offenders_of_record(reasons), name=entry.batch_id)
        write_output(args.geojson, dumps_json(doc, ensure_ascii=False, default=str))
        wrote = offending_features(len(doc["features"]))
        print(f"wrote {wrote} to {args.geojson}", file=sys.stderr)
    if args.html:
        from worker.io.reports.page import render_record_page

        write_output(args.html, render_record_page(batch, entry.record))
        print(f"wrote {args.html}; open it in a browser", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """List, show or replay as ``args.quarantine_command`` says; returns the exit code."""
    from worker.cli.args import settings_from_args
    from worker.ops.quarantine import entry_to_json, find_entry, read_quarantine
    from worker.ops.quarantine_view import render_entry, render_line, table_rows
    from worker.ops.replay import check_not_admitted, read_admitted, replay

    if args.quarantine_command == "replay":  # bad arguments before any broker round trip
        if (args.batch is None) == (args.all_since is None):
            raise ContractGateError("give either BATCH_ID or --all-since TIME (not both)")
        if args.layer and args.all_since is None:
            raise ContractGateError("--layer selects batches for --all-since only")
    settings = settings_from_args(args)
    if args.quarantine_command == "tail" and not args.follow and args.format == "text":
        rows = table_rows(read_quarantine(settings, layer=args.layer))
        for line in rows:
            print(line)
        if not rows:
            scope = f" of layer {args.layer}" if args.layer else ""
            print(f"no quarantined batches{scope} on {settings.topics.quarantine}")
        return 0
    if args.quarantine_command == "tail":  # --follow ends on Ctrl-C: `interrupted`, 130
        for entry in read_quarantine(settings, layer=args.layer, follow=args.follow):
            if args.format == "json":
                print(dumps_json(entry_to_json(entry), default=str), flush=True)
            else:
                print(render_line(entry), flush=True)
        return 0
    if args.quarantine_command == "replay" and args.all_since is not None:
        return _replay_all(args, settings)
    entry = find_entry(settings, args.batch)
    if args.quarantine_command == "show":
        if args.format == "json":
            print(dumps_json(entry_to_json(entry), indent=2, default=str))
        else:
            print(render_entry(entry))
        if args.geojson or args.html:
            _write_pictures(args, entry, settings)
        return 0
    if not args.force:
        digests: dict[str, str] = {}
        check_not_admitted(entry, read_admitted(settings, digests=digests), digests)
    partition, offset = replay(settings, entry, force=args.force)
    print(
        f"replayed {entry.batch_id or args.batch} (from {entry.coordinates}) to "
        f"{settings.topics.batches}[{partition}]@{offset}; the worker re-evaluates it"
    )
    return 0
