"""The Avro bytes the codec writes itself (codec.avro._writer: strings, longs, enums, arrays
and unions with null of them) are fastavro's: for generated values of every type (lone
surrogates, ints past 64 bits, bools, str subclasses, floats, bytes...) a writer either
gives fastavro's exact bytes or declines (None), and fastavro then writes or refuses the
value as before; it declines no value of its own type that fastavro writes. Whole
EvaluationRecords assembled by RecordParts over generated values are fastavro's bytes."""

from __future__ import annotations

import io
from datetime import datetime, timedelta, timezone
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.io.codec import avro
from worker.io.codec.avro import RecordParts, _writer

ENUM = {"type": "enum", "name": "Outcome", "symbols": ["pass", "break"]}
#: every schema shape an own writer takes, parsed as RecordParts parses a field's type
SCHEMAS = {
    "string": "string",
    "long": "long",
    "enum": ENUM,
    "null|string": ["null", "string"],
    "string|null": ["string", "null"],
    "null|long": ["null", "long"],
    "null|enum": ["null", ENUM],
    "strings": {"type": "array", "items": "string"},
    "longs": {"type": "array", "items": "long"},
}


class Text(str):
    """A str subclass: fastavro writes it, the own writer declines it."""


def _fastavro(schema: Any, value: Any) -> bytes | None:
    """fastavro's bytes of ``value`` as the record's one field, None when it refuses it."""
    record = fastavro.parse_schema(
        {"type": "record", "name": "One", "fields": [{"name": "v", "type": schema}]}
    )
    out = io.BytesIO()
    try:
        fastavro.schemaless_writer(out, record, {"v": value})
    except Exception:
        return None
    return out.getvalue()


#: the values tried: every type the writers meet or decline, the varint boundaries
LONGS = st.one_of(
    st.integers(),
    st.sampled_from(
        [0, -1, 63, 64, -64, -65, 8191, 8192, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1]
    ),
)
TEXTS = st.one_of(
    st.text(),
    st.text(st.characters(codec="utf-8"), min_size=60, max_size=9000),
    st.sampled_from(["", "pass", "break", "\ud800", "a\udfffb", "é" * 40, "x" * 8192]),
)
VALUES = st.one_of(
    st.none(), st.booleans(), LONGS, TEXTS, st.floats(), st.binary(), TEXTS.map(Text),
    st.lists(TEXTS, max_size=5), st.lists(LONGS, max_size=5), st.tuples(TEXTS),
    st.lists(st.one_of(TEXTS, LONGS, st.none()), max_size=4),
)  # fmt: skip


@pytest.mark.parametrize("shape", sorted(SCHEMAS))
@settings(max_examples=300, deadline=None)
@given(value=VALUES)
def test_an_own_writer_gives_fastavros_bytes_or_declines(shape: str, value: Any) -> None:
    schema = SCHEMAS[shape]
    write = _writer(fastavro.parse_schema(schema) if isinstance(schema, dict) else schema)
    assert write is not None
    own, theirs = write(value), _fastavro(schema, value)
    if own is not None:
        assert own == theirs, (shape, value)
    elif theirs is not None:  # declined: only values not of the writer's own exact type
        assert not _own_kind(shape, value), (shape, value)


def _own_kind(shape: str, value: Any) -> bool:
    """Whether ``value`` is of the exact type the writer of ``shape`` takes."""
    if value is None and shape.startswith(("null", "string|")):
        return True
    base = shape.split("|")[-1] if shape.startswith("null") else shape.split("|")[0]
    if base in ("string", "enum"):
        return type(value) is str
    if base == "long":
        return type(value) is int
    if base in ("strings", "longs"):
        item = str if base == "strings" else int
        return type(value) is list and all(type(v) is item for v in value)
    raise AssertionError(shape)


def test_other_schemas_have_no_own_writer() -> None:
    """Doubles, ints, booleans, bytes, timestamps, records and wider unions: fastavro's."""
    for schema in ("double", "int", "boolean", "bytes", ["null", "string", "long"],
                   {"type": "long", "logicalType": "timestamp-millis"},
                   {"type": "array", "items": "double"}, ["null", "double"]):  # fmt: skip
        assert _writer(schema) is None, schema


MILLIS = st.datetimes(
    min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(timezone.utc)
)
ENTRIES = st.fixed_dictionaries({
    "name": TEXTS, "kind": TEXTS, "result": st.sampled_from(["pass", "break"]),
    "on_break": st.sampled_from(["halt", "warn"]), "measured": st.none() | TEXTS,
    "expected": st.none() | TEXTS, "message": TEXTS,
})  # fmt: skip
RECORDS = st.fixed_dictionaries({
    "batch_id": TEXTS, "layer": TEXTS, "version": TEXTS,
    "mode": st.sampled_from(["enforcing", "observing"]), "passed": st.booleans(),
    "evaluated_at": MILLIS, "data_time": MILLIS, "source_topic": TEXTS,
    "source_partition": st.integers(0, 2**31 - 1), "source_offset": LONGS,
    "diagnoses": st.lists(TEXTS, max_size=3), "clauses": st.lists(ENTRIES, max_size=12),
})  # fmt: skip
PARTS = RecordParts(avro.EVALUATION_RECORD, "clauses", repeated=avro.EVALUATION_REPEATED)


@settings(max_examples=400, deadline=None)
@given(record=RECORDS, again=st.booleans())
def test_evaluation_records_from_parts_are_fastavros_whole_record(
    record: dict[str, Any], again: bool
) -> None:
    """Every field's value generated: the record assembled from its parts (own writers,
    kept runs, fastavro for the rest) is fastavro's whole record, or both refuse it (an
    offset past 64 bits, a lone surrogate)."""
    if again:  # the repeated fields from kept encodings, a new time in the run
        record = {**record, "data_time": record["data_time"] + timedelta(milliseconds=1)}
    theirs = io.BytesIO()
    try:
        fastavro.schemaless_writer(theirs, avro.EVALUATION_RECORD, record)
    except Exception:
        with pytest.raises(Exception):  # noqa: B017 - fastavro's own error, as before
            PARTS.write(record, [PARTS.item(e) for e in record["clauses"]])
        return
    assert PARTS.write(record, [PARTS.item(e) for e in record["clauses"]]) == theirs.getvalue()
