"""Avro encoding of every record (fastavro, schemaless; schemas in ``schemas/*.avsc``).

Records (namespace ``gis.contract``; DESIGN.md section 6): BatchArrival, QuarantineRecord,
ContractRecord, EvaluationRecord, ConsumerDeclaration. Each schema is parsed once at import.

Conventions written down once:

* Timestamps are ``timestamp-millis``: encoders take timezone-aware datetimes (naive ones
  are read as UTC), decoders return aware UTC datetimes truncated to milliseconds.
* ``measured``/``expected`` travel as JSON text (sorted keys) and decode back to values.
* Inline attribute columns carry a logical ``type`` (:data:`worker.model.FIELD_TYPES`)
  and typed values, never coerced: ``integer`` -> int64, ``double`` -> float64, ``string``,
  ``boolean``, ``binary``; ``timestamp`` -> long microseconds since the epoch, decoded as
  ``timestamp[us, tz=UTC]``; ``date`` -> long days since the epoch, decoded as ``date32``.

Every decoder raises :class:`worker.errors.DecodeError` with a specific reason on any
failure (truncated bytes, trailing bytes, invalid enum or union index, non-UTF-8 text,
mistyped column values); no other exception escapes. Encoders raise
:class:`worker.errors.BatchError` (batches) or :class:`worker.errors.ContractGateError`.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from importlib import resources
from typing import Any

import fastavro
import fastavro.validation
import pyarrow as pa
import pyarrow.compute as pc

from worker.errors import BatchError, ContractGateError, DecodeError
from worker.model import Batch, Decision, FieldSpec, QuarantineReason, VersionVerdict

__all__ = [
    "DecodeError",
    "batch_from_event",
    "decode_batch",
    "decode_consumer_declaration",
    "decode_contract_record",
    "decode_evaluation",
    "decode_event",
    "decode_quarantine",
    "encode_batch",
    "encode_consumer_declaration",
    "encode_contract_record",
    "encode_evaluation",
    "encode_quarantine",
]


def _schema(name: str) -> Any:
    text = resources.files("worker").joinpath(f"schemas/{name}.avsc").read_text("utf-8")
    return fastavro.parse_schema(json.loads(text))


BATCH_ARRIVAL = _schema("batch_arrival")
QUARANTINE_RECORD = _schema("quarantine_record")
CONTRACT_RECORD = _schema("contract_record")
EVALUATION_RECORD = _schema("evaluation_record")
CONSUMER_DECLARATION = _schema("consumer_declaration")

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


def _write(
    schema: Any,
    record: Mapping[str, Any],
    what: str,
    error: type[Exception],
    *,
    unchecked: tuple[str, ...] = (),
) -> bytes:
    """Validate (except the ``unchecked`` fields, checked by the caller) and encode."""
    out = io.BytesIO()
    try:
        checked = {k: (None if k in unchecked else v) for k, v in record.items()}
        fastavro.validation.validate(checked, schema, raise_errors=True)
        fastavro.schemaless_writer(out, schema, dict(record))
    except Exception as exc:  # fastavro raises ValueError, TypeError, OverflowError, ...
        raise error(f"cannot encode {what}: {type(exc).__name__}: {exc}") from None
    return out.getvalue()


def _reason(exc: BaseException) -> str:
    if "Expected -" in str(exc):
        return f"a negative length prefix ({exc})"
    if isinstance(exc, EOFError) or "unpack" in str(exc) or "buffer" in str(exc):
        return f"truncated bytes ({exc})"
    if isinstance(exc, UnicodeDecodeError):
        return f"a string is not valid UTF-8 ({exc.reason} at byte {exc.start})"
    if isinstance(exc, IndexError):
        return f"invalid enum symbol or union branch index ({exc})"
    return f"{type(exc).__name__}: {exc}"


def _read(schema: Any, data: bytes, what: str) -> dict[str, Any]:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise DecodeError(f"not a {what}: expected bytes, got {type(data).__name__}")
    raw = bytes(data)
    if not raw:
        raise DecodeError(f"not a {what}: empty bytes")
    buf = io.BytesIO(raw)
    try:
        record = fastavro.schemaless_reader(buf, schema, None)
    except Exception as exc:  # a foreign error of any kind means the bytes are bad
        raise DecodeError(f"not a {what}: {_reason(exc)}") from None
    if buf.tell() != len(raw):
        raise DecodeError(
            f"not a {what}: {len(raw) - buf.tell()} trailing bytes after the record "
            "(another schema or concatenated records?)"
        )
    if not isinstance(record, dict):
        raise DecodeError(f"not a {what}: decoded to {type(record).__name__}")
    return record


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def _json(value: Any) -> str | None:
    if value is None:
        return None

    def fallback(v: Any) -> Any:
        return v.item() if hasattr(v, "item") else str(v)  # numpy scalars, then anything

    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=fallback)


def _unjson(text: str | None, what: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise DecodeError(f"{what} is not JSON text ({exc})") from None


# -- BatchArrival -------------------------------------------------------------------------


def _column_values(name: str, col: pa.ChunkedArray, logical: str) -> list[Any]:
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
        :func:`worker.features.derive_schema`).
    inline : bool
        Carry geometries (WKB) and attribute columns in the event; when False the event
        carries metadata only and ``payload_uri`` locates the features.
    payload_uri : str, optional
        Default ``batch.payload_uri``.

    Raises
    ------
    BatchError
        No payload_uri for a non-inline event, an unsupported column type, a value Avro
        cannot carry (e.g. an unsigned integer above 2**63 - 1).
    """
    from worker.features import derive_schema

    uri = payload_uri if payload_uri is not None else batch.payload_uri
    features = None
    if inline:
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
    return _write(BATCH_ARRIVAL, record, what, BatchError, unchecked=("features",))


