"""The event codec of the data plane: a BatchArrival in, its output records out.

In: Avro BatchArrival bytes to a :class:`worker.core.model.Batch` (:func:`decode_batch`;
the encoder is :mod:`worker.io.codec.event_writer`). Inline attribute columns carry a
logical ``type`` and typed values, never coerced (:func:`worker.core.columns.typed_column`):
types without an Avro counterpart (``decimal``, ``time``, ``struct``, ``mixed``, ...)
travel as JSON text, decoded as a ``string`` column whose field metadata keeps the logical
type, so the schema clause judges the same field type inline as in the file.

Out: the QuarantineRecord and EvaluationRecords of a decided event
(:func:`encode_quarantine`, :func:`encode_evaluation`; read back by
:mod:`worker.io.codec.records`). ``measured``/``expected`` travel as JSON text (sorted
keys), bounded; timestamps are ``timestamp-millis`` (naive datetimes read as UTC).

The Avro layer behind both, schemas and checked read/write, is :mod:`worker.io.codec.avro`.
Decoders raise :class:`worker.core.errors.DecodeError`; encoders
:class:`worker.core.errors.ContractGateError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from worker.core._util.jsonsafe import bounded_json_text
from worker.core._util.text import clip
from worker.core.columns import typed_column
from worker.core.errors import ContractGateError, DecodeError
from worker.core.event_batches import (
    MAX_FEATURE_ID_CHARS,
    Rows,
    cap_feature_id,
    checked_edges,
    checked_feature_ids,
    checked_orientation,
    event_batch,
)
from worker.core.model import (
    Batch,
    ClauseResult,
    Decision,
    FieldSpec,
    QuarantineReason,
    VersionVerdict,
)
from worker.core.offenders import measured_json
from worker.io.codec import avro
from worker.io.codec.arrival_reader import read_batch_arrival
from worker.io.codec.avro import (
    BATCH_ARRIVAL,
    BATCH_ARRIVAL_EDGES,
    BATCH_ARRIVAL_PLANAR,
    EVALUATION_RECORD,
    QUARANTINE_RECORD,
    RecordParts,
    _long,
    _read,
    _string,
    _utc,
    _validate,
    joined,
)
from worker.io.codec.checked import _write

__all__ = [
    "MAX_FEATURE_ID_CHARS", "MAX_MESSAGE_CHARS", "MAX_OFFENDER_CHARS", "MAX_VALUE_CHARS",
    "batch_from_event", "cap_feature_id", "decode_batch", "decode_event", "encode_evaluation",
    "encode_quarantine",
]  # fmt: skip


def decode_event(data: bytes) -> dict[str, Any]:
    """Decode BatchArrival bytes to the raw record (dict shaped as the Avro schema).

    Raises
    ------
    DecodeError
        The bytes are not one complete BatchArrival record.
    """
    if type(data) is bytes and (record := read_batch_arrival(data)) is not None:
        return record  # the reader written for its fields; anything else, fastavro's:
    return _decoded(data)


def _decoded(data: bytes) -> dict[str, Any]:
    """:func:`decode_event` by fastavro alone: the planar layout, else with edges, else
    with feature ids; the planar read's error (:mod:`worker.io.codec.arrival_reader` reads
    the same records, and gives up on any other bytes)."""
    what = "BatchArrival record"
    try:
        record = _read(BATCH_ARRIVAL_PLANAR, data, what)
        # the defaults the missing trailing fields stand for (the record is fastavro's new dict)
        record["edges"] = record["orientation"] = record["feature_ids"] = None
        return record
    except DecodeError as planar:
        try:  # an event that carries edges / orientation (two trailing fields)
            return {**_read(BATCH_ARRIVAL_EDGES, data, what), "feature_ids": None}
        except DecodeError:
            pass
        try:  # ... and feature ids (a third)
            return _read(BATCH_ARRIVAL, data, what)
        except DecodeError:
            raise planar from None


#: Longest batch id an event may carry (characters).
MAX_BATCH_ID_CHARS = 1024


def batch_from_event(
    record: Mapping[str, Any],
    table: pa.Table | Rows | None = None,
    schema_fields: tuple[FieldSpec, ...] | None = None,
) -> Batch:
    """Build a :class:`Batch` from a decoded BatchArrival record.

    An event without inline features gives a Batch with no geometries, an empty attribute
    table and ``payload_uri`` set: load it with :func:`worker.io.payloads.load_payload`.
    ``table``: the attribute table of the record's columns when built already (several
    events' columns built at once: :func:`worker.io.codec.event_groups.batches_from_events`,
    which builds only columns of distinct names: the names are not checked again);
    ``schema_fields``: those of the batch instead of the record's declared ones.

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
        if table is None:
            names = [c["name"] for c in feats["columns"]]
            if len(set(names)) != len(names):
                raise DecodeError(f"duplicate column names in {names}")
            table = attribute_table(feats["columns"], len(geoms))
    return event_batch(
        batch_id=record["batch_id"],
        layer=record["layer"],
        producer=record["producer"],
        data_time=record["data_time"],
        produced_at=record["produced_at"],
        declared_crs=record["declared_crs"],
        axis_order=record["axis_order"],
        schema_fields=_declared(record) if schema_fields is None else schema_fields,
        feature_count=record["feature_count"],
        geometries_wkb=geoms,
        attributes=table,
        payload_uri=record["payload_uri"],
        edges=checked_edges(record.get("edges")),
        orientation=checked_orientation(record.get("orientation")),
        feature_ids=checked_feature_ids(record.get("feature_ids"), len(geoms)),
    )


