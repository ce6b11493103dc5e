"""Why fastavro could not read a record, in words (:func:`read_error`).

Avro timestamps beyond the dates Python holds are named:
fastavro turns a ``timestamp-millis`` long into a :class:`datetime`, which holds the years
1 to 9999 only: a record with ``data_time`` = 2^63 - 1 failed with "OverflowError: Python
int too large to convert to C int", naming neither the field nor the value.
:func:`out_of_range` reads the same bytes again with the logical types left out and names
the timestamp fields outside that range, so the decode error says which one it is.

A Schema Registry writer schema may declare a timestamp as a plain ``long`` (Avro schema
resolution ignores logical types): the record then held an int where a datetime belongs
(``data_time`` = 1764396000000), and freshness failed on it as a gate error.
:func:`as_datetimes` gives such fields our reader schema's meaning.

:func:`salvage` reads the layer and batch id of an event that decodes but makes no batch.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

import fastavro

from worker.core.errors import DecodeError

__all__ = [
    "MAX_MILLIS",
    "MIN_MILLIS",
    "as_datetimes",
    "out_of_range",
    "read_error",
    "salvage",
    "without_logical_types",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: The first and last millisecond a :class:`datetime` holds (0001-01-01, 9999-12-31), UTC.
MIN_MILLIS = int((datetime(1, 1, 1, tzinfo=timezone.utc) - _EPOCH).total_seconds()) * 1000
MAX_MILLIS = (
    int((datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc) - _EPOCH).total_seconds()) * 1000
    + 999
)
_SCALE = {"timestamp-millis": 1, "timestamp-micros": 1000}
#: id of a parsed schema -> it without logical types (the schemas are module constants,
#: alive as long as the process; three BatchArrival schemas share one name)
_RAW: dict[int, Any] = {}


def without_logical_types(node: Any) -> Any:
    """An Avro schema (parsed or not) as plain JSON without its logical types and fastavro's
    ``__`` keys: its timestamps read and written as the longs they are."""
    if isinstance(node, dict):
        return {
            k: without_logical_types(v)
            for k, v in node.items()
            if k != "logicalType" and k[:2] != "__"
        }
    if isinstance(node, list):
        return [without_logical_types(v) for v in node]
    return node


def out_of_range(schema: dict[str, Any], data: bytes) -> list[str]:
    """``"name = value"`` of each top-level timestamp field of the record in ``data``
    (written with ``schema``, a parsed record schema) outside the years 1 to 9999; empty
    when there is none or the bytes do not read even without logical types."""
    raw = _RAW.get(id(schema))
    if raw is None:
        plain = without_logical_types(schema)
        raw = _RAW[id(schema)] = fastavro.parse_schema(plain, named_schemas={})
    try:
        record = fastavro.schemaless_reader(io.BytesIO(data), raw, None)
    except Exception:  # not this schema's bytes at all: the caller's reason stands
        return []
    out = []
    for field in schema["fields"]:
        kind = field["type"]
        scale = _SCALE.get(kind.get("logicalType", "")) if isinstance(kind, dict) else None
        value = record.get(field["name"]) if isinstance(record, dict) else None
        if scale and isinstance(value, int) and not MIN_MILLIS <= value // scale <= MAX_MILLIS:
            out.append(f"{field['name']} = {value}")
    return out


#: An object's default repr (``<_io.BytesIO object at 0x7f...>``): fastavro names its
#: buffer so; the address differs from run to run and worker to worker.
_OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")


def _reason(exc: BaseException) -> str:
    # the same bytes give the same reason, in every process: no object's address in it
    text = _OBJECT_REPR.sub("the record's bytes", str(exc))
    if "Expected -" in text:
        return f"a negative length prefix ({text})"
    if isinstance(exc, EOFError) or "unpack" in text or "buffer" in text:
        return f"truncated bytes ({text})"
    if isinstance(exc, UnicodeDecodeError):
        return f"a string is not valid UTF-8 ({exc.reason} at byte {exc.start})"
    if isinstance(exc, IndexError):
        return f"invalid enum symbol or union branch index ({text})"
    return f"{type(exc).__name__}: {text}"


def read_error(exc: Exception, schema: dict[str, Any], data: bytes) -> str:
    """Why reading ``data`` with ``schema`` raised ``exc``: a timestamp out of range
    (fastavro's OverflowError or ValueError, the fields named), truncated bytes, bad UTF-8,
    a bad union or enum index, else the exception itself."""
    if isinstance(exc, OverflowError | ValueError) and (beyond := out_of_range(schema, data)):
        return f"a timestamp beyond the years 1 to 9999: {', '.join(beyond)}"
    return _reason(exc)


def as_datetimes(schema: dict[str, Any], record: dict[str, Any], what: str) -> dict[str, Any]:
    """``record`` with each top-level timestamp field of ``schema`` that holds an int (its
    writer schema declared a plain long) as the aware UTC datetime ``schema`` means.

    Raises
    ------
    DecodeError
        Such an int is outside the years 1 to 9999 (the field and value named).
    """
    out = dict(record)
    for field in schema["fields"]:
        kind, name = field["type"], field["name"]
        scale = _SCALE.get(kind.get("logicalType", "")) if isinstance(kind, dict) else None
        value = out.get(name)
        if not scale or not isinstance(value, int) or isinstance(value, bool):
            continue
        if not MIN_MILLIS <= value // scale <= MAX_MILLIS:
            raise DecodeError(
                f"not a {what}: a timestamp beyond the years 1 to 9999: {name} = {value}"
            )
        out[name] = _EPOCH + timedelta(microseconds=value * (1000 // scale))
    return out


def _unjson(text: str | None, what: str) -> Any:
    """``text`` parsed as JSON (None stays None); a text that is not JSON raises
    :class:`DecodeError` naming ``what``."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise DecodeError(f"{what} is not JSON text ({exc})") from None


def salvage(
    value: bytes | None, decode_event: Callable[[bytes], Mapping[str, object]]
) -> tuple[str | None, str | None]:
    """``(layer, batch_id)`` of an event whose Avro record parses but does not make a
    valid batch (e.g. neither features nor payload_uri), so its quarantine record can be
    found by batch id; ``(None, None)`` when even the record does not parse."""
    try:
        record = decode_event(value) if value is not None else {}
    except Exception:
        record = {}
    layer, batch_id = record.get("layer"), record.get("batch_id")
    return (layer if isinstance(layer, str) else None), (
        batch_id if isinstance(batch_id, str) else None
    )
