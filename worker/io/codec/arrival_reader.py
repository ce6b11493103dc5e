"""BatchArrival bytes read by a reader written for its fields (:func:`read_batch_arrival`).

fastavro's reader walks the parsed schema for every value; this one knows the BatchArrival
fields (``schemas/batch_arrival.avsc``) and reads their bytes as the Avro 1.11
specification's "Binary Encoding" section defines them: a ``long`` a zig-zag varint (seven
bits a byte, low groups first, the high bit set on all but the last byte; 0, -1, 1, -2...
as 0, 1, 2, 3...), a ``timestamp-millis`` a long (read as fastavro reads it: the epoch,
UTC, plus that many milliseconds); ``string`` / ``bytes`` a long length, then the bytes
(UTF-8 text); ``boolean`` a byte, 0 or 1; ``double`` eight bytes, IEEE 754 little-endian;
an ``enum`` its symbol's index, a ``union`` its branch's index (longs), then the value; a
``record`` its fields in order; an ``array`` blocks of a count (a long) and that many
items, ended by a count of 0.

It gives up (returns None) on anything else: a varint past 64 bits, a length past the end or
negative, a union, enum or boolean byte out of range, text that is not UTF-8, a timestamp
outside :class:`datetime`'s years, a negative block count (a block with its size), a count
larger than the bytes left, bytes after the record. The caller then reads the bytes with
fastavro (:func:`worker.io.codec.events.decode_event`): every record is fastavro's, every
error and its message the old path's (``tests/io/test_arrival_reader.py`` compares both)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from struct import Struct
from typing import Any

__all__ = ["read_batch_arrival"]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_DOUBLE = Struct("<d").unpack_from
_AXIS_ORDERS = ("east_north", "north_east")
#: By layer (a name of 256 characters at most), its last event's ``schema_fields`` bytes
#: with their (name, type, nullable) triples, and by index its columns' name and type bytes
#: with the two strings (the same bytes read the same). At most 4096 bytes of fields and 256
#: heads of 256 bytes, 64 layers: 4.5 MB of bytes, 18 MB with their objects (tracemalloc).
_kept: dict[str, list[Any]] = {}
_MOST_KEPT_BYTES, _MOST_HEAD_BYTES, _MOST_KEPT_HEADS, _MOST_KEPT_LAYERS = 4096, 256, 256, 64


class _GiveUp(Exception):
    """Not bytes this reader reads: fastavro's path reads them."""


def read_batch_arrival(data: bytes) -> dict[str, Any] | None:
    """The BatchArrival record of ``data`` as :func:`worker.io.codec.events.decode_event`
    decodes it (the same dict: keys in the schema's order, the trailing ``edges``,
    ``orientation`` and ``feature_ids`` None when absent; aware UTC datetimes), or None when
    it cannot tell (see the module docstring): never an exception."""
    try:
        return _record(data, len(data))
    except Exception:  # _GiveUp, IndexError (cut bytes), UnicodeDecodeError, OverflowError...
        return None


def _long_at(data: bytes, p: int) -> tuple[int, int]:
    """The long at ``p`` and the position after it (at most ten bytes, below 2^64)."""
    b = data[p]
    if b < 128:
        return (b >> 1) ^ -(b & 1), p + 1
    n = b & 127
    p += 1
    for shift in range(7, 70, 7):
        b = data[p]
        p += 1
        n |= (b & 127) << shift
        if b < 128:
            if n >> 64:
                break
            return (n >> 1) ^ -(n & 1), p
    raise _GiveUp


def _bytes_at(data: bytes, p: int, size: int) -> tuple[bytes, int]:
    n, p = _long_at(data, p)
    if n < 0 or p + n > size:
        raise _GiveUp
    return data[p : p + n], p + n


def _text_at(data: bytes, p: int, size: int) -> tuple[str, int]:
    """The string at ``p`` and the position after it (one-byte lengths inline at callers)."""
    raw, p = _bytes_at(data, p, size)
    return raw.decode(), p


def _count_at(data: bytes, p: int, size: int) -> tuple[int, int]:
    """An array block's item count (0 ends the array) and the position after it."""
    b = data[p]
    n, p = (b >> 1, p + 1) if b < 128 and not b & 1 else _long_at(data, p)
    if n < 0 or n > size - p:  # (every item here takes a byte at least)
        raise _GiveUp
    return n, p


