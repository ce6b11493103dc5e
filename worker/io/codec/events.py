"""Avro BatchArrival events to and from :class:`worker.core.model.Batch`.

Inline attribute columns carry a logical ``type`` (:data:`worker.core.model.FIELD_TYPES`)
and typed values, never coerced: ``integer`` -> int64, ``double`` -> float64, ``string``,
``boolean``, ``binary``; ``timestamp`` -> long microseconds since the epoch, decoded as
``timestamp[us, tz=UTC]``; ``date`` -> long days since the epoch, decoded as ``date32``.
Every other logical type (``decimal``, ``time``, ``duration``, the nested ``struct``,
``list`` and ``map``, and the batch-only ``mixed`` and ``other``) travels as text: each value
as JSON (a string column read as text, e.g. ``mixed``, as it is), decoded as a ``string``
column whose field metadata keeps the logical type, so the schema clause judges the same
field type inline as in the file.
Decoders raise :class:`worker.core.errors.DecodeError`; :func:`encode_batch` raises
:class:`worker.core.errors.BatchError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from worker.core._util.text import clip
from worker.core.errors import BatchError, DecodeError
from worker.core.model import (
    BATCH_ONLY_FIELD_TYPES,
    FIELD_TYPES,
    LOGICAL_TYPE_KEY,
    Batch,
    FieldSpec,
)
from worker.io.codec.avro import (
    BATCH_ARRIVAL,
    BATCH_ARRIVAL_EDGES,
    BATCH_ARRIVAL_PLANAR,
    _read,
    _utc,
    _write,
)

__all__ = [
    "MAX_FEATURE_ID_CHARS",
    "batch_from_event",
    "decode_batch",
    "decode_event",
    "encode_batch",
]

#: Longest feature id carried in an event, in characters (longer ones are clipped).
MAX_FEATURE_ID_CHARS = 256

_ARROW = {
    "integer": pa.int64(),
    "double": pa.float64(),
    "string": pa.string(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "timestamp": pa.int64(),
    "date": pa.int32(),
}
_INT64_MAX = 2**63 - 1
_PYTHON: dict[str, type] = {
    "integer": int,
    "double": float,
    "string": str,
    "boolean": bool,
    "binary": bytes,
    "timestamp": int,
    "date": int,
}

#: Logical types carried as JSON text (see the module docstring).
_TEXT = frozenset(FIELD_TYPES + BATCH_ONLY_FIELD_TYPES) - set(_ARROW)


# -- BatchArrival -------------------------------------------------------------------------


def _column_values(name: str, col: pa.ChunkedArray, logical: str) -> list[Any]:
    if logical in _TEXT:
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
            out.append(_cap_id(str(i)))
        elif isinstance(i, str):
            out.append(_cap_id(i))
        else:
            out.append(i)
    return out


def decode_event(data: bytes) -> dict[str, Any]:
    """Decode BatchArrival bytes to the raw record (dict shaped as the Avro schema).

    Raises
    ------
    DecodeError
        The bytes are not one complete BatchArrival record.
    """
    what = "BatchArrival record"
    try:
        record = _read(BATCH_ARRIVAL_PLANAR, data, what)
        # the defaults the missing trailing fields stand for
        return {**record, "edges": None, "orientation": None, "feature_ids": None}
    except DecodeError as planar:
        try:  # an event that carries edges / orientation (two trailing fields)
            return {**_read(BATCH_ARRIVAL_EDGES, data, what), "feature_ids": None}
        except DecodeError:
            pass
        try:  # ... and feature ids (a third)
            return _read(BATCH_ARRIVAL, data, what)
        except DecodeError:
            raise planar from None


def _column(col: Mapping[str, Any], n: int) -> tuple[pa.Field, pa.Array]:
    name, logical, values = col["name"], col["type"], col["values"]
    if logical not in _ARROW and logical not in _TEXT:
        raise DecodeError(f"column {name!r} has unknown logical type {logical!r}")
    if len(values) != n:
        raise DecodeError(f"column {name!r} has {len(values)} values for {n} geometries")
    want = str if logical in _TEXT else _PYTHON[logical]
    kinds = set(map(type, values))  # one pass in C; the row is looked for only if wrong
    kinds.discard(type(None))
    if kinds - {want}:
        i, v = next((i, v) for i, v in enumerate(values) if v is not None and type(v) is not want)
        raise DecodeError(
            f"column {name!r} of type {logical} holds a {type(v).__name__} at row {i}"
        )
    if logical in _TEXT:
        meta = {LOGICAL_TYPE_KEY: logical.encode()}
        return pa.field(name, pa.string(), metadata=meta), pa.array(values, pa.string())
    arr = pa.array(values, _ARROW[logical])
    if logical == "timestamp":
        arr = arr.cast(pa.timestamp("us", tz="UTC"))
    elif logical == "date":
        arr = arr.cast(pa.date32())
    return pa.field(name, arr.type), arr


#: Longest batch id an event may carry (characters).
MAX_BATCH_ID_CHARS = 1024


def batch_from_event(record: Mapping[str, Any]) -> Batch:
    """Build a :class:`Batch` from a decoded BatchArrival record.

    An event without inline features gives a Batch with no geometries, an empty attribute
    table and ``payload_uri`` set: load it with :func:`worker.io.payloads.load_payload`.

    Raises
    ------
    DecodeError
        Neither inline features nor a payload_uri, or both; column lengths or value types
        wrong; an empty batch id, or one longer than :data:`MAX_BATCH_ID_CHARS`.
    """
    batch_id = record["batch_id"]
    if not batch_id.strip():
        # the id names the batch in quarantine records, replays and evaluation records: an
        # empty one was admitted, and `quarantine show ""` finds nothing (a fresh-user finding)
        raise DecodeError("batch_id is empty: every batch needs an id that names it")
    if len(batch_id) > MAX_BATCH_ID_CHARS:
        raise DecodeError(
            f"batch_id is {len(batch_id)} characters long, more than {MAX_BATCH_ID_CHARS}: it "
            "is echoed into every output record and header of the batch"
        )
    feats = record["features"]
    if feats is not None and record["payload_uri"] is not None:
        # which one would a consumer read? the gate judged the inline features, a consumer
        # following the URI would read something never judged (found by a new-user session)
        raise DecodeError(
            "the event carries both inline features and a payload_uri "
            f"({clip(str(record['payload_uri']), 200)!r}): a batch travels one way or the other"
        )
    if feats is None:
        if not record["payload_uri"]:
            raise DecodeError("the event carries neither inline features nor a payload_uri")
        geoms: tuple[bytes | None, ...] = ()
        table = pa.table({})
    else:
        geoms = tuple(feats["geometry_wkb"])
        n = len(geoms)
        names = [c["name"] for c in feats["columns"]]
        if len(set(names)) != len(names):
            raise DecodeError(f"duplicate column names in {names}")
        if names:
            fields, arrays = zip(*(_column(c, n) for c in feats["columns"]), strict=True)
            table = pa.Table.from_arrays(list(arrays), schema=pa.schema(fields))
        else:
            table = pa.table({"_": pa.nulls(n)}).drop_columns(["_"])
    return Batch(
        batch_id=record["batch_id"],
        layer=record["layer"],
        producer=record["producer"],
        data_time=record["data_time"],
        produced_at=record["produced_at"],
        declared_crs=record["declared_crs"],
        axis_order=record["axis_order"],
        schema_fields=tuple(
            FieldSpec(f["name"], f["type"], f["nullable"]) for f in record["schema_fields"]
        ),
        feature_count=record["feature_count"],
        geometries_wkb=geoms,
        attributes=table,
        payload_uri=record["payload_uri"],
        edges=_edges(record.get("edges")),
        orientation=_orientation(record.get("orientation")),
        feature_ids=_feature_ids(record.get("feature_ids"), len(geoms)),
    )


def _feature_ids(value: Any, n: int) -> tuple[str | int | float | None, ...] | None:
    """The event's feature ids, checked: one per geometry; strings clipped to
    :data:`MAX_FEATURE_ID_CHARS` (the event is untrusted).

    Raises
    ------
    DecodeError
        Not one id per geometry.
    """
    if value is None:
        return None
    if len(value) != n:
        raise DecodeError(f"feature_ids has {len(value)} ids for {n} geometries")
    return tuple(_cap_id(v) if isinstance(v, str) else v for v in value)


def _cap_id(text: str) -> str:
    """At most :data:`MAX_FEATURE_ID_CHARS` characters, the cut marked by a final "…"
    (idempotent: a capped id read back stays as it is)."""
    if len(text) <= MAX_FEATURE_ID_CHARS:
        return text
    return text[: MAX_FEATURE_ID_CHARS - 1] + "…"


def _edges(value: Any) -> str:
    if value in (None, "planar"):
        return "planar"
    if value != "spherical":
        raise DecodeError(f"edges {clip(str(value), 40)!r}: expected null, planar or spherical")
    return "spherical"


def _orientation(value: Any) -> str | None:
    if value is not None and value != "counterclockwise":
        raise DecodeError(
            f"orientation {clip(str(value), 40)!r}: expected null or counterclockwise"
        )
    return None if value is None else "counterclockwise"


def decode_batch(data: bytes) -> Batch:
    """Decode BatchArrival bytes to a :class:`Batch` (see :func:`batch_from_event`).

    Raises
    ------
    DecodeError
        With a specific reason, on any failure.
    """
    event = decode_event(data)
    try:
        return batch_from_event(event)
    except DecodeError:
        raise
    except Exception as exc:  # e.g. pyarrow refusing a value
        raise DecodeError(f"not a usable BatchArrival: {type(exc).__name__}: {exc}") from None
