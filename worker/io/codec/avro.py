"""Avro plumbing shared by every record kind: the parsed schemas and checked reads (the
checked write is :mod:`worker.io.codec.checked`).

Schemas (namespace ``gis.contract``; docs/design.md section 6) are parsed once at import
(:mod:`worker.io.codec.subschemas`). :func:`_read` raises :class:`worker.core.errors.DecodeError`
with a specific reason on any failure (truncated bytes, trailing bytes, invalid enum or union
index, non-UTF-8 text); no other exception escapes.

:class:`RecordParts`: a record's bytes assembled from parts. Avro's binary encoding of a
record is its fields' encodings one after the other, and fastavro writes an array as one
block: the item count (a ``long``), the items, then a ``long`` 0 (an empty array is the 0
alone; :func:`joined`). Strings, longs, enums, arrays of them and unions with null are
written as fastavro writes them (:func:`_writer`), any other value by fastavro (the tests:
``tests/io/test_record_parts.py``, ``test_own_writers.py``).
"""

from __future__ import annotations

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
    CONSUMER_DECLARATION,
    CONTRACT_RECORD,
    CONTRACT_RECORD_PLAIN,
    CONTRACT_RECORD_SUPERSEDES,
    EVALUATION_RECORD,
    EVALUATION_REPEATED,
    QUARANTINE_RECORD,
    split_record,
)

__all__ = [
    "BATCH_ARRIVAL", "BATCH_ARRIVAL_EDGES", "BATCH_ARRIVAL_PLANAR",
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
    buf = BytesIO(raw)
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
        consecutive repeated ones as one run kept per values (:class:`_Run`). Items
        shared between records are encoded once (:meth:`items`).
    """

    def __init__(
        self, schema: Mapping[str, Any], field: str, *, repeated: Collection[str] = ()
    ) -> None:
        before, after, self._item, typed = split_record(schema, field, repeated)
        self.field = field
        self.runs = ([_Run(*r) for r in before], [_Run(*r) for r in after])  # around the array
        self.kept_items: dict[int, tuple[Any, bytes]] = {}
        names, types = typed or ((), ())
        writers = [w for w in map(_writer, types) if w is not None]
        own = len(names) > 1 and len(writers) == len(types)  # (itemgetter of 2+ gives tuples)
        self._item_writers = writers if own else None
        self._item_values = operator.itemgetter(*names) if own else None
        self.item_writer = dict(zip(names, writers)) if own else {}  # noqa: B905 - by field name

    def item(self, value: Any) -> bytes:
        """fastavro's encoding of one item of the array (raises what fastavro raises):
        written by its fields' own writers (:func:`_writer`) when they take every value."""
        writers, values = self._item_writers, self._item_values
        if writers is not None and values is not None and type(value) is dict:
            try:
                parts = [w(v) for w, v in zip(writers, values(value))]  # noqa: B905
            except KeyError:  # a field left out: fastavro's to write its default or refuse
                parts = [None]
            if None not in parts:
                return b"".join(parts)  # type: ignore[arg-type]
        return _encoded(self._item, value)

    def items(self, values: Sequence[Any], item: Callable[[Any], bytes]) -> list[bytes]:
        """``item(v)`` (the bytes of ``v``'s item: :meth:`item` of its entry, say) for each
        of ``values``, in order, each object's written once: kept in :attr:`kept_items` by
        ``id`` (at most :data:`MOST_KEPT_ITEMS`), used only for the very object it was made
        from. Threads may share it (each dict operation is atomic: a race at worst writes
        twice)."""
        kept, out = self.kept_items, []
        for v in values:
            hit = kept.get(id(v))
            if hit is None or hit[0] is not v:
                hit = (v, item(v))
                if len(kept) >= MOST_KEPT_ITEMS:
                    kept.clear()
                kept[id(v)] = hit
            out.append(hit[1])
        return out

    def write(self, record: Mapping[str, Any], items: Sequence[bytes]) -> bytes:
        """The bytes of ``record`` (the array field's value is not read) whose array holds
        ``items`` (:meth:`item`): what :func:`fastavro.schemaless_writer` writes."""
        b, a = self.runs  # (the runs before and after the array)
        return joined([r.encoded(record) for r in b], items, [r.encoded(record) for r in a])


def joined(head: Sequence[bytes], items: Sequence[bytes], tail: Sequence[bytes]) -> bytes:
    """A record's bytes: its fields before its array (``head``), the array of ``items`` as
    one block, the fields after it (``tail``); the end of :meth:`RecordParts.write`, of
    ``events.encode_evaluation``'s inline path and of an own writer's array."""
    if not items:
        return b"".join((*head, b"\x00", *tail))
    return b"".join((*head, _varint(len(items) << 1), *items, b"\x00", *tail))


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
        self._own = _writer(self._schema) if self._one else None

    def encoded(self, record: Mapping[str, Any]) -> bytes:
        """fastavro's encoding of this run's fields of ``record`` (raises what it raises)."""
        return self.of_values(self._values(record))

    def of_values(self, values: Any) -> bytes:
        """fastavro's encoding of the run's ``values`` (one field: its value); one field
        its own writer takes (:func:`_writer`) is written, not kept (cheaper than a key)."""
        if self._own is not None and (out := self._own(values)) is not None:
            return out
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
    ``1.0``, ``True`` are equal keys); else None (not kept)."""
    t = type(value)
    if value is None or t in (str, bool, int, bytes, datetime):  # not float: -0.0 == 0.0
        return (t, value)
    return None


# -- fastavro's bytes of a few types (Avro 1.11: zig-zag varint longs, length-prefixed UTF-8)
_LONGS = (-(1 << 63), (1 << 63) - 1)  # fastavro refuses a long outside them
_SMALL = [bytes((n,)) for n in range(128)]


def _varint(n: int) -> bytes:
    """``n`` >= 0 seven bits a byte, low groups first, the high bit set on all but the last."""
    if n < 128:
        return _SMALL[n]
    if n < 16384:
        return bytes((n & 127 | 128, n >> 7))
    out = bytearray()
    while n > 127:
        out.append(n & 127 | 128)
        n >>= 7
    out.append(n)
    return bytes(out)


def _long(value: Any) -> bytes | None:
    """A ``long``: zig-zag (0, -1, 1, -2... as 0, 1, 2, 3...), then :func:`_varint`."""
    if type(value) is not int or not _LONGS[0] <= value <= _LONGS[1]:
        return None
    return _varint((value << 1) ^ (value >> 63))


def _string(value: Any) -> bytes | None:
    """A ``string``: its UTF-8 bytes' length (a long), then the bytes."""
    if type(value) is not str:
        return None
    try:
        data = value.encode()
    except UnicodeEncodeError:  # a lone surrogate: fastavro's to refuse
        return None
    n = len(data) << 1
    return (_SMALL[n] if n < 128 else _varint(n)) + data