def _optional_text_at(data: bytes, p: int, size: int) -> tuple[str | None, int]:
    """A ``["null", "string"]`` union's value."""
    b = data[p]
    if b == 0:
        return None, p + 1
    if b != 2:
        raise _GiveUp
    return _text_at(data, p + 1, size)


def _record(data: bytes, size: int) -> dict[str, Any]:
    # Inline: a string below 64 bytes (its length one even byte: b < 128 and not b & 1), a
    # long between -64 and 63, an array count below 64; the others by the helpers above.
    b = data[0]
    if b < 128 and not b & 1 and (e := 1 + (b >> 1)) <= size:
        batch_id, p = data[1:e].decode(), e
    else:
        batch_id, p = _text_at(data, 0, size)
    b = data[p]
    if b < 128 and not b & 1 and (e := p + 1 + (b >> 1)) <= size:
        layer, p = data[p + 1 : e].decode(), e
    else:
        layer, p = _text_at(data, p, size)
    b = data[p]
    if b < 128 and not b & 1 and (e := p + 1 + (b >> 1)) <= size:
        producer, p = data[p + 1 : e].decode(), e
    else:
        producer, p = _text_at(data, p, size)
    millis, p = _long_at(data, p)
    data_time = _EPOCH + timedelta(0, 0, 0, millis)
    millis, p = _long_at(data, p)
    produced_at = _EPOCH + timedelta(0, 0, 0, millis)
    declared_crs, p = _optional_text_at(data, p, size)
    b = data[p]
    if b > 2 or b & 1:
        raise _GiveUp
    axis_order, p = _AXIS_ORDERS[b >> 1], p + 1
    kept = _kept.get(layer) or _kept_for(layer)
    schema_fields, p = _schema_fields(data, p, size, kept)
    b = data[p]
    feature_count, p = ((b >> 1) ^ -(b & 1), p + 1) if b < 128 else _long_at(data, p)
    b = data[p]
    if b == 0:
        features, p = None, p + 1
    elif b == 2:
        features, p = _features(data, p + 1, size, kept)
    else:
        raise _GiveUp
    payload_uri, p = _optional_text_at(data, p, size)
    edges = orientation = feature_ids = None
    if p != size:  # the later layouts: edges and orientation, then feature ids
        edges, p = _optional_text_at(data, p, size)
        orientation, p = _optional_text_at(data, p, size)
        if p != size:
            feature_ids, p = _feature_ids(data, p, size)
            if p != size:
                raise _GiveUp
    return {
        "batch_id": batch_id, "layer": layer, "producer": producer, "data_time": data_time,
        "produced_at": produced_at, "declared_crs": declared_crs, "axis_order": axis_order,
        "schema_fields": schema_fields, "feature_count": feature_count, "features": features,
        "payload_uri": payload_uri, "edges": edges, "orientation": orientation,
        "feature_ids": feature_ids,
    }  # fmt: skip


def _kept_for(layer: str) -> list[Any]:
    """A new entry of :data:`_kept` for ``layer``, kept if the name is 256 characters at most."""
    if len(_kept) >= _MOST_KEPT_LAYERS:
        _kept.clear()
    entry: list[Any] = [(b"", ()), ()]
    return _kept.setdefault(layer, entry) if len(layer) <= _MOST_HEAD_BYTES else entry


def _schema_fields(
    data: bytes, p: int, size: int, kept: list[Any]
) -> tuple[list[dict[str, Any]], int]:
    """``schema_fields``: records of ``name``, ``type`` (strings) and ``nullable``."""
    raw, triples = kept[0]
    if raw and data.startswith(raw, p):  # the same bytes read the same (fresh dicts)
        out = [{"name": n, "type": t, "nullable": b} for n, t, b in triples]
        return out, p + len(raw)
    start, read = p, []
    n, p = _count_at(data, p, size)
    while n:
        for _ in range(n):
            name, p = _text_at(data, p, size)
            kind, p = _text_at(data, p, size)
            b = data[p]
            if b > 1:
                raise _GiveUp
            read.append((name, kind, b == 1))
            p += 1
        n, p = _count_at(data, p, size)
    if p - start <= _MOST_KEPT_BYTES:
        kept[0] = (data[start:p], tuple(read))
    return [{"name": n, "type": t, "nullable": b} for n, t, b in read], p


