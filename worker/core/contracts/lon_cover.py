"""The longitudes some features occupy, and their shortest cover on the circle (pure).

A drafted extent clause in a geographic CRS must cross the antimeridian when the data do
(Fiji, Chukotka, the Aleutians: a bbox of -180..180 would admit the whole world). The
longitudes occupied are kept in :data:`BINS` one-degree bins, each with the least and
greatest longitude seen in it, so the cover is exact while memory stays fixed: a
:class:`LonCover` of one chunk merges with the next (elementwise min and max). Each
geometry *part* occupies the whole interval of its envelope (a part's edges do not wrap
in a planar longitude/latitude CRS; a MultiPolygon across the antimeridian has a part on
each side), so a large polygon with few vertices still occupies every degree it spans.
The shortest cover is the circle less its largest unoccupied gap (:meth:`LonCover.cover`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["BINS", "LonCover", "lon_cover_of"]

#: One-degree bins from -180 (bin 0 covers [-180, -179)); 180 itself falls in the last.
BINS = 360


@dataclass(frozen=True, eq=False)
class LonCover:
    """Least (``lo``) and greatest (``hi``) longitude occupied in each bin, float (BINS,),
    NaN where a bin is unoccupied. Longitudes are degrees within [-180, 180]."""

    lo: np.ndarray
    hi: np.ndarray

    def merge(self, other: LonCover) -> LonCover:
        """The longitudes occupied by either."""
        return LonCover(np.fmin(self.lo, other.lo), np.fmax(self.hi, other.hi))

    def cover(self) -> tuple[float, float] | None:
        """``(west, east)`` in degrees: the shortest interval going east from ``west`` to
        ``east`` that holds every occupied longitude; ``west > east`` when it crosses the
        antimeridian. None when nothing is occupied."""
        occupied = np.flatnonzero(~np.isnan(self.lo))
        if occupied.size == 0:
            return None
        lo, hi = self.lo[occupied], self.hi[occupied]
        # gap after each occupied bin up to the next one (the last wraps to the first)
        nxt = np.roll(lo, -1)
        gaps = nxt - hi
        gaps[-1] = (lo[0] + 360.0) - hi[-1]
        k = int(np.argmax(gaps))
        if k == occupied.size - 1 or gaps[k] <= gaps[-1]:
            # the largest gap is the one across the antimeridian: no crossing
            return float(lo[0]), float(hi[-1])
        return float(lo[k + 1]), float(hi[k])


def lon_cover_of(part_bounds: np.ndarray) -> LonCover:
    """The :class:`LonCover` of geometry parts whose envelopes (float (P, 4): minx, miny,
    maxx, maxy in longitude/latitude degrees) are given; rows with a NaN, and longitudes
    beyond ±180 (outside the CRS's area of use: not placed), are left out; ±180 overshot
    by rounding (180.00000000000006) counts as ±180."""
    b = np.asarray(part_bounds, dtype=float).reshape(-1, 4)
    eps = 1e-9  # the area of use's own tolerance (worker.core.spatial.crs)
    with np.errstate(invalid="ignore"):
        keep = np.isfinite(b).all(axis=1) & (b[:, 0] >= -180.0 - eps) & (b[:, 2] <= 180.0 + eps)
    w, e = np.clip(b[keep, 0], -180.0, 180.0), np.clip(b[keep, 2], -180.0, 180.0)
    lo = np.full(BINS, np.nan)
    hi = np.full(BINS, np.nan)
    if w.size == 0:
        return LonCover(lo, hi)
    first = np.minimum(np.floor(w + 180.0).astype(int), BINS - 1)
    last = np.minimum(np.floor(e + 180.0).astype(int), BINS - 1)
    np.fmin.at(lo, first, w)
    np.fmax.at(hi, last, e)
    # bins strictly between a part's first and last are occupied whole
    starts = np.zeros(BINS + 1, dtype=int)
    inner = last > first + 1
    np.add.at(starts, first[inner] + 1, 1)
    np.add.at(starts, last[inner], -1)
    whole = np.cumsum(starts)[:BINS] > 0
    edges = np.arange(BINS, dtype=float) - 180.0
    lo = np.where(whole, np.fmin(lo, edges), lo)
    hi = np.where(whole, np.fmax(hi, edges + 1.0), hi)
    # a part spanning from its first bin onward occupies that bin to its end, and its
    # last bin from its start
    spans = last > first
    np.fmax.at(hi, first[spans], edges[first[spans]] + 1.0)
    np.fmin.at(lo, last[spans], edges[last[spans]])
    return LonCover(lo, hi)
