"""What ``contract-gate check`` does with its batch file: read it (in chunks when its reader
reads them, whole when pictures need every geometry), with ``--id-column`` and a progress
line on a terminal, and evaluate it (chunks on a thread pool, merged in order) together
with the file's metadata claims (:mod:`worker.core.facts.claims`)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from worker.cli.payload_args import file_policy
from worker.cli.progress import chunks_with_progress, shows_progress
from worker.core.errors import ContractGateError

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from worker.core.chunks import ChunkedBatch
    from worker.core.model import Batch, Decision

__all__ = ["evaluate_batch", "read_batch", "wants_pictures", "with_progress"]


def read_batch(args: argparse.Namespace, layer: str, versions: Any) -> Batch | ChunkedBatch:
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

    read = read_batch_file if wants_pictures(args) else read_batch_file_chunked
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
        return with_id_column(loaded, args.id_column)
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


def with_progress(args: argparse.Namespace, loaded: Batch | ChunkedBatch) -> Batch | ChunkedBatch:
    """``loaded`` drawing a progress bar on stderr as its chunks are read, when stderr is a
    terminal and ``--quiet`` was not given (:mod:`worker.cli.progress`)."""
    from worker.core.chunks import ChunkedBatch

    if shows_progress(args) and isinstance(loaded, ChunkedBatch):
        return chunks_with_progress(loaded, "check", sys.stderr)
    return loaded


def with_id_column(loaded: Batch | ChunkedBatch, column: str) -> Batch | ChunkedBatch:
    """``loaded`` (and every chunk of it) with ``id_column`` set to ``column``."""
    from worker.core.chunks import ChunkedBatch

    if not isinstance(loaded, ChunkedBatch):
        return replace(loaded, id_column=column)
    chunks = loaded.chunks
    return replace(
        loaded,
        batch=replace(loaded.batch, id_column=column),
        chunks=lambda: (replace(c, id_column=column) for c in chunks()),
    )


def wants_pictures(args: argparse.Namespace) -> bool:
    """``--offenders`` or ``--html`` asks for pictures of the features."""
    return bool(args.offenders or getattr(args, "html", None))


def evaluate_batch(
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
    from worker.core.chunks import ChunkedBatch, ChunkHook, evaluate_chunked
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

    def merge_claims(tally: Tally) -> None:
        claims[0] = merge(claims[0], tally)

    decision = evaluate_chunked(
        loaded,
        versions,
        now=now,
        on_chunk=ChunkHook(claims_tally, merge_claims),
        executor=chunk_pool[0],
        in_flight=chunk_pool[1],
    )
    meta = BatchFacts(loaded.batch)
    return decision, loaded.batch.feature_count, disagreements_of(claims[0], meta)
