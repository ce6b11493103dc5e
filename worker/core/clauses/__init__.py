"""Clause kinds: one module per kind, registered here (pure).

Each kind module defines ``Params``, ``measure``, ``render``, ``compare``, ``brief`` and
``KIND`` (:class:`worker.core.clauses.base.ClauseKind`). Evaluation
(:mod:`worker.core.evaluate`, :mod:`worker.core.chunks`), classification
(:mod:`worker.core.contracts.classify`), the contract checks and the reports read
:data:`KINDS`; a kind not listed here is refused at parse and breaks at evaluation.
Adding a kind: its module, one line below, its ``$defs/kind_<name>`` in
``schemas/contract.schema.json`` and its row in ``docs/contracts.md``
(``tests/core/test_kinds.py`` checks all four).
"""

from __future__ import annotations

from worker.core.clauses import (
    axis_order,
    coverage,
    crs,
    domain,
    extent,
    feature_count,
    freshness,
    geometry_type,
    schema,
    validity,
)
from worker.core.clauses.base import ClauseKind

__all__ = ["CLAUSE_KINDS", "KINDS", "ClauseKind"]

#: Every clause kind by name, in the order the documentation lists them.
KINDS: dict[str, ClauseKind] = {
    k.name: k
    for k in (
        crs.KIND,
        axis_order.KIND,
        extent.KIND,
        geometry_type.KIND,
        validity.KIND,
        domain.KIND,
        freshness.KIND,
        coverage.KIND,
        schema.KIND,
        feature_count.KIND,
    )
}
#: The kind names (a contract's clause ``kind``).
CLAUSE_KINDS: tuple[str, ...] = tuple(KINDS)
