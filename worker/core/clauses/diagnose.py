"""Likely causes of a broken extent clause (pure): a wrong declared CRS, swapped axes, an
undeclared reprojection.

All are guesses from coordinates alone, worded as such: "... lie beyond the area of use
of <contract CRS>" when plausible longitudes/latitudes reach where the contract CRS
cannot go (Web Mercator beyond 85 degrees); "the declared CRS ... looks wrong"
when the raw coordinates fit the extent as the contract CRS; "axis order looks swapped" when
the batch fits the extent with x and y exchanged; "coordinates look like <CRS>" when it
fits after reprojecting from a candidate CRS (EPSG:3857, EPSG:4326, the geographic base of
a projected contract CRS) to the contract CRS, marked a weak hint when the extent covers
most of the contract CRS's area of use (then almost any projected data fits). A candidate
is only named when every raw coordinate lies within its area of use
(:func:`worker.core.spatial.outside_area_of_use`): x = 1e279 looks like no CRS. Nor is a candidate
named when most features are inside the extent as they are (:data:`MOST_INSIDE`): the
ones outside are then single offenders.

The readings are measured on an evenly spaced sample of at most :data:`DIAGNOSIS_SAMPLE`
features (:mod:`worker.core.clauses.sample`), so that diagnosing a batch of a million features
reprojects ten thousand: the fractions that decide are then estimates over the sample,
and so are the "every coordinate" tests of the areas of use; a diagnosis from a sample
says so ("... (from an evenly spaced sample of 10,000 of 1,000,000 features)"). A batch
no larger than the sample is read whole, and its diagnoses are exact.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import shapely
import shapely.affinity
from pyproj import CRS

from worker.core.clauses.sample import sample_rows, take_features
from worker.core.facts.batch import BatchFacts, nonfinite_mask
from worker.core.spatial import (
    area_of_use,
    cached_transformer,
    covered_mask,
    crs_equivalent,
    crs_label,
    geographic_base,
    outside_area_of_use,
    reproject,
    resolve_crs,
    swap_xy,
)

__all__ = [
    "DIAGNOSIS_SAMPLE",
    "MOST_INSIDE",
    "diagnose_extent",
    "diagnose_tally",
    "diagnoses_of",
]

_DIAGNOSIS_CANDIDATES = ("EPSG:3857", "EPSG:4326")

#: Share of features inside the extent as they are above which no candidate CRS is named
#: (see :func:`diagnoses_of`).
MOST_INSIDE = 0.5

#: Most features a diagnosis reads (an evenly spaced sample of a larger batch): the
#: readings reproject each from every candidate CRS after densifying its edges, which
#: for every feature of a large batch took most of the time and memory of a check
#: (issue 27: a million polygons were killed at 12 GiB). Read at call time.
DIAGNOSIS_SAMPLE = 10_000


#: The diagnosis of an extent that longitudes beyond ±180 fit once wrapped (a point at
#: longitude 181 was hinted as EPSG:3857 metres, a fresh-user finding).
WRAPPED = (
    "longitudes beyond ±180: the coordinates fit the extent once wrapped into -180..180 "
    "(x - 360 east of 180, x + 360 west of -180); write longitudes within -180..180, "
    "splitting features that cross the antimeridian (RFC 7946 section 3.1.9)"
)

#: The diagnosis of an extent that the coordinates fit with x and y exchanged.
SWAPPED = "axis order looks swapped: the coordinates fit the extent with x and y exchanged"
#: ... and its other reading, when the region read y first is a region of the CRS too: a
#: region written latitude first against right longitude/latitude data fits the same way
#: (a fresh-user finding).
SWAPPED_OR_REGION = (
    f"{SWAPPED} (or the region is written y first: the contract gives it as minx, miny, maxx, maxy)"
)


def _candidates(facts: BatchFacts, crs: CRS) -> list[CRS]:
    """The CRSs the coordinates might really be in: EPSG:3857, EPSG:4326 and the
    geographic base of a projected contract CRS, less the contract's and the declared."""
    candidates = [resolve_crs(c) for c in _DIAGNOSIS_CANDIDATES]
    base = geographic_base(crs) if crs.is_projected else None
    if base is not None:
        candidates.append(base)
    declared = facts.declared_crs
    return [
        c
        for c in candidates
        if not crs_equivalent(c, crs) and not (declared is not None and crs_equivalent(c, declared))
    ]


