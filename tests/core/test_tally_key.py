"""The key of a tally (core.clauses.tally.tally_key), by which a group of batches shares a
rendered result: two tallies have equal keys exactly when they read the same (their
``repr``: -0.0 is not 0.0, True is not 1, a list is not a tuple), and a tally holding
offenders, geometries or arrays has none."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.core.clauses.tally import Bounds, Counts, Distinct, First, Union, tally_key
from worker.core.offenders import Offenders

_leaf = st.one_of(
    st.integers(-3, 3),
    st.booleans(),
    st.none(),
    st.sampled_from(["a", "b", ""]),
    st.sampled_from([0.0, -0.0, 1.0, 0.5, float("inf"), float("nan")]),
)
_value = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.sampled_from(["x", "y"]), inner, max_size=2),
        st.lists(inner, max_size=2).map(lambda v: First(tuple(v), 5)),
        st.lists(inner, max_size=2).map(lambda v: Distinct(tuple(v), 10)),
        st.lists(st.sampled_from([0.0, -0.0, 2.0]), min_size=4, max_size=4).map(
            lambda v: Bounds((v[0], v[1], v[2], v[3]))
        ),
        st.sampled_from([Counts(()), Counts((("Point", 1),)), Bounds(None)]),
    ),
    max_leaves=6,
)
_tally = st.dictionaries(st.sampled_from(["count", "bounds", "types"]), _value, max_size=3)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(_tally, _tally)
def test_equal_keys_exactly_when_the_tallies_read_the_same(a: Any, b: Any) -> None:
    ka, kb = tally_key(a), tally_key(b)
    assert ka is not None and kb is not None
    assert (ka == kb) == (repr(a) == repr(b))
    assert tally_key(copy.deepcopy(a)) == ka  # built anew, the same key


def test_tallies_that_read_differently_have_different_keys() -> None:
    assert tally_key({"n": 0.0}) != tally_key({"n": -0.0})
    assert tally_key({"n": 1}) != tally_key({"n": True})
    assert tally_key({"n": 1}) != tally_key({"n": 1.0})
    assert tally_key({"n": [1]}) != tally_key({"n": (1,)})
    assert tally_key({"b": Bounds((0.0, 0.0, 1.0, 1.0))}) == tally_key(
        {"b": Bounds((0.0, 0.0, 1.0, 1.0))}
    )


def test_tallies_holding_offenders_geometries_or_arrays_have_no_key() -> None:
    assert tally_key({"offenders": Offenders(1, (), "x")}) is None
    assert tally_key({"u": Union(shapely.box(0, 0, 1, 1))}) is None
    assert tally_key({"n": np.int64(3)}) is None
    assert tally_key({"a": np.zeros(2)}) is None
    assert tally_key({"offenders": None, "n": 3}) is not None
