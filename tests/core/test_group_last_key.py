"""Stop 41: what is the same for every batch of a group, done once. Whether the versions
read validity first (:func:`worker.core.evaluate.reads_validity`) is asked once per group,
and a batch whose results key (:meth:`~worker.core.clauses.grouped.GroupEvaluation.
results`) equals the previous found key takes its results without hashing the key again.
On real one-feature countries, with variants of what the keys read interleaved in every
order, every decision reads as the batch's alone."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

import worker.core.evaluate as evaluate_module
import worker.core.evaluate_group as group_module
from benchmarks.common import NOW, countries, world
from worker.cli.scenario import data_file
from worker.core.clauses.grouped import GroupEvaluation
from worker.core.evaluate import evaluate, reads_validity
from worker.core.evaluate_group import evaluate_group
from worker.core.model import ActiveVersion, Batch, Contract
from worker.io.contract_files import load_contract

V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
AT = NOW + timedelta(minutes=1)
VERSIONS = [ActiveVersion(V1, "enforcing")]


class _CountingDict(dict):  # type: ignore[type-arg]
    """A dict counting its ``get`` calls."""

    gets = 0

    def get(self, key: Any, default: Any = None) -> Any:
        self.gets += 1
        return super().get(key, default)


def _groups(monkeypatch: pytest.MonkeyPatch) -> list[_CountingDict]:
    """The kept results of each GroupEvaluation that evaluate_group makes, counting their
    lookups."""
    made: list[_CountingDict] = []

    def make() -> GroupEvaluation:
        made.append(_CountingDict())
        return GroupEvaluation(_kept=made[-1])

    monkeypatch.setattr(group_module, "GroupEvaluation", make)
    return made


def _plain(n: int, start: int = 0) -> list[Batch]:
    base = world()
    return [countries(base, 1, start=start + i, batch_id=f"e{start + i}") for i in range(n)]


def _alone(batches: list[Batch], versions: list[ActiveVersion]) -> list[str]:
    return [repr(evaluate(b, versions, now=AT)) for b in batches]


def test_a_run_of_equal_keys_is_looked_up_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _groups(monkeypatch)
    batches = _plain(40)
    decisions = evaluate_group(batches, VERSIONS, now=AT)
    assert [repr(d) for d in decisions] == _alone(batches, VERSIONS)
    (kept,) = made
    # the first batch misses (and is kept), the second finds it; the others are its key
    assert kept.gets == 2


@pytest.mark.parametrize("pattern", ["ABABAB", "AABBAA", "ABCABC", "ACCBBA", "BAAAAB"])
def test_interleaved_keys_read_as_alone(pattern: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A: plain countries; B: a stale data time (quarantined); C: a feature count of 2
    (another key): each batch's results are those of its own key, never the previous's."""
    made = _groups(monkeypatch)
    plain = _plain(3 * len(pattern), start=10)
    batches = []
    for i, p in enumerate(pattern * 3):
        b = plain[i]
        if p == "B":
            b = replace(b, data_time=NOW - timedelta(days=2), batch_id=f"stale{i}")
        elif p == "C":
            b = replace(b, feature_count=2, batch_id=f"count{i}")
        batches.append(b)
    decisions = evaluate_group(batches, VERSIONS, now=AT)
    assert [repr(d) for d in decisions] == _alone(batches, VERSIONS)
    assert {d.decision for d in decisions} == (
        {"admitted", "quarantined"} if set(pattern) - {"A"} else {"admitted"}
    )
    assert made


def _without_validity(contract: Contract) -> Contract:
    clauses = tuple(c for c in contract.clauses if c.kind != "validity")
    return replace(contract, clauses=clauses, version="v1.8", digest="no-validity")


def test_reads_validity_is_asked_once_per_group(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[bool] = []

    def counting(versions: Any) -> bool:
        asked.append(reads_validity(versions))
        return asked[-1]

    monkeypatch.setattr(group_module, "reads_validity", counting)
    monkeypatch.setattr(evaluate_module, "reads_validity", counting)
    batches = _plain(20, start=50)
    no_validity = [ActiveVersion(_without_validity(V1), "enforcing")]
    for versions, expected in ((VERSIONS, True), (no_validity, False)):
        asked.clear()
        decisions = evaluate_group(batches, versions, now=AT)
        assert asked == [expected]  # once for the group, never per batch
        monkeypatch.setattr(evaluate_module, "reads_validity", reads_validity)
        assert [repr(d) for d in decisions] == _alone(batches, versions)
        monkeypatch.setattr(evaluate_module, "reads_validity", counting)


def test_reads_validity_of_versions() -> None:
    assert reads_validity(VERSIONS) is True
    assert reads_validity([ActiveVersion(_without_validity(V1), "enforcing")]) is False
    assert reads_validity([]) is False
