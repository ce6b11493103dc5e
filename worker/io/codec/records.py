"""Avro QuarantineRecord, ContractRecord, EvaluationRecord and ConsumerDeclaration.

``measured``/``expected`` travel as JSON text (sorted keys) and decode back to values.
Timestamps are ``timestamp-millis``: encoders take timezone-aware datetimes (naive ones are
read as UTC), decoders return aware UTC datetimes truncated to milliseconds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from importlib import resources
from typing import Any

import fastavro

from worker.core._util.text import clip
from worker.core.errors import ContractGateError, DecodeError
from worker.core.model import Decision, QuarantineReason, VersionVerdict
from worker.core.offenders import Offenders
from worker.io.codec.avro import (
    CONSUMER_DECLARATION,
    CONTRACT_RECORD,
    CONTRACT_RECORD_PLAIN,
    CONTRACT_RECORD_SUPERSEDES,
    EVALUATION_RECORD,
    QUARANTINE_RECORD,
    _json,
    _read,
    _unjson,
    _utc,
    _write,
)

__all__ = [
    "decode_consumer_declaration",
    "decode_contract_record",
    "decode_evaluation",
    "decode_quarantine",
    "encode_consumer_declaration",
    "encode_contract_record",
    "encode_evaluation",
    "encode_quarantine",
    "fit_offenders",
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


#: Longest JSON text of one echoed ``measured`` / ``expected`` value, in characters.
MAX_VALUE_CHARS = 4000
#: Longest echoed message, in characters.
MAX_MESSAGE_CHARS = 2000
#: Longest JSON text of one reason's offending features, in characters: a reason carries
#: the first offenders that fit (at most ``MAX_OFFENDERS`` = 100) and their total, so a
#: quarantine record of R reasons stays below R x (4000 + 12000) characters of JSON.
MAX_OFFENDER_CHARS = 12000


def _bounded_json(value: Any) -> str | None:
    """``_json(value)``, or when longer than :data:`MAX_VALUE_CHARS` the JSON *string* of
    its clipped text (still valid JSON; it decodes to a str ending in the clip marker)."""
    text = _json(value)
    if text is None or len(text) <= MAX_VALUE_CHARS:
        return text
    return json.dumps(clip(text, MAX_VALUE_CHARS))


def fit_offenders(offenders: Offenders, max_chars: int = MAX_OFFENDER_CHARS) -> dict[str, Any]:
    """``offenders.to_json()`` with as many of its first features as fit in ``max_chars``
    characters of JSON (the total is kept, so the reader knows how many were left out)."""
    doc = offenders.to_json()
    budget = max_chars - len(_json({**doc, "features": []}) or "")
    kept = []
    for feature in doc["features"]:
        budget -= len(_json(feature) or "") + 2
        if budget < 0:
            break
        kept.append(feature)
    doc["features"] = kept
    return doc


def _measured_json(measured: Any, offenders: Offenders | None) -> str | None:
    """The reason's ``measured`` JSON text; with offenders, a mapping that adds them under
    ``"offenders"`` (a measured value clipped to :data:`MAX_VALUE_CHARS` goes under
    ``"clipped_measured"``). :func:`decode_quarantine` splits them out again."""
    text = _bounded_json(measured)
    if offenders is None:
        return text
    fitted = fit_offenders(offenders)
    if isinstance(measured, Mapping) and "offenders" not in measured and text and text[0] == "{":
        return _json({**measured, "offenders": fitted})
    return _json({"clipped_measured": _unjson(text, "measured"), "offenders": fitted})


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
                "measured": _measured_json(r.measured, r.offenders),
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
                "measured": _bounded_json(c.measured),
                # contract parameters are never copied: the version names them (a
                # 100,000-code domain clause would make every record megabytes long)
                "expected": None,
                "message": clip(c.message, MAX_MESSAGE_CHARS),
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
