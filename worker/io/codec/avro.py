"""Avro plumbing shared by every record kind: the parsed schemas and checked read/write.

Schemas (namespace ``gis.contract``; docs/design.md section 6) are read from ``schemas/*.avsc`` and
parsed once at import. :func:`_read` raises :class:`worker.core.errors.DecodeError` with a
specific reason on any failure (truncated bytes, trailing bytes, invalid enum or union index,
non-UTF-8 text); no other exception escapes.

:class:`RecordParts`: a record's bytes assembled from fastavro-encoded parts. Avro's
binary encoding of a record is the concatenation of its fields' encodings, in the
schema's order, and fastavro writes an array as one block: the item count (a ``long``),
the items, then a ``long`` 0 (an empty array is the 0 alone). The fields before and
after one array field are each encoded by fastavro with a record schema of those fields
(or, given ``repeated`` fields, each field alone with its type, a repeated one kept per
value), the items with the item schema, the count and the terminator as ``long``: every
byte is fastavro's. Items shared between records (the clause entries of a poll batch's
passing events) are encoded once, and so are the fields a poll batch's evaluation
records share (layer, version, evaluation time). A test compares the assembled bytes
with the whole-record encoding on every record kind and generated values
(``tests/io/test_record_parts.py``).
"""

from __future__ import annotations

import io
import json
from collections.abc import Collection, Hashable, Mapping, Sequence
from datetime import datetime, timezone
from importlib import resources
from typing import Any

import fastavro
import fastavro.validation

from worker.core.errors import DecodeError
from worker.io.codec.read_errors import read_error
from worker.io.codec.subschemas import referenced, sub_record


def _schema_without(name: str, fields: tuple[str, ...]) -> Any:
    doc = json.loads(resources.files("worker").joinpath(f"schemas/{name}.avsc").read_text("utf-8"))
    doc["fields"] = [f for f in doc["fields"] if f["name"] not in fields]
    return fastavro.parse_schema(doc)


def _schema(name: str) -> Any:
    text = resources.files("worker").joinpath(f"schemas/{name}.avsc").read_text("utf-8")
    return fastavro.parse_schema(json.loads(text))


BATCH_ARRIVAL = _schema("batch_arrival")
#: BatchArrival without the trailing ``edges``, ``orientation`` and ``feature_ids`` fields:
#: what producers wrote before them, and what the gate still writes when they hold their
#: defaults (so readers with the earlier schema keep reading every planar batch byte for
#: byte).
BATCH_ARRIVAL_PLANAR = _schema_without("batch_arrival", ("edges", "orientation", "feature_ids"))
#: BatchArrival without the trailing ``feature_ids``: events that carry edges/orientation
#: and no feature ids (written so since those two fields exist).
BATCH_ARRIVAL_EDGES = _schema_without("batch_arrival", ("feature_ids",))
QUARANTINE_RECORD = _schema("quarantine_record")
CONTRACT_RECORD = _schema("contract_record")
#: ContractRecord without the trailing ``supersedes`` field: what publishers wrote before
#: it, and what is still written when it is empty (records keep their earlier bytes).
CONTRACT_RECORD_PLAIN = _schema_without(
    "contract_record", ("supersedes", "record_kind", "builds_on")
)
#: ContractRecord up to ``supersedes``: records written before the compaction-proof
#: history (issue 30) that supersede earlier revisions.
CONTRACT_RECORD_SUPERSEDES = _schema_without("contract_record", ("record_kind", "builds_on"))
EVALUATION_RECORD = _schema("evaluation_record")
#: The EvaluationRecord fields whose values repeat within a poll batch, kept per value by
#: :class:`RecordParts` (the batch id and source offset change from record to record).
EVALUATION_REPEATED = (
    "layer", "version", "mode", "passed", "evaluated_at", "data_time", "source_topic",
    "diagnoses",
)  # fmt: skip
CONSUMER_DECLARATION = _schema("consumer_declaration")


def _write(
    schema: Any,
    record: Mapping[str, Any],
    what: str,
    error: type[Exception],
    *,
    unchecked: tuple[str, ...] = (),
) -> bytes:
    """Encode ``record``; raise ``error`` naming the field when it does not fit ``schema``.

    fastavro's writer refuses a value of the wrong type, a missing required field and an
    unmatched union branch by itself, so the record is written first and validated (for a
    message that names the field) only when the write fails, or when ``validate_writes``
    is on (the test suite sets it, so every record kind written there is also validated).
    The ``unchecked`` fields are checked by the caller. Validating every record before
    writing it cost about a quarter of the per-event time of one-feature batches.
    """
    out = io.BytesIO()
    try:
        if validate_writes:
            _validate(schema, record, unchecked)
        fastavro.schemaless_writer(out, schema, dict(record))
    except Exception as exc:  # fastavro raises ValueError, TypeError, OverflowError, ...
        raise error(f"cannot encode {what}: {_named(exc, schema, record, unchecked)}") from None
    return out.getvalue()


def _named(
    exc: Exception, schema: Any, record: Mapping[str, Any], unchecked: tuple[str, ...]
) -> str:
    """The validator's account of a failed write (it names the field), else the writer's."""
    try:
        _validate(schema, record, unchecked)
    except Exception as named:
        return f"{type(named).__name__}: {named}"
    return f"{type(exc).__name__}: {exc}"


def _validate(schema: Any, record: Mapping[str, Any], unchecked: tuple[str, ...]) -> None:
    checked = {k: (None if k in unchecked else v) for k, v in record.items()}
    fastavro.validation.validate(checked, schema, raise_errors=True)


