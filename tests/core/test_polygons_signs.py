"""Stop 36's hunt on the star polygons path (star_rings, polygons_mixed): values the fast
and general paths must agree on to the bit, signed zeros included, since the decision JSON
prints ``-0.0`` and ``0.0`` apart (``==`` and ``np.array_equal`` do not tell them apart)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.catalogue import batch_of
from tests.fast_paths import general_facts
from worker.core.facts.batch import BatchFacts
from worker.core.facts.polygons_mixed import MixedPolygons
from worker.core.facts.star_rings import star_rings

FACTS = ("bounds", "is_valid", "invalid_count", "usable", "has_nonfinite", "lonlat_fits",
         "outside_area_of_use", "orientation_contradicted", "type_ids")  # fmt: skip


def ring_wkb(xy: np.ndarray) -> bytes:
    """A little-endian one-ring WKB Polygon of ``xy`` (float (V, 2)) as given."""
    return struct.pack("<BIII", 1, 3, 1, len(xy)) + np.asarray(xy, dtype="<f8").tobytes()


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """``a`` and ``b`` hold the same values, NaN where NaN and the same sign of zero."""
    if a.dtype.kind != "f":
        return bool(np.array_equal(a, b))
    return bool(
        np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b))
    )


# a square's corners with either zero: GEOS's envelope keeps the first zero it meets
_ZERO = st.sampled_from([0.0, -0.0])
_CORNER = st.tuples(st.one_of(_ZERO, st.sampled_from([1.0, -1.0, 2.0])),
                    st.one_of(_ZERO, st.sampled_from([1.0, -1.0, 2.0])))  # fmt: skip


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(st.lists(_CORNER, min_size=3, max_size=8), st.integers(0, 7))
def test_a_proven_ring_has_the_envelope_geos_gives_to_the_sign_of_zero(
    points: list[tuple[float, float]], turn: int
) -> None:
    ring = np.array(points[turn % len(points) :] + points[: turn % len(points)], dtype=float)
    ring = np.vstack([ring, ring[:1]])
    values = np.array([ring_wkb(ring)] * 64, dtype=object)
    found = star_rings(values, 1)
    if found is None or not found.plain[0]:
        return
    geom = shapely.from_wkb(values[0])
    assert shapely.is_valid(geom)
    assert same_bits(found.bounds[0], np.asarray(shapely.bounds(geom))), (found.bounds[0], ring)
    assert found.ccw[0] == shapely.is_ccw(geom.exterior)


@pytest.mark.parametrize("axis_order", ["east_north", "north_east"])
def test_signed_zero_corners_give_the_general_path_s_facts_to_the_bit(axis_order: str) -> None:
    square = np.array([(1, 1), (-0.0, 1), (0.0, -0.0), (1, 0), (1, 1)], dtype=float)
    mirrored = np.array([(-0.0, -0.0), (-1, 0.0), (-1, -1), (0.0, -1), (-0.0, -0.0)], dtype=float)
    values = [ring_wkb(square), ring_wkb(mirrored), ring_wkb(square + 1.0)] * 200
    batch = batch_of(values, axis_order=axis_order)
    fast = BatchFacts(batch)
    assert isinstance(fast.mixed, MixedPolygons)
    general = general_facts(batch, FACTS)
    for name in FACTS:
        assert same_bits(np.asarray(getattr(fast, name)), np.asarray(getattr(general, name))), name
    # GEOS: square's x starts 1, then -0.0 (kept); mirrored's -0.0 comes before 0.0
    assert np.signbit(fast.bounds[0]).tolist() == [True, True, False, False]
    assert np.signbit(fast.bounds[1]).tolist() == [True, True, True, True]
