"""What every clause evaluator shares (pure): its result, its offenders, the contract CRS.

See :mod:`worker.core.clauses.kinds` for the evaluators and :mod:`worker.core.clauses.spatial`
for the extent and coverage clauses.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np
from pyproj import CRS

from worker.core._util.jsonsafe import finite_json
from worker.core._util.text import clip
from worker.core.clauses.tally import Tally
from worker.core.facts.batch import BatchFacts
from worker.core.model import MAX_OFFENDERS, Clause, ClauseResult, Contract, Offender, Offenders
from worker.core.spatial import crs_label, resolve_crs

__all__ = [
    "MAX_OFFENDER_VALUE_CHARS",
    "Evaluator",
    "Measure",
    "Render",
    "clause_result",
    "contract_crs",
    "count_phrase",
    "crs_units",
    "offenders_of",
    "percents",
    "round10",
]

Evaluator = Callable[[Clause, Contract, BatchFacts, datetime], ClauseResult]
Measure = Callable[[Clause, Contract, BatchFacts, datetime], Tally]
Render = Callable[[Clause, Contract, BatchFacts, Tally, datetime], ClauseResult]

#: Longest echo of one offending feature's text value (a domain code, a GEOS reason).
MAX_OFFENDER_VALUE_CHARS = 200


def clause_result(
    clause: Clause,
    ok: bool,
    measured: Any,
    expected: Any,
    message: str,
    diagnoses: Any = (),
    offenders: Offenders | None = None,
) -> ClauseResult:
    return ClauseResult(
        name=clause.name,
        kind=clause.kind,
        result="pass" if ok else "break",
        on_break=clause.on_break,
        measured=finite_json(measured),
        expected=finite_json(expected),
        message=message,
        diagnoses=tuple(diagnoses),
        offenders=offenders,
    )


def offenders_of(
    facts: BatchFacts,
    contract: Contract,
    mask: np.ndarray,
    value: Callable[[int], Any],
    measure: str,
) -> Offenders | None:
    """The offending features of ``mask`` (bool (N,)): the first :data:`MAX_OFFENDERS` in
    batch order (indices counting from :attr:`BatchFacts.offset`) with their feature ids
    (:meth:`BatchFacts.feature_ids` with the contract's ``id_column``) and ``value(index)``
    (JSON-compatible; text clipped to :data:`MAX_OFFENDER_VALUE_CHARS`, and so is a text
    id: a producer's id of 100,000 characters was echoed whole into every report line and
    record naming the feature), and the total. None when no feature offends."""
    idx = np.flatnonzero(np.asarray(mask, dtype=bool))
    if idx.size == 0:
        return None
    ids = facts.feature_ids(contract.id_column)
    feats = []
    for i in idx[:MAX_OFFENDERS]:
        v = value(int(i))
        if isinstance(v, str):
            v = clip(v, MAX_OFFENDER_VALUE_CHARS)
        fid = ids[int(i)]
        if isinstance(fid, str):
            fid = clip(fid, MAX_OFFENDER_VALUE_CHARS)
        feats.append(Offender(facts.offset + int(i), fid, finite_json(v)))
    return Offenders(int(idx.size), tuple(feats), measure)


def crs_units(crs: CRS | None) -> str:
    """The unit of a CRS's coordinates in words: ``degrees`` or the first axis's unit
    (``metre``, ``US survey foot``); ``CRS units`` when unknown."""
    if crs is None:
        return "CRS units"
    if crs.is_geographic:
        return "degrees"
    axes = crs.axis_info
    return axes[0].unit_name if axes and axes[0].unit_name else "CRS units"


def round10(v: float) -> float:
    return float(f"{v:.10g}")


def contract_crs(clause: Clause, contract: Contract, facts: BatchFacts) -> tuple[CRS | None, str]:
    """The CRS a spatial clause's region is written in, and a label for messages.

    The clause's ``crs``, else the contract's crs clause ``expect``, else the batch's declared
    CRS (None when that is missing too, or cannot be resolved: the region is then compared
    with the coordinates as stored, and the label says which). Raises CrsError for an
    unresolvable contract CRS.
    """
    text = clause.params.get("crs")
    if text is None:
        text = next((c.params.get("expect") for c in contract.clauses if c.kind == "crs"), None)
    if text is None:
        crs = facts.declared_crs
        if crs is not None:
            return crs, crs_label(crs)
        declared = facts.batch.declared_crs
        if declared:  # a fresh-user finding: it read "undeclared CRS"
            return None, f"the declared CRS {clip(declared, 80)!r} (not resolvable)"
        return None, "undeclared CRS"
    crs = resolve_crs(text)
    return crs, text if isinstance(text, str) and len(text) <= 40 else crs_label(crs)


def count_phrase(n: int, what: str) -> str:
    return f"{n} {'feature' if n == 1 else 'features'} {what}"


def percents(value: float, bound: float) -> tuple[str, str]:
    """``value`` and ``bound`` (fractions) as percentages, one decimal, with more decimals
    (up to 6) while a different value would read the same as its bound: a 1-in-3,000
    break read "0.0%, expected <= 0.0%", and 299,999 of 300,000 "100.0% ... expected >=
    100.0%" (a fresh-user finding). Equal fractions read equal; a value that still reads
    as its bound at 6 decimals keeps that reading."""
    for digits in range(1, 7):
        shown, limit = f"{value:.{digits}%}", f"{bound:.{digits}%}"
        if value == bound or shown != limit:
            return shown, limit
    return shown, limit
