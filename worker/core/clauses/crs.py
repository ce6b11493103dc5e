"""Kind ``crs``: the batch's declared CRS is equivalent to the one the contract expects
(pure; metadata only: no feature is read).

Equivalence is pyproj's, ignoring axis order (``OGC:CRS84`` = ``EPSG:4326``); a payload
whose own CRS contradicts the event's declared one breaks the clause
(:attr:`worker.core.model.Batch.crs_conflict`). The ``expect`` of a contract's crs clause
is also the CRS its regions are written in (:func:`expected_crs`).
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
from worker.core.errors import ContractGateError
from worker.core.facts.batch import BatchFacts
from worker.core.model import Clause, ClauseResult, Contract
from worker.core.spatial import crs_equivalent, crs_label, resolve_crs
from worker.core.spatial.units import units_differ

__all__ = ["KIND", "Params", "crs_same", "expected_crs"]


@dataclass(frozen=True)
class Params:
    """``expect``: EPSG code, WKT, ESRI WKT or PROJJSON text."""

    expect: str


def expected_crs(contract: Contract) -> str | None:
    """The ``expect`` of ``contract``'s crs clause (the first), or None without one."""
    for c in contract.clauses:
        if c.kind == KIND.name:
            expect: str = KIND.params(c).expect
            return expect
    return None


def crs_same(a: Any, b: Any) -> bool:
    """``a`` and ``b`` (CRS texts, or None) name equivalent CRSs; a text that does not
    resolve equals only itself."""
    if a == b:
        return True
    if a is None or b is None:
        return False
    try:
        return crs_equivalent(a, b)
    except ContractGateError:
        return False


def measure(clause: Clause, contract: Contract, facts: BatchFacts, now: datetime) -> Tally:
    """Nothing per feature: the clause reads the batch's metadata."""
    return {}


def render(
    clause: Clause, contract: Contract, facts: BatchFacts, tally: Tally, now: datetime
) -> ClauseResult:
    """``measured`` is the declared CRS's name (its text when it does not resolve)."""
    expect = KIND.params(clause).expect
    declared = facts.batch.declared_crs
    if facts.declared_crs is None:
        why = facts.declared_crs_error or "the batch declares no CRS"
        return clause_result(clause, False, declared, expect, f"CRS expected {expect}: {why}")
    ok = crs_equivalent(facts.declared_crs, expect)
    label = crs_label(facts.declared_crs)
    verb = "is equivalent to" if ok else "is not equivalent to"
    message = f"declared CRS {label} {verb} {expect}"
    units = None if ok else units_differ(facts.declared_crs, resolve_crs(expect))
    if units is not None:  # named from the axes (T14: foot vs US survey foot)
        message += f": {units}"
    conflict = facts.batch.crs_conflict
    if conflict is not None:  # the data's own CRS says otherwise
        return clause_result(clause, False, label, expect, f"{message}, but {conflict}")
    return clause_result(clause, ok, label, expect, message)


def compare(old: Params, new: Params, diff: Diff) -> None:
    """Another CRS is major; another spelling of an equivalent one changes nothing."""
    if old.expect != new.expect:
        if crs_same(old.expect, new.expect):
            diff.add("none", f"equivalent CRS, spelling changed ({old.expect} -> {new.expect})")
        else:
            diff.add("major", f"CRS not equivalent ({old.expect} -> {new.expect})")


def brief(measured: Any) -> str:
    """Nothing shorter than the message (which names both CRSs)."""
    return ""


def render_key(facts: BatchFacts) -> Hashable:
    """What ``render`` reads of the facts: the declared CRS as written (resolved from it
    alone) and the data's own CRS conflicting with it."""
    return facts.batch.declared_crs, facts.batch.crs_conflict


KIND = ClauseKind(
    "crs",
    Params,
    measure,
    render,
    compare,
    brief,
    essential=True,
    leads=2,
    render_key=render_key,
    measure_group=empty_tallies,
)
