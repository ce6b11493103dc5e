"""Stop 42: a group's tally numbers (``GroupEvaluation._numbers``) found in C when every
batch has one tally object, and a planar batch's extent pass keyed without its
``edges_problem`` fact. On real groups of the benchmark's one-feature events (and
variants that break clauses), every number list is stop 41's loop's, kept here as the
reference, and every decision is the batch's alone (``tests/core/test_decide_breaks.py``
compares ``version_verdict`` and ``decide`` with stop 39's)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pyarrow as pa
import pytest

from benchmarks.common import NOW, countries, world
from tests.catalogue import active
from worker.cli.scenario import data_file
from worker.core.clauses import KINDS
from worker.core.clauses.grouped import GroupEvaluation
from worker.core.clauses.tally import Tally, tally_key
from worker.core.evaluate import evaluate
from worker.core.evaluate_group import evaluate_group
from worker.core.facts import parse
from worker.core.facts.shared import SharedFacts
from worker.core.model import Batch
from worker.io.contract_files import load_contract

AT = NOW + timedelta(seconds=60)
V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))


def _old_numbers(numbered: dict[Any, int], tallies: list[Tally | None]) -> list[int | None]:
    """Stop 41's ``GroupEvaluation._numbers``, verbatim, its ``self._numbered`` given."""
    of_object: dict[int, int | None] = {}
    out: list[int | None] = []
    for t in tallies:
        if t is None:
            out.append(None)
            continue
        if id(t) not in of_object:
            frozen = tally_key(t)
            of_object[id(t)] = (
                None if frozen is None else numbered.setdefault(frozen, len(numbered))
            )
        out.append(of_object[id(t)])
    return out


def _batches(faults: bool) -> list[Batch]:
    """40 one-feature countries; with ``faults`` every fifth breaks a clause."""
    base, out = world(), []
    for i in range(40):
        b = countries(base, 1, start=i, batch_id=f"n{i}")
        if faults and i % 5 == 1:
            b = replace(b, feature_count=3)
        elif faults and i % 5 == 2:
            at = b.attributes.column_names.index("continent")
            b = replace(b, attributes=b.attributes.set_column(at, "continent", pa.array(["?"])))
        elif faults and i % 5 == 3:
            b = replace(b, data_time=b.data_time - timedelta(days=2))
        elif faults and i % 5 == 4:
            b = countries(base, 2, start=i, batch_id=f"n{i}")
        out.append(b)
    return out


def test_numbers_are_stop_41s_for_one_object_and_for_many() -> None:
    versions = [active(V1), active(replace(V1, version="v1.9", digest="other"))]
    one_object = many = 0
    for faults in (False, True):
        shared = SharedFacts(_batches(faults))
        group = GroupEvaluation()
        group.measure(KINDS, versions, shared.facts, shared.starts, AT)
        numbered: dict[Any, int] = {}
        for v in versions:  # in measure's order: the numbers are given in order
            for c in v.contract.clauses:
                at = (id(c), id(v.contract))
                if at not in group.numbers:
                    continue
                tallies = group.tallies[at]
                assert group.numbers[at] == _old_numbers(numbered, tallies), (faults, c.name)
                one_object += len({id(t) for t in tallies}) == 1
                many += len({id(t) for t in tallies}) > 1
    assert one_object >= 8 and many >= 4  # passing groups, and groups with faults


def test_a_planar_pass_leaves_the_edges_fact_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    versions = [active(V1)]
    for faults in (False, True):
        batches = _batches(faults)
        decisions = evaluate_group(batches, versions, now=AT)
        alone = [evaluate(b, versions, now=AT) for b in batches]
        assert [repr(d) for d in decisions] == [repr(d) for d in alone]
    calls: list[str] = []
    real = parse.edges_problem

    def counted(edges: str, *args: Any) -> str | None:
        calls.append(edges)
        return real(edges, *args)

    monkeypatch.setattr(parse, "edges_problem", counted)
    batches = _batches(False)
    decisions = evaluate_group(batches, versions, now=AT)
    assert all(d.admitted for d in decisions)
    # the group's facts and the first batch's full render read it (stop 41: every batch)
    assert 1 <= len(calls) <= 3 and set(calls) == {"planar"}