def decode_event(data: bytes) -> dict[str, Any]:
    """Decode BatchArrival bytes to the raw record (dict shaped as the Avro schema).

    Raises
    ------
    DecodeError
        The bytes are not one complete BatchArrival record.
    """
    return _read(BATCH_ARRIVAL, data, "BatchArrival record")


def _column(col: Mapping[str, Any], n: int) -> pa.Array:
    name, logical, values = col["name"], col["type"], col["values"]
    if logical not in _ARROW:
        raise DecodeError(f"column {name!r} has unknown logical type {logical!r}")
    if len(values) != n:
        raise DecodeError(f"column {name!r} has {len(values)} values for {n} geometries")
    want = _PYTHON[logical]
    for i, v in enumerate(values):
        if v is not None and (type(v) is not want):
            raise DecodeError(
                f"column {name!r} of type {logical} holds a {type(v).__name__} at row {i}"
            )
    arr = pa.array(values, _ARROW[logical])
    if logical == "timestamp":
        return arr.cast(pa.timestamp("us", tz="UTC"))
    return arr.cast(pa.date32()) if logical == "date" else arr


def batch_from_event(record: Mapping[str, Any]) -> Batch:
    """Build a :class:`Batch` from a decoded BatchArrival record.

    An event without inline features gives a Batch with no geometries, an empty attribute
    table and ``payload_uri`` set: load it with :func:`worker.features.load_payload`.

    Raises
    ------
    DecodeError
        Neither inline features nor a payload_uri; column lengths or value types wrong.
    """
    feats = record["features"]
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
            table = pa.table({c["name"]: _column(c, n) for c in feats["columns"]})
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
    )


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


# -- QuarantineRecord ---------------------------------------------------------------------


def encode_quarantine(
    decision: Decision | Sequence[QuarantineReason],
    *,
    batch_id: str | None,
    layer: str | None,
    source_topic: str,
    source_partition: int,
    source_offset: int,
    original: bytes,
    quarantined_at: datetime,
    worker_id: str,
    diagnoses: Sequence[str] | None = None,
    reason_code: str | None = None,
) -> bytes:
    """Encode a QuarantineRecord from a :class:`Decision` (or its reasons).

    ``reason_code`` defaults to the first reason's code (``contract_break`` when there is
    none); ``diagnoses`` default to the decision's.
    """
    reasons = decision.reasons if isinstance(decision, Decision) else tuple(decision)
    if diagnoses is None:
        diagnoses = decision.diagnoses if isinstance(decision, Decision) else ()
    record = {
        "batch_id": batch_id,
        "layer": layer,
        "reason_code": reason_code or (reasons[0].code if reasons else "contract_break"),
        "reasons": [
            {
                "code": r.code,
                "version": r.version,
                "mode": r.mode,
                "clause": r.clause,
                "measured": _json(r.measured),
                "expected": _json(r.expected),
                "message": r.message,
            }
            for r in reasons
        ],
        "diagnoses": list(diagnoses),
        "source_topic": source_topic,
        "source_partition": source_partition,
        "source_offset": source_offset,
        "original": bytes(original),
        "quarantined_at": _utc(quarantined_at),
        "worker_id": worker_id,
    }
    return _write(QUARANTINE_RECORD, record, "QuarantineRecord", ContractGateError)


