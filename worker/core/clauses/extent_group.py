"""Kind ``extent``: its parameters, its region, and its tallies of a group of batches (pure).

The region of a clause in a CRS is built once (:func:`extent_region`), and a group of
small batches (:class:`~worker.core.clauses.grouped.GroupEvaluation`) is measured at once
(:func:`measure_group`): the batches inside the region get the tally
:func:`worker.core.clauses.extent.measure` gives each alone; the others are measured alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import shapely
from pyproj import CRS

from worker.core._util.memo import identity_memo
from worker.core.clauses.grouped import per_segment
from worker.core.clauses.region import contract_crs, unplaceable
from worker.core.clauses.tally import Bounds, First, Tally
from worker.core.facts.batch import BatchFacts
from worker.core.model import Clause, Contract
from worker.core.spatial import covered_mask, region_geometry

__all__ = ["Params", "extent_region", "measure_group"]


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
    for i, stopped in enumerate(stop):
        if stopped:
            out.append(None)
            continue
        a, z = int(starts[i]), int(starts[i + 1])
        bounds = Bounds.of_shown(fbounds[a:z], shown[a:z])
        out.append({"count": z - a, "inside": z - a, "bounds": bounds, "raw_bounds": bounds,
                    "beyond": 0, "failed": 0, "disagree": 0, "disagree_first": First((), 5),
                    "offenders": None})  # fmt: skip
    return out
