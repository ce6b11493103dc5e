"""A record's Avro bytes assembled from parts (codec.avro.RecordParts):
equal, byte for byte, to fastavro's whole-record encoding, for every array field of every
record kind of the codec over generated values (counts of 0, 1, and past one varint
byte), and for the EvaluationRecords of real verdicts of every clause kind, shared results
included; with repeated fields kept per value, too."""

from __future__ import annotations

import io
import itertools
import random
from datetime import timedelta
from typing import Any

import fastavro
import fastavro.utils
import pytest

from tests.catalogue import NOW, active
from tests.core.test_shared_facts import EVERYTHING, _batches
from worker.core.clauses import KINDS
from worker.core.evaluate import evaluate
from worker.core.evaluate_group import evaluate_group
from worker.io.codec import avro, encode_evaluation
from worker.io.codec.avro import RecordParts, _encoded
from worker.io.codec.events import _clause_entry

#: every record schema of the codec
SCHEMAS = {
    name: getattr(avro, name)
    for name in dir(avro)
    if name.isupper() and isinstance(getattr(avro, name), dict)
    and getattr(avro, name).get("type") == "record"
}  # fmt: skip
#: (schema name, array field) of every top-level array field of every record kind
ARRAYS = [
    (name, f["name"])
    for name, schema in sorted(SCHEMAS.items())
    for f in schema["fields"]
    if isinstance(f["type"], dict) and f["type"].get("type") == "array"
]


def _whole(schema: Any, record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema, record)
    return out.getvalue()


def test_every_record_kind_with_an_array_is_covered() -> None:
    kinds = {name for name, _ in ARRAYS}
    assert {"EVALUATION_RECORD", "QUARANTINE_RECORD", "CONTRACT_RECORD"} <= kinds, ARRAYS
    assert ("EVALUATION_RECORD", "clauses") in ARRAYS and ("QUARANTINE_RECORD", "reasons") in ARRAYS


@pytest.mark.parametrize(("name", "field"), ARRAYS)
def test_parts_joined_are_the_whole_records_bytes(name: str, field: str) -> None:
    schema = SCHEMAS[name]
    parts = RecordParts(schema, field)
    random.seed(f"{name}.{field}")  # fastavro's generator draws from the random module
    records = list(fastavro.utils.generate_many(schema, 40))
    for i, r in enumerate(records):  # fastavro's generator makes 10 items: 0 to 11, and 70
        r[field] = (r[field] * 2)[: i % 12] if i else r[field] * 7
    assert len(records[0][field]) == 70 and {len(r[field]) for r in records[1:13]} == set(range(12))
    for record in records:
        items = [parts.item(v) for v in record[field]]
        assert parts.write(record, items) == _whole(schema, record), (name, field, record)


@pytest.mark.parametrize(("name", "field"), ARRAYS)
def test_parts_with_repeated_fields_kept_are_the_whole_records_bytes(name: str, field: str) -> None:
    """Every other field encoded on its own, each kept per value: the records written
    twice (the second time from the kept encodings) and with values from other records
    mixed in are still fastavro's whole-record bytes."""
    schema = SCHEMAS[name]
    others = [f["name"] for f in schema["fields"] if f["name"] != field]
    parts = RecordParts(schema, field, repeated=others)
    random.seed(f"{name}.{field}.repeated")
    records = list(fastavro.utils.generate_many(schema, 30))
    mixed = [{**a, **{n: b[n] for n in others[::2]}} for a, b in itertools.pairwise(records)]
    for record in [*records, *records, *mixed]:
        items = [parts.item(v) for v in record[field]]
        assert parts.write(record, items) == _whole(schema, record), (name, field, record)


def _item_fields(schema: Any, field: str) -> list[str]:
    items = next(f for f in schema["fields"] if f["name"] == field)["type"]["items"]
    return [f["name"] for f in items["fields"]] if isinstance(items, dict) else []


#: the array fields whose items are records (their fields can be encoded in runs)
RECORD_ITEMS = [(name, field) for name, field in ARRAYS if _item_fields(SCHEMAS[name], field)]


@pytest.mark.parametrize(("name", "field"), RECORD_ITEMS)
def test_items_of_mixed_fields_are_the_whole_records_bytes(name: str, field: str) -> None:
    """Items written by their fields' own writers where they take the values (else by
    fastavro), with the record's own fields in runs: written twice and with item fields
    from other items mixed in, the bytes are fastavro's whole-record bytes."""
    schema = SCHEMAS[name]
    fields = _item_fields(schema, field)
    others = [f["name"] for f in schema["fields"] if f["name"] != field]
    parts = RecordParts(schema, field, repeated=others[1::2])
    random.seed(f"{name}.{field}.items")
    records = list(fastavro.utils.generate_many(schema, 30))
    pool = [item for r in records for item in r[field]]
    mixed = [
        {**r, field: [{**a, **{n: b[n] for n in fields[1::2]}} for a, b in zip(r[field], pool)]}  # noqa: B905
        for r in records
    ]
    assert sum(len(r[field]) for r in records) > 30
    for record in [*records, *records, *mixed]:
        items = [parts.item(v) for v in record[field]]
        assert parts.write(record, items) == _whole(schema, record), (name, field, record)