def decode_quarantine(data: bytes) -> dict[str, Any]:
    """Decode a QuarantineRecord; each reason's ``measured``/``expected`` parsed from JSON."""
    record = _read(QUARANTINE_RECORD, data, "QuarantineRecord")
    for r in record["reasons"]:
        r["measured"] = _unjson(r["measured"], "reasons[].measured")
        r["expected"] = _unjson(r["expected"], "reasons[].expected")
    return record


# -- ContractRecord, EvaluationRecord, ConsumerDeclaration --------------------------------


def encode_contract_record(record: Mapping[str, Any]) -> bytes:
    """Encode a ContractRecord given as a mapping of its fields.

    Keys: layer, version, document (YAML text), digest, mode (enforcing|observing), state
    (active|superseded|retired), change_class (None or major|tightening|minor|none),
    differences (list of {clause, kind, class, reason}; default []), published_at (aware
    datetime), published_by, changelog.
    """
    rec = {"change_class": None, "differences": [], **record}
    rec["published_at"] = _utc(rec["published_at"]) if "published_at" in rec else None
    return _write(CONTRACT_RECORD, rec, f"ContractRecord {rec.get('layer')}", ContractGateError)


def decode_contract_record(data: bytes) -> dict[str, Any]:
    """Decode a ContractRecord to a dict with the keys of :func:`encode_contract_record`."""
    return _read(CONTRACT_RECORD, data, "ContractRecord")


def encode_evaluation(
    verdict: VersionVerdict,
    *,
    batch_id: str,
    data_time: datetime,
    evaluated_at: datetime,
    source_topic: str,
    source_partition: int,
    source_offset: int,
    diagnoses: Sequence[str] | None = None,
) -> bytes:
    """Encode an EvaluationRecord: one batch against one version, every clause result.

    ``diagnoses`` default to those of the verdict's broken clauses, deduplicated in order.
    """
    if diagnoses is None:
        diagnoses = list(dict.fromkeys(d for c in verdict.clauses if c.broke for d in c.diagnoses))
    record = {
        "batch_id": batch_id,
        "layer": verdict.layer,
        "version": verdict.version,
        "mode": verdict.mode,
        "passed": verdict.passed,
        "evaluated_at": _utc(evaluated_at),
        "data_time": _utc(data_time),
        "source_topic": source_topic,
        "source_partition": source_partition,
        "source_offset": source_offset,
        "clauses": [
            {
                "name": c.name,
                "kind": c.kind,
                "result": c.result,
                "on_break": c.on_break,
                "measured": _json(c.measured),
                "expected": _json(c.expected),
                "message": c.message,
            }
            for c in verdict.clauses
        ],
        "diagnoses": list(diagnoses),
    }
    return _write(EVALUATION_RECORD, record, f"EvaluationRecord {batch_id}", ContractGateError)


def decode_evaluation(data: bytes) -> dict[str, Any]:
    """Decode an EvaluationRecord; each clause's ``measured``/``expected`` parsed from JSON."""
    record = _read(EVALUATION_RECORD, data, "EvaluationRecord")
    for c in record["clauses"]:
        c["measured"] = _unjson(c["measured"], "clauses[].measured")
        c["expected"] = _unjson(c["expected"], "clauses[].expected")
    return record


def encode_consumer_declaration(
    consumer: str, layer: str, version: str, declared_at: datetime
) -> bytes:
    """Encode a ConsumerDeclaration (compacted topic, key ``consumer/layer``)."""
    record = {
        "consumer": consumer,
        "layer": layer,
        "version": version,
        "declared_at": _utc(declared_at),
    }
    return _write(CONSUMER_DECLARATION, record, "ConsumerDeclaration", ContractGateError)


def decode_consumer_declaration(data: bytes) -> dict[str, Any]:
    """Decode a ConsumerDeclaration to ``{consumer, layer, version, declared_at}``."""
    return _read(CONSUMER_DECLARATION, data, "ConsumerDeclaration")
