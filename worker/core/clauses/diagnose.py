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

The readings they are decided from
(:func:`worker.core.clauses.diagnose_readings.diagnose_tally`) are measured on an evenly
spaced sample of the batch; a diagnosis from a sample says so.
"""

from __future__ import annotations

from collections.abc import Mapping

import shapely
from pyproj import CRS

from worker.core.clauses.diagnose_readings import _candidates
from worker.core.facts.batch import BatchFacts
from worker.core.spatial import area_of_use, cached_transformer, crs_label

__all__ = ["MOST_INSIDE", "diagnoses_of", "names_candidates"]

#: Share of features inside the extent as they are above which no candidate CRS is named
#: (see :func:`diagnoses_of`).
MOST_INSIDE = 0.5


def names_candidates(inside_frac: float) -> bool:
    """A diagnosis may name a candidate CRS when at most :data:`MOST_INSIDE` of the
    features (``inside_frac``, the share inside the extent as they are) are inside: else
    the candidate readings (``in_aou_k``, ``fit_k``) are not read, nor need measuring
    (:func:`worker.core.clauses.diagnose_readings.diagnose_tally`'s ``candidates``)."""
    return inside_frac <= MOST_INSIDE


#: The diagnosis of an extent that longitudes beyond ±180 fit once wrapped (a point at
#: longitude 181 was hinted as EPSG:3857 metres).
WRAPPED = (
    "longitudes beyond ±180: the coordinates fit the extent once wrapped into -180..180 "
    "(x - 360 east of 180, x + 360 west of -180); write longitudes within -180..180, "
    "splitting features that cross the antimeridian (RFC 7946 section 3.1.9)"
)

#: The diagnosis of an extent that the coordinates fit with x and y exchanged.
SWAPPED = "axis order looks swapped: the coordinates fit the extent with x and y exchanged"
#: ... and its other reading, when the region read y first is a region of the CRS too: a
#: region written latitude first against right longitude/latitude data fits the same way.
SWAPPED_OR_REGION = (
    f"{SWAPPED} (or the region is written y first: the contract gives it as minx, miny, maxx, maxy)"
)


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
        # diagnosed as a wrong declared CRS, then as swapped axes
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
            # in a world box of metres), which says nothing against the declared CRS (the CRS
            # was blamed for latitudes beyond Web Mercator's)
            plausible and crs is not None and _region_spans_domain(region, crs)
        )
    ):
        return [
            f"coordinates fit the extent as {label}: the declared CRS "
            f"{crs_label(declared)} looks wrong"
        ]
    if tally["swapped"] / n >= min_frac:
        return [SWAPPED_OR_REGION if _region_may_be_y_first(region, crs) else SWAPPED]
    if tally.get("wrapped_moved", 0) and tally["wrapped"] / n >= min_frac:
        return [WRAPPED]
    if crs is None or not names_candidates(inside_frac):
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
