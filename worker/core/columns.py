"""Logical field types (:data:`worker.core.vocab.FIELD_TYPES`) and Arrow columns, both ways.

Pure: one Arrow table in, its logical schema out. Every reader (:mod:`worker.io.formats`)
and the inline events of the gate (:func:`worker.gate.route.route`, which judges the
columns sent, not the producer's declaration) derive a batch's schema with the same
:func:`derive_schema`, so the schema clause sees the same field types whichever way a
batch travels. :func:`typed_column` is the other way: plain values of a logical type (an
event's inline column) to an Arrow column.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from worker.core.errors import DecodeError
from worker.core.model import LOGICAL_TYPE_KEY, FieldSpec
from worker.core.vocab import BATCH_ONLY_FIELD_TYPES, FIELD_TYPES

__all__ = ["TEXT_TYPES", "derive_schema", "typed_column"]


def derive_schema(table: pa.Table) -> tuple[FieldSpec, ...]:
    """Logical schema of an attribute table (:data:`worker.core.model.FIELD_TYPES`).

    Integer types of any width -> ``integer``; floating -> ``double``; string,
    large_string and string_view -> ``string``; bool -> ``boolean``; timestamp ->
    ``timestamp``; date32/64 -> ``date``; binary types -> ``binary``; decimal -> ``decimal``;
    time32/64 -> ``time``; duration -> ``duration``; struct -> ``struct``; list,
    large_list and fixed_size_list -> ``list``; map -> ``map``; dictionary types map by
    their value type; an all-null column (arrow type ``null``) -> ``string``; any other type
    (union, interval, extension...) -> ``other``. A column whose field metadata carries
    :data:`~worker.core.model.LOGICAL_TYPE_KEY` (a column read as text, see
    :func:`worker.io.formats.base.text_column`) has that type, e.g. ``mixed``. ``nullable``
    is True when the column holds a null. Never raises: every column a reader could read
    has a logical type.
    """
    out = []
    for f, col in zip(table.schema, table.columns, strict=True):
        t = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
        tagged = (f.metadata or {}).get(LOGICAL_TYPE_KEY)
        logical = tagged.decode("utf-8", "replace") if tagged else _logical(t)
        out.append(FieldSpec(f.name, logical, col.null_count > 0))
    return tuple(out)


@functools.lru_cache(maxsize=256)  # the same few types event after event (hashable)
def _logical(t: pa.DataType) -> str:
    checks = [
        (pa.types.is_boolean, "boolean"),
        (pa.types.is_integer, "integer"),
        (pa.types.is_floating, "double"),
        (_is_string, "string"),
        (pa.types.is_timestamp, "timestamp"),
        (pa.types.is_date, "date"),
        (_is_binary, "binary"),
        (pa.types.is_decimal, "decimal"),
        (pa.types.is_time, "time"),
        (pa.types.is_duration, "duration"),
        (pa.types.is_struct, "struct"),
        (pa.types.is_map, "map"),
        (_is_list, "list"),
        (pa.types.is_null, "string"),
    ]
    for check, logical in checks:
        if check(t):
            return logical
    return "other"


def _is_string(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or _is(t, "string_view"))


def _is_binary(t: pa.DataType) -> bool:
    kinds = ("binary", "large_binary", "fixed_size_binary", "binary_view")
    return any(_is(t, k) for k in kinds)


def _is_list(t: pa.DataType) -> bool:
    kinds = ("list", "large_list", "fixed_size_list", "list_view", "large_list_view")
    return any(_is(t, k) for k in kinds)


def _is(t: pa.DataType, kind: str) -> bool:
    check = getattr(pa.types, f"is_{kind}", None)  # the *_view types are pyarrow >= 16
    return bool(check(t)) if check is not None else False


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

#: Logical types carried as JSON text (a ``string`` column tagged with its logical type).
TEXT_TYPES = frozenset(FIELD_TYPES + BATCH_ONLY_FIELD_TYPES) - set(_ARROW)


def typed_column(
    name: str, logical: str, values: Sequence[Any], n: int
) -> tuple[pa.Field, pa.Array]:
    """The Arrow field and column of ``n`` plain ``values`` of logical type ``logical``
    (untrusted: an event's inline column), never coerced: ``integer`` -> int64, ``double``
    -> float64, ``string``, ``boolean``, ``binary``; ``timestamp`` (microseconds since the
    epoch) -> ``timestamp[us, tz=UTC]``; ``date`` (days since the epoch) -> ``date32``; a
    type of :data:`TEXT_TYPES` -> a ``string`` column (JSON text) whose field metadata keeps
    the logical type, so :func:`derive_schema` gives it back.

    Raises
    ------
    DecodeError
        An unknown logical type, not ``n`` values, or a value of another type (the row
        named).
    """
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
    try:
        arr = pa.array(values, _ARROW[logical])
    except (pa.ArrowInvalid, OverflowError) as exc:  # a date beyond int32 days
        i, v = next(((i, v) for i, v in enumerate(values) if _outside(v, _ARROW[logical])), (0, 0))
        where = (
            f"{v} at row {i}, beyond its {_ARROW[logical]} range"
            if v
            else f"a value Arrow refuses ({exc})"
        )
        raise DecodeError(f"column {name!r} of type {logical} holds {where}") from None
    if logical == "timestamp":
        arr = arr.cast(pa.timestamp("us", tz="UTC"))
    elif logical == "date":
        arr = arr.cast(pa.date32())
    return pa.field(name, arr.type), arr


def _outside(value: Any, arrow: pa.DataType) -> bool:
    """Whether ``value`` does not fit the Arrow integer type ``arrow``."""
    if not isinstance(value, int) or not pa.types.is_integer(arrow):
        return False
    bits = arrow.bit_width - 1
    return not -(2**bits) <= value < 2**bits
