"""Batches of mostly star-shaped one-ring polygons: those judged without GEOS.

A batch's plain polygons (:func:`~worker.core.facts.star_rings.star_rings`: 2D one-ring
Polygons proven valid from their coordinates) keep their known facts: parsed, a Polygon
without Z or M, not empty, finite, GEOS-valid, their envelope and ring orientation read
from their coordinates. Only the other rows are a batch of their own, judged by the
general path (GEOS parse and validity); each fact is the two scattered back into batch
order, value for value the general path's on the whole
(``tests/core/test_polygons_path.py``). Geometries of the plain rows are built (GEOS's
strict WKB reader) only when a clause asks for them: a region other than a rectangle, a
reprojection, an area of use the envelopes do not settle.

Only batches with planar edges, no reader errors and at least half of their rows plain
take this path (:func:`mixed_polygons`); a batch of spherical edges decides its edge
model on every coordinate first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import shapely

from worker.core.facts.plain_rows import PlainRows
from worker.core.facts.star_rings import StarRings, star_rings
from worker.core.facts.wkb_arrow import WkbTuple, values_at

if TYPE_CHECKING:
    from worker.core.facts.parse import ParsedFacts

__all__ = ["POLYGONS_WITHOUT_GEOMETRIES_MIN", "MixedPolygons", "mixed_polygons"]

#: Fewest features for which a batch's star-shaped polygons are judged without GEOS: a
#: smaller batch that is not mostly such polygons (Natural Earth's 100 countries) paid
#: about 1 ms to find out, 20% of its facts. Read at call time (tests lower it).
POLYGONS_WITHOUT_GEOMETRIES_MIN = 512

#: Columns of a stored envelope read in ``east_north`` order for a ``north_east`` batch.
_SWAP_BOUNDS = [1, 0, 3, 2]


class MixedPolygons(PlainRows):
    """The plain polygons of a batch (see the module docstring) and its other rows' facts.

    ``rings``: the plain rows, their stored envelopes and orientations; ``facts``: the
    batch's facts (its WKB values, axis order and declared ring orientation are read)."""

    type_id = 3  # shapely's Polygon

    def __init__(self, rings: StarRings, facts: Any, sub: Any, rest: np.ndarray) -> None:
        self.plain, self.sub, self.rest = rings.plain, sub, rest
        north_east = facts.batch.axis_order == "north_east"
        # the batch's WKB values (not its facts: no reference cycle holding a chunk's arrays)
        self._values, self._north_east = facts.batch.geometries_wkb, north_east
        self._orientation = facts.batch.orientation
        self._bounds = rings.bounds[:, _SWAP_BOUNDS] if north_east else rings.bounds
        # swapping the axes mirrors a ring: its orientation turns
        self._ccw = ~rings.ccw if north_east else rings.ccw

    def _stored(self, rows: np.ndarray) -> np.ndarray:
        """object (K,): the geometries, as stored, of plain rows ``rows`` (batch rows)."""
        with np.errstate(invalid="ignore"):
            values = np.fromiter(values_at(self._values, rows.tolist()), object, len(rows))
            return np.asarray(shapely.from_wkb(values), dtype=object)

    def _east_north(self, rows: np.ndarray) -> np.ndarray:
        """object (K,): the geometries of plain rows ``rows``, ``east_north``."""
        from worker.core.spatial.reproject import swap_xy

        geoms = self._stored(rows)
        return np.asarray(swap_xy(geoms), dtype=object) if self._north_east else geoms

    def raw_geometries(self) -> np.ndarray:
        """object (N,): the geometries as stored: the plain polygons read by GEOS's strict
        WKB reader (which accepts every one of them), the other rows the general path's."""
        out = np.empty(len(self.plain), dtype=object)
        out[self.rest] = self.sub.raw_geometries
        out[self.plain] = self._stored(np.flatnonzero(self.plain))
        return out

    def bounds(self) -> np.ndarray:
        """float (N, 4), ``east_north``: the plain rows' envelopes from their coordinates."""
        out = np.empty((len(self.plain), 4))
        out[self.plain] = self._bounds
        out[self.rest] = self.sub.bounds
        return out

    def lonlat_fits(self) -> bool:
        """Every plain row's coordinates lie within ±180, ±90 (read on its envelope)."""
        b = self._bounds
        return bool(((np.abs(b[:, [0, 2]]) <= 180).all()) and (np.abs(b[:, [1, 3]]) <= 90).all())

    def orientation_contradicted(self) -> np.ndarray:
        """bool (N,): the batch declares ``counterclockwise`` rings and a plain row's ring
        runs clockwise (``east_north``)."""
        out = np.zeros(len(self.plain), dtype=bool)
        if self._orientation is not None:
            out[self.plain] = ~self._ccw
        return out

    def outside_area_of_use(self, crs: Any) -> np.ndarray:
        """bool (N,): a plain row lies outside ``crs``'s area of use
        (:func:`~worker.core.spatial.crs.outside_area_of_use`); in a geographic CRS only
        the rows whose envelope reaches past the area's bounds are built and tested (an
        envelope within them has every coordinate within)."""
        from worker.core.spatial.crs import area_of_use, outside_area_of_use

        out = np.zeros(len(self.plain), dtype=bool)
        aou = None if crs is None else area_of_use(crs)
        if aou is None:
            return out
        plain = np.flatnonzero(self.plain)
        todo = np.arange(len(plain))
        if aou.geographic:
            x0, y0, x1, y1 = aou.bounds
            b, eps = self._bounds, 1e-9  # the tolerance outside_area_of_use allows
            within = (b[:, 0] >= x0 - eps) & (b[:, 1] >= y0 - eps)
            within &= (b[:, 2] <= x1 + eps) & (b[:, 3] <= y1 + eps)
            todo = np.flatnonzero(~within)
        if todo.size:
            rows = plain[todo]
            out[rows] = outside_area_of_use(self._east_north(rows), crs, self._bounds[todo])
        return out


def mixed_polygons(facts: ParsedFacts, least: int) -> MixedPolygons | None:
    """The :class:`MixedPolygons` of ``facts``'s batch (of at least ``least`` features), or
    None when it does not take this path: spherical edges, reader errors, or fewer than
    ``least`` or than half of its rows plain polygons."""
    from worker.core.clauses.sample import take_features  # clauses import the facts

    batch = facts.batch
    if facts.count < least or batch.edges != "planar" or batch.geometry_errors:
        return None
    values = batch.geometries_wkb
    rings = star_rings(values if isinstance(values, WkbTuple) else facts._wkb_array, least)
    if rings is None:
        return None
    rest = np.flatnonzero(~rings.plain)
    sub = type(facts)(take_features(batch, rest), 0, (facts.edges_problem,))  # type: ignore[call-arg]
    sub.__dict__["_mixed"] = None  # its rows are no plain polygons: not tried again
    return MixedPolygons(rings, facts, sub, rest)
