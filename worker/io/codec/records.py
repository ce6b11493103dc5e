"""Avro records read back and the control plane's: QuarantineRecord and EvaluationRecord
decoders (their encoders are the data plane's, :mod:`worker.io.codec.events`),
ContractRecord and ConsumerDeclaration both ways.

``measured``/``expected`` travel as JSON text (sorted keys) and decode back to values.
Timestamps are ``timestamp-millis``: encoders take timezone-aware datetimes (naive ones are
read as UTC), decoders return aware UTC datetimes truncated to milliseconds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from importlib import resources
from typing import Any

import fastavro

from worker.core.errors import ContractGateError, DecodeError
from worker.io.codec.avro import (
    CONSUMER_DECLARATION,
    CONTRACT_RECORD,
    CONTRACT_RECORD_PLAIN,
    CONTRACT_RECORD_SUPERSEDES,
    EVALUATION_RECORD,
    QUARANTINE_RECORD,
    _read,
    _utc,
)
from worker.io.codec.checked import _write
from worker.io.codec.read_errors import _unjson

__all__ = [
    "decode_consumer_declaration",
    "decode_contract_record",
    "decode_evaluation",
    "decode_quarantine",
    "encode_consumer_declaration",
    "encode_contract_record",
]


# -- QuarantineRecord ---------------------------------------------------------------------


def _without_reason_kind() -> Any:
    """QuarantineRecord as written before each reason carried its clause ``kind`` (the
    last field of QuarantineReason): the schema old records are read with."""
    text = resources.files("worker").joinpath("schemas/quarantine_record.avsc").read_text("utf-8")
    doc = json.loads(text)
    for f in doc["fields"]:
        if f["name"] == "reasons":
            items = f["type"]["items"]
            items["fields"] = [g for g in items["fields"] if g["name"] != "kind"]
    return fastavro.parse_schema(doc)


#: QuarantineRecord without the reasons' ``kind`` (records written before it existed).
QUARANTINE_RECORD_NO_KIND = _without_reason_kind()


def decode_quarantine(data: bytes) -> dict[str, Any]:
    """Decode a QuarantineRecord; each reason's ``measured``/``expected`` parsed from JSON,
    and its offending features split out of ``measured`` into ``offenders`` (the mapping of
    :meth:`worker.core.model.Offenders.to_json`, or None). A record written before the
    reasons carried their clause ``kind`` decodes with ``kind`` None.

    Raises
    ------
    DecodeError
        The bytes are not one complete QuarantineRecord of either schema.
    """
    try:
        record = _read(QUARANTINE_RECORD, data, "QuarantineRecord")
    except DecodeError as current:
        try:  # written before the reasons' kind: every reason then has none
            record = _read(QUARANTINE_RECORD_NO_KIND, data, "QuarantineRecord")
        except DecodeError:
            raise current from None
        for r in record["reasons"]:
            r["kind"] = None
    for r in record["reasons"]:
        measured = _unjson(r["measured"], "reasons[].measured")
        r["offenders"] = None
        if isinstance(measured, dict) and isinstance(measured.get("offenders"), dict):
            r["offenders"] = measured.pop("offenders")
            if set(measured) == {"clipped_measured"}:
                measured = measured["clipped_measured"]
        r["measured"] = measured
        r["expected"] = _unjson(r["expected"], "reasons[].expected")
    return record


# -- ContractRecord, EvaluationRecord, ConsumerDeclaration --------------------------------


def encode_contract_record(record: Mapping[str, Any]) -> bytes:
    """Encode a ContractRecord given as a mapping of its fields.

    Keys: layer, version, document (YAML text; empty in a state record), digest, mode
    (enforcing|observing), state (active|superseded|retired), change_class (None or
    major|tightening|minor|none), differences (list of {clause, kind, class, reason};
    default []), published_at (aware datetime), published_by, changelog, supersedes
    (``layer/version`` keys this version supersedes on being applied; default []),
    record_kind (``document`` | ``state`` | None) and builds_on (the config key of the
    layer's previous record, or None).

    Trailing fields at their defaults are not written: a record without ``record_kind``
    and ``builds_on`` has the bytes of one written before they existed, and one without
    ``supersedes`` either the bytes of one written before that.
    """
    rec = {"change_class": None, "differences": [], **record}
    rec["published_at"] = _utc(rec["published_at"]) if "published_at" in rec else None
    what = f"ContractRecord {rec.get('layer')}"
    rec["supersedes"] = list(rec.get("supersedes") or ())
    if rec.get("record_kind") is not None or rec.get("builds_on") is not None:
        rec = {"record_kind": None, "builds_on": None, **rec}
        return _write(CONTRACT_RECORD, rec, what, ContractGateError)
    rec.pop("record_kind", None)
    rec.pop("builds_on", None)
    if rec["supersedes"]:
        return _write(CONTRACT_RECORD_SUPERSEDES, rec, what, ContractGateError)
    rec.pop("supersedes")
    return _write(CONTRACT_RECORD_PLAIN, rec, what, ContractGateError)


def decode_contract_record(data: bytes) -> dict[str, Any]:
    """Decode a ContractRecord to a dict with the keys of :func:`encode_contract_record`
    (``supersedes`` [], ``record_kind`` and ``builds_on`` None for a record without those
    trailing fields).

    Raises
    ------
    DecodeError
        The bytes are not one complete ContractRecord.
    """
    defaults: dict[str, Any] = {"supersedes": [], "record_kind": None, "builds_on": None}
    try:
        return {**_read(CONTRACT_RECORD_PLAIN, data, "ContractRecord"), **defaults}
    except DecodeError as plain:
        for schema in (CONTRACT_RECORD_SUPERSEDES, CONTRACT_RECORD):
            try:  # with the trailing fields of later writers (each adds bytes)
                return {**defaults, **_read(schema, data, "ContractRecord")}
            except DecodeError:
                continue
        raise plain from None


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