def _features(data: bytes, p: int, size: int, kept: list[Any]) -> tuple[dict[str, Any], int]:
    """``InlineFeatures``: ``geometry_wkb`` (an array of optional bytes), ``columns``."""
    geometries: list[bytes | None] = []
    n, p = _count_at(data, p, size)
    while n:
        for _ in range(n):
            b = data[p]
            if b == 2:  # bytes of fewer than 8192: a length of one or two bytes, inline
                b, c = data[p + 1], data[p + 2]
                if b < 128 and not b & 1 and (e := p + 2 + (b >> 1)) <= size:
                    geometries.append(data[p + 2 : e])
                elif b & 129 == 128 and c < 128 and (e := p + 3 + (b >> 1 & 63 | c << 6)) <= size:
                    geometries.append(data[p + 3 : e])
                else:
                    wkb, e = _bytes_at(data, p + 1, size)
                    geometries.append(wkb)
                p = e
            elif b == 0:
                geometries.append(None)
                p += 1
            else:
                raise _GiveUp
        n, p = (0, p + 1) if data[p] == 0 else _count_at(data, p, size)  # the end
    columns, p = _columns(data, p, size, kept)
    return {"geometry_wkb": geometries, "columns": columns}, p


def _columns(data: bytes, p: int, size: int, kept: list[Any]) -> tuple[list[dict[str, Any]], int]:
    """``columns``: records of ``name``, ``type`` and ``values``, an array of ``["null",
    "boolean", "long", "double", "string", "bytes"]`` (a branch's index 0 to 5 a byte 0 to
    10: null, short strings and small longs inline, the others by :func:`_value_at`)."""
    columns: list[dict[str, Any]] = []
    heads = kept[1]
    n, p = _count_at(data, p, size)
    while n:
        for _ in range(n):
            i = len(columns)
            if i < len(heads) and data.startswith((head := heads[i])[0], p):
                name, kind, p = head[1], head[2], p + len(head[0])
            else:  # kept by index: the columns of a layer's events come in one order
                start = p
                name, p = _text_at(data, p, size)
                kind, p = _text_at(data, p, size)
                fits = i < _MOST_KEPT_HEADS and p - start <= _MOST_HEAD_BYTES
                heads = (*heads[:i], (data[start:p], name, kind)) if fits else heads[:i]
            values: list[Any] = []
            columns.append({"name": name, "type": kind, "values": values})
            b = data[p]
            k, p = (
                (b >> 1, p + 1)
                if b < 128 and not b & 1 and b >> 1 < size - p
                else _count_at(data, p, size)
            )
            while k:
                for _ in range(k):
                    b, c = data[p], data[p + 1]
                    if b == 8 and c < 128 and not c & 1 and (e := p + 2 + (c >> 1)) <= size:
                        values.append(data[p + 2 : e].decode())
                        p = e
                    elif b == 4 and c < 128:
                        values.append((c >> 1) ^ -(c & 1))
                        p += 2
                    elif b == 0:
                        values.append(None)
                        p += 1
                    else:
                        value, p = _value_at(b, data, p + 1, size)
                        values.append(value)
                k, p = (0, p + 1) if data[p] == 0 else _count_at(data, p, size)  # the end
        n, p = (0, p + 1) if data[p] == 0 else _count_at(data, p, size)  # the end
    kept[1] = heads
    return columns, p


def _value_at(branch: int, data: bytes, p: int, size: int) -> tuple[Any, int]:
    """A column value of the union's ``branch`` (its index's byte) at ``p``."""
    if branch == 8:
        return _text_at(data, p, size)
    if branch == 4:
        return _long_at(data, p)
    if branch == 6 and p + 8 <= size:
        return _DOUBLE(data, p)[0], p + 8
    if branch == 0:
        return None, p
    if branch == 2 and data[p] < 2:
        return data[p] == 1, p + 1
    if branch == 10:
        return _bytes_at(data, p, size)
    raise _GiveUp


#: A ``feature_ids`` item's branch byte as a column value's (:func:`_value_at`).
_ID_BRANCHES = {0: 0, 2: 4, 4: 6, 6: 8}


def _feature_ids(data: bytes, p: int, size: int) -> tuple[list[Any] | None, int]:
    """``feature_ids``: null, or an array of ``["null", "long", "double", "string"]``."""
    if data[p] != 2:
        return _value_at(0 if data[p] == 0 else -1, data, p + 1, size)  # (None, or give up)
    out: list[Any] = []
    n, p = _count_at(data, p + 1, size)
    while n:
        for _ in range(n):
            value, p = _value_at(_ID_BRANCHES.get(data[p], -1), data, p + 1, size)
            out.append(value)
        n, p = _count_at(data, p, size)
    return out, p
