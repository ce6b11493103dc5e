"""The envelope of GeoArrow coordinates (:func:`worker.io.formats.geoarrow.coordinates_envelope`),
read column by column, against numpy's axis-0 reduction it replaced: NaN ignored, None
when a column has no value that is not NaN, infinities kept."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from worker.io.formats import geoarrow


def _by_axis(coords: np.ndarray) -> tuple[float, float, float, float] | None:
    if coords.size == 0:
        return None
    xy = coords[:, :2]
    if np.isnan(xy).all(axis=0).any():
        return None
    lo, hi = np.nanmin(xy, axis=0), np.nanmax(xy, axis=0)
    return (float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1]))


VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([float("nan"), 0.0, -0.0, 180.0, -90.0]),
)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(
    st.integers(0, 40).flatmap(
        lambda m: st.sampled_from([2, 3, 4]).flatmap(
            lambda d: hnp.arrays(np.float64, (m, d), elements=VALUES)
        )
    )
)
def test_the_envelope_is_the_axis_reduction_of_the_coordinates(coords: np.ndarray) -> None:
    assert geoarrow.coordinates_envelope(coords) == _by_axis(coords)


def test_a_column_of_nan_alone_has_no_envelope() -> None:
    coords = np.array([[1.0, np.nan], [2.0, np.nan]])
    assert geoarrow.coordinates_envelope(coords) is None
    coords[1, 1] = 5.0
    assert geoarrow.coordinates_envelope(coords) == (1.0, 5.0, 2.0, 5.0)
