"""Stop 41: a passing extent result's ``measured`` JSON written from a kept text around its
bounds (:func:`worker.core._util.jsonsafe.json_around`, ``text_around``): the text the
encoder writes, over generated dicts and floats (-0.0, 1e16, 5e-324, subnormals, huge,
non-finite ones clipped to strings, which take the encoder), and over the extent results
of real one-feature batches grouped as the worker groups them. Stop 42: the text is the
value's own (:class:`~worker.core._util.jsonsafe.TextAround`), no module state."""

from __future__ import annotations

import copy
import json
import pickle
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.common import NOW, countries, world
from worker.cli.scenario import data_file
from worker.core._util import jsonsafe
from worker.core._util.jsonsafe import (
    dumps_json,
    finite_clipped,
    finite_floats,
    json_around,
    json_text,
    text_around,
)
from worker.core.clauses import extent_group
from worker.core.evaluate_group import evaluate_group
from worker.core.model import ActiveVersion, ClauseResult
from worker.io.codec.events import _clause_entry
from worker.io.contract_files import load_contract

V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
AT = NOW + timedelta(minutes=1)


def _as_before(value: Any) -> str | None:
    """json_text as it was (stop 40): the encoder's ``encode``, then the fallback."""
    if value is None:
        return None
    try:
        return json.JSONEncoder(sort_keys=True, ensure_ascii=False, allow_nan=False).encode(value)
    except (TypeError, ValueError):
        pass

    def fallback(v: Any) -> Any:
        return v.item() if hasattr(v, "item") else str(v)

    return dumps_json(value, sort_keys=True, ensure_ascii=False, default=fallback)


_FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(allow_subnormal=True, min_value=-1e-300, max_value=1e-300),
    st.sampled_from([-0.0, 0.0, 1e16, -1e16, 5e-324, 1e22, 0.1, 1.7976931348623157e308]),
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    _FLOATS,
    st.text(max_size=8),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
_LIKE = st.dictionaries(st.text(max_size=8), _VALUES, max_size=6)
_BOUNDS = st.one_of(
    st.lists(_FLOATS, max_size=6),
    st.lists(_FLOATS, max_size=6).map(lambda b: finite_clipped(b, 4000)),
    st.none(),
    _VALUES,
)


@settings(max_examples=800, deadline=None)
@given(like=_LIKE, first=_BOUNDS, bounds=_BOUNDS)
def test_the_text_around_is_what_the_encoder_writes(like: dict, first: Any, bounds: Any) -> None:
    like = {**like, "bounds": first}
    around = json_around(like, "bounds")
    if around is None:  # a non-finite float or another type: the fallback's text
        assert _as_before(like) is not None
        return
    value = text_around(like, "bounds", bounds, around)
    assert json_text(value) == _as_before(dict(value))


