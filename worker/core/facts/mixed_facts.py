"""The facts of a batch some of whose rows are judged without GEOS (plain points, plain
star-shaped polygons): each fact the scatter of the plain rows' known value and the other
rows' general one (:class:`MixedFacts`)."""

from __future__ import annotations

import numpy as np

from worker.core._util.memo import fact
from worker.core.facts.geometry import GeometryFacts
from worker.core.facts.points_mixed import MixedPoints, mixed_points
from worker.core.facts.polygons_mixed import MixedPolygons, mixed_polygons

__all__ = ["MixedFacts"]


class MixedFacts(GeometryFacts):
    """The facts of :class:`~worker.core.facts.geometry.GeometryFacts`, each the scatter of
    the plain rows' known value (points or star-shaped polygons) and the other rows'
    general one when the batch takes one of these paths (:attr:`_mixed`), else the general
    fact itself."""

    @fact
    def _mixed(self) -> MixedPoints | MixedPolygons | None:
        """The plain rows and the other rows' facts, or None (see :func:`mixed_points`,
        :func:`~worker.core.facts.polygons_mixed.mixed_polygons`)."""
        if self._points_xy is not None:  # every feature a plain point: the points path
            return None
        from worker.core.facts import (
            parse,  # read at call time (tests turn it off)
            polygons_mixed,
        )

        return mixed_points(self, parse.POINTS_WITHOUT_GEOMETRIES_MIN) or mixed_polygons(
            self, polygons_mixed.POLYGONS_WITHOUT_GEOMETRIES_MIN
        )

    mixed = property(lambda self: self._mixed, doc=":attr:`_mixed`, public.")

    @fact
    def missing(self) -> np.ndarray:
        """See :attr:`ParsedFacts.missing`."""
        m = self._mixed
        return super().missing if m is None else m.scatter(False, m.sub.missing)

    @fact
    def unparseable(self) -> np.ndarray:
        """See :attr:`ParsedFacts.unparseable`."""
        m = self._mixed
        return super().unparseable if m is None else m.scatter(False, m.sub.unparseable)

    @fact
    def parsed(self) -> np.ndarray:
        """See :attr:`ParsedFacts.parsed`."""
        m = self._mixed
        return super().parsed if m is None else m.scatter(True, m.sub.parsed)

    @fact
    def _refused_before_parse(self) -> dict[int, str]:
        m = self._mixed
        if m is None:
            return super()._refused_before_parse
        return m.reindexed(m.sub._refused_before_parse)  # the same class's

    @fact
    def _trailing(self) -> dict[int, str]:
        m = self._mixed  # a plain row's length is exactly its geometry's (21 bytes, a ring)
        return super()._trailing if m is None else m.reindexed(m.sub._trailing)

    @fact
    def _refused(self) -> dict[int, str]:
        m = self._mixed
        if m is None:
            return super()._refused
        return m.reindexed(m.sub._refused)  # the same class's

    @fact
    def curve_type_names(self) -> dict[int, str]:
        """See :attr:`ParsedFacts.curve_type_names`."""
        m = self._mixed
        return super().curve_type_names if m is None else m.reindexed(m.sub.curve_type_names)

    @fact
    def raw_geometries(self) -> np.ndarray:
        """See :attr:`ParsedFacts.raw_geometries` (built only when a clause asks)."""
        m = self._mixed
        return super().raw_geometries if m is None else m.raw_geometries()

    @fact
    def lonlat_fits(self) -> bool:
        """See :attr:`ParsedFacts.lonlat_fits`."""
        m = self._mixed
        if m is None:
            return super().lonlat_fits
        return bool(m.sub.lonlat_fits and m.lonlat_fits())

    @fact
    def bounds(self) -> np.ndarray:
        """See :attr:`ParsedFacts.bounds`."""
        m = self._mixed
        return super().bounds if m is None else m.bounds()

    @fact
    def type_ids(self) -> np.ndarray:
        """See :attr:`GeometryFacts.type_ids` (a plain point is shapely's Point, 0)."""
        m = self._mixed
        return super().type_ids if m is None else m.scatter(m.type_id, m.sub.type_ids)

    @fact
    def has_z(self) -> np.ndarray:
        """See :attr:`GeometryFacts.has_z`."""
        m = self._mixed
        return super().has_z if m is None else m.scatter(False, m.sub.has_z)

    @fact
    def has_m(self) -> np.ndarray:
        """See :attr:`GeometryFacts.has_m`."""
        m = self._mixed
        return super().has_m if m is None else m.scatter(False, m.sub.has_m)

    @fact
    def is_empty(self) -> np.ndarray:
        """See :attr:`GeometryFacts.is_empty`."""
        m = self._mixed
        return super().is_empty if m is None else m.scatter(False, m.sub.is_empty)

    @fact
    def has_nonfinite(self) -> np.ndarray:
        """See :attr:`GeometryFacts.has_nonfinite`."""
        m = self._mixed
        return super().has_nonfinite if m is None else m.scatter(False, m.sub.has_nonfinite)

    @fact
    def _geos_valid(self) -> np.ndarray:
        m = self._mixed
        return super()._geos_valid if m is None else m.scatter(True, m.sub.geos_valid)

    @fact
    def orientation_contradicted(self) -> np.ndarray:
        """See :attr:`GeometryFacts.orientation_contradicted`."""
        m = self._mixed
        if m is None:
            return super().orientation_contradicted
        return m.scatter(False, m.sub.orientation_contradicted) | m.orientation_contradicted()

    def invalid_reason(self, idx: int) -> str:
        """See :meth:`GeometryFacts.invalid_reason` (a plain row is invalid only by a
        contradicted ring orientation, which the general reason names)."""
        m = self._mixed
        if m is None or m.plain[idx]:
            return super().invalid_reason(idx)
        return m.sub.invalid_reason(m.position(idx))
