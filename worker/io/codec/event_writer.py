"""A :class:`worker.core.model.Batch` to Avro BatchArrival bytes (:func:`encode_batch`).

Column values are written as the logical types of :mod:`worker.io.codec.events` say; an
encoding failure raises :class:`worker.core.errors.BatchError`.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from worker.core.columns import TEXT_TYPES
from worker.core.errors import BatchError
from worker.core.model import Batch
from worker.io.codec.avro import (
    BATCH_ARRIVAL,
    BATCH_ARRIVAL_EDGES,
    BATCH_ARRIVAL_PLANAR,
    _utc,
)
from worker.io.codec.checked import _write
from worker.io.codec.events import cap_feature_id

__all__ = ["encode_batch"]

_INT64_MAX = 2**63 - 1


def _column_values(name: str, col: pa.ChunkedArray, logical: str) -> list[Any]:
    if logical in TEXT_TYPES:
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            return col.to_pylist()
        return [
            None if v is None else json.dumps(v, default=str, ensure_ascii=False)
            for v in col.to_pylist()
        ]
    if logical == "timestamp":
        unit = pa.timestamp("us", tz=col.type.tz)
        return col.cast(unit, safe=False).cast(pa.int64()).to_pylist()
    if logical == "date":
        return col.cast(pa.date32()).cast(pa.int32()).to_pylist()
    if logical == "double":
        return [None if v is None else float(v) for v in col.to_pylist()]
    too_big = pa.types.is_uint64(col.type) and (pc.max(col).as_py() or 0) > _INT64_MAX
    if logical == "integer" and too_big:
        raise BatchError(f"column {name!r}: uint64 values above 2**63 - 1 do not fit a long")
    return col.to_pylist()


def encode_batch(batch: Batch, *, inline: bool = True, payload_uri: str | None = None) -> bytes:
    """Encode ``batch`` as a BatchArrival event.

    Parameters
    ----------
    batch : Batch
        Attributes must have arrow types with a logical equivalent (see
        :func:`worker.io.payloads.derive_schema`).
    inline : bool
        Carry geometries (WKB) and attribute columns in the event; when False the event
        carries metadata only and ``payload_uri`` locates the features. WKB travels as it
        is (an unparseable one too: the worker judges it). A geometry the reader could not
        write as WKB at all (``batch.geometry_errors``) travels as null: the worker counts
        it invalid as a missing geometry, without the reader's reason (``batch publish``
        warns, naming them: :func:`worker.control.publish.unwritten_geometries`).
    payload_uri : str, optional
        Default ``batch.payload_uri``.

    Raises
    ------
    BatchError
        No payload_uri for a non-inline event, an unsupported column type, a value Avro
        cannot carry (e.g. an unsigned integer above 2**63 - 1).
    """
    from worker.io.payloads import derive_schema

    uri = payload_uri if payload_uri is not None else batch.payload_uri
    features = None
    if inline and payload_uri is not None:
        raise BatchError(
            f"batch {batch.batch_id}: an event carries inline features or a payload_uri, not both"
        )
    if inline:
        uri = None  # the features travel inline; a loaded batch's own URI is not repeated
        try:
            specs = derive_schema(batch.attributes)
        except ValueError as exc:
            raise BatchError(f"cannot encode batch {batch.batch_id}: {exc}") from None
        try:
            columns = [
                {
                    "name": s.name,
                    "type": s.type,
                    "values": _column_values(s.name, batch.attributes.column(i), s.type),
                }
                for i, s in enumerate(specs)
            ]
        except (BatchError, pa.ArrowException) as exc:
            raise BatchError(f"cannot encode batch {batch.batch_id}: {exc}") from None
        features = {"geometry_wkb": list(batch.geometries_wkb), "columns": columns}
    elif uri is None:
        raise BatchError(f"batch {batch.batch_id}: an event without inline features needs a uri")
    record = {
        "batch_id": batch.batch_id,
        "layer": batch.layer,
        "producer": batch.producer,
        "data_time": _utc(batch.data_time),
        "produced_at": _utc(batch.produced_at),
        "declared_crs": batch.declared_crs,
        "axis_order": batch.axis_order,
        "schema_fields": [
            {"name": f.name, "type": f.type, "nullable": f.nullable} for f in batch.schema_fields
        ],
        "feature_count": batch.feature_count,
        "features": features,
        "payload_uri": uri,
    }
    what = f"batch {batch.batch_id}"
    ids = _event_ids(batch) if inline else None
    if inline and (batch.edges != "planar" or batch.orientation is not None or ids):
        # trailing fields, written only when not at their defaults: the geometries mean
        # something else than planar WKB, or the file named its features
        record["edges"] = None if batch.edges == "planar" else batch.edges
        record["orientation"] = batch.orientation
        if ids:
            record["feature_ids"] = ids
            return _write(BATCH_ARRIVAL, record, what, BatchError, unchecked=("features",))
        return _write(BATCH_ARRIVAL_EDGES, record, what, BatchError, unchecked=("features",))
    return _write(BATCH_ARRIVAL_PLANAR, record, what, BatchError, unchecked=("features",))


def _event_ids(batch: Batch) -> list[str | int | float | None] | None:
    """``batch.feature_ids`` as the event carries them: one per geometry (else none at
    all), strings clipped to :data:`MAX_FEATURE_ID_CHARS`, integers beyond a long as text."""
    ids = batch.feature_ids
    if ids is None or len(ids) != len(batch.geometries_wkb) or all(i is None for i in ids):
        return None
    out: list[str | int | float | None] = []
    for i in ids:
        if isinstance(i, bool):
            out.append(str(i))
        elif isinstance(i, int) and not -(2**63) <= i <= _INT64_MAX:
            out.append(cap_feature_id(str(i)))
        elif isinstance(i, str):
            out.append(cap_feature_id(i))
        else:
            out.append(i)
    return out
