"""Kind ``coverage``: the part of a region the batch's valid geometries cover, or the
number of features against an expected number (pure).

With a ``region``: the area of the region covered by the union of valid geometries, at
least ``min_fraction`` of it. Areas are m² on the ellipsoid for a geographic contract CRS,
CRS units² otherwise (``measured.unit``). Geometries are reprojected with densified
edges, polar caps and antimeridian splits (:meth:`BatchFacts.in_crs`). Features beyond
the declared CRS's area of use are left out when they are reprojected (reprojection can
wrap them into range; ``measured.outside_area_of_use``); a valid feature that cannot be
reprojected (non-finite result) breaks the clause: its area is unknown. Evaluated in
chunks, the covered area is the union of each chunk's covered part. Without a region:
features >= ``min_fraction`` x ``expected_features`` (default: the declared count).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import shapely
from pyproj import CRS

from worker.core._util.memo import identity_memo
from worker.core.clauses.base import ClauseKind, clause_result, count_phrase, percents
from worker.core.clauses.diff import Diff
from worker.core.clauses.region import compare_region, contract_crs, unplaceable, whole_batch_break
from worker.core.clauses.tally import Tally, Union, union_of
from worker.core.facts.batch import BatchFacts
from worker.core.model import Clause, ClauseResult, Contract
from worker.core.spatial import area_m2_or_units, crs_equivalent, crs_label, region_geometry

__all__ = ["KIND", "Params"]


@dataclass(frozen=True)
class Params:
    """``min_fraction`` (fraction), and ``region`` (bbox or WKT, with its own ``crs``) or
    ``expected_features``, as written."""

    min_fraction: float = 1.0
    region: Any = None
    expected_features: int | None = None
    crs: str | None = None


@identity_memo(maxsize=64, per_thread=True)  # large polygons, in GEOS calls: per thread
def _coverage_region(clause: Clause, crs: CRS | None) -> tuple[shapely.Geometry, float]:
    """The coverage clause's region in ``crs`` and its area (see
    :func:`worker.core.spatial.area_m2_or_units`), once per (clause, CRS)."""
    region = region_geometry(KIND.params(clause).region, crs)
    return region, area_m2_or_units(region, crs)


def _coverage_by_count(
    clause: Clause, facts: BatchFacts, min_frac: float, count: int
) -> ClauseResult:
    # Without expected_features the producer's declared feature_count is the reference.
    declared = KIND.params(clause).expected_features
    expected_n = int(facts.batch.feature_count if declared is None else declared)
    frac = count / expected_n if expected_n else 1.0
    ok = count >= min_frac * expected_n
    measured = {"features": count, "fraction": frac}
    expected = {"expected_features": expected_n, "min_fraction": min_frac}
    pct, min_pct = percents(frac, min_frac)
    message = f"{count} features = {pct} of {expected_n} expected (expected >= {min_pct})"
    return clause_result(clause, ok, measured, expected, message)


def measure(clause: Clause, contract: Contract, facts: BatchFacts, now: datetime) -> Tally:
    """Features, the part of the region the valid geometries cover (their union clipped
    to the region), features left out or not reprojectable."""
    p: Params = KIND.params(clause)
    if p.region is None:
        return {"count": facts.count}
    crs, _ = contract_crs(p.crs, contract, facts)
    if facts.edges_problem is not None or unplaceable(facts, crs):
        return {"count": facts.count}  # rendered as a break of the whole batch
    region, _ = _coverage_region(clause, crs)
    geoms, usable = facts.in_crs(crs) if crs is not None else (facts.geometries, facts.usable)
    src = facts.declared_crs
    moved = crs is not None and src is not None and not crs_equivalent(src, crs)
    # only reprojection can wrap coordinates beyond the area of use into the region
    beyond = facts.outside_area_of_use & facts.is_valid & moved
    failed = (
        facts.reprojection_failed(crs) & facts.is_valid & ~beyond
        if crs is not None
        else np.zeros(facts.count, dtype=bool)
    )
    valid = usable & facts.is_valid & ~beyond  # invalid geometries are excluded, never repaired
    union = union_of(geoms[valid]) if valid.any() else None
    return {
        "count": facts.count,
        "covered": Union(shapely.intersection(union, region) if union is not None else None),
        "failed": int(np.count_nonzero(failed)),
        "beyond": int(np.count_nonzero(beyond)),
    }


def render(
    clause: Clause, contract: Contract, facts: BatchFacts, tally: Tally, now: datetime
) -> ClauseResult:
    """The result from the merged tally (see the module's docstring)."""
    p: Params = KIND.params(clause)
    min_frac = float(p.min_fraction)
    count = int(tally["count"])
    if p.region is None:
        return _coverage_by_count(clause, facts, min_frac, count)
    crs, label = contract_crs(p.crs, contract, facts)
    expected = {"region": p.region, "crs": label, "min_fraction": min_frac}
    whole = whole_batch_break(clause, facts, crs, label, expected, count)
    if whole is not None:
        return whole
    _, region_area = _coverage_region(clause, crs)
    covered = tally["covered"].geom if "covered" in tally else None
    covered_area = area_m2_or_units(covered, crs)
    frac = covered_area / region_area if region_area > 0 else 0.0
    n_failed, n_beyond = int(tally.get("failed", 0)), int(tally.get("beyond", 0))
    ok = frac >= min_frac and n_failed == 0
    unit = "m²" if crs is not None and crs.is_geographic else "CRS units²"
    measured: dict[str, Any] = {
        "fraction": frac,
        "covered_area": covered_area,
        "region_area": region_area,
        "unit": unit,
    }
    pct, min_pct = percents(frac, min_frac)
    message = (
        f"valid geometries cover {pct} of the region area ({covered_area:.6g} of "
        f"{region_area:.6g} {unit}, {label}; expected >= {min_pct})"
    )
    declared_label = crs_label(facts.declared_crs) if facts.declared_crs is not None else ""
    if n_beyond:
        measured["outside_area_of_use"] = n_beyond
        message += (
            f"; {count_phrase(n_beyond, 'outside the area of use of')} {declared_label} left out"
        )
    if n_failed:
        measured["not_reprojectable"] = n_failed
        message += (
            f"; {count_phrase(n_failed, 'could not be reprojected')} from {declared_label} "
            f"to {label} (non-finite result): the covered area is unknown"
        )
    return clause_result(clause, ok, measured, expected, message)


def compare(old: Params, new: Params, diff: Diff) -> None:
    """The region as :func:`worker.core.clauses.region.compare_region`; a higher
    ``min_fraction`` or ``expected_features`` is stricter."""
    compare_region(KIND.name, (old.region, old.crs), (new.region, new.crs), diff)
    diff.bound("min_fraction", old.min_fraction, new.min_fraction, stricter_when="higher")
    diff.bound(
        "expected_features",
        old.expected_features,
        new.expected_features,
        stricter_when="higher",
    )


def brief(measured: Any) -> str:
    """Nothing shorter than the message (covered share and areas)."""
    return ""


KIND = ClauseKind("coverage", Params, measure, render, compare, brief)