def test_a_clause_entry_is_written_without_fastavro(monkeypatch: pytest.MonkeyPatch) -> None:
    """A clause entry's fields are strings, enums and nullable strings: its own writers
    write it (fastavro is not called), and its bytes are the whole item's; an entry with
    a value of another type (an int message) is fastavro's to refuse, as before."""
    parts = RecordParts(avro.EVALUATION_RECORD, "clauses", repeated=avro.EVALUATION_REPEATED)
    entry = {"name": "extent", "kind": "extent", "result": "pass", "on_break": "halt",
             "measured": '{"bounds": [1.0, 2.0]}', "expected": None, "message": "ok é"}  # fmt: skip
    clauses = next(f for f in avro.EVALUATION_RECORD["fields"] if f["name"] == "clauses")
    item_schema = clauses["type"]["items"]
    calls = _counted(monkeypatch)
    other = {**entry, "measured": '{"bounds": [5.0, 6.0]}', "on_break": "warn"}
    assert parts.item(entry) == _whole(item_schema, entry)
    assert parts.item(other) == _whole(item_schema, other)
    assert calls == []
    with pytest.raises((TypeError, ValueError)):
        parts.item({**entry, "message": 7})
    assert len(calls) == 1


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The values fastavro is asked to encode by RecordParts from now on."""
    calls: list[Any] = []
    real = _encoded

    def counting(schema: Any, value: Any) -> bytes:
        calls.append(value)
        return real(schema, value)

    monkeypatch.setattr(avro, "_encoded", counting)
    return calls


def test_kept_values_are_told_apart_by_type_and_sign() -> None:
    """Values equal as dict keys but encoded differently are encoded each: 1 and True
    (an int field given a bool), 0.0 and -0.0, naive and aware times."""
    doc = {"type": "record", "name": "K", "fields": [
        {"name": "n", "type": ["null", "boolean", "long", "double"]},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "xs", "type": {"type": "array", "items": "int"}}]}  # fmt: skip
    schema = fastavro.parse_schema(doc)
    parts = RecordParts(schema, "xs", repeated=("n", "at"))
    naive = NOW.replace(tzinfo=None) + timedelta(hours=3)
    values = [1, True, 1.0, 0.0, -0.0, None, False, 0]
    for n, at in [(v, t) for v in values for t in (NOW, naive)] * 2:
        record = {"n": n, "at": at, "xs": [1, 2]}
        assert parts.write(record, [parts.item(1), parts.item(2)]) == _whole(schema, record)


def test_a_repeated_field_must_be_another_field() -> None:
    with pytest.raises(ValueError, match="no repeated field"):
        RecordParts(avro.EVALUATION_RECORD, "clauses", repeated=("clauses",))
    with pytest.raises(ValueError, match="no repeated field"):
        RecordParts(avro.EVALUATION_RECORD, "clauses", repeated=("nope",))


def test_a_field_that_is_not_an_array_is_refused() -> None:
    with pytest.raises(ValueError, match="not an array"):
        RecordParts(avro.EVALUATION_RECORD, "batch_id")
    with pytest.raises(ValueError, match="no field"):
        RecordParts(avro.EVALUATION_RECORD, "nope")


def _written_whole(verdict: Any, offset: int) -> bytes:
    """The EvaluationRecord of ``verdict`` written by fastavro in one call, as before."""
    diagnoses = list(dict.fromkeys(d for c in verdict.clauses if c.broke for d in c.diagnoses))
    record = {"batch_id": f"b{offset}", "layer": verdict.layer, "version": verdict.version,
              "mode": verdict.mode, "passed": verdict.passed, "evaluated_at": NOW,
              "data_time": NOW, "source_topic": "t", "source_partition": 3,
              "source_offset": offset, "diagnoses": diagnoses,
              "clauses": [_clause_entry(c) for c in verdict.clauses]}  # fmt: skip
    return _whole(avro.EVALUATION_RECORD, record)


@pytest.mark.parametrize("grouped", [False, True])
def test_evaluation_records_of_every_clause_kind_are_fastavros_bytes(grouped: bool) -> None:
    batches = _batches()
    if grouped:  # shared result objects: their entries' bytes are reused
        decisions = evaluate_group(batches, [_active()], now=NOW)
    else:
        decisions = [evaluate(b, [_active()], now=NOW) for b in batches]
    kinds, results = set(), set()
    for offset, decision in enumerate(decisions):
        for verdict in decision.verdicts:
            kinds |= {c.kind for c in verdict.clauses}
            results |= {c.result for c in verdict.clauses}
            got = encode_evaluation(verdict, batch_id=f"b{offset}", data_time=NOW,
                                    evaluated_at=NOW, source_topic="t", source_partition=3,
                                    source_offset=offset)  # fmt: skip
            assert got == _written_whole(verdict, offset)
    assert kinds == set(KINDS) and results == {"pass", "break"}


def _active() -> Any:
    return active(EVERYTHING)


def test_a_run_whose_one_field_is_new_encodes_that_field_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each batch's own data time (a run of repeated fields missed) costs fastavro one
    call for it, the run's other fields kept per value or written by their own writers
    (the batch id and offset too): one call a record; the bytes are the whole record's."""
    parts = RecordParts(avro.EVALUATION_RECORD, "clauses", repeated=avro.EVALUATION_REPEATED)
    base = {"batch_id": "b0", "layer": "l", "version": "v1.0", "mode": "enforcing",
            "passed": True, "evaluated_at": NOW, "data_time": NOW, "source_topic": "t",
            "source_partition": 2, "source_offset": 7, "diagnoses": [], "clauses": []}  # fmt: skip
    assert parts.write(base, []) == _whole(avro.EVALUATION_RECORD, base)
    calls = _counted(monkeypatch)
    for i in range(1, 4):
        record = {**base, "batch_id": f"b{i}", "source_offset": 7 + i,
                  "data_time": NOW - timedelta(minutes=i)}  # fmt: skip
        assert parts.write(record, []) == _whole(avro.EVALUATION_RECORD, record)
    assert calls == [NOW - timedelta(minutes=i) for i in range(1, 4)], calls
