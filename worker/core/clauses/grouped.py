"""Clauses evaluated over a group of small batches: measured together, rendered once (pure).

A poll batch of one-feature events evaluated each event's clauses alone: nine measures
and nine renders per event, most of them giving the same result event after event.
:class:`GroupEvaluation` holds what the batches of one group (one layer, one version set,
one geometry metadata: :mod:`worker.core.evaluate_group`) share:

* the first pass's tallies of each clause whose kind measures a group at once
  (:attr:`~worker.core.clauses.base.ClauseKind.measure_group`: masks over the group's
  concatenated features, counted per batch), each batch's tally what ``measure`` gives it
  alone; a batch the kind leaves out (None) is measured alone;
* the rendered results: a result rendered from a tally and facts metadata
  (:attr:`~worker.core.clauses.base.ClauseKind.render_key`) equal to another batch's is
  that batch's result, the same object (results are never modified once made).

Every result is thus the one the batch gets alone (``tests/core/test_shared_facts.py``
compares the tallies kind by kind, ``tests/gate/test_route_group.py`` the records).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from worker.core.clauses.base import ClauseKind
from worker.core.clauses.tally import Tally, tally_key
from worker.core.facts.batch import BatchFacts
from worker.core.facts.shared import columns_key
from worker.core.model import ActiveVersion, Clause, ClauseResult, Contract

__all__ = ["GroupEvaluation", "attributes_key", "no_facts", "per_segment"]


@dataclass
class GroupEvaluation:
    """What the batches of one group share while evaluated at one ``now`` (see the
    module's docstring); :attr:`index` is the batch being evaluated."""

    rendered: dict[Hashable, ClauseResult] = field(default_factory=dict)
    tallies: dict[tuple[int, int], list[Tally | None]] = field(default_factory=dict)
    index: int = 0

    def measure(
        self,
        kinds: dict[str, ClauseKind],
        versions: Sequence[ActiveVersion],
        group: BatchFacts,
        starts: np.ndarray,
        now: datetime,
    ) -> None:
        """The tallies of every clause of the active ``versions`` whose kind measures a
        group, over ``group`` (the batches' features one after the other, batch ``i`` at
        rows ``starts[i]`` to ``starts[i + 1]``); a kind that raises leaves every batch to
        its own ``measure`` (whose error is the batch's own, as alone)."""
        for v in versions:
            if v.state != "active":
                continue
            for c in v.contract.clauses:
                kind = kinds.get(c.kind)
                if kind is None or kind.measure_group is None:
                    continue
                try:
                    tallies = list(kind.measure_group(c, v.contract, group, starts, now))
                except Exception:  # each batch's own measure meets (and reports) it, as alone
                    continue
                # the clause and contract are held alive by the versions: ids not reused
                self.tallies[(id(c), id(v.contract))] = tallies

    def evaluate(
        self, kind: ClauseKind, clause: Clause, contract: Contract, facts: BatchFacts, now: datetime
    ) -> ClauseResult:
        """:meth:`ClauseKind.evaluate` of batch :attr:`index` (``facts``): its tally from
        the group's when measured there, its result the one rendered for an earlier batch
        from an equal tally and equal :attr:`~ClauseKind.render_key`, else rendered (and
        kept for the next batches)."""
        of_group = self.tallies.get((id(clause), id(contract)))
        measured = None if of_group is None else of_group[self.index]
        tally = kind.tally(clause, contract, facts, now, measured)
        frozen = tally_key(tally) if kind.render_key is not None else None
        reads = None if frozen is None or kind.render_key is None else kind.render_key(facts)
        if reads is None:
            return kind.render(clause, contract, facts, tally, now)
        key = (id(clause), id(contract), now, reads, frozen)
        result = self.rendered.get(key)
        if result is None:
            result = self.rendered[key] = kind.render(clause, contract, facts, tally, now)
        return result


def per_segment(mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """int (B,): the True entries of ``mask`` (bool (N,)) in each segment ``starts[i]`` to
    ``starts[i + 1]`` (int (B + 1,), ascending; empty segments count 0)."""
    total = np.concatenate(([0], np.cumsum(mask, dtype=np.int64)))
    return total[starts[1:]] - total[starts[:-1]]


def no_facts(facts: BatchFacts) -> Hashable:
    """The :data:`~worker.core.clauses.base.RenderKey` of a kind whose ``render`` reads
    nothing of the facts."""
    return ()


def attributes_key(facts: BatchFacts) -> Hashable:
    """The names, types (as written) and field metadata of the batch's attribute columns,
    in order (:func:`~worker.core.facts.shared.columns_key`), and its declared
    ``schema_fields``: what a ``render`` reading the columns' schema (not their values)
    reads, as a :data:`~worker.core.clauses.base.RenderKey`."""
    return facts.batch.schema_fields, columns_key(facts)
