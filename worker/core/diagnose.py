"""Likely causes of a broken extent clause (pure): a wrong declared CRS, swapped axes, an
undeclared reprojection.

All are guesses from coordinates alone, worded as such: "the declared CRS ... looks wrong"
when the raw coordinates fit the extent as the contract CRS; "axis order looks swapped" when
the batch fits the extent with x and y exchanged; "coordinates look like <CRS>" when it
fits after reprojecting from a candidate CRS (EPSG:3857, EPSG:4326, the geographic base of
a projected contract CRS) to the contract CRS, marked a weak hint when the extent covers
most of the contract CRS's area of use (then almost any projected data fits). A candidate
is only named when every raw coordinate lies within its area of use
(:func:`worker.core.spatial.outside_area_of_use`): x = 1e279 looks like no CRS.
"""

from __future__ import annotations

import numpy as np
import shapely
from pyproj import CRS

from worker.core.facts import BatchFacts, nonfinite_mask
from worker.core.spatial import (
    cached_transformer,
    crs_equivalent,
    crs_label,
    fraction_covered,
    geographic_base,
    outside_area_of_use,
    reproject,
    resolve_crs,
    swap_xy,
)

__all__ = ["diagnose_extent"]

_DIAGNOSIS_CANDIDATES = ("EPSG:3857", "EPSG:4326")


def diagnose_extent(
    facts: BatchFacts, region: shapely.Geometry, crs: CRS | None, label: str, min_frac: float
) -> list[str]:
    """Diagnoses for a batch whose features are not inside ``region`` (contract CRS units,
    east_north) to at least ``min_frac``; an empty list when nothing fits."""
    declared = facts.declared_crs
    if (
        facts.count
        and crs is not None
        and declared is not None
        and not crs_equivalent(declared, crs)
        and fraction_covered(facts.geometries, facts.usable, region) >= min_frac
    ):
        return [
            f"coordinates fit the extent as {label}: the declared CRS "
            f"{crs_label(declared)} looks wrong"
        ]
    swapped = np.asarray(swap_xy(facts.geometries), dtype=object)
    if crs is not None and declared is not None and not crs_equivalent(declared, crs):
        swapped = np.asarray(reproject(swapped, declared, crs), dtype=object)
    usable = facts.usable & ~nonfinite_mask(swapped)
    if declared is not None:  # swapped values the declared CRS cannot hold are no fit
        usable &= ~outside_area_of_use(np.asarray(swap_xy(facts.geometries)), declared)
    if facts.count and fraction_covered(swapped, usable, region) >= min_frac:
        return ["axis order looks swapped: the coordinates fit the extent with x and y exchanged"]
    if crs is None:
        return []
    candidates = [resolve_crs(c) for c in _DIAGNOSIS_CANDIDATES]
    base = geographic_base(crs) if crs.is_projected else None
    if base is not None:
        candidates.append(base)
    for cand in candidates:
        if crs_equivalent(cand, crs) or (
            facts.declared_crs is not None and crs_equivalent(cand, facts.declared_crs)
        ):
            continue
        if outside_area_of_use(facts.geometries[facts.usable], cand).any():
            continue  # never suggest a CRS the raw coordinates cannot be in (x = 1e279)
        moved = np.asarray(reproject(facts.geometries, cand, crs), dtype=object)
        ok = facts.usable & ~nonfinite_mask(moved)
        if facts.count and fraction_covered(moved, ok, region) >= min_frac:
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
