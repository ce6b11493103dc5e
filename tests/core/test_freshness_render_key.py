"""The freshness clause's render key tells data times apart exactly as their
``isoformat()`` text does (what ``render`` writes), on generated naive and aware times of
every offset: equal keys, equal texts, and the other way round."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from worker.core.clauses.freshness import render_key

_offsets = st.one_of(
    st.none(),
    st.integers(-86_399, 86_399).map(lambda s: timezone(timedelta(seconds=s))),
    st.sampled_from([timezone.utc, timezone(timedelta(0)), timezone(timedelta(hours=2))]),
)
_times = st.builds(
    lambda t, tz, fold: t.replace(tzinfo=tz, fold=fold),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    _offsets,
    st.integers(0, 1),
)


def _key(t: datetime) -> Any:
    return render_key(SimpleNamespace(batch=SimpleNamespace(data_time=t)))  # type: ignore[arg-type]


@given(_times, _times)
def test_keys_equal_exactly_when_the_texts_are(a: datetime, b: datetime) -> None:
    assert (_key(a) == _key(b)) == (a.isoformat() == b.isoformat())
    if _key(a) == _key(b):
        assert hash(_key(a)) == hash(_key(b))


@given(_times)
def test_the_same_instant_in_another_offset_is_another_key(t: datetime) -> None:
    aware = t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)
    other = timedelta(hours=5, minutes=30)
    if aware.utcoffset() == other:
        other = timedelta(hours=-3)
    moved = aware.astimezone(timezone(other))
    assert moved == aware  # the same instant ...
    assert _key(moved) != _key(aware)  # ... written with another offset
    assert _key(aware.replace(tzinfo=None)) != _key(aware)  # naive is not aware
