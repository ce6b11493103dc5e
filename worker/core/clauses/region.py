"""What the region clauses (``extent``, ``coverage``) share (pure): the CRS a region is
written in, the breaks no feature decides, and how a region's change is classified.

A region is ``[minx, miny, maxx, maxy]`` (x east/easting whatever the CRS's axis order)
or a WKT polygon, in the *contract CRS*: the clause's own ``crs``, else the ``expect`` of
the contract's crs clause, else the batch's declared CRS (:func:`contract_crs`).
"""

from __future__ import annotations

from typing import Any

import shapely
from pyproj import CRS

from worker.core._util.text import clip
from worker.core.clauses.base import clause_result
from worker.core.clauses.crs import crs_same, expected_crs
from worker.core.clauses.diff import Diff
from worker.core.errors import ContractGateError
from worker.core.facts.batch import BatchFacts
from worker.core.model import Clause, ClauseResult, Contract
from worker.core.spatial import crs_label, region_geometry, resolve_crs

__all__ = [
    "UNDECLARED_REGION_CRS",
    "antimeridian_notes",
    "compare_region",
    "contract_crs",
    "edges_break",
    "unplaceable",
    "unplaceable_break",
    "whole_batch_break",
]

#: How a region CRS that neither the clause nor a crs clause declares is shown: such a
#: region is read in each batch's declared CRS (:func:`contract_crs`).
UNDECLARED_REGION_CRS = "undeclared: the batch's declared CRS"


def contract_crs(own: str | None, contract: Contract, facts: BatchFacts) -> tuple[CRS | None, str]:
    """The CRS a spatial clause's region is written in, and a label for messages.

    The clause's own ``crs`` (``own``), else the contract's crs clause ``expect``, else the
    batch's declared CRS (None when that is missing too, or cannot be resolved: the region
    is then compared with the coordinates as stored, and the label says which).

    Raises
    ------
    CrsError
        The clause's or the contract's CRS does not resolve.
    """
    text = own if own is not None else expected_crs(contract)
    if text is None:
        crs = facts.declared_crs
        if crs is not None:
            return crs, crs_label(crs)
        declared = facts.batch.declared_crs
        if declared:  # an unresolvable declared CRS read "undeclared CRS"
            return None, f"the declared CRS {clip(declared, 80)!r} (not resolvable)"
        return None, "undeclared CRS"
    crs = resolve_crs(text)
    return crs, text if isinstance(text, str) and len(text) <= 40 else crs_label(crs)


def edges_break(
    clause: Clause, facts: BatchFacts, expected: Any, count: int
) -> ClauseResult | None:
    """A break when the batch's edge model cannot be honoured (never the planar reading)."""
    problem = facts.edges_problem
    if problem is None:
        return None
    measured = {"edges": facts.batch.edges, "features": count}
    return clause_result(clause, False, measured, expected, problem)


def unplaceable(facts: BatchFacts, crs: CRS | None) -> bool:
    """The region is in a CRS the contract names but the batch declares none (or one that
    does not resolve): its coordinates cannot be placed in the region's CRS."""
    return crs is not None and facts.declared_crs is None


def unplaceable_break(
    clause: Clause, facts: BatchFacts, crs: CRS | None, label: str, expected: Any, count: int
) -> ClauseResult | None:
    """A break when the region is in a CRS the contract names but the batch declares no
    CRS (or one that does not resolve): its coordinates cannot be placed in the region's
    CRS, and reading them as if they were would judge numbers of unknown meaning."""
    if not unplaceable(facts, crs) or count == 0:
        return None
    why = facts.declared_crs_error or "the batch declares no CRS"
    measured = {"declared_crs": facts.batch.declared_crs, "features": count}
    message = (
        f"{why}: its coordinates cannot be placed in {label}, the CRS of the region; "
        "declare the batch's CRS (in the file's own metadata, `--crs`, or the "
        "event's declared_crs)"
    )
    return clause_result(clause, False, measured, expected, message)


