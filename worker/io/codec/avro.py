"""Avro plumbing shared by every record kind: the parsed schemas and checked reads (the
checked write is :mod:`worker.io.codec.checked`).

Schemas (namespace ``gis.contract``; docs/design.md section 6) are parsed once at import
(:mod:`worker.io.codec.subschemas`). :func:`_read` raises :class:`worker.core.errors.DecodeError`
with a specific reason on any failure (truncated bytes, trailing bytes, invalid enum or union
index, non-UTF-8 text); no other exception escapes.

:class:`RecordParts`: a record's bytes assembled from fastavro-encoded parts. Avro's binary
encoding of a record is its fields' encodings one after the other, and fastavro writes an
array as one block: the item count (a ``long``), the items, then a ``long`` 0 (an empty
array is the 0 alone). Every byte is fastavro's: ``tests/io/test_record_parts.py`` compares
the assembled bytes with the whole record's, on every record kind and generated values.
"""

from __future__ import annotations

import io
import operator
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from datetime import datetime, timezone
from io import BytesIO
from typing import Any

import fastavro
import fastavro.validation
from fastavro import schemaless_writer

from worker.core.errors import DecodeError
from worker.io.codec.read_errors import read_error
from worker.io.codec.subschemas import (
    BATCH_ARRIVAL,
    BATCH_ARRIVAL_EDGES,
    BATCH_ARRIVAL_PLANAR,
    CLAUSE_REPEATED,
    CONSUMER_DECLARATION,
    CONTRACT_RECORD,
    CONTRACT_RECORD_PLAIN,
    CONTRACT_RECORD_SUPERSEDES,
    EVALUATION_RECORD,
    EVALUATION_REPEATED,
    QUARANTINE_RECORD,
    check_repeated,
    referenced,
    run_schemas,
)

__all__ = [
    "BATCH_ARRIVAL", "BATCH_ARRIVAL_EDGES", "BATCH_ARRIVAL_PLANAR", "CLAUSE_REPEATED",
    "CONSUMER_DECLARATION", "CONTRACT_RECORD", "CONTRACT_RECORD_PLAIN",
    "CONTRACT_RECORD_SUPERSEDES", "EVALUATION_RECORD", "EVALUATION_REPEATED",
    "QUARANTINE_RECORD", "RecordParts",
]  # fmt: skip


def _validate(schema: Any, record: Mapping[str, Any], unchecked: tuple[str, ...]) -> None:
    checked = {k: (None if k in unchecked else v) for k, v in record.items()}
    fastavro.validation.validate(checked, schema, raise_errors=True)


#: Validate every record before writing it (:func:`worker.io.codec.checked._write`); the test
#: suite turns it on.
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


