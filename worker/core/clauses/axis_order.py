"""Kind ``axis_order``: how the batch's stored x/y are to be read equals what the contract
expects (pure; metadata only).

``east_north``: x is longitude or easting; ``north_east``: x is latitude or northing
(:mod:`worker.core.model`).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from worker.core.clauses.base import ClauseKind, clause_result
from worker.core.clauses.diff import Diff
from worker.core.clauses.group_tallies import empty_tallies
from worker.core.clauses.tally import Tally
from worker.core.facts.batch import BatchFacts
from worker.core.model import Clause, ClauseResult, Contract

__all__ = ["KIND", "Params"]


@dataclass(frozen=True)
class Params:
    """``expect``: ``east_north`` or ``north_east``."""

    expect: str


def measure(clause: Clause, contract: Contract, facts: BatchFacts, now: datetime) -> Tally:
    """Nothing per feature: the clause reads the batch's metadata."""
    return {}


def render(
    clause: Clause, contract: Contract, facts: BatchFacts, tally: Tally, now: datetime
) -> ClauseResult:
    """``measured`` is the batch's declared axis order."""
    expect, actual = KIND.params(clause).expect, facts.batch.axis_order
    ok = actual == expect
    return clause_result(clause, ok, actual, expect, f"axis order {actual} (expected {expect})")


def compare(old: Params, new: Params, diff: Diff) -> None:
    """Another axis order is major."""
    if old.expect != new.expect:
        diff.add("major", f"axis order changed ({old.expect} -> {new.expect})")


def brief(measured: Any) -> str:
    """Nothing shorter than the message."""
    return ""


def render_key(facts: BatchFacts) -> Hashable:
    """What ``render`` reads of the facts: the declared axis order."""
    return facts.batch.axis_order


KIND = ClauseKind("axis_order", Params, measure, render, compare, brief, essential=True, leads=3,
                  render_key=render_key, measure_group=empty_tallies)  # fmt: skip