@pytest.mark.parametrize(
    "bounds",
    [
        [-0.0, 1e16, 5e-324, 0.1],
        [-180.0, -18.28799, 180.0, -16.020882256741224],
        [1e-7, 123456789012345680.0, -1.5e-310, 2.0**53],
        [],
    ],
)
def test_plain_finite_floats_are_written_from_the_kept_text(
    bounds: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    like = {"fraction_inside": 1.0, "features": 1, "outside": 0, "bounds": [0.0, 0.0, 1.0, 1.0],
            "bounds_crs": "EPSG:4326"}  # fmt: skip
    around = json_around(like, "bounds")
    assert around == (
        '{"bounds": ',
        ', "bounds_crs": "EPSG:4326", "features": 1, "fraction_inside": 1.0, "outside": 0}',
    )
    expected = _as_before({**like, "bounds": bounds})
    value = text_around(like, "bounds", bounds, around)

    class NoEncoder:  # the kept text, not the encoder
        def encode(self, v: Any) -> str:
            raise AssertionError("encoded")

    monkeypatch.setattr(jsonsafe, "_RECORD_JSON", NoEncoder())
    assert json_text(value) == expected
    assert json_text(value) == expected  # (stop 42: the value holds its text, kept)
    assert type(value) is jsonsafe.TextAround and value == {**like, "bounds": bounds}
    monkeypatch.undo()
    assert json_text(dict(value)) == expected  # the encoder's, the same


@pytest.mark.parametrize(
    "bounds", [[float("inf"), 1.0], ["inf", 1.0], [1, 2.0], [True], None, "x", [[1.0]]]
)
def test_other_entries_take_the_encoder(bounds: Any) -> None:
    like = {"a": 1, "bounds": [1.0]}
    around = json_around(like, "bounds")
    assert around is not None
    value = text_around(like, "bounds", bounds, around)
    assert json_text(value) == _as_before(dict(value))


def test_no_text_around_without_the_key_or_the_encoders_text() -> None:
    assert json_around({"a": 1}, "bounds") is None
    assert json_around({"bounds": 1, "x": float("nan")}, "bounds") is None
    assert json_around({"bounds": 1, 2: 3}, "bounds") is None  # keys of two types
    assert json_around({"bounds": 1, "x": jsonsafe.AROUND_MARK}, "bounds") is None  # the mark twice


def test_a_value_with_an_entry_added_or_removed_takes_the_encoder() -> None:
    like = {"bounds": [1.0], "a": "b"}
    around = json_around(like, "bounds")
    assert around is not None
    added = text_around(like, "bounds", [2.0], around)
    added["z"] = 1
    assert json_text(added) == '{"a": "b", "bounds": [2.0], "z": 1}'
    removed = text_around(like, "bounds", [2.0], around)
    del removed["a"]
    assert json_text(removed) == '{"bounds": [2.0]}'


def test_a_copied_or_pickled_value_is_written_the_same() -> None:
    """Stop 42: no module state (the text is the value's own): its copies and pickles
    are equal, and written the same."""
    around = json_around({"bounds": [], "n": 1}, "bounds")
    assert around is not None
    value = text_around({"bounds": None, "n": 1}, "bounds", [0.5, -2.0], around)
    for other in (copy.copy(value), copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
        assert other == value and json_text(other) == json_text(value) == _as_before(dict(value))


def test_real_extent_results_read_as_the_encoders_text() -> None:
    """64 one-feature countries grouped: each passing extent result after the first is
    written from the kept text, and every EvaluationRecord entry's ``measured`` is the
    encoder's text of the same dict."""
    for c in V1.clauses:
        c.__dict__.pop(extent_group.KEPT_PASSING, None)
    base = world()
    batches = [countries(base, 1, start=i, batch_id=f"e{i}") for i in range(64)]
    decisions = evaluate_group(batches, [ActiveVersion(V1, "enforcing")], now=AT)
    results: list[ClauseResult] = [
        c for d in decisions for v in d.verdicts for c in v.clauses if c.kind == "extent"
    ]
    assert len(results) == 64 and all(r.result == "pass" for r in results)
    around = [r for r in results if type(r.measured) is jsonsafe.TextAround]
    assert len(around) >= 60
    assert len({json_text(r.measured) for r in results}) == 64  # each batch's own bounds
    for r in results:
        assert json_text(r.measured) == _as_before(dict(r.measured))
        assert _clause_entry(r)["measured"] == _as_before(dict(r.measured))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(_FLOATS, st.integers(-5, 5), st.booleans()), max_size=6))
def test_finite_floats_are_what_finite_clipped_keeps(values: list[Any]) -> None:
    """A box of finite floats becomes ``list(box)`` in a passing result: what
    ``finite_clipped([float(b) for b in box])`` gave, the same float objects."""
    if finite_floats(values):
        clipped = finite_clipped([float(v) for v in values], 4000)
        assert all(a is b for a, b in zip(clipped, values, strict=True))
        assert repr(clipped) == repr(list(values))
    else:
        assert any(type(v) is not float or v != v or v in (float("inf"), float("-inf"))
                   for v in values)  # fmt: skip
