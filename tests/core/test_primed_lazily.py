"""Stop 40: a group's per-feature facts are cut for its batches on their first read
(:meth:`worker.core.facts.shared.SharedFacts.cut`), not all of them at each prime. On real
one-feature batches (the shipped countries, as the benchmark sends them) only the facts
the batches read are cut, once for the group; a batch reading a fact the group did not
compute computes its own; facts made as ``type(facts)(batch)`` (the mixed paths' sub-facts)
compute their own; every decision is the batch's alone."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from benchmarks.common import NOW, countries, world
from worker.cli.scenario import data_file
from worker.core.evaluate import evaluate, evaluate_versions
from worker.core.evaluate_group import evaluate_group
from worker.core.facts import shared as shared_module
from worker.core.facts.batch import BatchFacts
from worker.core.facts.shared import PER_FEATURE, PrimedFacts, SharedFacts
from worker.core.model import ActiveVersion
from worker.io.contract_files import load_contract

V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
VERSIONS = [ActiveVersion(V1, "enforcing")]
AT = NOW + timedelta(minutes=1)


def test_only_the_facts_the_batches_read_are_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    cut = vars(shared_module)["_views"]
    calls: list[int] = []

    def counted(values: np.ndarray, starts: np.ndarray, size: int | None) -> list[Any]:
        calls.append(len(starts) - 1)
        return cut(values, starts, size)  # type: ignore[no-any-return]

    monkeypatch.setattr(shared_module, "_views", counted)
    base = world()
    batches = [countries(base, 1, start=i, batch_id=f"e{i}") for i in range(64)]
    evaluate_group(batches[:8], VERSIONS, now=AT)  # learns what a group of them computes
    calls.clear()
    grouped = evaluate_group(batches, VERSIONS, now=AT)
    assert [repr(d) for d in grouped] == [repr(evaluate(b, VERSIONS, now=AT)) for b in batches]
    # validity, read before the clauses (a group computes some 20 per-feature facts); each
    # cut once for all 64 batches
    assert calls == [64]


def test_a_fact_the_group_did_not_compute_is_the_batch_s_own() -> None:
    base = world()
    batches = [countries(base, 1, start=i, batch_id=f"e{i}") for i in range(5)]
    shared = SharedFacts(batches)  # nothing computed for the group
    for i, b in enumerate(batches):
        primed, alone = shared.prime(i, BatchFacts(b)), BatchFacts(b)
        assert type(primed) is PrimedFacts
        np.testing.assert_array_equal(primed.bounds, alone.bounds)
        assert not np.shares_memory(primed.bounds, shared.facts.bounds)  # computed after
        assert [repr(v) for v in evaluate_versions(primed, VERSIONS, AT)] == [
            repr(v) for v in evaluate_versions(alone, VERSIONS, AT)
        ]
    assert shared.cut("bounds") is None  # computed after the first prime: not the group's


def test_facts_made_as_their_type_compute_their_own() -> None:
    b = countries(world(), 3, start=10, batch_id="sub")
    made, alone = PrimedFacts(b), BatchFacts(b)
    for name in PER_FEATURE:
        got, want = getattr(made, name), getattr(alone, name)
        if got.dtype != object:
            np.testing.assert_array_equal(got, want, err_msg=name)
