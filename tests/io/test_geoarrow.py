"""GeoArrow native columns whose Arrow layout is not their encoding's (io/formats/geoarrow.py)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from worker.core.errors import ContractGateError
from worker.io.formats.geoarrow import NATIVE_ENCODINGS, native_to_wkb

NESTING = {"point": 0, "linestring": 1, "multipoint": 1, "polygon": 2}
NESTING |= {"multilinestring": 2, "multipolygon": 3}
XY = pa.struct([("x", pa.float64()), ("y", pa.float64())])


def _column(coords: pa.Array, lists: int) -> pa.ChunkedArray:
    """``coords`` (two coordinates) wrapped in ``lists`` levels of one-element lists."""
    arr = coords
    for _ in range(lists):
        arr = pa.ListArray.from_arrays(pa.array([0, len(arr)], pa.int32()), arr)
    return pa.chunked_array([arr])


def _xy() -> pa.Array:
    return pa.array([{"x": 0.0, "y": 0.0}, {"x": 1.0, "y": 1.0}], XY)


def test_every_encoding_is_covered() -> None:
    assert set(NESTING) == set(NATIVE_ENCODINGS)


@pytest.mark.parametrize("encoding", list(NESTING))
@pytest.mark.parametrize("off", [-1, 1], ids=["a list too few", "a list too many"])
def test_a_column_nested_otherwise_is_refused_naming_the_layout(encoding: str, off: int) -> None:
    # found by a new-user session: a GeoParquet 'polygon' column of rings (one list too
    # few) was "unreadable: 'pyarrow.lib.StructArray' object has no attribute 'offsets'"
    lists = NESTING[encoding] + off
    if lists < 0:
        col = pa.chunked_array([pa.array([b"\x01", b"\x02"], pa.binary())])  # WKB, say
    else:
        col = _column(_xy(), lists)
    with pytest.raises(ContractGateError) as err:
        native_to_wkb("b.parquet", col, encoding)
    text = str(err.value)
    layout = "list<" * NESTING[encoding] + "coordinates" + ">" * NESTING[encoding]
    assert f"GeoArrow {encoding} column of type {col.type}" in text
    assert f"is not the {encoding} layout ({layout}, coordinates being a struct of x, y" in text


@pytest.mark.parametrize("encoding", list(NESTING))
@pytest.mark.parametrize(
    "coords",
    [
        pa.array(
            [{"x": "a", "y": 0.0}, {"x": "b", "y": 1.0}],
            pa.struct([("x", pa.string()), ("y", pa.float64())]),
        ),
        pa.array(["0 0", "1 1"]),
        pa.array([[0.0], [1.0]], pa.list_(pa.float64(), 1)),
    ],
    ids=["struct of strings", "strings", "one value per coordinate"],
)
def test_coordinates_of_another_type_are_refused_naming_it(encoding: str, coords: pa.Array) -> None:
    col = _column(coords, NESTING[encoding])
    with pytest.raises(ContractGateError) as err:
        native_to_wkb("b.parquet", col, encoding)
    assert str(err.value).endswith(f"): its coordinates are {coords.type}")


@pytest.mark.parametrize("encoding", list(NESTING))
def test_the_right_layout_still_reads(encoding: str) -> None:
    geoms, envelope = native_to_wkb("b.parquet", _column(_xy(), NESTING[encoding]), encoding)
    assert len(geoms) == (2 if encoding == "point" else 1) and envelope == (0.0, 0.0, 1.0, 1.0)