#: Validate every record before writing it (see :func:`_write`); the test suite turns it on.
validate_writes = False


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
        raise DecodeError(f"not a {what}: {read_error(exc, schema, raw)}") from None
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


def _unjson(text: str | None, what: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise DecodeError(f"{what} is not JSON text ({exc})") from None


# -- a record assembled from parts ----------------------------------------------------


class RecordParts:
    """A record's Avro bytes assembled from fastavro-encoded parts (see the module
    docstring): one record schema split around its array field ``field``.

    Parameters
    ----------
    schema : dict
        A record schema parsed by :func:`fastavro.parse_schema` (named types as it keeps
        them: defined once, referenced by full name after).
    field : str
        The name of a field of ``schema`` of type array (else :class:`ValueError`).
    repeated : collection of str, optional
        Fields whose values repeat from record to record (those of a poll batch's
        evaluation records: the layer, the version, the evaluation time): then every other
        field is encoded by fastavro on its own, with its type, and these are kept per
        value (:class:`_Field`); a name that is not another field's is a
        :class:`ValueError`. Default: the fields before and after the array are encoded
        as two records.
    """

    def __init__(
        self, schema: Mapping[str, Any], field: str, *, repeated: Collection[str] = ()
    ) -> None:
        names = [f["name"] for f in schema["fields"]]
        if field not in names:
            raise ValueError(f"{schema.get('name')} has no field {field!r}")
        k = names.index(field)
        array = schema["fields"][k]["type"]
        if not isinstance(array, dict) or array.get("type") != "array":
            raise ValueError(f"field {field!r} of {schema.get('name')} is not an array")
        named = dict(schema.get("__named_schemas", {}))
        self.field = field
        self._before = sub_record(schema, schema["fields"][:k], "before", named)
        self._after = sub_record(schema, schema["fields"][k + 1 :], "after", named)
        self._names = (names[:k], names[k + 1 :])
        self._item = fastavro.parse_schema(referenced(array["items"], set()), dict(named))
        self._counts: dict[int, bytes] = {}
        self._fields: tuple[list[_Field], list[_Field]] | None = None
        if repeated:
            unknown = set(repeated) - set(names) | {field} & set(repeated)
            if unknown:
                raise ValueError(f"{schema.get('name')}: no repeated field {sorted(unknown)}")
            fields = [_Field(f, f["name"] in repeated, named) for f in schema["fields"]]
            self._fields = (fields[:k], fields[k + 1 :])

    def item(self, value: Any) -> bytes:
        """fastavro's encoding of one item of the array (raises what fastavro raises)."""
        return _encoded(self._item, value)

    def write(self, record: Mapping[str, Any], items: Sequence[bytes]) -> bytes:
        """The bytes of ``record`` (its other fields; the array field's value, if any, is
        not read) whose array holds the items encoded as ``items`` (:meth:`item`), in
        order: what :func:`fastavro.schemaless_writer` writes for the whole record."""
        if self._fields is not None:
            before, after = self._fields
            head = b"".join([f.encoded(record[f.name]) for f in before])
            tail = b"".join([f.encoded(record[f.name]) for f in after])
        else:
            names_before, names_after = self._names
            head = self._run(self._before, names_before, record)
            tail = self._run(self._after, names_after, record)
        if not items:
            return b"".join((head, self._count(0), tail))
        return b"".join((head, self._count(len(items)), *items, self._count(0), tail))

    @staticmethod
    def _run(schema: Any, names: list[str], record: Mapping[str, Any]) -> bytes:
        """fastavro's encoding of the fields ``names`` of ``record`` (one record schema)."""
        return _encoded(schema, {n: record[n] for n in names}) if names else b""

    def _count(self, n: int) -> bytes:
        """fastavro's encoding of ``n`` as a ``long`` (kept for the counts seen)."""
        out = self._counts.get(n)
        if out is None:
            out = _encoded("long", n)
            if len(self._counts) < 1024:
                self._counts[n] = out
        return out


def _encoded(schema: Any, value: Any) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema, value)
    return out.getvalue()


#: The most values of one field whose encodings a :class:`RecordParts` keeps.
_MOST_KEPT = 256


class _Field:
    """One field of a :class:`RecordParts`' record encoded on its own (a record's encoding
    is its fields' one after the other): by fastavro with the field's type, and for a
    ``repeated`` field kept per value, so a value seen before costs a dict lookup."""

    def __init__(self, field: Mapping[str, Any], repeated: bool, named: dict[str, Any]) -> None:
        self.name: str = field["name"]
        self._schema = fastavro.parse_schema(referenced(field["type"], set()), dict(named))
        self._kept: dict[Hashable, bytes] | None = {} if repeated else None

    def encoded(self, value: Any) -> bytes:
        """fastavro's encoding of ``value`` as this field's (raises what fastavro raises)."""
        kept = self._kept
        if kept is None:
            return _encoded(self._schema, value)
        key = _value_key(value)
        out = kept.get(key) if key is not None else None
        if out is None:
            out = _encoded(self._schema, value)
            if key is not None:
                if len(kept) >= _MOST_KEPT:
                    kept.clear()
                kept[key] = out
        return out


def _value_key(value: Any) -> Hashable | None:
    """A key equal only for values fastavro encodes alike: the value with its type (``1``,
    ``1.0`` and ``True`` are equal dict keys), lists of str as tuples; None for values
    of other kinds (encoded every time)."""
    t = type(value)
    if value is None or t in (str, bool, int, bytes, datetime):  # not float: -0.0 == 0.0
        return (t, value)
    if t is list and all(type(v) is str for v in value):
        return (list, tuple(value))
    return None
