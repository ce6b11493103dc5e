"""The EvaluationRecord written directly (worker.io.codec.avro.write_evaluation) is what
fastavro writes, byte for byte, and falls back to fastavro for anything unexpected."""

from __future__ import annotations

import io
from datetime import datetime, timedelta, timezone
from typing import Any

import fastavro
import pytest

from worker.core.errors import ContractGateError
from worker.io.codec import avro
from worker.io.codec.avro import EVALUATION_RECORD, direct_evaluation_bytes, write_evaluation

UTC = timezone.utc


def _fastavro(record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, EVALUATION_RECORD, record)
    return out.getvalue()


def _clause(**changes: Any) -> dict[str, Any]:
    clause = {
        "name": "valid geometries",
        "kind": "validity",
        "result": "pass",
        "on_break": "halt",
        "measured": '{"features": 1, "invalid": 0}',
        "expected": None,
        "message": "0 of 1 geometries invalid (0.0%, expected <= 0.0%)",
    }
    return clause | changes


def _record(**changes: Any) -> dict[str, Any]:
    record = {
        "batch_id": "b-1",
        "layer": "admin_boundaries",
        "version": "v1.0",
        "mode": "enforcing",
        "passed": True,
        "evaluated_at": datetime(2026, 12, 3, 14, 0, 0, 123456, tzinfo=UTC),
        "data_time": datetime(2026, 12, 3, 13, 59, tzinfo=UTC),
        "source_topic": "gis.batches",
        "source_partition": 3,
        "source_offset": 1234567,
        "clauses": [_clause(), _clause(name="extent", kind="extent", result="break")],
        "diagnoses": ["axis order swapped?"],
    }
    return record | changes


CASES = [
    _record(),
    _record(mode="observing", passed=False, diagnoses=[], clauses=[]),
    _record(clauses=[_clause(on_break="warn", measured=None, expected='{"a": 1}')]),
    _record(batch_id="Zürich ✓ " * 40, layer="ä" * 200, source_offset=2**62),
    _record(source_partition=-1, source_offset=-(2**63)),  # the extremes of int and long
    _record(source_partition=2**31 - 1, source_offset=2**63 - 1),
    _record(  # before the epoch, and a millisecond cut
        evaluated_at=datetime(1969, 12, 31, 23, 59, 59, 999500, tzinfo=UTC),
        data_time=datetime(1900, 1, 1, tzinfo=timezone(timedelta(hours=-5))),
    ),
    _record(clauses=[_clause(message="x" * 70_000, measured="")] * 130),  # multi-byte lengths
]


@pytest.mark.parametrize("record", CASES)
def test_the_direct_writer_writes_what_fastavro_writes(
    record: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    want = _fastavro(record)
    monkeypatch.setattr(avro, "validate_writes", False)
    assert direct_evaluation_bytes(record) == want
    assert write_evaluation(record, "EvaluationRecord b-1", ContractGateError) == want
    got = fastavro.schemaless_reader(io.BytesIO(want), EVALUATION_RECORD, None)
    assert got["source_offset"] == record["source_offset"]


@pytest.mark.parametrize(
    "record",
    [
        _record(passed=1),  # fastavro writes a truthy int as true
        _record(evaluated_at=datetime(2026, 1, 1)),  # naive: fastavro reads it as local time
        _record(source_offset=True),
        _record(source_partition=2**31),  # beyond an Avro int: fastavro writes it anyway
    ],
)
def test_values_it_does_not_expect_are_left_to_fastavro(
    record: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(avro, "validate_writes", False)
    assert direct_evaluation_bytes(record) is None
    assert write_evaluation(record, "EvaluationRecord b-1", ContractGateError) == _fastavro(record)


@pytest.mark.parametrize(
    ("record", "field"),
    [
        (_record(mode="shadow"), "mode"),
        (_record(clauses=[_clause(result="maybe")]), "result"),
        (_record(layer="\ud800"), "surrogates not allowed"),  # as before: fastavro says it
    ],
)
def test_a_record_that_does_not_fit_raises_the_named_error(
    record: dict[str, Any], field: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(avro, "validate_writes", False)
    with pytest.raises(ContractGateError, match="cannot encode EvaluationRecord b-1") as raised:
        write_evaluation(record, "EvaluationRecord b-1", ContractGateError)
    assert field in str(raised.value)