def whole_batch_break(
    clause: Clause, facts: BatchFacts, crs: CRS | None, label: str, expected: Any, count: int
) -> ClauseResult | None:
    """The break of a region clause (extent, coverage) that no feature decides: edges
    that cannot be honoured (:func:`edges_break`), else coordinates that cannot be
    placed in the region's CRS (:func:`unplaceable_break`); None when neither."""
    edges = edges_break(clause, facts, expected, count)
    if edges is not None:
        return edges
    return unplaceable_break(clause, facts, crs, label, expected, count)


def compare_region(
    kind: str, old: tuple[Any, str | None], new: tuple[Any, str | None], diff: Diff
) -> None:
    """Classify the change of a region clause's ``(region, crs)``: a region CRS not
    equivalent, a region added, removed or redrawn (by geometry equality, not by text) is
    major; the same CRS or geometry written otherwise changes nothing (class ``none``).
    Each side's CRS defaults to its contract's crs clause (``diff.old_contract``,
    ``diff.new_contract``)."""
    (region_p, own_p), (region_q, own_q) = old, new
    crs_p = own_p or expected_crs(diff.old_contract)
    crs_q = own_q or expected_crs(diff.new_contract)
    shown = f"{_crs_words(crs_p)} -> {_crs_words(crs_q)}"
    if own_p != own_q and not crs_same(crs_p, crs_q):
        diff.add("major", f"region CRS not equivalent ({shown})")
    elif own_p != own_q:
        diff.add("none", f"region CRS spelled differently, equivalent ({shown})")
    if region_p != region_q:
        if region_p is None or region_q is None:
            diff.add("major", f"{kind} region {'added' if region_p is None else 'removed'}")
        elif _regions_equal(region_p, crs_p, region_q, crs_q):
            diff.add("none", f"{kind} region rewritten, same geometry")
        else:
            diff.add("major", f"{kind} region redrawn")


def _crs_words(crs: Any) -> str:
    return UNDECLARED_REGION_CRS if crs is None else str(crs)


def _region_geometry(region: Any, crs: Any) -> shapely.Geometry | None:
    try:
        resolved = resolve_crs(crs) if crs is not None else None
    except ContractGateError:
        resolved = None
    try:
        return region_geometry(region, resolved)
    except (ValueError, ContractGateError):
        return None


def _regions_equal(a: Any, crs_a: Any, b: Any, crs_b: Any) -> bool:
    if a == b:
        return True
    ga, gb = _region_geometry(a, crs_a), _region_geometry(b, crs_b)
    if ga is None or gb is None:
        return False
    return bool(ga.equals(gb))


def antimeridian_notes(contract: Contract) -> list[str]:
    """One sentence per bbox region of ``contract`` with ``minx > maxx`` in a geographic CRS.

    Such a region crosses the antimeridian (:func:`worker.core.spatial.region_geometry`):
    it is legal, and it is also what a swapped minx/maxx looks like, so ``check`` and
    ``contract publish`` say so. A region whose CRS is undeclared (read in each batch's
    CRS) is named when both longitudes lie within ±180. A region CRS that does not
    resolve is left to the clause's own error.

    Returns
    -------
    list[str]
        ``"<layer/version>: clause <name>: region [..] has minx > maxx: in <CRS> it
        crosses the antimeridian (a band <w>° wide from <minx> east to <maxx>); if that is
        a typo, write [maxx, miny, minx, maxy]"``.
    """
    notes = []
    for clause in contract.clauses:
        region = clause.params.get("region")
        if not isinstance(region, list | tuple) or len(region) != 4:
            continue
        minx, miny, maxx, maxy = region
        if not minx > maxx:
            continue
        text = clause.params.get("crs") or expected_crs(contract)
        try:
            geographic = resolve_crs(text).is_geographic if text else abs(minx) <= 180
        except ContractGateError:
            continue
        if not geographic or abs(maxx) > 180:
            continue
        where = text or "the batch's declared CRS (if geographic)"
        notes.append(
            f"{contract.key}: clause {clause.name}: region {list(region)} has minx > maxx: in "
            f"{where} it crosses the antimeridian (a band {360 - (minx - maxx):g}° wide from "
            f"{minx:g} east to {maxx:g}); if that is a typo, write "
            f"[{maxx:g}, {miny:g}, {minx:g}, {maxy:g}]"
        )
    return notes
