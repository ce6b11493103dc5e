"""A group computes ahead the facts the first batch of an earlier group of the same
versions and geometry metadata computed alone (worker.core.evaluate_group.LEARNT_FACTS), its
first batch included: every decision is still each batch's alone, whichever group came
before (the facts remembered are only what is computed ahead)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.catalogue import NOW, active, contract_of
from tests.core.test_shared_facts import EVERYTHING, _batches, _records, _small_batches
from worker.core import evaluate_group as eg
from worker.core.evaluate import evaluate
from worker.core.facts.shared import group_key


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times a first batch was evaluated alone to learn the group's facts."""
    calls: list[int] = []
    real = eg.computed

    def counted(facts: Any) -> Any:
        calls.append(1)
        return real(facts)

    monkeypatch.setattr(eg, "computed", counted)
    return calls


@pytest.mark.parametrize("order", ["small first", "mixed first"])
def test_a_later_group_decides_each_batch_as_alone_with_the_facts_learnt_before(
    monkeypatch: pytest.MonkeyPatch, order: str
) -> None:
    monkeypatch.setattr(eg, "LEARNT_FACTS", {})
    calls = _counting(monkeypatch)
    versions = [active(contract_of(*(c for c in EVERYTHING.clauses if c.name != "bad")))]
    groups = [_small_batches(), _batches()]  # passing one-feature batches; every fault
    if order == "mixed first":
        groups.reverse()
    assert group_key(groups[0][0]) == group_key(groups[1][0])  # one entry learnt, reused
    for n, batches in enumerate([*groups, *groups]):
        alone = [evaluate(b, versions, now=NOW) for b in batches]
        assert _records(eg.evaluate_group(batches, versions, now=NOW)) == _records(alone), n
        assert len(calls) == 1  # learnt from the first group's first batch only
    assert len(eg.LEARNT_FACTS) == 1


def test_learnt_facts_are_kept_per_version_set_and_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(eg, "LEARNT_FACTS", {})
    monkeypatch.setattr(eg, "MOST_LEARNT", 2)
    calls = _counting(monkeypatch)
    batches = _small_batches()
    contracts = [contract_of(*(c for c in EVERYTHING.clauses if c.name not in ("bad", x)))
                 for x in ("dom", "ext", "valid")]  # fmt: skip
    kept = [[active(c)] for c in contracts]
    for versions in [*kept, kept[0]]:
        alone = [evaluate(b, versions, now=NOW) for b in batches]
        assert _records(eg.evaluate_group(batches, versions, now=NOW)) == _records(alone)
    assert len(calls) == 4 and len(eg.LEARNT_FACTS) == 2  # the third cleared the first two
