"""An EvaluationRecord as encode_evaluation writes it (the batch id, the kept run up to the
offset, the offset, the clause entries and the diagnoses joined inline, each entry written
by its fields' own writers) is the record fastavro writes whole, as the codec wrote it
before: over generated verdicts and coordinates the bytes are equal, or both refuse the
record with the same ContractGateError (an offset past 64 bits, a lone surrogate, an
unknown result)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.core.errors import ContractGateError
from worker.core.model import ClauseResult, VersionVerdict
from worker.io.codec import avro, encode_evaluation
from worker.io.codec.avro import _utc
from worker.io.codec.checked import _write
from worker.io.codec.events import _EVALUATION_PARTS, _clause_entry

TEXTS = st.one_of(
    st.text(max_size=30),
    st.text(st.characters(codec="utf-8"), min_size=60, max_size=5000),
    st.sampled_from(["", "é" * 70, "a\ud800b"]),
)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXTS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXTS, inner, max_size=4),
    max_leaves=12,
)
RESULTS = st.builds(
    ClauseResult,
    name=TEXTS,
    kind=TEXTS,
    result=st.sampled_from(["pass", "break", "pass", "maybe"]),
    on_break=st.sampled_from(["halt", "warn"]),
    measured=JSONISH,
    expected=JSONISH,
    message=TEXTS,
    diagnoses=st.lists(TEXTS, max_size=2).map(tuple),
)
VERDICTS = st.builds(
    VersionVerdict,
    layer=TEXTS,
    version=TEXTS,
    mode=st.sampled_from(["enforcing", "observing"]),
    passed=st.booleans(),
    clauses=st.lists(RESULTS, max_size=10).map(tuple),
)
TIMES = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1))
OFFSETS = st.one_of(st.integers(0, 2**40), st.sampled_from([2**63 - 1, 2**63, -1]))


def _as_before(verdict: VersionVerdict, **fields: Any) -> bytes:
    """The record written whole by fastavro (the path before parts), or its error."""
    diagnoses = list(dict.fromkeys(d for c in verdict.clauses if c.broke for d in c.diagnoses))
    record = {
        "batch_id": fields["batch_id"], "layer": verdict.layer, "version": verdict.version,
        "mode": verdict.mode, "passed": verdict.passed,
        "evaluated_at": _utc(fields["evaluated_at"]),
        "data_time": _utc(fields["data_time"]), "source_topic": fields["source_topic"],
        "source_partition": fields["source_partition"],
        "source_offset": fields["source_offset"], "diagnoses": diagnoses,
        "clauses": [_clause_entry(c) for c in verdict.clauses],
    }  # fmt: skip
    what = f"EvaluationRecord {fields['batch_id']}"
    return _write(avro.EVALUATION_RECORD, record, what, ContractGateError)


def _same_bytes_or_error(verdict: VersionVerdict, fields: dict[str, Any]) -> bool:
    """Assert ``encode_evaluation`` gives the whole record's bytes (True) or the error the
    whole record's write raises, with its message (False)."""
    try:
        before = _as_before(verdict, **fields)
    except ContractGateError as refused:
        with pytest.raises(ContractGateError) as got:
            encode_evaluation(verdict, **fields)
        assert str(got.value) == str(refused)
        return False
    assert encode_evaluation(verdict, **fields) == before
    return True


@settings(max_examples=300, deadline=None)
@given(
    verdict=VERDICTS,
    batch_id=TEXTS,
    data_time=TIMES,
    aware=st.booleans(),
    topic=TEXTS,
    partition=st.integers(0, 2**31 - 1),
    offset=OFFSETS,
    validate=st.booleans(),
)
def test_encode_evaluation_is_the_whole_records_bytes_or_its_error(
    verdict: VersionVerdict,
    batch_id: str,
    data_time: datetime,
    aware: bool,
    topic: str,
    partition: int,
    offset: int,
    validate: bool,
) -> None:
    at = data_time.replace(tzinfo=timezone.utc) if aware else data_time
    fields = {
        "batch_id": batch_id, "data_time": at, "evaluated_at": at + timedelta(seconds=9),
        "source_topic": topic, "source_partition": partition, "source_offset": offset,
    }  # fmt: skip
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(avro, "validate_writes", validate)  # production's path, and the suite's
        if _same_bytes_or_error(verdict, fields):
            assert encode_evaluation(verdict, **fields) == _as_before(verdict, **fields)  # kept


