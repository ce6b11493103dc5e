"""Batch files read in chunks for evaluation in bounded memory
(:class:`worker.core.chunks.ChunkedBatch`): an event's by-reference payload (the worker,
:func:`load_payload_chunked`) and an operator's batch file (``check``,
:func:`read_batch_file_chunked`), in every format whose reader has ``chunks``
(:class:`~worker.io.formats.base.ChunkedFile`). Only the footer is read up front; each
pass over the chunks opens the file again and reads one chunk at a time. A format read
whole (its reader's ``chunks`` gives None) is read as :mod:`.load` reads it (one chunk).
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from worker.core.chunks import ChunkedBatch
from worker.core.errors import PayloadCorrupt, PayloadUnavailable
from worker.core.model import AXIS_ORDERS, Batch
from worker.io.formats import FORMATS
from worker.io.formats.base import ChunkedFile, _fail, derive_schema
from worker.io.payloads.load import (
    BY_OPTION,
    _feature_fields,
    _guarded,
    crs_conflict,
    load_payload,
    read_batch_file,
)
from worker.io.payloads.open import open_payload, with_retries
from worker.io.payloads.policy import UNRESTRICTED, PayloadPolicy

__all__ = ["CHUNK_BYTES", "CHUNK_ROWS", "load_payload_chunked", "read_batch_file_chunked"]

#: Features per chunk when a payload or batch file is evaluated in chunks
#: (:func:`load_payload_chunked`, :func:`read_batch_file_chunked`), at most: a row group
#: as most writers cut them. :data:`CHUNK_BYTES` bounds memory; each chunk costs
#: about 15 ms of fixed work (facts, six clauses' tallies, their merge): at 4,096 rows that
#: was 3.6 of the 4.5 s of `check` on 1,000,000 points (issue 27).
CHUNK_ROWS = 65_536
#: Uncompressed bytes per chunk, about (the file's average row size decides the rows):
#: with the row group being read, what bounds the worker's memory. 6 MiB keeps polygons of
#: ~900 bytes near the 4,096 rows they had (7,000; 16 MiB let them grow to 19,000 rows and
#: the peak RSS of `check` on 200,000 of them from 294 to 382 MiB) while points (~70 bytes
#: a row) fill whole row groups of 65,536.
CHUNK_BYTES = 6 * 1024 * 1024


def _open_footer(uri: str, policy: PayloadPolicy) -> tuple[ChunkedFile, datetime | None] | None:
    """The file at ``uri`` opened for chunks (and its modification time, None if
    unknown), or None when its format is read whole. Transient failures are retried
    ``policy.attempts`` times.

    Raises
    ------
    PayloadError
        As :func:`~worker.io.payloads.open.open_payload`; a footer or ``geo`` metadata
        that cannot be used.
    """

    def head() -> tuple[ChunkedFile, datetime | None] | None:
        with open_payload(uri, policy) as src:
            reader = FORMATS[src.format]
            opened = _guarded(src.uri, lambda: reader.chunks(src))
            return None if opened is None else (opened, src.mtime)

    return with_retries(head, policy)


def _chunked(
    uri: str,
    opened: ChunkedFile,
    meta: Batch,
    policy: PayloadPolicy,
    chunk_rows: int,
    chunk_bytes: int,
) -> ChunkedBatch:
    """``meta`` (the batch's metadata, no features) and the file's chunks: Batches of at
    most ``chunk_rows`` features (fewer when that many of the file's average row exceed
    ``chunk_bytes`` uncompressed), with ``meta``'s metadata and the schema of the whole
    file (``nullable`` from its null counts)."""
    fields = tuple(
        replace(f, nullable=opened.null_counts.get(f.name, 0) > 0)
        for f in _guarded(uri, lambda: derive_schema(opened.attributes))
    )
    meta = replace(meta, schema_fields=fields)

    def again() -> tuple[ExitStack, ChunkedFile]:
        stack = ExitStack()
        try:
            src = stack.enter_context(open_payload(uri, policy))
            reader = FORMATS[src.format]
            opened = _guarded(src.uri, lambda: reader.chunks(src, count_nulls=False))
        except BaseException:
            stack.close()
            raise
        if opened is None:  # the file was replaced by one of a format read whole
            stack.close()
            raise PayloadCorrupt(f"{uri}: the file changed while being evaluated")
        return stack, opened

    def chunks() -> Iterator[Batch]:
        rows, attempt, wait_s = 0, 1, policy.backoff_s
        while True:
            stack, reopened = with_retries(again, policy)
            try:
                with stack:
                    size = reopened.chunk_rows(chunk_rows, chunk_bytes)
                    parts = reopened.chunks(size, start_row=rows)
                    step = functools.partial(next, parts, None)
                    while (data := _guarded(uri, step)) is not None:
                        fields_of = _guarded(uri, functools.partial(_feature_fields, data, uri))
                        rows += len(data.geometries_wkb)
                        yield replace(meta, **(fields_of | {"schema_fields": fields}))
                break
            except PayloadUnavailable as exc:  # a transient read error: resume where it was
                if not exc.transient or attempt >= max(1, policy.attempts):
                    raise
                attempt += 1
                time.sleep(wait_s)
                wait_s *= 2
        if rows != opened.rows:
            raise PayloadCorrupt(
                f"{reopened.path}: {rows} rows read, the footer read before said "
                f"{opened.rows}: the file changed while being evaluated"
            )

    return ChunkedBatch(meta, chunks, opened.rows)


def load_payload_chunked(
    uri: str,
    event: Batch,
    *,
    policy: PayloadPolicy | None = None,
    chunk_rows: int = CHUNK_ROWS,
    chunk_bytes: int = CHUNK_BYTES,
) -> Batch | ChunkedBatch:
    """Load an event's by-reference payload for evaluation in bounded memory.

    A payload whose reader reads in chunks becomes a
    :class:`worker.core.chunks.ChunkedBatch`: only its footer is read here (geometry
    metadata, attribute schema, rows, null counts); each
    ``chunks()`` call opens the payload again (under ``policy``; after a transient
    failure, opening or reading, it opens it again and resumes at the chunk that failed,
    ``policy.attempts`` times in all) and yields Batches of at most ``chunk_rows``
    features, fewer when that many of the file's average row exceed ``chunk_bytes``
    (uncompressed), one chunk at a time, with the event's metadata (as
    :func:`~worker.io.payloads.load.load_payload`: the event's ``declared_crs`` and
    ``axis_order`` win, the schema is the file's with ``nullable`` from the whole file).
    A payload of a format read whole is read by
    :func:`~worker.io.payloads.load.load_payload`.

    Raises
    ------
    PayloadError
        As :func:`~worker.io.payloads.load.load_payload`; ``chunks()`` raises
        ``PayloadCorrupt`` for a row group it cannot decode or a file whose row count
        changed between passes, and the other PayloadErrors of
        :func:`~worker.io.payloads.open.open_payload`.
    """
    policy = policy if policy is not None else PayloadPolicy()
    found = _open_footer(uri, policy)
    if found is None:
        return load_payload(uri, event, policy=policy)
    opened = found[0]
    meta = replace(
        event,
        payload_uri=uri,
        geometries_wkb=(),
        attributes=opened.attributes,
        geometry_errors={},
        edges=opened.edges,
        orientation=opened.orientation,
        metadata_name=opened.metadata_name,
        covering_bbox=None,
        feature_ids=None,
        coordinate_bounds=None,
        crs_conflict=crs_conflict(
            opened.declared_crs if opened.crs_stated else None,
            event.declared_crs,
            opened.crs_source,
        ),
    )
    return _chunked(uri, opened, meta, policy, chunk_rows, chunk_bytes)


def read_batch_file_chunked(
    path: str | Path,
    *,
    layer: str,
    crs: str | None = None,
    axis_order: str | None = None,
    data_time: datetime | None = None,
    batch_id: str | None = None,
    producer: str = "contract-gate-cli",
    policy: PayloadPolicy = UNRESTRICTED,
    chunk_rows: int = CHUNK_ROWS,
    chunk_bytes: int = CHUNK_BYTES,
) -> Batch | ChunkedBatch:
    """:func:`~worker.io.payloads.load.read_batch_file` for evaluation in bounded
    memory: a file whose reader reads in chunks becomes a
    :class:`worker.core.chunks.ChunkedBatch` (its
    footer read here, its chunks as :func:`load_payload_chunked` reads them) whose
    metadata batch is what ``read_batch_file`` gives less the features: ``crs`` and
    ``axis_order`` override the file's, ``data_time`` defaults to the file's modification
    time, ``feature_count`` is the footer's rows, ``file_claims`` the file's metadata
    claims, and ``crs_conflict`` when the file states a CRS ``crs`` contradicts. A file of
    a format read whole is read by ``read_batch_file``.

    Raises
    ------
    PayloadError
        As ``read_batch_file``; ``chunks()`` as in :func:`load_payload_chunked`.
    """
    p = str(path)

    def whole() -> Batch:
        return read_batch_file(
            p,
            layer=layer,
            crs=crs,
            axis_order=axis_order,
            data_time=data_time,
            batch_id=batch_id,
            producer=producer,
            policy=policy,
        )

    found = _open_footer(p, policy)
    if found is None:
        return whole()
    opened, mtime = found
    if axis_order is not None and axis_order not in AXIS_ORDERS:
        raise _fail(p, f"bad axis order {axis_order!r}: expected one of {AXIS_ORDERS}")
    if data_time is None:
        data_time = mtime or datetime.now(timezone.utc)
    elif data_time.tzinfo is None:
        raise _fail(p, "data_time must be timezone-aware (UTC)")
    meta = Batch(
        batch_id=batch_id or str(uuid.uuid4()),
        layer=layer,
        producer=producer,
        data_time=data_time,
        produced_at=datetime.now(timezone.utc),
        declared_crs=crs if crs is not None else opened.declared_crs,
        axis_order=axis_order or "east_north",  # type: ignore[arg-type]
        schema_fields=(),
        feature_count=opened.rows,
        geometries_wkb=(),
        attributes=opened.attributes,
        edges=opened.edges,
        orientation=opened.orientation,
        metadata_name=opened.metadata_name,
        file_claims=opened.file_claims,
        crs_conflict=crs_conflict(
            opened.declared_crs if opened.crs_stated else None,
            crs,
            opened.crs_source,
            BY_OPTION,
        ),
    )
    return _chunked(p, opened, meta, policy, chunk_rows, chunk_bytes)
