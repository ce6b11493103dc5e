"""Kind ``feature_count``: the number of features is within bounds, and is the number the
producer declared (pure).

A batch whose declared ``feature_count`` differs from the features it holds breaks the
clause whatever the bounds: it was truncated or padded on the way.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from worker.core.clauses.base import ClauseKind, clause_result
from worker.core.clauses.diff import Diff
from worker.core.clauses.group_tallies import shared_tallies
from worker.core.clauses.tally import Tally
from worker.core.facts.batch import BatchFacts
from worker.core.model import Clause, ClauseResult, Contract

__all__ = ["KIND", "Params"]


@dataclass(frozen=True)
class Params:
    """``min`` and ``max`` features, as written (None: not written; ``min`` then reads 0,
    ``max`` unbounded)."""

    min: int | None = None
    max: int | None = None


def measure(clause: Clause, contract: Contract, facts: BatchFacts, now: datetime) -> Tally:
    """The chunk's number of features (summed over chunks)."""
    return {"count": facts.count}


def measure_group(
    clause: Clause, contract: Contract, group: BatchFacts, starts: np.ndarray, now: datetime
) -> list[Tally | None]:
    """:data:`~worker.core.clauses.base.MeasureGroup`: each batch's number of features,
    batches of one count sharing one tally."""
    return shared_tallies(np.diff(starts).tolist(), lambda n: {"count": n})


def render(
    clause: Clause, contract: Contract, facts: BatchFacts, tally: Tally, now: datetime
) -> ClauseResult:
    """``measured`` is the number of features."""
    p: Params = KIND.params(clause)
    count = int(tally["count"])
    lo = int(p.min or 0)
    hi = p.max
    declared = facts.batch.feature_count
    ok = count >= lo and (hi is None or count <= int(hi))
    message = f"{count} features (expected {lo} .. {'unbounded' if hi is None else hi})"
    if declared != count:
        ok = False
        message += f"; the producer declared {declared} features: truncated or padded batch?"
    return clause_result(clause, ok, count, {"min": lo, "max": hi}, message)


def compare(old: Params, new: Params, diff: Diff) -> None:
    """A higher minimum or a lower maximum is stricter; a bound added tightens."""
    diff.bound("min", old.min, new.min, stricter_when="higher")
    diff.bound("max", old.max, new.max, stricter_when="lower")


def brief(measured: Any) -> str:
    """``177 features``."""
    if not isinstance(measured, int) or isinstance(measured, bool):
        return ""
    return f"{measured} features"


def check(clause: Mapping[str, Any]) -> tuple[list[str | int], str, str] | None:
    """``min`` greater than ``max`` as written (the JSON Schema cannot compare them)."""
    low = clause.get("min", 0)
    if low > clause.get("max", low):
        return [], "min is greater than max", "make min <= max"
    return None


def render_key(facts: BatchFacts) -> Hashable:
    """What ``render`` reads of the facts: the producer's declared feature count."""
    return facts.batch.feature_count


KIND = ClauseKind("feature_count", Params, measure, render, compare, brief, check=check,
                  render_key=render_key, measure_group=measure_group)  # fmt: skip
