"""What a clause kind gives a group evaluation (pure): the tallies of its batches measured
together (:data:`~worker.core.clauses.base.MeasureGroup`: :func:`per_segment`,
:func:`shared_tallies`, :func:`empty_tallies`) and what its render reads of the facts
(:data:`~worker.core.clauses.base.RenderKey`: :func:`no_facts`, :func:`attributes_key`);
:class:`~worker.core.clauses.grouped.GroupEvaluation` uses them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from datetime import datetime
from typing import Any

import numpy as np

from worker.core.clauses.tally import Tally
from worker.core.facts.batch import BatchFacts
from worker.core.facts.shared import columns_key
from worker.core.model import Clause, Contract

__all__ = ["attributes_key", "empty_tallies", "no_facts", "per_segment", "shared_tallies"]


def per_segment(mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """int (B,): the True entries of ``mask`` (bool (N,)) in each segment ``starts[i]`` to
    ``starts[i + 1]`` (int (B + 1,), ascending; empty segments count 0)."""
    total = np.concatenate(([0], np.cumsum(mask, dtype=np.int64)))
    return total[starts[1:]] - total[starts[:-1]]


def shared_tallies(
    parts: Iterable[Hashable | None], make: Callable[[Any], Tally]
) -> list[Tally | None]:
    """One tally per batch of a group, ``make(part)`` from each batch's ``parts`` (None: the
    batch is measured alone), batches of equal parts sharing one tally object, made once
    (:meth:`GroupEvaluation.measure` keys each object once). Parts are compared as dict
    keys: give them of one type (``1 == True``)."""
    made: dict[Hashable, Tally] = {}
    out: list[Tally | None] = []
    for part in parts:
        if part is None:
            out.append(None)
            continue
        tally = made.get(part)
        if tally is None:
            tally = made[part] = make(part)
        out.append(tally)
    return out


def empty_tallies(
    clause: Clause, contract: Contract, group: BatchFacts, starts: np.ndarray, now: datetime
) -> list[Tally | None]:
    """The :data:`~worker.core.clauses.base.MeasureGroup` of a kind whose ``measure``
    reads nothing of the features (an empty tally): one empty tally for every batch."""
    return [_EMPTY] * (len(starts) - 1)


#: The empty tally every batch of a group shares (:func:`empty_tallies`; never modified).
_EMPTY: Tally = {}


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
