"""``contract-gate check``: evaluate a batch file offline against contract files.

No Kafka: the versions are files (``--contract`` enforcing, ``--observing`` observing), the
batch a file in a format of the reader registry (:data:`worker.io.formats.FORMATS`), a
local path or an S3 URI. Prints
the decision in words or JSON; ``--offenders`` and ``--html`` write pictures of the
offending features. Exit 0 when admitted, 1 when quarantined, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from worker.cli.args import (
    EXIT_ADMITTED,
    EXIT_QUARANTINED,
    completes_paths,
    parse_time,
)
from worker.cli.check_batch import evaluate_batch, read_batch, wants_pictures, with_progress
from worker.cli.payload_args import add_eval_threads, add_payload_args, eval_pool
from worker.cli.pictures import refuse_overwriting_inputs, write_pictures
from worker.cli.progress import add_quiet_arg
from worker.core._util.jsonsafe import dumps_json
from worker.core.errors import ContractGateError
from worker.io.formats import OFFENDERS_FILE, formats_named

if TYPE_CHECKING:
    from worker.core.model import Decision

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``check`` and its arguments."""
    p = sub.add_parser(
        "check",
        help="evaluate a batch file offline against contract files",
        description=(
            f"Evaluate a batch file against contract versions without Kafka. A "
            f"{formats_named(chunked=True)} file is evaluated chunk by chunk as the worker "
            "evaluates a by-reference payload "
            "(memory bounded by a chunk, not the file), unless --offenders or --html need "
            "every geometry; other formats are read whole. Exit 0 when admitted, 1 when "
            "quarantined, 2 on bad input."
        ),
    )
    completes_paths(
        p.add_argument(
            "batch",
            help=f"{formats_named(by_reference=True)} file: a path, file:// or s3:// URI (S3 "
            "through the standard AWS environment); a "
            f"{formats_named(local_only=True)} from a local path, with the formats extra",
        )
    )
    add_payload_args(p, roots=False)
    add_eval_threads(p)
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
    p.add_argument("--crs", help="declared CRS, overriding the file's (or its format's default)")
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
        "(default: the contract's id_column, else the ids the file gives its features, else "
        "the row index)",
    )
    p.add_argument(
        "--offenders",
        metavar="FILE",
        help=f"write the offending features as a {OFFENDERS_FILE.described} (the broken "
        "clauses as properties; open it in QGIS); the batch file is then read whole (a "
        f"{formats_named(chunked=True)} file is otherwise evaluated one chunk at a time, in "
        "bounded memory)",
    )
    p.add_argument(
        "--html",
        metavar="FILE",
        help="write one self-contained HTML page: a map of the batch in the contract CRS "
        "with the offending features by clause, the verdicts in words, the offenders table; "
        "the batch file is then read whole, as with --offenders",
    )
    add_quiet_arg(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """``check``: a file its reader reads in chunks is evaluated chunk by chunk, as the
    worker evaluates a by-reference payload (peak memory bounded by a chunk, not the
    file); other formats, and any file when ``--offenders`` or ``--html`` asks for
    pictures of its features, are read whole. Both give the same decision."""
    from worker.core.chunks import ChunkedBatch
    from worker.core.contracts.coherence import contradictions
    from worker.core.evaluate import recorded
    from worker.core.model import ActiveVersion
    from worker.io.contract_files import load_contract

    if not args.contract and not args.observing:
        raise ContractGateError(
            "give at least one --contract FILE (or --observing FILE)",
            field="--contract",
            fix="give at least one --contract FILE (or --observing FILE)",
        )
    refuse_overwriting_inputs(args)
    if args.crs:
        from worker.core.spatial import resolve_crs

        resolve_crs(args.crs)  # a --crs that does not resolve is bad input (exit 2)
    versions = [ActiveVersion(load_contract(f), "enforcing") for f in args.contract]
    versions += [ActiveVersion(load_contract(f), "observing") for f in args.observing]
    keys = [v.contract.key for v in versions]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise ContractGateError(
            f"{', '.join(twice)} given more than once; pass each version once (a version is "
            "one document: two files with the same layer/version are an edit in place)",
            field="--contract",
            fix="pass each version once",
        )
    layers = {v.contract.layer for v in versions}
    if len(layers) > 1:
        raise ContractGateError(
            f"contracts are for different layers {sorted(layers)}; check one layer at a time",
            field="--contract",
            fix="check one layer at a time",
        )
    for v in versions:
        for problem in contradictions(v.contract):
            print(f"warning: {v.contract.key}: {problem}", file=sys.stderr)
    layer = layers.pop()
    loaded = with_progress(args, read_batch(args, layer, versions))
    now = args.now or datetime.now(timezone.utc)
    with eval_pool(args.eval_threads) as pool:
        decision, count, claims = evaluate_batch(
            loaded, versions, now, (pool, args.eval_threads), every=wants_pictures(args)
        )
    for line in claims:
        print(f"warning: {line}", file=sys.stderr)
    if not isinstance(loaded, ChunkedBatch):  # read whole for them (see read_batch)
        write_pictures(args, loaded, decision, versions)  # every offender
    decision = recorded(decision)  # the output names the first ones, as a record does
    _print_decision(args, layer, versions, count, decision)
    return EXIT_ADMITTED if decision.admitted else EXIT_QUARANTINED


def _print_decision(
    args: argparse.Namespace, layer: str, versions: Any, count: int, decision: Decision
) -> None:
    """The result of ``check``: text with a ``note:`` line per region crossing the
    antimeridian, or one JSON document (what was judged, the decision, the notes)."""
    from worker.core.clauses.region import antimeridian_notes
    from worker.io.reports.text import decision_to_json, render_decision

    notes = [n for v in versions for n in antimeridian_notes(v.contract)]
    if args.format == "json":
        doc = {**_judged(args, layer, versions, count), **decision_to_json(decision)}
        print(dumps_json({**doc, "notes": notes}, indent=2, default=str))
    else:
        print(render_decision(decision, title=f"batch {args.batch}: {count} features"))
        for note in notes:
            print(f"note: {note}")


def _judged(args: argparse.Namespace, layer: str, versions: Any, count: int) -> dict[str, Any]:
    """What ``check --format json`` judged: the layer, the batch file and its feature
    count, and each contract file with the version it holds and its mode."""
    files = [*args.contract, *args.observing]  # the order ``versions`` was loaded in
    contracts = [
        {"file": f, "version": v.contract.key, "mode": v.mode}
        for f, v in zip(files, versions, strict=True)
    ]
    return {"layer": layer, "batch_file": args.batch, "features": count, "contracts": contracts}