def _declared(record: Mapping[str, Any]) -> tuple[FieldSpec, ...]:
    return tuple(FieldSpec(f["name"], f["type"], f["nullable"]) for f in record["schema_fields"])


def attribute_table(columns: Sequence[Mapping[str, Any]], n: int) -> pa.Table:
    """The Arrow table of an event's inline ``columns`` (``name``, ``type``, ``values``)
    for ``n`` geometries (:func:`~worker.core.columns.typed_column` each).

    Raises
    ------
    DecodeError
        A column of an unknown type, not ``n`` values or values of another type.
    """
    if not columns:
        return pa.table({"_": pa.nulls(n)}).drop_columns(["_"])
    fields, arrays = zip(
        *(typed_column(c["name"], c["type"], c["values"], n) for c in columns), strict=True
    )
    return pa.Table.from_arrays(list(arrays), schema=pa.schema(fields))


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


# -- the records of a decided event: QuarantineRecord, EvaluationRecord --------------------

#: Longest JSON text of one echoed ``measured`` / ``expected`` value, in characters.
MAX_VALUE_CHARS = 4000
#: Longest echoed message, in characters.
MAX_MESSAGE_CHARS = 2000
#: Longest JSON text of one reason's offending features, in characters: a reason carries
#: the first offenders that fit (at most ``MAX_OFFENDERS`` = 100) and their total, so a
#: quarantine record of R reasons stays below R x (4000 + 12000) characters of JSON.
MAX_OFFENDER_CHARS = 12000


def _bounded_json(value: Any) -> str | None:
    return bounded_json_text(value, MAX_VALUE_CHARS)


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
    none); ``diagnoses`` default to the decision's. Each reason carries its clause's
    ``kind`` (:attr:`QuarantineReason.kind`, from the broken ClauseResult). ``measured``,
    ``expected`` and ``message`` are bounded (:data:`MAX_VALUE_CHARS`,
    :data:`MAX_MESSAGE_CHARS`): a 10 MB attribute value is echoed as its head and its
    length, never in full.
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
                "measured": measured_json(
                    r.measured, r.offenders, MAX_VALUE_CHARS, MAX_OFFENDER_CHARS
                ),
                "expected": _bounded_json(r.expected),
                "message": clip(r.message, MAX_MESSAGE_CHARS),
                "kind": r.kind,
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


