"""Kind ``validity``: the share of invalid geometries is at most a limit (pure).

Invalid is :attr:`worker.core.facts.batch.BatchFacts.is_valid` false: GEOS's verdict, a
geometry that cannot be parsed, a non-finite coordinate or a contradicted ring orientation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from worker.core.clauses.base import ClauseKind, clause_result, offenders_of, percents
from worker.core.clauses.diff import Diff
from worker.core.clauses.group_tallies import no_facts, per_segment, shared_tallies
from worker.core.clauses.tally import First, Tally
from worker.core.facts.batch import MAX_REASONS, BatchFacts
from worker.core.model import Clause, ClauseResult, Contract

__all__ = ["KIND", "Params"]


@dataclass(frozen=True)
class Params:
    """``max_invalid_fraction``: a fraction of 1."""

    max_invalid_fraction: float = 0.0


def measure(clause: Clause, contract: Contract, facts: BatchFacts, now: datetime) -> Tally:
    """Features, invalid ones, the first reasons (global indices), offenders."""
    offenders = offenders_of(
        facts, contract, ~facts.is_valid, facts.invalid_reason, "why the geometry is invalid"
    )
    return {
        "count": facts.count,
        "invalid": facts.invalid_count,
        "reasons": First(facts.invalid_reasons, MAX_REASONS),
        "offenders": offenders,
    }


def measure_group(
    clause: Clause, contract: Contract, group: BatchFacts, starts: np.ndarray, now: datetime
) -> list[Tally | None]:
    """:data:`~worker.core.clauses.base.MeasureGroup`: the tally of each batch whose every
    feature is valid; None for the others (their reasons and offenders are their own)."""
    invalid = per_segment(~group.is_valid, starts)
    return shared_tallies(
        (
            None if bad else n
            for bad, n in zip(invalid.tolist(), np.diff(starts).tolist(), strict=True)
        ),
        lambda n: {"count": n, "invalid": 0, "reasons": First((), MAX_REASONS), "offenders": None},
    )


def render(
    clause: Clause, contract: Contract, facts: BatchFacts, tally: Tally, now: datetime
) -> ClauseResult:
    """``measured``: ``invalid_fraction`` (0..1), ``invalid``, ``features``, the first
    ``reasons`` (``{"index", "reason"}``)."""
    limit = float(KIND.params(clause).max_invalid_fraction)
    count, invalid = tally["count"], tally["invalid"]
    frac = invalid / count if count else 0.0
    ok = frac <= limit
    first = tally["reasons"].items
    reasons = [{"index": i, "reason": r} for i, r in first]
    measured = {
        "invalid_fraction": frac,
        "invalid": invalid,
        "features": count,
        "reasons": reasons,
    }
    shown = "; ".join(f"feature {i}: {r}" for i, r in first)
    pct, limit_pct = percents(frac, limit)
    message = f"{invalid} of {count} geometries invalid ({pct}, expected <= {limit_pct})" + (
        f": {shown}" if shown else ""
    )
    return clause_result(
        clause, ok, measured, {"max_invalid_fraction": limit}, message, offenders=tally["offenders"]
    )


def compare(old: Params, new: Params, diff: Diff) -> None:
    """A lower limit is stricter."""
    diff.bound(
        "max_invalid_fraction",
        old.max_invalid_fraction,
        new.max_invalid_fraction,
        stricter_when="lower",
    )


def brief(measured: Any) -> str:
    """The invalid count and the first GEOS reason: ``2 invalid: Self-intersection[...]``."""
    if not isinstance(measured, Mapping) or not measured.get("reasons"):
        return ""
    first = measured["reasons"][0]
    why = first.get("reason", "") if isinstance(first, Mapping) else first
    return f"{measured.get('invalid', '?')} invalid: {why}"


KIND = ClauseKind("validity", Params, measure, render, compare, brief, leads=0,
                  render_key=no_facts, measure_group=measure_group)  # fmt: skip