def diagnose_tally(
    facts: BatchFacts,
    region: shapely.Geometry,
    crs: CRS | None,
    *,
    total: int | None = None,
    sample_size: int | None = None,
) -> dict[str, int | bool]:
    """Counts from which :func:`diagnoses_of` decides, mergeable over chunks
    (:func:`worker.core.clauses.tally.merge`), measured on the features of ``facts`` that are in
    the batch's evenly spaced sample (:func:`worker.core.clauses.sample.sample_rows`): ``of``, the
    features of ``facts``; ``count``, those sampled; ``as_contract``, the sampled features
    covered when read as the contract CRS (only when the declared CRS differs);
    ``swapped``, those covered with x and y exchanged; per candidate CRS ``k``,
    ``in_aou_k`` (every usable sampled coordinate within its area of use) and ``fit_k``
    (covered after reprojecting from it).

    ``facts`` may be one chunk of a batch of ``total`` features (default: ``facts`` is the
    whole batch), starting at ``facts.offset``; ``sample_size`` defaults to
    :data:`DIAGNOSIS_SAMPLE`. Only the sampled features are parsed, reprojected or
    swapped: memory and time grow with the sample, not the batch."""
    size = DIAGNOSIS_SAMPLE if sample_size is None else sample_size
    of = facts.count
    rows = sample_rows(facts.offset, of, of if total is None else total, size)
    if rows.size < of:
        edges = (facts.edges_problem,)
        facts = BatchFacts(take_features(facts.batch, rows), facts.offset, edges)
    return {"of": of, **_readings(facts, region, crs)}


def _readings(
    facts: BatchFacts, region: shapely.Geometry, crs: CRS | None
) -> dict[str, int | bool]:
    """:func:`diagnose_tally` of every feature of ``facts``."""
    declared = facts.declared_crs
    out: dict[str, int | bool] = {"count": facts.count}
    # an empty geometry is inside the extent however it is read (the clause counts it
    # so): every reading's count includes the empties, as the fraction inside does
    empty = int(np.count_nonzero(facts.parsed & facts.is_empty))
    if crs is not None and declared is not None and not crs_equivalent(declared, crs):
        out["as_contract"] = empty + int(
            np.count_nonzero(covered_mask(facts.geometries, facts.usable, region))
        )
        raw = facts.geometries[facts.usable]
        out["in_declared_aou"] = not outside_area_of_use(raw, declared).any()
        if declared.is_geographic and (aou := area_of_use(crs)) is not None:
            out["beyond_contract_aou"] = _beyond(facts.bounds[facts.usable], aou.lonlat)
    swapped = np.asarray(swap_xy(facts.geometries), dtype=object)
    if crs is not None and declared is not None and not crs_equivalent(declared, crs):
        swapped = np.asarray(reproject(swapped, declared, crs), dtype=object)
    usable = facts.usable & ~nonfinite_mask(swapped)
    if declared is not None:  # swapped values the declared CRS cannot hold are no fit
        usable &= ~outside_area_of_use(np.asarray(swap_xy(facts.geometries)), declared)
    out["swapped"] = empty + int(np.count_nonzero(covered_mask(swapped, usable, region)))
    if crs is None:
        return out
    if crs.is_geographic and (declared is None or declared.is_geographic):
        out["wrapped"] = empty + _wrapped_fit(facts, region)
    for k, cand in enumerate(_candidates(facts, crs)):
        # never suggest a CRS the raw coordinates cannot be in (x = 1e279)
        out[f"in_aou_{k}"] = not outside_area_of_use(facts.geometries[facts.usable], cand).any()
        moved = np.asarray(reproject(facts.geometries, cand, crs), dtype=object)
        ok = facts.usable & ~nonfinite_mask(moved)
        out[f"fit_{k}"] = empty + int(np.count_nonzero(covered_mask(moved, ok, region)))
    return out