def _clause_entry(c: ClauseResult) -> dict[str, Any]:
    """The EvaluationRecord entry of one clause result (written once per result object,
    as :func:`_clause_bytes`: :meth:`RecordParts.items`)."""
    return {
        "name": c.name,
        "kind": c.kind,
        "result": c.result,
        "on_break": c.on_break,
        "measured": _bounded_json(c.measured),
        "expected": None,  # the version names them (a 100,000-code domain: megabytes)
        "message": clip(c.message, MAX_MESSAGE_CHARS),
    }


def _clause_bytes(c: ClauseResult) -> bytes:
    """The bytes of :func:`_clause_entry` of ``c`` (:meth:`RecordParts.item`) written by
    its fields' own writers, without the entry's dict. A value no writer takes (None for
    it) raises TypeError: :func:`encode_evaluation` then writes the record whole."""
    text, message = _bounded_json(c.measured), clip(c.message, MAX_MESSAGE_CHARS)
    return b"".join((_NAME(c.name), _KIND(c.kind), _RESULT(c.result), _ON_BREAK(c.on_break),
                     _MEASURED(text), _NO_EXPECTED, _MESSAGE(message)))  # type: ignore[arg-type]  # fmt: skip


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

    ``measured`` and ``message`` are bounded (:func:`_bounded_json`, :func:`clip`);
    ``expected`` is null: the clause's parameters are those of the named, immutable
    version (readers such as :func:`worker.core.lifecycle.evidence.summarise` take them from it).

    ``diagnoses`` default to those of the verdict's broken clauses, deduplicated in order.
    """
    clauses = verdict.clauses
    if diagnoses is None:  # (the result compared: ClauseResult.broke is a property call)
        broken = [c.diagnoses for c in clauses if c.result == "break"]
        diagnoses = list(dict.fromkeys(d for ds in broken for d in ds)) if broken else []
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
        "diagnoses": list(diagnoses),
    }
    entries = [_clause_entry(c) for c in clauses] if avro.validate_writes else None
    try:  # the record's bytes from its parts: those of the record written whole
        if entries is not None:  # the test suite's: the whole record checked first
            _validate(EVALUATION_RECORD, {**record, "clauses": entries}, ())
        items = _EVALUATION_PARTS.items(clauses, _clause_bytes)
        first, last = _string(batch_id), _long(source_offset)
        if first is None or last is None or diagnoses:
            return _EVALUATION_PARTS.write(record, items)
        # write()'s runs, inline: no diagnoses (an empty array after the clauses)
        return joined((first, _HEAD.encoded(record), last), items, _NO_DIAGNOSES)
    except Exception:  # fastavro's whole-record write names the field that does not fit
        record["clauses"] = [_clause_entry(c) for c in clauses]
        return _write(EVALUATION_RECORD, record, f"EvaluationRecord {batch_id}", ContractGateError)


_EVALUATION_PARTS = RecordParts(EVALUATION_RECORD, "clauses", repeated=avro.EVALUATION_REPEATED)
#: Its runs: the batch id, _HEAD (the repeated fields up to the offset), the offset; after
#: the array, the diagnoses (tests/io/test_record_parts.py checks them).
_HEAD = _EVALUATION_PARTS.runs[0][1]
#: The clause entry's fields' own writers (its expected is null: one byte, always the same).
_NAME, _KIND, _RESULT, _ON_BREAK, _MEASURED, _EXPECTED, _MESSAGE = map(
    _EVALUATION_PARTS.item_writer.__getitem__,
    ("name", "kind", "result", "on_break", "measured", "expected", "message"),
)
_NO_EXPECTED = _EXPECTED(None)
#: The diagnoses of a record without any: an empty array (its end, a long 0).
_NO_DIAGNOSES = (b"\x00",)
