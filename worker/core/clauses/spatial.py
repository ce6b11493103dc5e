"""The spatial clauses over many features: extent and coverage (pure).

Each is split for chunked evaluation (:mod:`worker.core.chunks`): ``measure_*`` gives
the mergeable tally of one chunk, ``render_*`` the result from the merged tally, and
``check_*`` is the two on a whole batch. Spatial clauses measure ``east_north`` geometries
in the contract CRS (:func:`worker.core.clauses.base.contract_crs`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
import shapely
from pyproj import CRS

from worker.core._util.memo import identity_memo
from worker.core.clauses.base import (
    clause_result,
    contract_crs,
    count_phrase,
    crs_units,
    offenders_of,
    percents,
    round10,
)
from worker.core.clauses.diagnose import diagnose_tally, diagnoses_of
from worker.core.clauses.tally import Bounds, First, Tally, Union
from worker.core.facts.batch import BatchFacts
from worker.core.model import Clause, ClauseResult, Contract
from worker.core.spatial import (
    area_m2_or_units,
    area_of_use,
    covered_mask,
    crs_equivalent,
    crs_label,
    region_geometry,
)

__all__ = [
    "check_coverage",
    "check_extent",
    "extent_needs_diagnosis",
    "measure_coverage",
    "measure_extent",
    "measure_extent_diagnosis",
    "render_coverage",
    "render_extent",
]


def _edges_break(
    clause: Clause, facts: BatchFacts, expected: Any, count: int
) -> ClauseResult | None:
    """A break when the batch's edge model cannot be honoured (never the planar reading)."""
    problem = facts.edges_problem
    if problem is None:
        return None
    measured = {"edges": facts.batch.edges, "features": count}
    return clause_result(clause, False, measured, expected, problem)


def _unplaceable(facts: BatchFacts, crs: CRS | None) -> bool:
    """The region is in a CRS the contract names but the batch declares none (or one that
    does not resolve): its coordinates cannot be placed in the region's CRS."""
    return crs is not None and facts.declared_crs is None


def _unplaceable_break(
    clause: Clause, facts: BatchFacts, crs: CRS | None, label: str, expected: Any, count: int
) -> ClauseResult | None:
    """A break when the region is in a CRS the contract names but the batch declares no
    CRS (or one that does not resolve): its coordinates cannot be placed in the region's
    CRS, and reading them as if they were would judge numbers of unknown meaning."""
    if not _unplaceable(facts, crs) or count == 0:
        return None
    why = facts.declared_crs_error or "the batch declares no CRS"
    measured = {"declared_crs": facts.batch.declared_crs, "features": count}
    message = (
        f"{why}: its coordinates cannot be placed in {label}, the CRS of the region; "
        "declare the batch's CRS (GeoParquet `crs` in the geo metadata, `--crs`, or the "
        "event's declared_crs)"
    )
    return clause_result(clause, False, measured, expected, message)


def _whole_batch_break(
    clause: Clause, facts: BatchFacts, crs: CRS | None, label: str, expected: Any, count: int
) -> ClauseResult | None:
    """The break of a region clause (extent, coverage) that no feature decides: edges
    that cannot be honoured (:func:`_edges_break`), else coordinates that cannot be
    placed in the region's CRS (:func:`_unplaceable_break`); None when neither."""
    edges = _edges_break(clause, facts, expected, count)
    if edges is not None:
        return edges
    return _unplaceable_break(clause, facts, crs, label, expected, count)


@identity_memo(maxsize=64, per_thread=True)  # large polygons, prepared: keep few, per thread
def _extent_region(clause: Clause, crs: CRS | None) -> shapely.Geometry:
    """The extent clause's region in ``crs``, widened by its ``tolerance`` (mitred, so a
    box stays a box) and prepared; built once per (clause, CRS), not per event."""
    region = region_geometry(clause.params["region"], crs)
    tolerance = float(clause.params.get("tolerance", 0.0) or 0.0)
    if tolerance > 0:
        region = region.buffer(tolerance, join_style="mitre")
    shapely.prepare(region)
    return region


@identity_memo(maxsize=64, per_thread=True)  # large polygons, in GEOS calls: per thread
def _coverage_region(clause: Clause, crs: CRS | None) -> tuple[shapely.Geometry, float]:
    """The coverage clause's region in ``crs`` and its area (see
    :func:`worker.core.spatial.area_m2_or_units`), once per (clause, CRS)."""
    region = region_geometry(clause.params["region"], crs)
    return region, area_m2_or_units(region, crs)


