"""``contract-gate quarantine tail|show|replay``: work the quarantine topic.

One line per quarantined batch, the full record with measured versus expected (and its
offending features as the offenders file of :data:`worker.io.formats.OFFENDERS_FILE` or
one HTML page), and replay of the original event to the
batches topic (:mod:`worker.ops.quarantine`). Errors of this package reach ``cli.main``.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from worker.cli.args import add_kafka_args, offending_features, write_output
from worker.cli.output import add_format, print_json, wants_json
from worker.cli.payload_args import add_payload_args
from worker.core._util.jsonsafe import dumps_json
from worker.core._util.text import one_line
from worker.core.errors import BrokerError, ContractGateError
from worker.io.formats import OFFENDERS_FILE

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
                "versions active now. Exit 0 when every selected batch was replayed; with "
                "--all-since, 1 when some were not (each named with why)."
                if name == "replay"
                else ""
            ),
        )
        add_kafka_args(a)
        if name == "replay":
            add_format(a, "each batch replayed (from, to) and each not replayed (why)")
        if name == "show":
            a.add_argument("batch", metavar="BATCH_ID", help="batch id, or PARTITION@OFFSET")
            a.add_argument(
                "--format", choices=["text", "json"], default="text", help="text (default) or json"
            )
            a.add_argument(
                OFFENDERS_FILE.flag,
                dest="offenders_file",
                metavar="FILE",
                help=f"write the offending features as a {OFFENDERS_FILE.described} (the "
                "broken clauses as properties; open it in QGIS)",
            )
            a.add_argument(
                "--html",
                metavar="FILE",
                help="write one self-contained HTML page: a map of the batch with the "
                "offending features by clause, the reasons in words, the offenders table",
            )
            add_payload_args(a)  # the pictures of a by-reference batch read its payload
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
    text = not wants_json(args)
    replayed: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    for entry in selected:
        name = entry.batch_id or f"{entry.partition}@{entry.offset}"
        shown = one_line(name, 200)  # a producer's id: the JSON output escapes it itself
        try:
            if not args.force:
                check_not_admitted(entry, admitted, digests)
            partition, offset = replay(settings, entry, force=args.force)
        except ContractGateError as exc:
            if isinstance(exc, BrokerError):
                raise
            refused.append({"batch": name, "from": entry.coordinates, "reason": str(exc)})
            if text:
                print(f"not replayed {shown}: {exc}")
            continue
        replayed.append(_replayed(settings, name, entry, partition, offset))
        if text:
            print(_replayed_line(replayed[-1]))
    scope = f" of layer {args.layer}" if args.layer else ""
    since = args.all_since.isoformat()
    if text:
        print(
            f"{len(replayed)} batch(es){scope} quarantined since {since} replayed, "
            f"{len(refused)} not replayed; the worker re-evaluates them"
        )
    else:
        print_json({"since": since, "layer": args.layer, "replayed": replayed, "refused": refused})
    return 1 if refused else 0


def _replayed(settings: Any, name: str, entry: Any, partition: int, offset: int) -> dict[str, Any]:
    """One replayed batch as the JSON output shows it."""
    to = {"topic": settings.topics.batches, "partition": partition, "offset": offset}
    return {"batch": name, "from": entry.coordinates, **to}


def _replayed_line(row: dict[str, Any]) -> str:
    return (
        f"replayed {one_line(row['batch'], 200)} (from {row['from']}) to "
        f"{row['topic']}[{row['partition']}]@{row['offset']}"
    )


def _write_pictures(args: argparse.Namespace, entry: Any, settings: Settings) -> None:
    """``show`` writing the offenders file (:data:`~worker.io.formats.OFFENDERS_FILE`) and
    ``--html FILE``: from the original event's features."""
    from worker.io.reports.offenders import offenders_of_record, unwritten_line
    from worker.ops.quarantine import entry_batch

    batch = entry_batch(entry, settings)
    reasons = entry.record["reasons"]
    if args.offenders_file:
        broken = offenders_of_record(reasons)
        doc = OFFENDERS_FILE.collection(batch, broken, name=entry.batch_id)
        write_output(args.offenders_file, dumps_json(doc, ensure_ascii=False, default=str))
        wrote = offending_features(len(doc["features"]))
        print(f"wrote {wrote} to {args.offenders_file}{unwritten_line(broken)}", file=sys.stderr)
    if args.html:
        from worker.io.reports.page import render_record_page

        write_output(args.html, render_record_page(batch, entry.record))
        print(f"wrote {args.html}; open it in a browser", file=sys.stderr)


def _show(args: argparse.Namespace, settings: Any) -> int:
    """``show``: the quarantine record, and where the batch went when it was admitted
    (never quarantined, or admitted after a replay): ``admitted: TOPIC[P]@O``."""
    from worker.ops.quarantine import entry_to_json, find_entry
    from worker.ops.quarantine_view import render_entry
    from worker.ops.replay import where_admitted

    try:
        entry = find_entry(settings, args.batch)
    except BrokerError:
        raise
    except ContractGateError:
        admitted = where_admitted(settings, args.batch)
        if admitted is None:
            raise
        if wants_json(args):
            print_json({"batch": args.batch, "quarantined": False, "admitted": admitted})
        else:
            print(f"batch {args.batch} was admitted, not quarantined: {admitted}")
        return 0
    admitted = where_admitted(settings, entry.batch_id, missing_ok=True)
    if wants_json(args):
        print_json({**entry_to_json(entry), "quarantined": True, "admitted": admitted})
    else:
        print(render_entry(entry))
        if admitted is not None:
            print(f"  admitted: {admitted} (a later event of this batch, e.g. a replay)")
    if args.offenders_file or args.html:
        _write_pictures(args, entry, settings)
    return 0


def run(args: argparse.Namespace) -> int:
    """List, show or replay as ``args.quarantine_command`` says; returns the exit code."""
    from worker.cli.args import settings_from_args
    from worker.ops.quarantine import entry_to_json, find_entry, read_quarantine
    from worker.ops.quarantine_view import follow_rows, table_rows
    from worker.ops.replay import check_not_admitted, read_admitted, replay

    if args.quarantine_command == "replay":  # bad arguments before any broker round trip
        if (args.batch is None) == (args.all_since is None):
            raise ContractGateError(
                "give either BATCH_ID or --all-since TIME (not both)",
                field="--all-since",
                fix="give either BATCH_ID or --all-since TIME (not both)",
            )
        if args.layer and args.all_since is None:
            raise ContractGateError(
                "--layer selects batches for --all-since only",
                field="--layer",
                fix="leave --layer out, or replay with --all-since TIME",
            )
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
        entries = read_quarantine(settings, layer=args.layer, follow=args.follow)
        lines = (
            (dumps_json(entry_to_json(e), default=str) for e in entries)
            if args.format == "json"
            else follow_rows(entries)  # the table's header and columns, row by row
        )
        for line in lines:
            print(line, flush=True)
        return 0
    if args.quarantine_command == "replay" and args.all_since is not None:
        return _replay_all(args, settings)
    if args.quarantine_command == "show":
        return _show(args, settings)
    entry = find_entry(settings, args.batch)
    if not args.force:
        digests: dict[str, str] = {}
        check_not_admitted(entry, read_admitted(settings, digests=digests), digests)
    partition, offset = replay(settings, entry, force=args.force)
    row = _replayed(settings, entry.batch_id or args.batch, entry, partition, offset)
    if wants_json(args):
        print_json({**row, "replayed": True})
    else:
        print(_replayed_line(row) + "; the worker re-evaluates it")
    return 0