def diagnoses_of(
    tally: Mapping[str, int | bool],
    facts: BatchFacts,
    region: shapely.Geometry,
    crs: CRS | None,
    label: str,
    min_frac: float,
    inside_frac: float = 0.0,
) -> list[str]:
    """The diagnoses a (merged) :func:`diagnose_tally` supports, as :func:`_diagnoses`;
    when the tally is of a sample (``count`` < ``of``), each names it: "... (from an
    evenly spaced sample of 10,000 of 1,000,000 features)"."""
    out = _diagnoses(tally, facts, region, crs, label, min_frac, inside_frac)
    n, of = int(tally["count"]), int(tally.get("of", tally["count"]))
    if n >= of:
        return out
    return [f"{d} (from an evenly spaced sample of {n:,} of {of:,} features)" for d in out]


def _diagnoses(
    tally: Mapping[str, int | bool],
    facts: BatchFacts,
    region: shapely.Geometry,
    crs: CRS | None,
    label: str,
    min_frac: float,
    inside_frac: float = 0.0,
) -> list[str]:
    """The diagnoses a (merged) :func:`diagnose_tally` supports; ``facts`` give the
    metadata (declared CRS) only. At most one, the first that fits: features beyond the
    contract CRS's area of use (coordinates all plausible in a geographic declared CRS,
    at least half of those outside beyond it), a wrong declared CRS, swapped axes, then
    a candidate CRS.

    ``inside_frac`` is the share of features inside the extent as they are. A candidate
    CRS is not named when more than :data:`MOST_INSIDE` of them are inside already: the
    others are single offenders, and reprojecting from a projected candidate maps degree
    coordinates to within metres of its origin, inside any extent around it (one stray
    point among 100 degree points was "diagnosed" as EPSG:3857). Swapped axes are still
    named then: a latitude-first batch against a world extent is mostly inside too."""
    n = int(tally["count"])
    if not n:
        return []
    declared = facts.declared_crs
    beyond = int(tally.get("beyond_contract_aou", 0))  # set only with a declared CRS
    plausible = bool(tally.get("in_declared_aou", False))  # every coordinate fits it
    aou = area_of_use(crs) if beyond and crs is not None else None
    mostly_beyond = beyond >= 0.5 * n * (1.0 - inside_frac)  # most of those outside are beyond it
    if aou is not None and declared is not None and plausible and mostly_beyond:
        # a CRS's limits, not a wrong declaration: latitudes beyond Web Mercator's were
        # diagnosed as a wrong declared CRS, then as swapped axes (a fresh-user finding)
        return [
            f"{beyond} of {n} features lie beyond the area of use of {label} ({aou.text}): "
            f"{label} cannot hold them; their coordinates look right as {crs_label(declared)}"
        ]
    if (
        declared is not None
        and "as_contract" in tally
        and tally["as_contract"] / n >= min_frac
        and not (
            # coordinates that the declared CRS can hold, against an extent covering most
            # of the contract CRS: read as the contract CRS, any small numbers fit (degrees
            # in a world box of metres), which says nothing against the declared CRS (a
            # fresh-user session had the CRS blamed for latitudes beyond Web Mercator's)
            plausible and crs is not None and _region_spans_domain(region, crs)
        )
    ):
        return [
            f"coordinates fit the extent as {label}: the declared CRS "
            f"{crs_label(declared)} looks wrong"
        ]
    if tally["swapped"] / n >= min_frac:
        return [SWAPPED_OR_REGION if _region_may_be_y_first(region, crs) else SWAPPED]
    if tally.get("wrapped", 0) / n >= min_frac:
        return [WRAPPED]
    if crs is None or inside_frac > MOST_INSIDE:
        return []
    for k, cand in enumerate(_candidates(facts, crs)):
        if not tally[f"in_aou_{k}"] or tally[f"fit_{k}"] / n < min_frac:
            continue
        name = crs_label(cand)
        hedge = (
            f" (weak hint: the extent covers most of {label}, other projected CRSs fit too)"
            if _region_spans_domain(region, crs)
            else ""
        )
        return [
            f"coordinates look like {name}: they fit the extent after reprojecting "
            f"from {name} to {label}{hedge}"
        ]
    return []


