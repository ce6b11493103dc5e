"""A record written whole by fastavro, checked: :func:`_write` raises the caller's error
naming the field that does not fit (the validator's account, asked only when the write
fails or when :data:`worker.io.codec.avro.validate_writes` is on).

The records of the data plane's hot path are assembled from parts
(:class:`worker.io.codec.avro.RecordParts`); this is the path of every other record, and
of an EvaluationRecord whose parts cannot be written.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import fastavro

from worker.io.codec import avro
from worker.io.codec.avro import _validate

__all__: list[str] = []


def _write(
    schema: Any,
    record: Mapping[str, Any],
    what: str,
    error: type[Exception],
    *,
    unchecked: tuple[str, ...] = (),
) -> bytes:
    """Encode ``record``; raise ``error`` naming the field when it does not fit ``schema``.

    fastavro's writer refuses a value that does not fit by itself, so the record is
    validated (for a message naming the field) only when the write fails, or when
    ``validate_writes`` is on (the test suite's); the ``unchecked`` fields are the
    caller's. Validating every record cost a quarter of a one-feature batch's time.
    """
    out = io.BytesIO()
    try:
        if avro.validate_writes:
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
