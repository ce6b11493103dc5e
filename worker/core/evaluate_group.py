"""Evaluate a group of small batches of one layer together, one decision each (pure).

The batches' facts are computed once over all their features
(:class:`~worker.core.facts.shared.SharedFacts`); every batch is then measured and decided
on its own facts, exactly as :func:`worker.core.evaluate.evaluate` decides it alone. The
first batch is evaluated alone first: the facts its clauses read are those the group of
the other batches computes (the same contract versions read the same facts), so the group
computes no fact that no batch needs, and none of the first batch's twice (with
100-feature events, GEOS's validity test is half of the work). The clauses whose kinds
can are then measured over the group's features at once, a tally per batch, and a result
is rendered once for the batches whose tallies and facts read are equal (most passing
events of a poll batch): the same result object is theirs
(:class:`~worker.core.clauses.grouped.GroupEvaluation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from worker.core._util.gcpause import collector_paused
from worker.core.clauses import KINDS
from worker.core.clauses.grouped import GroupEvaluation
from worker.core.evaluate import decide, evaluate_versions
from worker.core.facts.batch import BatchFacts
from worker.core.facts.shared import SharedFacts, group_key
from worker.core.model import ActiveVersion, Batch, Decision

__all__ = ["evaluate_group", "group_key"]


def evaluate_group(
    batches: Sequence[Batch], versions: Sequence[ActiveVersion], *, now: datetime
) -> list[Decision]:
    """The decision of each of ``batches`` against ``versions``, in order: what
    :func:`worker.core.evaluate.evaluate` gives for each alone.

    Parameters
    ----------
    batches : sequence of Batch
        Batches of one layer with one non-None :func:`group_key` (else
        :class:`ValueError`); a single batch is evaluated alone.
    versions : sequence of ActiveVersion
        The layer's versions (those in state ``active`` are evaluated).
    now : datetime
        Timezone-aware evaluation time, the same for every batch.
    """
    with collector_paused():  # the batches' geometries are built and freed within
        # the facts are freed as the helper returns, before the collector resumes: its
        # first pass then walks the decisions, not every object of the group's facts
        return _evaluate_group(batches, versions, now)


def _evaluate_group(
    batches: Sequence[Batch], versions: Sequence[ActiveVersion], now: datetime
) -> list[Decision]:
    own = [BatchFacts(b) for b in batches]
    group = GroupEvaluation()
    decisions = [decide(evaluate_versions(f, versions, now, group)) for f in own[:1]]
    if len(own) < 3:  # the second batch alone too: no group of one
        decisions += [decide(evaluate_versions(f, versions, now, group)) for f in own[1:]]
        return decisions
    shared = SharedFacts(batches[1:])  # the first batch's facts are computed already
    shared.compute(own[0])
    group.measure(KINDS, versions, shared.facts, shared.starts, now)
    for i, f in enumerate(own[1:]):
        group.index = i
        verdicts = evaluate_versions(shared.prime(i, f), versions, now, group)
        decisions.append(decide(verdicts))
    return decisions
