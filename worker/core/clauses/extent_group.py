"""Kind ``extent``: its parameters, its region, and its tallies of a group of batches (pure).

The region of a clause in a CRS is built once (:func:`extent_region`), and a group of
small batches (:class:`~worker.core.clauses.grouped.GroupEvaluation`) is measured at once
(:func:`measure_group`): the batches inside the region get the tally
:func:`worker.core.clauses.extent.measure` gives each alone; the others are measured alone.
A batch whose every feature is inside passes with a result that differs from another's
only in its bounds (:func:`passing_result`): rendered once, each batch's bounds set in it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import shapely
from pyproj import CRS

from worker.core._util.jsonsafe import finite_clipped, finite_floats, json_around, text_around
from worker.core._util.memo import identity_memo
from worker.core._util.text import MAX_ECHO_CHARS
from worker.core.clauses.group_tallies import per_segment
from worker.core.clauses.region import contract_crs, unplaceable
from worker.core.clauses.tally import Bounds, First, Tally
from worker.core.facts.batch import BatchFacts
from worker.core.model import Clause, ClauseResult, Contract
from worker.core.spatial import covered_mask, region_geometry

__all__ = ["KEPT_PASSING", "Params", "extent_region", "group_pass", "measure_group",
           "passing_result"]  # fmt: skip


@dataclass(frozen=True)
class Params:
    """``region`` (bbox or WKT), ``min_fraction_inside`` (fraction), ``tolerance`` (contract
    CRS units, grows the region), ``crs`` (the region's own CRS), as written."""

    region: Any
    min_fraction_inside: float = 1.0
    tolerance: float = 0
    crs: str | None = None


@identity_memo(maxsize=64, per_thread=True)  # large polygons, prepared: keep few, per thread
def extent_region(clause: Clause, crs: CRS | None) -> shapely.Geometry:
    """The extent clause's region in ``crs``, widened by its ``tolerance`` (mitred, so a
    box stays a box) and prepared; built once per (clause, CRS), not per event."""
    p = Params(**clause.params)  # once per (clause, CRS): not the kind's cached one
    region = region_geometry(p.region, crs)
    tolerance = float(p.tolerance or 0.0)
    if tolerance > 0:
        region = region.buffer(tolerance, join_style="mitre")
    shapely.prepare(region)
    return region


def measure_group(
    clause: Clause, contract: Contract, group: BatchFacts, starts: np.ndarray, now: datetime
) -> list[Tally | None]:
    """:data:`~worker.core.clauses.base.MeasureGroup`: the tally of each batch whose every
    feature is inside, as stored (none reprojected, beyond the area of use or off its bbox
    column); None for the others (all when reprojected or unplaceable)."""
    crs, _ = contract_crs(Params(**clause.params).crs, contract, group)
    n = len(starts) - 1
    as_stored = crs is None or group.keeps_crs(crs)
    # (a group's batches have no coordinate bounds: group.envelope is None, as theirs)
    if not as_stored or group.edges_problem is not None or unplaceable(group, crs):
        return [None] * n
    region = extent_region(clause, crs)
    beyond = group.outside_area_of_use & group.usable
    shown = group.usable & ~beyond
    fbounds = group.bounds
    inside = covered_mask(lambda: group.geometries, shown, region, fbounds)
    inside = inside | (group.parsed & group.is_empty)
    stop = per_segment(~inside | beyond | group.covering_bbox_disagrees, starts).tolist()
    out: list[Tally | None] = []
    at, none_first = starts.tolist(), First((), 5)  # (immutable: one for every tally)
    # as many features as batches (one-feature events): their bounds rows read as lists once
    rows, shown_at = (fbounds.tolist(), shown.tolist()) if len(fbounds) == n else ([], [])
    for i, stopped in enumerate(stop):
        if stopped:
            out.append(None)
            continue
        a, z = at[i], at[i + 1]
        # a one-feature batch shown: its row's envelope (Bounds.of_shown's, no numpy call)
        bounds = Bounds.of_row(rows[a]) if z - a == 1 and rows and shown_at[a] else None
        if bounds is None:
            bounds = Bounds.of_shown(fbounds[a:z], shown[a:z])
        out.append({"count": z - a, "inside": z - a, "bounds": bounds, "raw_bounds": bounds,
                    "beyond": 0, "failed": 0, "disagree": 0, "disagree_first": none_first,
                    "offenders": None})  # fmt: skip
    return out


#: Where an extent clause keeps its passing results without bounds (in its ``__dict__``).
KEPT_PASSING = "_extent_passing"
#: Passing results kept per clause (cleared when full).
_MOST_PASSING = 64

#: ``render(clause, contract, facts, tally)`` of :mod:`worker.core.clauses.extent`.
Render = Callable[[Clause, Contract, BatchFacts, Tally], ClauseResult]


def passing_result(
    clause: Clause, contract: Contract, facts: BatchFacts, tally: Tally, render: Render
) -> ClauseResult:
    """``render(clause, contract, facts, tally)``, for a tally whose every feature is
    inside, as stored and placed (nothing beyond the area of use, failed or off the bbox
    column, no offenders, no diagnosis; the envelope shown the one as declared), made from
    a passing result rendered earlier for the same clause, contract, count and what the
    render reads of the facts (the declared CRS object and text, the edge model and its
    problem, the metadata's name), with this tally's bounds. Such a render reads the
    tally's bounds only into ``measured["bounds"]``: the message shows them only for a
    break, the notes read the counts (all 0). Any other tally, or a result that is not a
    pass, is rendered. The JSON text of the kept pass's ``measured`` around its bounds is
    kept too (:func:`~worker.core._util.jsonsafe.json_around`): a record writes each
    batch's ``measured`` as that text around its bounds' floats (``text_around``)."""
    if not (
        tally.get("inside", -1) == tally["count"]
        and tally.get("raw_bounds") is tally.get("bounds")
        and tally.get("offenders", 0) is None
        and tally.get("beyond") == 0
        and tally.get("failed") == 0
        and tally.get("disagree") == 0
        and "diagnosis" not in tally
    ):
        return render(clause, contract, facts, tally)
    src = facts.declared_crs
    reads = _reads(contract, facts, src, tally["count"])
    kept: dict[tuple[Any, ...], _Kept]
    kept = clause.__dict__.setdefault(KEPT_PASSING, {})
    hit = kept.get(reads)
    if hit is None or hit[0] is not contract or hit[1] is not src:  # ids of live objects
        result = render(clause, contract, facts, tally)
        if result.result == "pass" and result.offenders is None and not result.diagnoses:
            if len(kept) >= _MOST_PASSING:
                kept.clear()
            measured = result.measured
            around = json_around(measured, "bounds") if type(measured) is dict else None
            kept[reads] = (contract, src, result, around)
        return result
    return _with_bounds(hit, tally)


def group_pass(
    clause: Clause, contract: Contract, facts: BatchFacts, tally: Tally
) -> ClauseResult | None:
    """:data:`~worker.core.clauses.base.GroupPass`: the kept pass :func:`passing_result`
    gives a tally of :func:`measure_group` (every feature inside, as stored and placed: its
    checks hold), with its bounds; None when none is kept. A pass kept for the same
    reads (the count among them) was rendered from such a tally without a second pass,
    and ``ClauseKind.tally`` wants one (the extent's diagnosis) from the counts alone:
    not for this tally either."""
    kept = clause.__dict__.get(KEPT_PASSING)
    if kept is None:
        return None
    src = facts.declared_crs
    hit = kept.get(_reads(contract, facts, src, tally["count"]))
    if hit is None or hit[0] is not contract or hit[1] is not src:
        return None
    return _with_bounds(hit, tally)


#: A kept pass: (contract, declared CRS object, result, its ``measured`` text around its
#: bounds or None).
_Kept = tuple[Contract, Any, ClauseResult, "tuple[str, str] | None"]


def _reads(contract: Contract, facts: BatchFacts, src: Any, count: int) -> tuple[Any, ...]:
    """What a pass of ``count`` features reads of the facts (``src``: their declared CRS
    object), keyed by ids of live objects (checked on a hit)."""
    batch = facts.batch
    edges = batch.edges  # planar edges have no problem (edges_problem): no fact to read
    return (id(contract), count, id(src), batch.declared_crs, edges, batch.metadata_name,
            None if edges == "planar" else facts.edges_problem)  # fmt: skip


def _with_bounds(hit: _Kept, tally: Tally) -> ClauseResult:
    """The kept pass of ``hit`` with ``tally``'s bounds (its ``measured`` text kept around
    them)."""
    like = hit[2]
    box = tally["bounds"].box
    if box is None:
        bounds = None
    elif finite_floats(box):  # what finite_clipped gives them: a list of the same floats
        bounds = list(box)
    else:
        bounds = finite_clipped([float(b) for b in box], MAX_ECHO_CHARS)
    if hit[3] is not None:  # its JSON text: the kept text around its bounds' floats
        measured = text_around(like.measured, "bounds", bounds, hit[3])
    else:
        measured = {**like.measured, "bounds": bounds}
    return ClauseResult(like.name, like.kind, like.result, like.on_break, measured,
                        like.expected, like.message)  # fmt: skip
