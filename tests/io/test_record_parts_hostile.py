"""Stop 38: an EvaluationRecord assembled from parts (codec.avro.RecordParts) against
fastavro's whole-record encoding on hostile values: huge and non-BMP strings, lone
surrogates (not encodable: both ways refuse), NaN, infinities, -0.0 and integers past 64
bits in ``measured``, no clauses, one clause object shared by several positions, extreme
offsets and partitions, with and without the suite's validation of every write."""

from __future__ import annotations

import io
import math
from datetime import datetime, timedelta, timezone
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.core.errors import ContractGateError
from worker.core.model import ClauseResult, VersionVerdict
from worker.io.codec import avro, encode_evaluation
from worker.io.codec.events import _clause_entry

#: any code point, lone surrogates included (st.text leaves them out by default)
_ANY_TEXT = st.text(st.characters(blacklist_categories=()), max_size=40)
_TEXT = st.one_of(
    _ANY_TEXT,
    st.text(max_size=40),
    st.integers(1, 300_000).map(lambda n: "\U0001f30d" * n),  # past every clip limit
    st.just(""),
)
_NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([-0.0, 0.0, math.nan, -math.inf, math.inf, 5e-324, 1.7976931348623157e308]),
    st.integers(-(2**80), 2**80),
)
_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), _NUMBERS, _TEXT),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(_ANY_TEXT, inner, max_size=4)
    ),
    max_leaves=12,
)
_CLAUSE = st.builds(
    ClauseResult,
    name=_TEXT,
    kind=_TEXT,
    result=st.sampled_from(["pass", "break"]),
    on_break=st.sampled_from(["halt", "warn"]),
    measured=_JSON,
    expected=_JSON,
    message=_TEXT,
    diagnoses=st.lists(_TEXT, max_size=3).map(tuple),
)
_WHEN = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(9999, 1, 1), timezones=st.just(timezone.utc)
)


def _whole(verdict: VersionVerdict, **fields: Any) -> bytes:
    """The record written by fastavro in one call (the path before RecordParts), or the
    error the codec raised then."""
    diagnoses = list(dict.fromkeys(d for c in verdict.clauses if c.broke for d in c.diagnoses))
    record = {"layer": verdict.layer, "version": verdict.version, "mode": verdict.mode,
              "passed": verdict.passed, "diagnoses": diagnoses,
              "clauses": [_clause_entry(c) for c in verdict.clauses], **fields}  # fmt: skip
    out = io.BytesIO()
    try:
        fastavro.schemaless_writer(out, avro.EVALUATION_RECORD, record)
    except Exception as exc:  # what the codec turns into its ContractGateError
        raise ContractGateError(str(exc)) from None
    return out.getvalue()


def _outcome(call: Any) -> bytes | type[BaseException]:
    try:
        out: bytes = call()
    except ContractGateError as exc:
        return type(exc)
    return out


@given(
    clauses=st.lists(_CLAUSE, max_size=4),
    repeat=st.integers(1, 3),
    layer=_TEXT,
    version=_TEXT,
    batch_id=_TEXT,
    topic=_TEXT,
    partition=st.integers(-(2**31), 2**31 - 1),
    offset=st.integers(-(2**63), 2**63 - 1),
    when=_WHEN,
    validate=st.booleans(),
)
@settings(max_examples=1500, deadline=None)
def test_record_parts_write_fastavros_whole_record_on_hostile_values(
    clauses: list[ClauseResult],
    repeat: int,
    layer: str,
    version: str,
    batch_id: str,
    topic: str,
    partition: int,
    offset: int,
    when: datetime,
    validate: bool,
) -> None:
    verdict = VersionVerdict(layer, version, "observing", False, tuple(clauses) * repeat)
    fields = dict(batch_id=batch_id, data_time=when, evaluated_at=when + timedelta(0),
                  source_topic=topic, source_partition=partition, source_offset=offset)  # fmt: skip
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(avro, "validate_writes", validate)
        got = _outcome(lambda: encode_evaluation(verdict, **fields))  # type: ignore[arg-type]
    want = _outcome(lambda: _whole(verdict, **fields))
    assert got == want
    if isinstance(got, bytes):  # and it reads back as the record written
        back = fastavro.schemaless_reader(io.BytesIO(got), avro.EVALUATION_RECORD, None)
        assert isinstance(back, dict)
        assert [c["name"] for c in back["clauses"]] == [c.name for c in verdict.clauses]
