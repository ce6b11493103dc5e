"""The readings a broken extent clause's diagnoses are decided from (pure).

Per reading, the features covered by the region: read as the contract CRS, with x and y
exchanged, with longitudes beyond ±180 wrapped, and reprojected from each candidate CRS
(EPSG:3857, EPSG:4326, the geographic base of a projected contract CRS), with whether
every coordinate lies within the candidate's area of use.
:func:`worker.core.clauses.diagnose.diagnoses_of` decides from them.

The readings are measured on an evenly spaced sample of at most :data:`DIAGNOSIS_SAMPLE`
features (:mod:`worker.core.clauses.sample`), so that diagnosing a batch of a million features
reprojects ten thousand: the fractions that decide are then estimates over the sample,
and so are the "every coordinate" tests of the areas of use; a diagnosis from a sample
says so ("... (from an evenly spaced sample of 10,000 of 1,000,000 features)"). A batch
no larger than the sample is read whole, and its diagnoses are exact.
"""

from __future__ import annotations

import numpy as np
import shapely
import shapely.affinity
from pyproj import CRS

from worker.core.clauses.diagnose_points import point_readings
from worker.core.clauses.sample import sample_rows, take_features
from worker.core.facts.batch import BatchFacts, nonfinite_mask
from worker.core.spatial import (
    area_of_use,
    covered_mask,
    crs_equivalent,
    geographic_base,
    outside_area_of_use,
    reproject,
    resolve_crs,
    swap_xy,
)

__all__ = ["DIAGNOSIS_SAMPLE", "diagnose_tally", "sampled_facts", "sampled_rows", "sampled_tally"]

_DIAGNOSIS_CANDIDATES = ("EPSG:3857", "EPSG:4326")

#: Most features a diagnosis reads (an evenly spaced sample of a larger batch): the
#: readings reproject each from every candidate CRS after densifying its edges, which
#: for every feature of a large batch took most of the time and memory of a check
#: (issue 27: a million polygons were killed at 12 GiB). Read at call time.
DIAGNOSIS_SAMPLE = 10_000


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


def sampled_rows(offset: int, count: int, total: int) -> np.ndarray:
    """int (M,), ascending: the rows of a chunk (``count`` features from batch index
    ``offset``, in a batch of ``total``) that :func:`diagnose_tally` reads: the batch's
    evenly spaced sample of at most :data:`DIAGNOSIS_SAMPLE` features
    (:func:`worker.core.clauses.sample.sample_rows`)."""
    return sample_rows(offset, count, total, DIAGNOSIS_SAMPLE)


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
    sampled = sampled_facts(facts, total, sample_size)
    return sampled_tally(sampled, region, crs, facts.count)


def sampled_facts(
    facts: BatchFacts, total: int | None = None, sample_size: int | None = None
) -> BatchFacts:
    """The facts of the features of ``facts`` in the evenly spaced sample of at most
    ``sample_size`` (default :data:`DIAGNOSIS_SAMPLE`) of a batch of ``total`` features
    (default: ``facts`` is the whole batch); ``facts`` itself when every feature is."""
    size = DIAGNOSIS_SAMPLE if sample_size is None else sample_size
    of = facts.count
    rows = sample_rows(facts.offset, of, of if total is None else total, size)
    if rows.size == of:
        return facts
    edges = (facts.edges_problem,)
    return BatchFacts(take_features(facts.batch, rows), facts.offset, edges)


def sampled_tally(
    facts: BatchFacts,
    region: shapely.Geometry,
    crs: CRS | None,
    of: int,
    candidates: bool = True,
) -> dict[str, int | bool]:
    """:func:`diagnose_tally` of a chunk of ``of`` features from ``facts`` holding its
    sampled rows alone (:func:`sampled_rows`, taken while the first pass held the chunk).
    ``candidates`` False leaves the candidate readings out (``in_aou_k``, ``fit_k``: a
    reprojection of the sample from each candidate CRS), for a clause whose diagnoses
    cannot name a candidate (:func:`worker.core.clauses.diagnose.names_candidates`)."""
    return {"of": of, **_readings(facts, region, crs, candidates)}


def _readings(
    facts: BatchFacts, region: shapely.Geometry, crs: CRS | None, candidates: bool = True
) -> dict[str, int | bool]:
    """:func:`diagnose_tally` of every feature of ``facts`` (a batch of plain points read
    as stored: from their coordinates, :func:`point_readings`); the candidate readings
    only with ``candidates``."""
    declared = facts.declared_crs
    as_stored = crs is None or declared is None or crs_equivalent(declared, crs)
    cands = _candidates(facts, crs) if crs is not None and candidates else []
    if as_stored and facts.points_xy is not None:
        return point_readings(facts, region, crs, cands)
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
    out["swapped"] = empty + _swapped_fit(facts, region, None if as_stored else crs)
    if crs is None:
        return out
    if crs.is_geographic and (declared is None or declared.is_geographic):
        covered, moved = _wrapped_fit(facts, region)
        out["wrapped"], out["wrapped_moved"] = empty + covered, moved
    for k, cand in enumerate(cands):
        # never suggest a CRS the raw coordinates cannot be in (x = 1e279)
        out[f"in_aou_{k}"] = not outside_area_of_use(facts.geometries[facts.usable], cand).any()
        out[f"fit_{k}"] = empty + _candidate_fit(facts, cand, crs, region)
    return out


