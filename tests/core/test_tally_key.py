"""The key of a tally (core.clauses.tally.tally_key), by which a group of batches shares a
rendered result: two tallies have equal keys exactly when they read the same (their
``repr``: -0.0 is not 0.0, True is not 1, a list is not a tuple), and a tally holding
offenders, geometries or arrays has none."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.catalogue import NOW, active, contract_of
from tests.core.test_shared_facts import EVERYTHING, _small_batches
from worker.core.clauses import KINDS
from worker.core.clauses.grouped import GroupEvaluation
from worker.core.clauses.tally import Bounds, Counts, Distinct, First, Union, tally_key
from worker.core.evaluate import evaluate_clause
from worker.core.facts.batch import BatchFacts
from worker.core.facts.shared import SharedFacts
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


@pytest.mark.parametrize("name", list(KINDS))
def test_a_group_numbers_each_kinds_tallies_as_their_keys_and_renders_as_one_by_one(
    name: str,
) -> None:
    """Grouped (:meth:`GroupEvaluation.measure`, then each batch's :meth:`evaluate`) and one
    by one, for every kind: batches share a tally's number exactly when their tallies have
    equal keys (a kind measuring a group gives equal tallies one object), a kind with a
    second pass or no render key numbers none, and each batch's result is its own alone."""
    kind = KINDS[name]
    clauses = [c for c in EVERYTHING.clauses if c.kind == name and c.name != "bad"]
    contract = contract_of(*clauses)
    batches = _small_batches()
    shared = SharedFacts(batches)
    group = GroupEvaluation()
    group.measure(KINDS, [active(contract)], shared.facts, shared.starts, NOW)
    for c in clauses:
        at = (id(c), id(contract))
        numbers = group.numbers.get(at)
        if kind.measure_group is None or kind.render_key is None or kind.second_pass:
            assert numbers is None
        else:
            tallies = group.tallies[at]
            assert numbers is not None and len(numbers) == len(batches)
            for i, ti in enumerate(tallies):
                assert (numbers[i] is None) == (ti is None or tally_key(ti) is None)
                for j, tj in enumerate(tallies):
                    if ti is None or tj is None:
                        continue
                    same_key = tally_key(ti) == tally_key(tj)
                    assert (numbers[i] == numbers[j]) == same_key, (c.name, i, j)
                    assert (ti is tj) == same_key, (c.name, i, j)  # one object per tally
            assert any(n is not None for n in numbers)  # the passing batches are numbered
        for i, b in enumerate(batches):
            group.index = i
            got = evaluate_clause(c, contract, shared.prime(i, BatchFacts(b)), NOW, group)
            assert repr(got) == repr(evaluate_clause(c, contract, BatchFacts(b), NOW)), (c.name, i)
