"""Stop 40: a contract's results for a batch of a group found with one key
(:meth:`worker.core.clauses.grouped.GroupEvaluation.results`). On real one-feature batches
(the shipped countries, as the benchmark sends them) with variants of everything the shared
clauses' render keys read (data time, declared count, axis order, CRS text, a CRS conflict,
attribute tables), a bad code and a stale event: every result is the object the clause's
own path gives (:meth:`~worker.core.clauses.grouped.GroupEvaluation.evaluate`), only the
clauses outside the key are evaluated per batch once a key is kept (stop 42: none, the
extent's pass found by its ``group_pass``), a render that raises is never kept, and every
decision reads as the batch's alone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pyarrow as pa
import pytest

from benchmarks.common import NOW, countries, world
from worker.cli.scenario import data_file
from worker.core.clauses import KINDS
from worker.core.clauses.grouped import GroupEvaluation
from worker.core.evaluate import (
    decide,
    evaluate,
    evaluate_clause,
    evaluate_versions,
    version_verdict,
)
from worker.core.evaluate_group import evaluate_group
from worker.core.facts.batch import BatchFacts
from worker.core.facts.shared import SharedFacts, group_key
from worker.core.model import ActiveVersion, Batch, Clause, ClauseResult, Contract
from worker.io.contract_files import load_contract

V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
AT = NOW + timedelta(minutes=1)
VERSIONS = [ActiveVersion(V1, "enforcing")]


def _batches() -> list[Batch]:
    """40 one-feature countries, then variants of what the shared clauses read."""
    base = world()
    out = [countries(base, 1, start=i, batch_id=f"e{i}") for i in range(40)]
    plus2 = out[0].data_time.astimezone(timezone(timedelta(hours=2)))  # the same instant
    atlantis = out[3].attributes.set_column(
        out[3].attributes.column_names.index("continent"), "continent", pa.array(["Atlantis"])
    )
    out += [
        replace(out[1], batch_id="offset", data_time=plus2),
        replace(out[2], batch_id="naive", data_time=out[2].data_time.replace(tzinfo=None)),
        replace(out[4], batch_id="stale", data_time=NOW - timedelta(days=2)),
        replace(out[5], batch_id="count", feature_count=2),
        replace(out[6], batch_id="axes", axis_order="north_east"),
        replace(out[7], batch_id="crs84", declared_crs="OGC:CRS84"),
        replace(out[8], batch_id="conflict", crs_conflict="the file says EPSG:3857"),
        replace(out[3], batch_id="atlantis", attributes=atlantis),
        replace(out[9], batch_id="nofields", schema_fields=out[9].schema_fields[:2]),
    ]
    return out + [replace(b, batch_id=f"{b.batch_id}-again") for b in out[40:]]


class _Counting:
    """:func:`evaluate_clause`, counting its calls per clause name."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, clause: Clause, contract: Contract, facts: BatchFacts, now: datetime,
                 group: GroupEvaluation | None = None) -> ClauseResult:  # fmt: skip
        self.calls.append(clause.name)
        return evaluate_clause(clause, contract, facts, now, group)


def _grouped(
    batches: list[Batch], evaluate: Callable[..., ClauseResult]
) -> tuple[GroupEvaluation, list[BatchFacts], list[tuple[ClauseResult, ...]], list[list[str]]]:
    """Each batch's results through :meth:`GroupEvaluation.results` (all batches one
    group of one shape), and the clauses evaluated for each."""
    shared = SharedFacts(batches)
    like = BatchFacts(batches[0])  # the facts a batch alone computes, computed for all
    evaluate_versions(like, VERSIONS, AT)
    shared.compute(like)
    group = GroupEvaluation()
    group.measure(KINDS, VERSIONS, shared.facts, shared.starts, AT)
    own, out, calls = [], [], []
    for i, b in enumerate(batches):
        group.index = i
        facts = shared.prime(i, BatchFacts(b))
        before = len(evaluate.calls) if isinstance(evaluate, _Counting) else 0
        out.append(group.results(V1, facts, AT, evaluate))
        calls.append(evaluate.calls[before:] if isinstance(evaluate, _Counting) else [])
        own.append(facts)
    return group, own, out, calls


