"""Rows of a batch whose facts are known without GEOS, and the facts of the other rows.

The base of :class:`~worker.core.facts.points_mixed.MixedPoints` and
:class:`~worker.core.facts.polygons_mixed.MixedPolygons`, which
:class:`~worker.core.facts.mixed_facts.MixedFacts` scatters back into batch order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["PlainRows"]


class PlainRows:
    """The rows of a batch whose facts are known without GEOS (``plain``: bool (N,)) and
    the facts of its other rows (``rest``: int (M,), ascending; ``sub``: the facts, same
    class as the batch's, of the batch of those rows alone). Subclasses say what the plain
    rows are: :class:`MixedPoints`,
    :class:`~worker.core.facts.polygons_mixed.MixedPolygons`."""

    plain: np.ndarray
    rest: np.ndarray
    sub: Any
    #: shapely's type id of every plain row
    type_id: int

    def scatter(self, point_value: Any, rest_values: np.ndarray) -> np.ndarray:
        """An array of the batch: ``point_value`` in the plain rows, ``rest_values`` (one
        per :attr:`rest` row, in order) in the others."""
        rest_values = np.asarray(rest_values)
        out = np.full((len(self.plain), *rest_values.shape[1:]), point_value, rest_values.dtype)
        out[self.rest] = rest_values
        return out

    def reindexed(self, by_row: dict[int, Any]) -> dict[int, Any]:
        """``by_row`` (keys: rows of :attr:`sub`) keyed by the rows of the batch."""
        return {int(self.rest[i]): v for i, v in by_row.items()}

    def position(self, index: int) -> int:
        """The row of :attr:`sub` of the batch's row ``index`` (one of :attr:`rest`)."""
        return int(np.searchsorted(self.rest, index))
