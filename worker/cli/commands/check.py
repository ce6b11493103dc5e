"""``contract-gate check``: evaluate a batch file offline against contract files.

No Kafka: the versions are files (``--contract`` enforcing, ``--observing`` observing), the
batch a file in a format of the reader registry (:data:`worker.io.formats.FORMATS`), a
local path or an S3 URI. Prints
the decision in words or JSON; ``--offenders`` and ``--html`` write pictures of the
offending features. Exit 0 when admitted, 1 when quarantined, 2 on bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from worker.cli.args import (
    EXIT_ADMITTED,
    EXIT_QUARANTINED,
    parse_time,
)
from worker.cli.payload_args import add_eval_threads, add_payload_args, eval_pool, file_policy
from worker.cli.pictures import refuse_overwriting_inputs, write_pictures
from worker.cli.progress import add_quiet_arg, chunks_with_progress, shows_progress
from worker.core._util.jsonsafe import dumps_json
from worker.core.errors import ContractGateError
from worker.io.formats import OFFENDERS_FILE, formats_named

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from worker.core.chunks import ChunkedBatch
    from worker.core.model import Batch, Decision

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
    p.add_argument(
        "batch",
        help=f"{formats_named(by_reference=True)} file: a path, file:// or s3:// URI (S3 "
        "through the standard AWS environment); a "
        f"{formats_named(local_only=True)} from a local path, with the formats extra",
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
    loaded = _with_progress(args, _read_batch(args, layer, versions))
    now = args.now or datetime.now(timezone.utc)
    with eval_pool(args.eval_threads) as pool:
        decision, count, claims = _evaluate_batch(
            loaded, versions, now, (pool, args.eval_threads), every=_pictures(args)
        )
    for line in claims:
        print(f"warning: {line}", file=sys.stderr)
    if not isinstance(loaded, ChunkedBatch):  # read whole for them (see _read_batch)
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


def _read_batch(args: argparse.Namespace, layer: str, versions: Any) -> Batch | ChunkedBatch:
    """The batch file of ``check``, with ``--crs``, ``--axis-order``, ``--data-time`` and
    ``--id-column``: in chunks when its reader reads them (its footer read here), unless
    ``--offenders`` or ``--html`` need every geometry at once; other formats whole.

    Raises
    ------
    ContractGateError
        ``--id-column`` names no column of the file (the columns are named).
    PayloadError
        The file cannot be read (as :func:`worker.io.payloads.read_batch_file`).
    """
    from worker.core.chunks import ChunkedBatch
    from worker.io.payloads import read_batch_file, read_batch_file_chunked

    read = read_batch_file if _pictures(args) else read_batch_file_chunked
    loaded = read(
        args.batch,
        layer=layer,
        crs=args.crs,
        axis_order=args.axis_order,
        data_time=args.data_time,
        policy=file_policy(args),
    )
    meta = loaded.batch if isinstance(loaded, ChunkedBatch) else loaded
    columns = meta.attributes.column_names
    if args.id_column:
        if args.id_column not in columns:
            raise ContractGateError(
                f"--id-column {args.id_column!r} is not a column of {args.batch} (columns: "
                f"{', '.join(columns) or 'none'})",
                field="--id-column",
                fix="name a column of the batch file, or leave --id-column out",
            )
        return _with_id_column(loaded, args.id_column)
    for v in versions:  # the contract's own id column: named by index when absent
        col = v.contract.id_column
        if col and col not in columns:
            print(
                f"warning: {v.contract.key} names id_column {col!r}, which is not a "
                f"column of {args.batch}: offending features are named by the file's "
                "feature ids where it has them, else by index (--id-column COL names "
                "another column)",
                file=sys.stderr,
            )
    return loaded


def _with_progress(args: argparse.Namespace, loaded: Batch | ChunkedBatch) -> Batch | ChunkedBatch:
    """``loaded`` drawing a progress bar on stderr as its chunks are read, when stderr is a
    terminal and ``--quiet`` was not given (:mod:`worker.cli.progress`)."""
    from worker.core.chunks import ChunkedBatch

    if shows_progress(args) and isinstance(loaded, ChunkedBatch):
        return chunks_with_progress(loaded, "check", sys.stderr)
    return loaded


def _with_id_column(loaded: Batch | ChunkedBatch, column: str) -> Batch | ChunkedBatch:
    """``loaded`` (and every chunk of it) with ``id_column`` set to ``column``."""
    from worker.core.chunks import ChunkedBatch

    if not isinstance(loaded, ChunkedBatch):
        return replace(loaded, id_column=column)
    chunks = loaded.chunks
    return ChunkedBatch(
        replace(loaded.batch, id_column=column),
        lambda: (replace(c, id_column=column) for c in chunks()),
    )


def _pictures(args: argparse.Namespace) -> bool:
    """``--offenders`` or ``--html`` asks for pictures of the features."""
    return bool(args.offenders or getattr(args, "html", None))


def _evaluate_batch(
    loaded: Batch | ChunkedBatch,
    versions: Any,
    now: datetime,
    chunk_pool: tuple[Executor | None, int] = (None, 1),
    *,
    every: bool = False,
) -> tuple[Decision, int, list[str]]:
    """The decision on ``loaded``, its number of features and the sentences of its file's
    metadata claims that the geometries contradict (:mod:`worker.core.facts.claims`): chunk by
    chunk for a :class:`ChunkedBatch` (claims tallied per chunk and merged), its chunks
    measured on ``chunk_pool`` (an executor and its thread count) when given, else whole;
    ``every`` names every offender (for the pictures), not the first ones."""
    from worker.core.chunks import ChunkedBatch, evaluate_chunked
    from worker.core.clauses.tally import Tally, merge
    from worker.core.evaluate import evaluate
    from worker.core.facts.batch import BatchFacts
    from worker.core.facts.claims import claim_disagreements, claims_tally, disagreements_of
    from worker.core.offenders import every_offender

    if not isinstance(loaded, ChunkedBatch):
        facts = BatchFacts(loaded)  # shared with the claims: the geometries are read once
        with every_offender() if every else contextlib.nullcontext():
            decision = evaluate(loaded, versions, now=now, facts=facts)
        return decision, len(loaded.geometries_wkb), claim_disagreements(facts)
    claims: list[Tally] = [{}]

    def tally_claims(facts: BatchFacts) -> None:
        claims[0] = merge(claims[0], claims_tally(facts))

    decision = evaluate_chunked(
        loaded,
        versions,
        now=now,
        on_chunk=tally_claims,
        executor=chunk_pool[0],
        in_flight=chunk_pool[1],
    )
    meta = BatchFacts(loaded.batch)
    return decision, loaded.batch.feature_count, disagreements_of(claims[0], meta)