def _rows(bounds: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``bounds[mask]``, without the copy when every row is selected."""
    return bounds if mask.all() else bounds[mask]


def measure_extent(clause: Clause, contract: Contract, facts: BatchFacts, now: datetime) -> Tally:
    """The extent clause's tally of ``facts`` (see :func:`check_extent`): counts, the
    envelopes of the features shown (contract CRS) and of the usable ones (as declared),
    the first bbox-covering disagreements and the offenders."""
    crs, label = contract_crs(clause, contract, facts)
    if facts.edges_problem is not None or _unplaceable(facts, crs):
        return {"count": facts.count}  # rendered as a break of the whole batch
    region = _extent_region(clause, crs)
    as_stored = crs is None or facts.keeps_crs(crs)
    geoms: Any
    if crs is None or as_stored:
        # the geometries are built only if the region needs them (a batch of points is
        # decided on its coordinates)
        geoms, usable = (lambda: facts.geometries), facts.usable
    else:
        geoms, usable = facts.in_crs(crs)
    beyond = facts.outside_area_of_use & facts.usable
    failed = facts.reprojection_failed(crs) if crs is not None else np.zeros(facts.count, bool)
    shown = usable & ~beyond
    # envelopes of the geometries tested (the facts' own when nothing was reprojected)
    with np.errstate(invalid="ignore"):
        fbounds = (
            facts.bounds
            if as_stored
            else np.asarray(shapely.bounds(geoms), dtype=float).reshape(facts.count, 4)
        )
    env = facts.envelope if as_stored and not beyond.any() else None
    fast = env is not None and env[0] < env[2] and env[1] < env[3]
    if env is not None and fast:
        # every feature shown, as stored: the coordinate arrays' envelope is their bounds,
        # and a region covering it covers every feature (no test per feature)
        inside = (
            shown
            if region.covers(shapely.box(*env))
            else covered_mask(geoms, shown, region, fbounds)
        )
        bounds = Bounds(env)
    else:
        inside = covered_mask(geoms, shown, region, fbounds)
        bounds = Bounds.of_rows(_rows(fbounds, shown))
    # the empty point set lies in every region: whether empties may be sent is the
    # geometry_type clause's (allow_empty), so one empty feature is reported once, and the
    # extent clause means the same whatever the contract's other clauses say
    inside = inside | (facts.parsed & facts.is_empty)
    disagree = np.flatnonzero(facts.covering_bbox_disagrees)
    declared_label = (
        crs_label(facts.declared_crs) if facts.declared_crs is not None else "the declared CRS"
    )

    def why_outside(i: int) -> Any:
        if not facts.parsed[i]:
            return "missing or unparseable geometry"
        if facts.has_nonfinite[i]:
            return "non-finite coordinate (NaN or inf)"
        if beyond[i]:
            return f"outside the area of use of {declared_label}"
        if not usable[i]:
            return f"could not be reprojected from {declared_label} to {label}"
        return [round10(b) for b in fbounds[i]]

    offenders = offenders_of(
        facts,
        contract,
        ~inside,
        why_outside,
        f"bounds [minx, miny, maxx, maxy] in {label} ({crs_units(crs)}), or why the feature "
        "counts outside",
    )
    return {
        "count": facts.count,
        "inside": int(np.count_nonzero(inside)),
        "bounds": bounds,
        "raw_bounds": (
            bounds
            if fast or (fbounds is facts.bounds and not beyond.any())  # the same rows
            else Bounds.of_rows(_rows(facts.bounds, facts.usable))
        ),
        "beyond": int(np.count_nonzero(beyond)),
        "failed": int(np.count_nonzero(failed & ~beyond)),
        "disagree": int(disagree.size),
        "disagree_first": First(tuple(facts.offset + int(i) for i in disagree[:5]), 5),
        "offenders": offenders,
    }


def extent_needs_diagnosis(clause: Clause, tally: Tally) -> bool:
    """The extent clause of ``tally`` broke for its fraction inside, so its diagnoses
    (:func:`worker.core.clauses.diagnose.diagnose_tally`) are wanted."""
    if "inside" not in tally:
        return False
    count = tally["count"]
    frac = float(tally["inside"]) / count if count else 1.0
    return frac < float(clause.params.get("min_fraction_inside", 1.0))


def measure_extent_diagnosis(
    clause: Clause, contract: Contract, facts: BatchFacts, now: datetime, total: int | None = None
) -> Tally:
    """The tally from which the diagnoses of a broken extent clause are decided, measured
    on the batch's evenly spaced sample (:func:`worker.core.clauses.diagnose.diagnose_tally`);
    ``facts`` may be a chunk of a batch of ``total`` features (default: the whole batch)."""
    crs, _ = contract_crs(clause, contract, facts)
    region = _extent_region(clause, crs)
    return {"diagnosis": diagnose_tally(facts, region, crs, total=total)}


def render_extent(
    clause: Clause, contract: Contract, facts: BatchFacts, tally: Tally, now: datetime
) -> ClauseResult:
    """The extent clause's result from its merged tally; ``facts`` give the metadata."""
    p = clause.params
    crs, label = contract_crs(clause, contract, facts)
    min_frac = float(p.get("min_fraction_inside", 1.0))
    tolerance = float(p.get("tolerance", 0.0) or 0.0)
    expected = {
        "region": p["region"],
        "crs": label,
        "min_fraction_inside": min_frac,
        "tolerance": tolerance,
    }
    count = int(tally["count"])
    whole = _whole_batch_break(clause, facts, crs, label, expected, count)
    if whole is not None:
        return whole
    if "inside" not in tally:  # an unplaceable batch without features
        tally = {**tally, **_EMPTY_EXTENT}
    src = facts.declared_crs
    moved = crs is not None and src is not None and not crs_equivalent(src, crs)
    frac = float(tally["inside"]) / count if count else 1.0
    ok = frac >= min_frac
    outside = count - round(frac * count)
    bounds = tally["bounds"].box
    bounds_crs = label
    # the features whose span is shown: without those beyond the declared CRS's area of
    # use ("the features span x -179 .. 179" left a point at 180.5 out: a fresh-user find)
    spanned = (
        f"the features within the area of use of {crs_label(src)} span"
        if tally["beyond"] and src is not None
        else "the features span"
    )
    if bounds is None and tally["raw_bounds"].box is not None:
        # reprojection from the declared CRS failed (e.g. feet declared as degrees) or
        # every feature is beyond the CRS's area of use: the raw bounds as declared
        # still tell what the batch holds
        bounds = tally["raw_bounds"].box
        bounds_crs = crs_label(src) if src is not None else "as declared"
        spanned = "the features span"  # every usable feature, as declared
    n_beyond, n_failed, n_disagree = tally["beyond"], tally["failed"], tally["disagree"]
    measured: dict[str, Any] = {
        "fraction_inside": frac,
        "features": count,
        "outside": outside,
        "bounds": None if bounds is None else [float(b) for b in bounds],
        "bounds_crs": bounds_crs,
    }
    pct, min_pct = percents(frac, min_frac)
    message = (
        f"{pct} of {count} features inside the extent in {label}, "
        f"{outside} outside (expected >= {min_pct})"
    )
    if not ok and bounds is not None and np.isfinite(bounds).all():
        unit = (
            "degrees"
            if bounds_crs == label and crs is not None and crs.is_geographic
            else (crs_units(crs) if bounds_crs == label else "units of " + bounds_crs)
        )
        message += (
            f"; {spanned} x {bounds[0]:.6g} .. {bounds[2]:.6g}, y {bounds[1]:.6g} .. "
            f"{bounds[3]:.6g} ({unit})"
        )
    if facts.batch.edges == "spherical":
        message += "; edges read as great-circle arcs (GeoParquet edges: spherical)"
    declared_label = crs_label(src) if src is not None else ""
    if n_beyond:
        aou = area_of_use(src) if src is not None else None
        where = f" ({aou.text})" if aou is not None else ""
        measured["outside_area_of_use"] = n_beyond
        message += (
            f"; {count_phrase(n_beyond, 'outside the area of use of')} {declared_label}"
            f"{where}, counted outside" + (" whatever reprojection makes of them" if moved else "")
        )
    if n_failed:
        measured["not_reprojectable"] = n_failed
        message += (
            f"; {count_phrase(n_failed, 'could not be reprojected')} from {declared_label} "
            f"to {label} (non-finite result), counted outside"
        )
    if n_disagree:
        measured["covering_bbox_disagrees"] = n_disagree
        first = ", ".join(str(i) for i in tally["disagree_first"].items)
        message += (
            f"; warning: the GeoParquet bbox covering column does not bound "
            f"{count_phrase(n_disagree, f'(index {first})')}: readers filtering "
            "by it would skip them"
        )
    diagnoses: list[str] = []
    if not ok and "diagnosis" in tally:
        region = _extent_region(clause, crs)
        diagnoses = diagnoses_of(
            tally["diagnosis"], facts, region, crs, label, min_frac, inside_frac=frac
        )
    return clause_result(clause, ok, measured, expected, message, diagnoses, tally["offenders"])


_EMPTY_EXTENT: dict[str, Any] = {
    "inside": 0,
    "bounds": Bounds(None),
    "raw_bounds": Bounds(None),
    "beyond": 0,
    "failed": 0,
    "disagree": 0,
    "disagree_first": First((), 5),
    "offenders": None,
}


def check_extent(
    clause: Clause, contract: Contract, facts: BatchFacts, now: datetime
) -> ClauseResult:
    """Share of features covered by the region (``min_fraction_inside``), in the contract CRS.

    A feature counts as outside when it is missing or non-finite (an empty geometry counts
    as inside: the empty point set lies in every region, and whether empties may be sent
    is the geometry_type clause's ``allow_empty``), when some
    coordinate lies outside the declared CRS's area of use (tested before reprojection:
    ``measured.outside_area_of_use``), or when it cannot be reprojected to the contract
    CRS (``measured.not_reprojectable``). ``measured.bounds`` are in ``bounds_crs`` units.
    A GeoParquet bbox covering column that does not bound its geometries is reported
    (``measured.covering_bbox_disagrees``) without breaking the clause.
    """
    tally = measure_extent(clause, contract, facts, now)
    if extent_needs_diagnosis(clause, tally):
        tally = {**tally, **measure_extent_diagnosis(clause, contract, facts, now)}
    return render_extent(clause, contract, facts, tally, now)


def _coverage_by_count(
    clause: Clause, facts: BatchFacts, min_frac: float, count: int
) -> ClauseResult:
    # Without expected_features the producer's declared feature_count is the reference.
    expected_n = int(clause.params.get("expected_features", facts.batch.feature_count))
    frac = count / expected_n if expected_n else 1.0
    ok = count >= min_frac * expected_n
    measured = {"features": count, "fraction": frac}
    expected = {"expected_features": expected_n, "min_fraction": min_frac}
    pct, min_pct = percents(frac, min_frac)
    message = f"{count} features = {pct} of {expected_n} expected (expected >= {min_pct})"
    return clause_result(clause, ok, measured, expected, message)


def measure_coverage(clause: Clause, contract: Contract, facts: BatchFacts, now: datetime) -> Tally:
    """The coverage clause's tally: features, the part of the region the valid geometries
    cover (their union clipped to the region), features left out or not reprojectable."""
    p = clause.params
    if "region" not in p:
        return {"count": facts.count}
    crs, _ = contract_crs(clause, contract, facts)
    if facts.edges_problem is not None or _unplaceable(facts, crs):
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
    union = shapely.union_all(geoms[valid]) if valid.any() else None
    return {
        "count": facts.count,
        "covered": Union(shapely.intersection(union, region) if union is not None else None),
        "failed": int(np.count_nonzero(failed)),
        "beyond": int(np.count_nonzero(beyond)),
    }


def render_coverage(
    clause: Clause, contract: Contract, facts: BatchFacts, tally: Tally, now: datetime
) -> ClauseResult:
    """The coverage clause's result from its merged tally."""
    p = clause.params
    min_frac = float(p.get("min_fraction", 1.0))
    count = int(tally["count"])
    if "region" not in p:
        return _coverage_by_count(clause, facts, min_frac, count)
    crs, label = contract_crs(clause, contract, facts)
    expected = {"region": p["region"], "crs": label, "min_fraction": min_frac}
    whole = _whole_batch_break(clause, facts, crs, label, expected, count)
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


def check_coverage(
    clause: Clause, contract: Contract, facts: BatchFacts, now: datetime
) -> ClauseResult:
    """Area of the region covered by the union of valid geometries (``min_fraction``), or
    the feature count against ``expected_features`` when there is no region.

    Areas are m² on the ellipsoid for a geographic contract CRS, CRS units² otherwise
    (``measured.unit``). Geometries are reprojected with densified edges, polar caps and
    antimeridian splits (:meth:`BatchFacts.in_crs`). Features beyond the declared CRS's
    area of use are left out when they are reprojected (reprojection can wrap them into
    range; ``measured.outside_area_of_use``); a valid feature that cannot be reprojected
    (non-finite result) breaks the clause: its area is unknown. Evaluated in chunks, the
    covered area is the union of each chunk's covered part.
    """
    tally = measure_coverage(clause, contract, facts, now)
    return render_coverage(clause, contract, facts, tally, now)