def _region_may_be_y_first(region: shapely.Geometry, crs: CRS | None) -> bool:
    """The region read with x and y exchanged is a region of ``crs`` too: in a geographic
    CRS its longitudes and latitudes stay within ±180 and ±90 (a world box read y first
    does not); a projected or unknown CRS cannot tell."""
    if crs is None or not crs.is_geographic:
        return True
    x0, y0, x1, y1 = shapely.bounds(region).tolist()
    return y0 >= -180.0 and y1 <= 180.0 and x0 >= -90.0 and x1 <= 90.0


def _wrapped_fit(facts: BatchFacts, region: shapely.Geometry) -> int:
    """Features covered by ``region`` once a feature wholly east of 180 (west of -180) is
    moved by -360 (+360) degrees of longitude; the others are tested as they are."""
    b = facts.bounds
    with np.errstate(invalid="ignore"):
        shift = np.where(b[:, 0] > 180.0, -360.0, np.where(b[:, 2] < -180.0, 360.0, 0.0))
    # only the features tested move: an infinite coordinate (not usable) moved by 360
    # made shapely warn (inf * 0) on the worker's stderr (a fresh-user finding)
    shift[~facts.usable] = 0.0
    if not shift.any():
        return 0
    moved = facts.geometries.copy()
    rows = np.flatnonzero(shift)
    for i in rows.tolist():
        moved[i] = shapely.affinity.translate(moved[i], xoff=float(shift[i]))
    return int(np.count_nonzero(covered_mask(moved, facts.usable, region)))


def diagnose_extent(
    facts: BatchFacts, region: shapely.Geometry, crs: CRS | None, label: str, min_frac: float
) -> list[str]:
    """Diagnoses for a batch whose features are not inside ``region`` (contract CRS units,
    east_north) to at least ``min_frac``; an empty list when nothing fits."""
    return diagnoses_of(diagnose_tally(facts, region, crs), facts, region, crs, label, min_frac)


def _region_spans_domain(region: shapely.Geometry, crs: CRS) -> bool:
    """True when ``region`` covers at least half of the CRS's area of use (in CRS units),
    so that "fits after reprojection" says little about which CRS the data is in."""
    aou = crs.area_of_use
    if aou is None:
        return False
    try:
        x0, y0, x1, y1 = cached_transformer("EPSG:4326", crs).transform_bounds(*aou.bounds)
    except Exception:  # pyproj cannot transform the bounds: assume informative
        return False
    domain = shapely.box(x0, y0, x1, y1)
    return bool(domain.area > 0 and shapely.intersection(region, domain).area >= 0.5 * domain.area)


def _beyond(lonlat_bounds: np.ndarray, area: tuple[float, float, float, float]) -> int:
    """Features (rows of longitude/latitude bounds) reaching beyond ``area`` (west, south,
    east, north, degrees; ``west > east`` crosses the antimeridian: longitudes not tested)."""
    west, south, east, north = area
    b = np.asarray(lonlat_bounds, dtype=float).reshape(-1, 4)
    with np.errstate(invalid="ignore"):
        out = (b[:, 1] < south) | (b[:, 3] > north)
        if west <= east and (west > -180.0 or east < 180.0):
            out |= (b[:, 0] < west) | (b[:, 2] > east)
    return int(np.count_nonzero(out))