def test_the_runs_written_inline_are_the_records() -> None:
    """encode_evaluation joins the batch id, the run up to the offset and the offset before
    the array, the diagnoses after it: the runs RecordParts made of the schema."""
    before, after = _EVALUATION_PARTS.runs
    assert [r.names for r in before] == [
        ("batch_id",),
        ("layer", "version", "mode", "passed", "evaluated_at", "data_time", "source_topic",
         "source_partition"),
        ("source_offset",),
    ]  # fmt: skip
    assert [r.names for r in after] == [("diagnoses",)]


class _Text(str):
    """A str subclass: equal to (and hashed as) its text, not written by the own writers."""


FIELDS = {
    "batch_id": "e7", "data_time": datetime(2026, 11, 29, 12, tzinfo=timezone.utc),
    "evaluated_at": datetime(2026, 11, 29, 12, 1, tzinfo=timezone.utc),
    "source_topic": "gis.batches", "source_partition": 3, "source_offset": 1207,
}  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    around=st.tuples(TEXTS, TEXTS, st.sampled_from(["pass", "maybe"]), st.just("warn"), TEXTS),
    measured=st.lists(JSONISH, min_size=2, max_size=5),
    subclass=st.sampled_from([None, 0, 1, 4]),
)
def test_results_alike_but_for_measured(
    around: tuple[str, str, str, str, str], measured: list[Any], subclass: int | None
) -> None:
    """Results alike but for ``measured`` (the extent's, one per event), one of them with a
    field a str subclass equal to the others' text: each record is the whole record's
    bytes or its error."""
    for i, value in enumerate(measured):
        fields = list(around)
        if subclass is not None and i == len(measured) - 1:
            fields[subclass] = _Text(fields[subclass])
        name, kind, result, on_break, message = fields
        clause = ClauseResult(name, kind, result, on_break, value, None, message)  # type: ignore[arg-type]
        verdict = VersionVerdict("admin_boundaries", "v1", "enforcing", True, (clause,))
        _same_bytes_or_error(verdict, FIELDS)


def _pinned_records() -> list[bytes]:
    """Seeded verdicts, each way encode_evaluation writes one: inline (no diagnoses, no
    clauses or some) and through RecordParts.write (diagnoses), long and non-ASCII texts."""
    import random

    rng = random.Random(44)
    words = ["", "a", "é" * 70, "parcel", "x" * 300, "名前", "break"]
    out = []
    for i in range(200):
        clauses = tuple(
            ClauseResult(
                name=f"{rng.choice(words)}{j}",
                kind=rng.choice(["crs", "extent"]),
                result=rng.choice(["pass", "break"]),
                on_break=rng.choice(["halt", "warn"]),
                measured=rng.choice([None, 1, 2.5, {"a": [1, None]}, "t"]),
                expected=None,
                message=rng.choice(words),
                diagnoses=tuple(rng.sample(words, rng.randint(0, 2))),
            )
            for j in range(rng.randint(0, 4))
        )
        verdict = VersionVerdict(layer=rng.choice(words) or "l", version="v1", mode="enforcing",
                                 passed=rng.random() < 0.5, clauses=clauses)  # fmt: skip
        at = FIELDS["data_time"] + timedelta(seconds=rng.randint(0, 10**8))  # type: ignore[operator]
        out.append(encode_evaluation(
            verdict, batch_id=f"e{i}", data_time=at, evaluated_at=at, source_topic="gis.batches",
            source_partition=rng.randint(0, 7), source_offset=rng.choice([0, 1, 2**40, 2**63 - 1]),
            diagnoses=None if rng.random() < 0.7 else [rng.choice(words)],
        ))  # fmt: skip
    return out


def test_the_records_bytes_are_pinned() -> None:
    """The SHA-256 of 200 seeded records as the codec wrote them before stop 44 made
    encode_evaluation's inline path and RecordParts.write end in one join (avro.joined):
    a change of any byte of the inline or the parts path fails here."""
    import hashlib

    digests = "\n".join(hashlib.sha256(r).hexdigest() for r in _pinned_records())
    assert hashlib.sha256(digests.encode()).hexdigest() == PINNED


PINNED = "f0aa68466b54433a54590843eee41b38e1979191b98391970f51781a1beaadb8"
