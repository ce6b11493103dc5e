"""Stop 42: the extent's pass of a batch of a group found from its group tally
(:func:`worker.core.clauses.extent_group.group_pass`, called by
:meth:`worker.core.clauses.grouped.GroupEvaluation.results`) without the tally, render and
checks of its own path. On real one-feature countries (as the benchmark sends them), with
variants of what the kept pass is keyed by (the declared CRS's text, the metadata's name,
two contracts sharing the clause objects, two-feature batches), every result reads as its
own path's, its record JSON too; a batch whose pass is not kept, or whose group pass
raises, is evaluated as before."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from benchmarks.common import NOW, countries, world
from worker.cli.scenario import data_file
from worker.core._util.jsonsafe import json_text
from worker.core.clauses import KINDS, extent_group
from worker.core.clauses.grouped import GroupEvaluation
from worker.core.evaluate import evaluate, evaluate_clause, evaluate_versions
from worker.core.evaluate_group import evaluate_group
from worker.core.facts.batch import BatchFacts
from worker.core.facts.shared import SharedFacts
from worker.core.model import ActiveVersion, Batch, Contract
from worker.io.contract_files import load_contract

V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
AT = NOW + timedelta(minutes=1)
EXTENT = next(j for j, c in enumerate(V1.clauses) if c.kind == "extent")


def _forget(contract: Contract) -> None:
    for c in contract.clauses:
        c.__dict__.pop(extent_group.KEPT_PASSING, None)


def _group(batches: list[Batch], versions: list[ActiveVersion]) -> tuple[GroupEvaluation, list]:
    shared = SharedFacts(batches)
    like = BatchFacts(batches[0])
    evaluate_versions(like, versions, AT)
    shared.compute(like)
    group = GroupEvaluation()
    group.measure(KINDS, versions, shared.facts, shared.starts, AT)
    return group, [shared.prime(i, BatchFacts(b)) for i, b in enumerate(batches)]


def _one_feature(n: int, start: int = 0) -> list[Batch]:
    base = world()
    return [countries(base, 1, start=start + i, batch_id=f"e{start + i}") for i in range(n)]


@pytest.mark.parametrize(
    "variant",
    [{}, {"declared_crs": "OGC:CRS84"}, {"metadata_name": "GeoParquet"}],
    ids=["plain", "crs84", "metadata"],
)
def test_each_group_pass_reads_as_the_own_path(variant: dict[str, Any]) -> None:
    _forget(V1)
    batches = [replace(b, **variant) for b in _one_feature(60)]
    group, own = _group(batches, [ActiveVersion(V1, "enforcing")])
    found = 0
    for i, facts in enumerate(own):
        group.index = i
        results = group.results(V1, facts, AT, evaluate_clause)
        alone = group.evaluate(KINDS["extent"], V1.clauses[EXTENT], V1, facts, AT)
        mine = results[EXTENT]
        assert repr(mine) == repr(alone), i
        assert json_text(mine.measured) == json_text(dict(alone.measured)), i
        tally = group.tallies[(id(V1.clauses[EXTENT]), id(V1))][i]
        passed = extent_group.group_pass(V1.clauses[EXTENT], V1, facts, tally)
        found += passed is not None
    assert found == len(batches)  # the learning batch evaluated alone kept the pass


def test_the_decisions_are_each_batchs_alone_with_two_contracts_and_sizes() -> None:
    _forget(V1)
    other = replace(V1, version="v1.9", digest="other")  # the same clause objects
    versions = [ActiveVersion(V1, "enforcing"), ActiveVersion(other, "observing")]
    base = world()
    batches = _one_feature(40)
    batches[10:10] = [countries(base, 2, start=i, batch_id=f"two-{i}") for i in range(4)]
    expect = [repr(evaluate(b, versions, now=AT)) for b in batches]
    _forget(V1)
    got = [repr(d) for d in evaluate_group(batches, versions, now=AT)]
    assert got == expect


def test_nothing_kept_or_another_count_is_none_and_evaluated() -> None:
    _forget(V1)
    batches = _one_feature(5)
    group, own = _group(batches, [ActiveVersion(V1, "enforcing")])
    clause = V1.clauses[EXTENT]
    tally = group.tallies[(id(clause), id(V1))][0]
    _forget(V1)
    assert extent_group.group_pass(clause, V1, own[0], tally) is None  # nothing kept
    group.index = 0
    group.results(V1, own[0], AT, evaluate_clause)  # keeps the pass of one feature
    assert extent_group.group_pass(clause, V1, own[0], tally) is not None
    assert extent_group.group_pass(clause, V1, own[0], {**tally, "count": 2}) is None
    other = replace(V1, version="v1.9", digest="other")
    assert extent_group.group_pass(clause, other, own[0], tally) is None  # another contract


def test_a_group_pass_that_raises_leaves_the_batch_to_its_own_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _forget(V1)
    batches = _one_feature(8)
    expect = [repr(evaluate(b, [ActiveVersion(V1, "enforcing")], now=AT)) for b in batches]

    def broken(*args: Any) -> None:
        raise RuntimeError("group pass")

    monkeypatch.setitem(KINDS, "extent", replace(KINDS["extent"], group_pass=broken))
    calls: list[str] = []

    def counting(clause: Any, *args: Any) -> Any:
        calls.append(clause.name)
        return evaluate_clause(clause, *args)

    group, own = _group(batches, [ActiveVersion(V1, "enforcing")])
    for i, facts in enumerate(own):
        group.index = i
        calls.clear()
        results = group.results(V1, facts, AT, counting)
        decided = evaluate_group([batches[i]], [ActiveVersion(V1, "enforcing")], now=AT)[0]
        assert repr(decided) == expect[i]
        assert repr(results) == repr(decided.verdicts[0].clauses)
        if i:  # a kept key: the extent alone, evaluated
            assert calls == [V1.clauses[EXTENT].name]