def _swapped_fit(facts: BatchFacts, region: shapely.Geometry, crs: CRS | None) -> int:
    """Usable features of ``facts`` covered by ``region`` with x and y exchanged (and then
    reprojected from the declared CRS to ``crs``, unless None), less those whose exchanged
    coordinates the declared CRS cannot hold (:func:`outside_area_of_use`)."""
    declared = facts.declared_crs
    aou = area_of_use(declared) if declared is not None else None
    if crs is None and (aou is None or aou.geographic):
        return _swapped_envelopes_fit(facts, region)
    swapped = np.asarray(swap_xy(facts.geometries), dtype=object)
    if crs is not None and declared is not None:
        swapped = np.asarray(reproject(swapped, declared, crs), dtype=object)
    usable = facts.usable & ~nonfinite_mask(swapped)
    if declared is not None:  # swapped values the declared CRS cannot hold are no fit
        usable &= ~outside_area_of_use(np.asarray(swap_xy(facts.geometries)), declared)
    return int(np.count_nonzero(covered_mask(swapped, usable, region)))


def _swapped_envelopes_fit(facts: BatchFacts, region: shapely.Geometry) -> int:
    """:func:`_swapped_fit` as stored, with a declared CRS whose area of use is bounds in
    its own units (geographic) or unknown, from the features' envelopes: exchanging x and
    y exchanges those of the envelope (a usable feature's coordinates are finite), and such
    an area holds every coordinate exactly when it holds the envelope's two corners (the
    same bounds, the same tolerance). The geometries are exchanged only for a region that
    is not a rectangle. The sample of 10,000 polygons was exchanged twice (issue 27)."""
    n = facts.count
    b = np.asarray(facts.bounds, dtype=float).reshape(n, 4)[:, [1, 0, 3, 2]]
    usable = facts.usable
    if facts.declared_crs is not None:  # swapped values it cannot hold are no fit
        corners = np.concatenate([b[:, :2], b[:, 2:]])
        beyond = outside_area_of_use(None, facts.declared_crs, points=corners)
        usable = usable & ~(beyond[:n] | beyond[n:])
    mask = covered_mask(lambda: np.asarray(swap_xy(facts.geometries)), usable, region, b)
    return int(np.count_nonzero(mask))


def _candidate_fit(facts: BatchFacts, cand: CRS, crs: CRS, region: shapely.Geometry) -> int:
    """Usable features of ``facts`` covered by ``region`` once reprojected from ``cand`` to
    ``crs`` with their edges densified (:func:`~worker.core.spatial.reproject`).

    Their vertices are reprojected first, alone. Densifying only inserts vertices, and
    each coordinate is transformed on its own, so the densified image holds the image of
    every vertex: a feature with a vertex image that is not finite, or not within the
    region's envelope, is not covered densified either. Only the others are densified and
    tested, as before: none in a sample that the candidate does not fit (the densified
    sample of 10,000 polygons was about 3 million vertices, issue 27)."""
    geoms = facts.geometries
    bare = np.asarray(reproject(geoms, cand, crs, densify=False), dtype=object)
    x0, y0, x1, y1 = shapely.bounds(region).tolist()
    b = np.asarray(shapely.bounds(bare), dtype=float).reshape(-1, 4)
    with np.errstate(invalid="ignore"):
        within = (b[:, 0] >= x0) & (b[:, 1] >= y0) & (b[:, 2] <= x1) & (b[:, 3] <= y1)
    rows = np.flatnonzero(facts.usable & within & ~nonfinite_mask(bare))
    if not rows.size:
        return 0
    moved = np.asarray(reproject(geoms[rows], cand, crs), dtype=object)
    return int(np.count_nonzero(covered_mask(moved, ~nonfinite_mask(moved), region)))


def _wrapped_fit(facts: BatchFacts, region: shapely.Geometry) -> tuple[int, int]:
    """``(covered, moved)``: usable features covered by ``region`` once a feature wholly
    east of 180 (west of -180) is moved by -360 (+360) degrees of longitude, the others
    tested as they are; and how many of those covered were moved. Both are counted the
    same way in any chunk, so that they add up over a batch's chunks (a chunk with nothing
    to move counted 0 covered, while the whole batch counted its covered features: the
    diagnosis of a batch read in parts differed from the batch's, found by hypothesis)."""
    b = np.asarray(facts.bounds, dtype=float).reshape(-1, 4)
    with np.errstate(invalid="ignore"):
        shift = np.where(b[:, 0] > 180.0, -360.0, np.where(b[:, 2] < -180.0, 360.0, 0.0))
    # only the features tested move: an infinite coordinate (not usable) moved by 360
    # made shapely warn (inf * 0) on the worker's stderr
    shift[~facts.usable] = 0.0
    rows = np.flatnonzero(shift)
    stay = facts.usable & (shift == 0.0)
    covered = int(np.count_nonzero(covered_mask(lambda: facts.geometries, stay, region, b)))
    if not rows.size:
        return covered, 0
    geoms = facts.geometries
    moved = np.fromiter(
        (shapely.affinity.translate(geoms[i], xoff=float(shift[i])) for i in rows.tolist()),
        dtype=object,
        count=rows.size,
    )
    fit = int(np.count_nonzero(covered_mask(moved, np.ones(rows.size, dtype=bool), region)))
    return covered + fit, fit


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
