"""The readings of a broken extent's diagnoses on a batch of plain 2D points, from their
coordinate arrays (pure).

:func:`point_readings` gives what :func:`worker.core.clauses.diagnose_readings._readings`
gives on the same features, without a geometry object: the coordinates exchanged, wrapped
by 360 degrees of longitude and reprojected from each candidate CRS are numpy arrays
(pyproj transforms them as arrays), areas of use are tested on them
(:func:`~worker.core.spatial.crs.outside_area_of_use` with ``points``), and the region
covers a point exactly when it covers the point's envelope, the point itself
(:func:`~worker.core.spatial.regions.covered_mask` with ``bounds``; a region that is not a
rectangle builds the points it tests). A batch of points read from a million-point file
spent most of its diagnosis in building, swapping and reprojecting point objects of its
sample, chunk after chunk (issue 27).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import shapely
from pyproj import CRS

from worker.core.facts.batch import BatchFacts
from worker.core.spatial import cached_transformer, covered_mask, outside_area_of_use

__all__ = ["point_readings"]


def point_readings(
    facts: BatchFacts, region: shapely.Geometry, crs: CRS | None, candidates: Sequence[CRS]
) -> dict[str, int | bool]:
    """The readings of ``facts``, whose :attr:`~BatchFacts.points_xy` are known, read as
    stored when the declared CRS is the contract's (or either is unknown): ``count``,
    ``swapped``, ``wrapped`` and ``wrapped_moved`` (a geographic contract CRS and declared
    CRS: :func:`_wrapped`) and, per CRS ``k`` of ``candidates``, ``in_aou_k`` and
    ``fit_k``. Plain points are never empty, so no reading counts empties."""
    xy = facts.points_xy
    assert xy is not None, "point_readings needs the batch's points"  # the caller's test
    usable = facts.usable
    declared = facts.declared_crs
    out: dict[str, int | bool] = {"count": facts.count}
    swapped = np.ascontiguousarray(xy[:, ::-1])
    ok = usable.copy()
    if declared is not None:  # swapped values the declared CRS cannot hold are no fit
        ok &= ~outside_area_of_use(None, declared, points=swapped)
    out["swapped"] = _covered(swapped, ok, region)
    if crs is None:
        return out
    if crs.is_geographic and (declared is None or declared.is_geographic):
        out["wrapped"], out["wrapped_moved"] = _wrapped(xy, usable, region)
    for k, cand in enumerate(candidates):
        # never suggest a CRS the raw coordinates cannot be in (x = 1e279)
        out[f"in_aou_{k}"] = not outside_area_of_use(None, cand, points=xy[usable]).any()
        with np.errstate(all="ignore"):
            x, y = cached_transformer(cand, crs).transform(xy[:, 0], xy[:, 1], errcheck=False)
        moved = np.column_stack([np.asarray(x, dtype=float), np.asarray(y, dtype=float)])
        out[f"fit_{k}"] = _covered(moved, usable & np.isfinite(moved).all(axis=1), region)
    return out


def _covered_mask(xy: np.ndarray, usable: np.ndarray, region: shapely.Geometry) -> np.ndarray:
    """bool (N,): the points of ``xy`` (float (N, 2)) ``usable`` and covered by ``region``."""
    return covered_mask(lambda: shapely.points(xy), usable, region, np.hstack((xy, xy)))


def _covered(xy: np.ndarray, usable: np.ndarray, region: shapely.Geometry) -> int:
    """Points of ``xy`` (float (N, 2)) that are ``usable`` and covered by ``region``."""
    return int(np.count_nonzero(_covered_mask(xy, usable, region)))


def _wrapped(xy: np.ndarray, usable: np.ndarray, region: shapely.Geometry) -> tuple[int, int]:
    """``(covered, moved)``: points covered once a longitude beyond 180 (-180) is moved by
    -360 (+360) degrees, the others tested as they are, and how many of those covered were
    moved (counted alike in any chunk: see
    :func:`worker.core.clauses.diagnose_readings._wrapped_fit`)."""
    with np.errstate(invalid="ignore"):
        shift = np.where(xy[:, 0] > 180.0, -360.0, np.where(xy[:, 0] < -180.0, 360.0, 0.0))
    shift[~usable] = 0.0
    moved = xy.copy()
    moved[:, 0] += shift
    covered = _covered_mask(moved, usable, region)
    return int(np.count_nonzero(covered)), int(np.count_nonzero(covered & (shift != 0.0)))
