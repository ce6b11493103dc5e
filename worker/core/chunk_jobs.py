"""One clause of one active version measured, merged and rendered over chunks (pure): the
jobs of :func:`worker.core.chunks.evaluate_chunked`, each measuring a mergeable tally of a
chunk (its kind's ``measure``, or its second pass's), rendered from the merged tally, with
the last-resort handling of :func:`worker.core.evaluate.evaluate_clause` (one clause
fails, not the batch). The names of every offender a result keeps: :func:`names_enough`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from worker.core.clauses import KINDS
from worker.core.clauses.tally import Failed, Tally
from worker.core.evaluate import evaluate_clause, failed_result
from worker.core.facts.batch import BatchFacts
from worker.core.model import ActiveVersion, Clause, ClauseResult
from worker.core.offenders import Offenders, offender_limit

__all__ = ["Job", "measure_job", "names_enough", "render_job", "wants_second_pass"]


@dataclass(frozen=True)
class Job:
    """One clause of one active version."""

    version: ActiveVersion
    clause: Clause


def measure_job(
    job: Job, facts: BatchFacts, now: datetime, total: int | None = None, of: int | None = None
) -> Any:
    """The job's tally of ``facts`` (its kind's ``measure``; an unknown kind's is empty),
    or :class:`~worker.core.clauses.tally.Failed` when measuring raised; with ``total``
    (the batch's feature count), the tally of its kind's second pass instead (``of``:
    ``facts`` are the rows kept of a chunk of ``of`` features,
    :class:`worker.core.chunk_sample.Keep`)."""
    kind = KINDS.get(job.clause.kind)
    try:
        if kind is None:
            return {}  # rendered as the break of an unknown kind
        second, contract = kind.second_pass, job.version.contract
        if total is not None and second is not None:
            if of is not None and second.measure_rows is not None:
                return second.measure_rows(job.clause, contract, facts, now, of)
            return second.measure(job.clause, contract, facts, now, total)
        return kind.measure(job.clause, job.version.contract, facts, now)
    except Exception as exc:  # last resort, as evaluate_clause: one clause, not the batch
        return Failed(f"{type(exc).__name__}: {exc}")


def render_job(job: Job, meta: BatchFacts, tally: Any, now: datetime) -> ClauseResult:
    """The job's clause result from its merged ``tally`` (``meta``: the facts of the
    whole batch's metadata): its kind's ``render``, or the break of a failed measure."""
    clause, contract = job.clause, job.version.contract
    if isinstance(tally, Failed):
        return failed_result(clause, tally.error)
    kind = KINDS.get(clause.kind)
    if kind is None:  # the break of an unknown kind
        return evaluate_clause(clause, contract, meta, now)
    try:
        return kind.render(clause, contract, meta, tally, now)
    except Exception as exc:  # last resort, as evaluate_clause
        return failed_result(clause, f"{type(exc).__name__}: {exc}")


def wants_second_pass(job: Job, tally: Tally | Failed) -> bool:
    """The job's kind asks for a second pass over the features after ``tally``."""
    kind = KINDS.get(job.clause.kind)
    if kind is None or kind.second_pass is None or isinstance(tally, Failed):
        return False
    return kind.second_pass.wanted(job.clause, tally)


def names_enough(tally: Tally | Failed) -> bool:
    """The tally names as many offenders as a result keeps (:func:`offender_limit`, on
    the merging thread; never when it names every one)."""
    limit = offender_limit()
    named = tally.get("offenders") if isinstance(tally, Mapping) else None
    return limit is not None and isinstance(named, Offenders) and len(named.features) >= limit
