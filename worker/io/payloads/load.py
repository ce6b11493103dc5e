"""Batch files and by-reference payloads into :class:`worker.core.model.Batch`.

Geometries become WKB ``bytes`` (None for a missing geometry), one per feature, in file
order; attributes become a pyarrow Table with one row per feature, same order. Every failure
raises a :class:`worker.core.errors.PayloadError` (subclass) naming the file and the
problem, never the file's content. Where a payload may be read from and how large it may
be is a :class:`~worker.io.payloads.policy.PayloadPolicy`: an event's ``payload_uri`` is
read under the configured roots only (none by default); an operator's own file
(``check``, ``batch publish``) anywhere, with the same size limits and regular files only.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa

from worker.core._util.text import clip
from worker.core.errors import PayloadCorrupt, PayloadError
from worker.core.model import AXIS_ORDERS, Batch
from worker.io.formats import FORMATS, formats_read
from worker.io.formats.base import FeatureData, _fail, derive_schema
from worker.io.payloads.base import OpenedPayload
from worker.io.payloads.beneath import verified_copies
from worker.io.payloads.crs_evidence import BY_OPTION, crs_conflict
from worker.io.payloads.open import open_payload, with_retries
from worker.io.payloads.policy import UNRESTRICTED, PayloadPolicy

__all__ = [
    "crs_conflict",
    "load_payload",
    "read_batch_file",
    "read_features",
]

T = TypeVar("T")


def read_features(path: str | Path, *, policy: PayloadPolicy = UNRESTRICTED) -> FeatureData:
    """Read the geometries, attributes and CRS claim of a batch file in any format of
    :data:`worker.io.formats.FORMATS` (those not ``by_reference`` only for an operator's
    local file, read without roots).

    ``path`` is a local path, a ``file://`` URI or an ``s3://bucket/key`` URI, opened
    under ``policy`` (default: any location, default size limits; see
    :func:`~worker.io.payloads.open.open_payload`). The format is chosen by the readers'
    magic-byte sniffs, not the suffix. Transient failures are retried ``policy.attempts``
    times.

    Raises
    ------
    PayloadError
        ``PayloadNotAllowed``, ``PayloadUnavailable``, ``PayloadTooLarge``,
        ``PayloadCorrupt`` (not of the format it claims, truncated), or ``PayloadError`` itself:
        not a collection of features, no geometry column, a malformed CRS, an unsupported
        encoding.
    """
    return _read_payload(str(path), policy)[0]


def _read_payload(uri: str, policy: PayloadPolicy) -> tuple[FeatureData, datetime | None]:
    """The features at ``uri`` and the payload's modification time (None if unknown)."""

    def attempt() -> tuple[FeatureData, datetime | None]:
        with open_payload(uri, policy) as src:
            return _parse(src, policy), src.mtime

    return with_retries(attempt, policy)


def _parse(src: OpenedPayload, policy: PayloadPolicy) -> FeatureData:
    """The features of ``src`` read by its format's reader. A format not read by
    reference is refused under roots (an event's payload); malformed content the readers
    did not anticipate (e.g. an integer beyond int64, `geo` metadata that is JSON but not
    an object) is a clear PayloadError, never a crash."""
    reader = FORMATS[src.format]
    if policy.roots is not None and not reader.by_reference:
        raise PayloadCorrupt(
            f"{src.uri}: a {reader.title} file, which is read from an operator's own file "
            f"(check, batch publish) only; {formats_read(by_reference=True)}"
        )
    sidecars = getattr(reader, "sidecars", None)
    if src.path is None or sidecars is None:
        return _guarded(src.uri, lambda: reader.read(src))
    # a reader that opens files by name (GDAL) reads private copies of what was verified,
    # the file and its sidecars, never the name given (issue 31)
    path = Path(src.path)
    limit = policy.limits.get(reader.name, src.size)
    with verified_copies(path.parent, path.name, sidecars(path), limit, src.uri) as (copy, _):
        copied = replace(src, path=str(copy))
        return _guarded(src.uri, lambda: reader.read(copied))


