"""Avro BatchArrival events to :class:`worker.core.model.Batch`, and the column types.

The encoder is :mod:`worker.io.codec.event_writer`.

Inline attribute columns carry a logical ``type`` (:data:`worker.core.vocab.FIELD_TYPES`)
and typed values, never coerced: ``integer`` -> int64, ``double`` -> float64, ``string``,
``boolean``, ``binary``; ``timestamp`` -> long microseconds since the epoch, decoded as
``timestamp[us, tz=UTC]``; ``date`` -> long days since the epoch, decoded as ``date32``.
Every other logical type (``decimal``, ``time``, ``duration``, the nested ``struct``,
``list`` and ``map``, and the batch-only ``mixed`` and ``other``) travels as text: each value
as JSON (a string column read as text, e.g. ``mixed``, as it is), decoded as a ``string``
column whose field metadata keeps the logical type, so the schema clause judges the same
field type inline as in the file.
Decoders raise :class:`worker.core.errors.DecodeError`;
:func:`worker.io.codec.event_writer.encode_batch` raises :class:`worker.core.errors.BatchError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from worker.core._util.text import clip
from worker.core.errors import DecodeError
from worker.core.model import Batch, FieldSpec
from worker.core.vocab import BATCH_ONLY_FIELD_TYPES, FIELD_TYPES, LOGICAL_TYPE_KEY
from worker.io.codec.avro import (
    BATCH_ARRIVAL,
    BATCH_ARRIVAL_EDGES,
    BATCH_ARRIVAL_PLANAR,
    _read,
)

__all__ = [
    "MAX_FEATURE_ID_CHARS",
    "TEXT_TYPES",
    "batch_from_event",
    "cap_feature_id",
    "decode_batch",
    "decode_event",
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
TEXT_TYPES = frozenset(FIELD_TYPES + BATCH_ONLY_FIELD_TYPES) - set(_ARROW)


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
    if logical not in _ARROW and logical not in TEXT_TYPES:
        raise DecodeError(f"column {name!r} has unknown logical type {logical!r}")
    if len(values) != n:
        raise DecodeError(f"column {name!r} has {len(values)} values for {n} geometries")
    want = str if logical in TEXT_TYPES else _PYTHON[logical]
    kinds = set(map(type, values))  # one pass in C; the row is looked for only if wrong
    kinds.discard(type(None))
    if kinds - {want}:
        i, v = next((i, v) for i, v in enumerate(values) if v is not None and type(v) is not want)
        raise DecodeError(
            f"column {name!r} of type {logical} holds a {type(v).__name__} at row {i}"
        )
    if logical in TEXT_TYPES:
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
        # empty one was admitted, and `quarantine show ""` finds nothing
        raise DecodeError("batch_id is empty: every batch needs an id that names it")
    if len(batch_id) > MAX_BATCH_ID_CHARS:
        raise DecodeError(
            f"batch_id is {len(batch_id)} characters long, more than {MAX_BATCH_ID_CHARS}: it "
            "is echoed into every output record and header of the batch"
        )
    feats = record["features"]
    if feats is not None and record["payload_uri"] is not None:
        # which one would a consumer read? the gate judged the inline features, a consumer
        # following the URI would read something never judged
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
    return tuple(cap_feature_id(v) if isinstance(v, str) else v for v in value)


def cap_feature_id(text: str) -> str:
    """A feature id cut to at most :data:`MAX_FEATURE_ID_CHARS` characters.

    Parameters
    ----------
    text : str
        A feature id as sent or read (untrusted).

    Returns
    -------
    str
        ``text``, or its start with the cut marked by a final "…" (idempotent: a capped id
        read back stays as it is).
    """
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
