"""Evaluate a group of small batches of one layer together, one decision each (pure).

The batches' facts are computed once over all their features
(:class:`~worker.core.facts.shared.SharedFacts`); every batch is then measured and
decided on its own facts, exactly as :func:`worker.core.evaluate.evaluate` decides it
alone. The first batch of the first group of a version set and geometry metadata is
evaluated alone first: the facts its clauses read are those the group of the other
batches computes (the same contract versions read the same facts), so the group computes
no fact that no batch needs, and none of the first batch's twice (with 100-feature
events, GEOS's validity test is half of the work). Later groups of the same versions and
metadata compute those facts over all their batches, the first one included (evaluated
alone, it was 5% of routing a one-feature event). The clauses whose kinds can are then
measured over the group's features at once, a tally per batch, and a result is rendered
once for the batches whose tallies and facts read are equal (most passing events of a
poll batch): the same result object is theirs
(:class:`~worker.core.clauses.grouped.GroupEvaluation`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from datetime import datetime

from worker.core._util.gcpause import collector_paused
from worker.core.clauses import KINDS
from worker.core.clauses.grouped import GroupEvaluation
from worker.core.evaluate import decide, evaluate_versions, reads_validity
from worker.core.facts.batch import BatchFacts
from worker.core.facts.shared import Computed, SharedFacts, computed, group_key
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
    first = reads_validity(versions)  # the same for every batch: asked once
    if len(own) < 3:  # no group of one: each batch alone
        return [
            decide(evaluate_versions(f, versions, now, group, validity_first=first)) for f in own
        ]
    key = (*(id(v) for v in versions), group_key(batches[0]))
    like = LEARNT_FACTS.get(key)
    decisions: list[Decision] = []
    if like is None:  # the first batch alone tells which facts the group computes
        decisions.append(
            decide(evaluate_versions(own[0], versions, now, group, validity_first=first))
        )
        like = computed(own[0])
        if len(LEARNT_FACTS) >= MOST_LEARNT:
            LEARNT_FACTS.clear()
        LEARNT_FACTS[key] = like
        batches, own = batches[1:], own[1:]
    shared = SharedFacts(batches)
    shared.compute(like)
    group.measure(KINDS, versions, shared.facts, shared.starts, now)
    for i, f in enumerate(own):
        group.index = i
        verdicts = evaluate_versions(shared.prime(i, f), versions, now, group, validity_first=first)
        decisions.append(decide(verdicts))
    return decisions


#: Per versions (their ids) and :func:`group_key`: the facts the first batch of such a
#: group computed alone (:func:`~worker.core.facts.shared.computed`), which later such
#: groups compute over all their batches at once. Only what is computed ahead depends on
#: it: a fact the group did not compute is each batch's own, a fact no batch reads is not
#: read (the decisions are those of each batch alone either way).
LEARNT_FACTS: dict[Hashable, Computed] = {}
#: The most entries of :data:`LEARNT_FACTS` (cleared when full: a worker has a few layers).
MOST_LEARNT = 64