# -- a record assembled from parts ----------------------------------------------------
class RecordParts:
    """A record's Avro bytes assembled from fastavro-encoded parts (see the module
    docstring): one record schema split around its array field ``field``.

    Parameters
    ----------
    schema : dict
        A record schema parsed by :func:`fastavro.parse_schema`.
    field : str
        The name of a field of ``schema`` of type array (else :class:`ValueError`).
    repeated : collection of str, optional
        Fields whose values repeat from record to record (a poll batch's evaluation
        records' layer, version, evaluation time...): the others are encoded one by one,
        consecutive repeated ones as one run kept per values (:class:`_Run`).
    item_repeated : collection of str, optional
        The same for the fields of the array's items, records (a clause entry's, all but
        ``measured``). Items shared between records are encoded once (:meth:`items`).
    """

    def __init__(
        self,
        schema: Mapping[str, Any],
        field: str,
        *,
        repeated: Collection[str] = (),
        item_repeated: Collection[str] = (),
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
        fields = schema["fields"]
        check_repeated(fields[:k] + fields[k + 1 :], repeated, schema.get("name"))
        self._runs = (
            [_Run(*r) for r in run_schemas(fields[:k], repeated, named)],
            [_Run(*r) for r in run_schemas(fields[k + 1 :], repeated, named)],
        )
        items = referenced(array["items"], set())
        self._item = fastavro.parse_schema(items, dict(named))
        self._counts: dict[int, bytes] = {}
        self.kept_items: dict[int, tuple[Any, bytes]] = {}
        self._item_runs: list[_Run] | None = None
        if item_repeated:
            fields = items.get("fields") if isinstance(items, dict) else None
            check_repeated(fields, item_repeated, f"the items of {field!r}")
            self._item_runs = [_Run(*r) for r in run_schemas(items["fields"], item_repeated, named)]

    def item(self, value: Any) -> bytes:
        """fastavro's encoding of one item of the array (raises what fastavro raises)."""
        runs = self._item_runs
        if runs is None:
            return _encoded(self._item, value)
        return b"".join([r.encoded(value) for r in runs])

    def items(self, values: Sequence[Any], entry: Callable[[Any], Any]) -> list[bytes]:
        """:meth:`item` of ``entry(v)`` for each of ``values``, in order, each object's
        encoded once: kept in :attr:`kept_items` by ``id`` (at most
        :data:`MOST_KEPT_ITEMS`), used only for the very object it was made from. Threads
        may share it (each dict operation is atomic: a race at worst encodes twice)."""
        kept, out = self.kept_items, []
        for v in values:
            hit = kept.get(id(v))
            if hit is None or hit[0] is not v:
                hit = (v, self.item(entry(v)))
                if len(kept) >= MOST_KEPT_ITEMS:
                    kept.clear()
                kept[id(v)] = hit
            out.append(hit[1])
        return out

    def write(self, record: Mapping[str, Any], items: Sequence[bytes]) -> bytes:
        """The bytes of ``record`` (the array field's value is not read) whose array holds
        ``items`` (:meth:`item`): what :func:`fastavro.schemaless_writer` writes."""
        before, after = self._runs
        head = [r.encoded(record) for r in before]
        tail = [r.encoded(record) for r in after]
        if not items:
            return b"".join((*head, self._count(0), *tail))
        return b"".join((*head, self._count(len(items)), *items, self._count(0), *tail))

    def _count(self, n: int) -> bytes:
        """fastavro's encoding of ``n`` as a ``long`` (kept for the counts seen)."""
        out = self._counts.get(n)
        if out is None:
            out = _encoded("long", n)
            if len(self._counts) < 1024:
                self._counts[n] = out
        return out


def _encoded(schema: Any, value: Any) -> bytes:
    out = BytesIO()
    schemaless_writer(out, schema, value)
    return out.getvalue()


#: The most items :meth:`RecordParts.items` keeps.
MOST_KEPT_ITEMS = 1024
#: The most values of one run whose encodings a :class:`RecordParts` keeps.
_MOST_KEPT = 256
#: Types whose equal values of one type fastavro encodes alike (not float: -0.0 == 0.0).
_KEYABLE = frozenset((type(None), str, bool, int, bytes, datetime))


class _Run:
    """Consecutive fields of a :class:`RecordParts`' record: one field encoded by fastavro
    with its type; repeated fields kept per values (one dict lookup), a miss encoded field
    by field, each kept per value (a new data time costs fastavro one call)."""

    def __init__(self, repeated: bool, names: tuple[str, ...], types: tuple[Any, ...]) -> None:
        self.names = names
        self._one = len(names) == 1
        self._values = operator.itemgetter(*names)
        self._schema = types[0]
        self._kept: dict[Hashable, bytes] | None = {} if repeated else None
        self._fields = [] if self._one else [_Run(True, (n,), (t,)) for n, t in zip(names, types)]  # noqa: B905

    def encoded(self, record: Mapping[str, Any]) -> bytes:
        """fastavro's encoding of this run's fields of ``record`` (raises what it raises)."""
        return self.of_values(self._values(record))

    def of_values(self, values: Any) -> bytes:
        """fastavro's encoding of the run's ``values`` (one field: its value)."""
        kept = self._kept
        if kept is None:
            return _encoded(self._schema, values)
        if self._one:
            key = _value_key(values)
        else:  # the common case in C: values whose types key them (else _values_key)
            types = tuple(map(type, values))
            key = (values, types) if _KEYABLE.issuperset(types) else _values_key(values)
        out = kept.get(key) if key is not None else None
        if out is None:
            if self._one:
                out = _encoded(self._schema, values)
            else:
                out = b"".join([f.of_values(v) for f, v in zip(self._fields, values)])  # noqa: B905
            if key is not None:
                if len(kept) >= _MOST_KEPT:
                    kept.clear()
                kept[key] = out
        return out


def _values_key(values: tuple[Any, ...]) -> Hashable | None:
    """A key equal only for tuples of values fastavro encodes alike (:func:`_value_key`)."""
    keys = tuple(map(_value_key, values))
    return None if None in keys else (keys, None)


def _value_key(value: Any) -> Hashable | None:
    """A key equal only for values fastavro encodes alike: the value with its type (``1``,
    ``1.0`` and ``True`` are equal keys), lists of str as tuples; else None (not kept)."""
    t = type(value)
    if value is None or t in (str, bool, int, bytes, datetime):  # not float: -0.0 == 0.0
        return (t, value)
    if t is list and all(type(v) is str for v in value):
        return (list, tuple(value))
    return None