def _writer(schema: Any) -> Callable[[Any], bytes | None] | None:
    """The own writer of a parsed ``schema`` (``string``, ``long``, an enum, a union of
    ``null`` and one of these), else None: it gives fastavro's bytes of a value, or None
    for one of another type (which fastavro then writes or refuses)."""
    if schema in ("string", "long"):
        return _string if schema == "string" else _long
    if isinstance(schema, dict) and schema.get("type") == "enum":
        symbols = {s: _varint(i << 1) for i, s in enumerate(schema["symbols"])}
        return lambda v: symbols.get(v) if type(v) is str else None
    if isinstance(schema, dict) and schema.get("type") == "array":
        item = _writer(schema["items"])
        return None if item is None else lambda v: _array(item, v) if type(v) is list else None
    if not (isinstance(schema, list) and len(schema) == 2 and "null" in schema):
        return None
    k = schema.index("null")
    other, null, tag = _writer(schema[1 - k]), _varint(k << 1), _varint((1 - k) << 1)
    if other is None:
        return None
    return lambda v: null if v is None else (None if (out := other(v)) is None else tag + out)


def _array(item: Callable[[Any], bytes | None], values: list[Any]) -> bytes | None:
    """An array as one block: its count, the items (each by ``item``), then a 0."""
    parts = [item(v) for v in values]
    return None if None in parts else joined((), parts, ())  # type: ignore[arg-type]