def _by_group_key(batches: list[Batch]) -> list[list[Batch]]:
    groups: dict[Any, list[Batch]] = {}
    for b in batches:
        groups.setdefault(group_key(b), []).append(b)
    return [part for key, part in groups.items() if key is not None and len(part) > 1]


def test_a_kept_key_evaluates_only_the_extent_and_gives_the_clauses_own_objects() -> None:
    batches = [b for b in _batches() if b.axis_order == "east_north" and
               b.declared_crs == "EPSG:4326"]  # fmt: skip
    counting = _Counting()
    group, own, results, calls = _grouped(batches, counting)
    names = [c.name for c in V1.clauses]
    assert calls[0] == names  # the first batch: every clause
    # the plain countries: their key is kept after the first, and the extent's pass is
    # the first batch's with their bounds (stop 42: its group pass, not evaluated)
    for i in range(1, 40):
        assert calls[i] == [], i
    for i, b in enumerate(batches):
        if b.batch_id.endswith("-again"):  # a variant's second batch finds the first's key
            # (but for an offending code: the domain's tally names the batch's offenders)
            assert calls[i] == (names if b.batch_id == "atlantis-again" else []), i
    for b, shown in (("offset", "+02:00"), ("naive", "T"), ("stale", "days")):
        i = next(j for j, x in enumerate(batches) if x.batch_id == b)
        assert calls[i] == names, b  # a data time of its own: a key of its own
        assert shown in results[i][names.index("fresh")].message
    # every result is the clause's own path's: the same object, when shared (not a result
    # naming offenders, nor the extent's, with each batch's own bounds)
    for i, facts in enumerate(own):
        group.index = i
        for c, r in zip(V1.clauses, results[i], strict=True):
            again = group.evaluate(KINDS[c.kind], c, V1, facts, AT)
            assert repr(again) == repr(r)
            assert (again is r) == (c.kind != "extent" and r.offenders is None), (i, c.name)


def test_results_read_as_each_batch_alone() -> None:
    batches = _batches()
    alone = [evaluate(b, VERSIONS, now=AT) for b in batches]
    for part in _by_group_key(batches):
        _, _, results, _ = _grouped(part, evaluate_clause)
        mine = [decide((version_verdict(VERSIONS[0], r),)) for r in results]
        expect = [alone[batches.index(b)] for b in part]
        assert [repr(d) for d in mine] == [repr(d) for d in expect]
        grouped = evaluate_group(part, VERSIONS, now=AT)
        assert [repr(d) for d in grouped] == [repr(d) for d in expect]
    quarantined = {b.batch_id for b, d in zip(batches, alone, strict=True) if not d.admitted}
    assert {"stale", "atlantis", "axes", "conflict", "nofields"} <= quarantined


def test_a_render_that_raises_is_never_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    batches = [countries(world(), 1, start=i, batch_id=f"e{i}") for i in range(6)]
    kind = KINDS["feature_count"]
    calls = {"n": 0}

    def flaky(clause: Clause, contract: Contract, facts: BatchFacts, tally: Any,
              now: datetime) -> ClauseResult:  # fmt: skip
        calls["n"] += 1  # the first render is the learning batch's (alone)
        if calls["n"] in (2, 3):
            raise RuntimeError(f"render {calls['n'] - 1}")
        return render(clause, contract, facts, tally, now)

    render = kind.render
    monkeypatch.setitem(KINDS, "feature_count", replace(kind, render=flaky))
    counting = _Counting()
    _, _, results, calls_of = _grouped(batches, counting)
    size = [c.name for c in V1.clauses].index("size")
    # each batch whose render raised has its own gate error, and is evaluated in full
    assert results[0][size].gate_error == "RuntimeError: render 1"
    assert results[1][size].gate_error == "RuntimeError: render 2"
    assert len(calls_of[0]) == len(calls_of[1]) == len(calls_of[2]) == len(V1.clauses)
    # the third rendered, and its key is kept from then on
    assert results[2][size].gate_error is None and results[2][size].result == "pass"
    assert all(c == [] for c in calls_of[3:])  # (the extent: its group pass)
    assert all(r[size] is results[2][size] for r in results[3:])