def read_batch_file(
    path: str | Path,
    *,
    layer: str,
    crs: str | None = None,
    axis_order: str | None = None,
    data_time: datetime | None = None,
    batch_id: str | None = None,
    producer: str = "contract-gate-cli",
    policy: PayloadPolicy = UNRESTRICTED,
) -> Batch:
    """Read a batch file (any format of :data:`worker.io.formats.FORMATS`) as one
    :class:`Batch`.

    Parameters
    ----------
    path : str or Path
        The batch file: a local path, ``file://`` or ``s3://`` URI.
    layer : str
        The layer the batch belongs to.
    crs, axis_order : str, optional
        Override the file's CRS claim / axis order (``east_north`` or ``north_east``).
    data_time : datetime, optional
        Time of the data (UTC); default the file's modification time.
    batch_id : str, optional
        Default a new uuid4.
    producer : str
        Producer name recorded in the batch.
    policy : PayloadPolicy
        Where the file may be and how large (default: anywhere, default limits).

    Raises
    ------
    PayloadError
        See :func:`read_features`; also a bad ``axis_order`` value or a naive ``data_time``.
    """
    p = str(path)
    data, mtime = _read_payload(p, policy)
    if axis_order is not None and axis_order not in AXIS_ORDERS:
        raise _fail(p, f"bad axis order {axis_order!r}: expected one of {AXIS_ORDERS}")
    if data_time is None:
        data_time = mtime or datetime.now(timezone.utc)
    elif data_time.tzinfo is None:
        raise _fail(p, "data_time must be timezone-aware (UTC)")
    return Batch(
        batch_id=batch_id or str(uuid.uuid4()),
        layer=layer,
        producer=producer,
        data_time=data_time,
        produced_at=datetime.now(timezone.utc),
        declared_crs=crs if crs is not None else data.declared_crs,
        axis_order=axis_order or data.axis_order,  # type: ignore[arg-type]
        feature_count=len(data.geometries_wkb),
        crs_conflict=crs_conflict(
            data.declared_crs if data.crs_stated else None, crs, data.crs_source, BY_OPTION
        ),
        **_feature_fields(data, str(p)),
    )


def _feature_fields(data: FeatureData, where: str) -> dict[str, Any]:
    """The :class:`Batch` fields a reader's :class:`FeatureData` determines: geometries,
    attributes and their schema (the file's, not a producer's declaration), reader errors,
    the file's geometry column metadata that changes what the geometries mean (and its
    name, for messages), and feature ids. One place, so a field the readers add reaches
    every batch built from a file."""
    try:
        fields = derive_schema(data.attributes)
    except ValueError as exc:
        raise _fail(where, str(exc)) from None
    return {
        "geometries_wkb": data.geometries_wkb,
        "attributes": data.attributes,
        "schema_fields": fields,
        "geometry_errors": data.geometry_errors,
        "edges": data.edges,
        "orientation": data.orientation,
        "covering_bbox": data.covering_bbox,
        "feature_ids": data.feature_ids,
        "coordinate_bounds": data.coordinate_bounds,
        "file_claims": data.file_claims,
        "metadata_name": data.metadata_name,
        "covering_name": data.covering_name,
    }


def load_payload(
    uri: str,
    event: Batch | None = None,
    *,
    layer: str | None = None,
    crs: str | None = None,
    axis_order: str | None = None,
    data_time: datetime | None = None,
    batch_id: str | None = None,
    producer: str = "contract-gate-cli",
    policy: PayloadPolicy | None = None,
) -> Batch:
    """Load the features at an event's ``payload_uri``.

    Parameters
    ----------
    uri : str
        ``file://`` or ``s3://`` URI (or absolute path) of a file in a format read by
        reference.
    event : Batch, optional
        The decoded event (metadata, usually no inline features). When given, the result
        is the event with the file's geometries and attributes: the event's metadata wins
        (``declared_crs`` and ``axis_order`` are the producer's declaration; a file whose
        own CRS statement says another CRS gets :attr:`Batch.crs_conflict`, which breaks
        the crs clause, see :func:`crs_conflict`; ``schema_fields`` are derived from the
        file's columns, whatever the event declared; ``feature_count`` stays the declared count).
    layer, crs, axis_order, data_time, batch_id, producer
        Without ``event``: as for :func:`read_batch_file` (``layer`` is then required).
    policy : PayloadPolicy, optional
        Roots and limits; default ``PayloadPolicy()``: no root, so every URI is refused
        with ``payload_not_allowed`` (a producer must not make the worker read arbitrary
        files). The worker passes the one built from its settings.

    Returns
    -------
    Batch
        With ``payload_uri`` set to ``uri``.

    Raises
    ------
    PayloadError
        No event and no layer, or any failure of :func:`read_features`.
    """
    policy = policy if policy is not None else PayloadPolicy()
    if event is None:
        if layer is None:
            raise PayloadError(f"{uri}: load_payload needs the decoded event or a layer")
        batch = read_batch_file(
            uri,
            layer=layer,
            crs=crs,
            axis_order=axis_order,
            data_time=data_time,
            batch_id=batch_id,
            producer=producer,
            policy=policy,
        )
        return replace(batch, payload_uri=uri)
    data = read_features(uri, policy=policy)
    # The schema is the file's, not the event's declaration: the file is what is evaluated
    # (a retyped column was admitted by reference while `check` of the same file broke the
    # schema clause).
    conflict = crs_conflict(
        data.declared_crs if data.crs_stated else None, event.declared_crs, data.crs_source
    )
    return replace(event, payload_uri=uri, crs_conflict=conflict, **_feature_fields(data, uri))


def _guarded(uri: str, read: Callable[[], T]) -> T:
    """``read()``, with the malformed content errors of :func:`_parse` as PayloadErrors."""
    try:
        return read()
    except PayloadError:
        raise
    except (
        ValueError,
        TypeError,
        AttributeError,
        KeyError,
        OverflowError,
        pa.ArrowException,
    ) as exc:
        what = clip(" ".join(str(exc).split()), 200)
        raise _fail(uri, f"cannot read the batch file: {type(exc).__name__}: {what}") from None
