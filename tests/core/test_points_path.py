"""Batches of 2D points are read without geometry objects (BatchFacts._points_xy): every
fact and every clause result must be what the general path gives on the same batch."""

from __future__ import annotations

import copy
import json
import pickle
import struct
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.catalogue import batch_of
from tests.fast_paths import assert_same_facts, general_facts, general_path
from worker.cli.scenario import data_file
from worker.core.contracts.parse import parse_contract
from worker.core.evaluate import evaluate
from worker.core.facts.batch import BatchFacts
from worker.core.facts.wkb_arrow import WkbTuple, arrow_points_xy
from worker.core.facts.wkb_header import simple_points_xy
from worker.core.model import ActiveVersion
from worker.io.payloads import read_batch_file

NOW = datetime.now(timezone.utc)
V1 = data_file("contracts/admin_boundaries.v1.yaml").read_text("utf-8")


def _points(xy: np.ndarray, byte_order: int = 1) -> list[bytes]:
    return list(shapely.to_wkb(shapely.points(xy), byte_order=byte_order))


coords = st.floats(min_value=-200, max_value=200, allow_nan=False, width=64)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(coords, coords), min_size=64, max_size=150),
    st.sampled_from([0, 1]),
    st.sampled_from(["east_north", "north_east"]),
    st.sampled_from(["EPSG:4326", "EPSG:3857", None]),
)
def test_points_read_without_geometries_give_the_facts_of_the_general_path(
    xy: list[tuple[float, float]], byte_order: int, axis_order: str, crs: str | None
) -> None:
    batch = batch_of(_points(np.array(xy), byte_order), crs=crs, axis_order=axis_order)
    fast = BatchFacts(batch)
    assert fast.points_xy is not None
    assert_same_facts(fast, general_facts(batch))
    assert "_strict" not in fast.__dict__  # no geometry object was built


def test_points_evaluated_without_geometries_decide_as_the_general_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(7)
    xy = np.column_stack((rng.uniform(-190, 190, 300), rng.uniform(-95, 95, 300)))
    contract = parse_contract(V1.replace("[Polygon, MultiPolygon]", "[Point]"))
    versions = [ActiveVersion(contract, "enforcing")]
    batch = replace(batch_of(_points(xy)), layer="admin_boundaries")
    fast = evaluate(batch, versions, now=NOW)
    general_path(monkeypatch)
    general = evaluate(batch, versions, now=NOW)
    assert fast == general
    extent = next(r for r in fast.verdicts[0].clauses if r.kind == "extent")
    assert extent.result == "break" and extent.offenders is not None
    assert extent.offenders.total == int(((abs(xy[:, 0]) > 180) | (abs(xy[:, 1]) > 90)).sum())


def test_only_finite_2d_points_of_one_byte_order_take_the_path() -> None:
    xy = np.arange(200, dtype=float).reshape(100, 2)
    plain = _points(xy)
    assert np.array_equal(simple_points_xy(plain), xy)
    assert np.array_equal(simple_points_xy(_points(xy, byte_order=0)), xy)
    nan = struct.pack("<BIdd", 1, 1, float("nan"), 1.0)
    z = shapely.to_wkb(shapely.Point(1, 2, 3))
    srid = shapely.to_wkb(
        shapely.set_srid(shapely.Point(1, 2), 4326), include_srid=True, flavor="extended"
    )
    big_endian = shapely.to_wkb(shapely.Point(1, 2), byte_order=0)
    polygon = shapely.to_wkb(shapely.box(0, 0, 1, 1))
    for odd in (None, nan, z, srid, big_endian, polygon, b"\x01" * 21):
        assert simple_points_xy([*plain[:70], odd, *plain[70:]]) is None, odd
    # NaN, empty and Z points, and a point among polygons, are read by the general path
    f = BatchFacts(batch_of([*plain[:70], nan]))
    assert f.points_xy is None and f.has_nonfinite.tolist()[-1] is True


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 69), st.binary(max_size=40), st.sampled_from(["replace", "append"]))
def test_one_mutated_value_among_points_is_judged_as_the_general_path_judges_it(
    where: int, data: bytes, how: str
) -> None:
    # random bytes in place of (or after) one point: the batch leaves the points path,
    # or stays on it only when the value is itself a finite 2D point; either way the
    # facts are those of the general path and nothing raises
    values: list[bytes | None] = _points(np.arange(140, dtype=float).reshape(70, 2))
    values[where] = data if how == "replace" else values[where] + data  # type: ignore[operator]
    batch = batch_of(values)
    general = general_facts(batch)
    assert_same_facts(BatchFacts(batch), general)


def test_extreme_finite_coordinates_give_no_numpy_warning() -> None:
    # pytest turns warnings into errors: summing 1e308 + 1e308 overflowed in the extent
    # totals ("overflow encountered in reduce", found by a new-user session)
    xy = np.column_stack((np.linspace(0, 10, 70), np.linspace(0, 10, 70)))
    xy[9] = (1e308, 1e308)
    contract = parse_contract(V1.replace("[Polygon, MultiPolygon]", "[Point]"))
    batch = replace(batch_of(_points(xy)), layer="admin_boundaries")
    decision = evaluate(batch, [ActiveVersion(contract, "enforcing")], now=NOW)
    extent = next(r for r in decision.verdicts[0].clauses if r.kind == "extent")
    assert extent.result == "break" and extent.offenders is not None
    assert extent.offenders.total == 1


def _mixed_values(n: int = 300) -> list[bytes | None]:
    """Plain points in both byte orders, and among them what sent a batch of points down
    the general path: a MultiPoint, POINT EMPTY, a NaN point, a missing value, a Z point,
    an EWKB point with an SRID, a bowtie polygon (invalid) and bytes GEOS refuses."""
    rng = np.random.default_rng(34)
    xy = np.column_stack((rng.uniform(-190, 190, n), rng.uniform(-95, 95, n)))
    values: list[bytes | None] = [*_points(xy[: n // 2]), *_points(xy[n // 2 :], byte_order=0)]
    odd = [
        shapely.to_wkb(shapely.MultiPoint([(1, 2), (3, 4)])),
        shapely.to_wkb(shapely.Point()),
        struct.pack("<BIdd", 1, 1, float("nan"), 1.0),
        None,
        shapely.to_wkb(shapely.Point(1, 2, 3)),
        shapely.to_wkb(
            shapely.set_srid(shapely.Point(5, 6), 4326), include_srid=True, flavor="extended"
        ),
        shapely.to_wkb(shapely.Polygon([(0, 0), (1, 1), (1, 0), (0, 1), (0, 0)])),
        b"\x01\x02\x00\x00\x00\xff\xff\xff\x7f",
    ]  # fmt: skip
    for k, value in enumerate(odd):
        values[7 + 31 * k] = value
    return values


@pytest.mark.parametrize("axis_order", ["east_north", "north_east"])
@pytest.mark.parametrize("crs", ["EPSG:4326", "EPSG:3857", None])
def test_points_among_other_values_keep_the_points_path_with_the_general_facts(
    axis_order: str, crs: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = batch_of(_mixed_values(), crs=crs, axis_order=axis_order)
    fast = BatchFacts(batch)
    assert fast.points_xy is None  # not every feature a plain point
    assert_same_facts(fast, general_facts(batch))
    assert "raw_geometries" not in fast.__dict__  # no geometry built (the general path builds all)
    assert fast.is_valid[[7, 38]].all() and not fast.is_valid[[69, 100, 193, 224]].any()
    assert fast.type_names[7] == "MultiPoint" and fast.is_empty[38] and fast.missing[100]
    assert fast.invalid_count == 4  # NaN, missing, bowtie, refused: no plain point
    # a clause that asks for the geometries gets those of the general path
    general = general_facts(batch)
    assert [g if g is None else g.wkb for g in fast.geometries] == [
        g if g is None else g.wkb for g in general.geometries
    ]


def test_points_among_other_values_decide_as_the_general_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    contract = parse_contract(V1.replace("[Polygon, MultiPolygon]", "[Point]"))
    versions = [ActiveVersion(contract, "enforcing")]
    batch = replace(batch_of(_mixed_values()), layer="admin_boundaries")
    fast = evaluate(batch, versions, now=NOW)
    general_path(monkeypatch)
    general = evaluate(batch, versions, now=NOW)
    assert fast == general
    kinds = {r.kind: r for r in fast.verdicts[0].clauses}
    assert kinds["extent"].result == "break" and kinds["geometry_type"].result == "break"
    assert kinds["validity"].offenders is not None and kinds["validity"].offenders.total >= 3


def _arrow_and_bytes(values: list[bytes | None], large: bool = False) -> tuple[object, object]:
    array = pa.array(values, pa.large_binary() if large else pa.binary())
    return arrow_points_xy(WkbTuple(array)), simple_points_xy(values)


@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("byte_order", [0, 1])
def test_points_read_from_arrow_buffers_are_those_read_from_bytes(
    large: bool, byte_order: int
) -> None:
    xy = np.random.default_rng(27).uniform(-180, 180, size=(300, 2))
    plain = _points(xy, byte_order)
    fast, slow = _arrow_and_bytes(plain, large)
    assert isinstance(fast, np.ndarray) and np.array_equal(fast, xy) and np.array_equal(slow, xy)
    # a slice of the array (a buffer offset, the offsets not starting at 0) reads its rows
    tail = WkbTuple(pa.array(plain, pa.large_binary() if large else pa.binary()).slice(17, 200))
    assert tail == tuple(plain[17:217])
    assert np.array_equal(arrow_points_xy(tail), xy[17:217])  # type: ignore[arg-type]


def test_a_value_that_is_no_plain_point_leaves_the_arrow_path_as_the_bytes_path() -> None:
    plain = _points(np.arange(200, dtype=float).reshape(100, 2))
    nan = struct.pack("<BIdd", 1, 1, float("nan"), 1.0)
    srid = shapely.to_wkb(
        shapely.set_srid(shapely.Point(1, 2), 4326), include_srid=True, flavor="extended"
    )
    big_endian = shapely.to_wkb(shapely.Point(1, 2), byte_order=0)
    # two values of 20 and 22 bytes: 42 bytes, as two points, but misaligned
    short, long = plain[0][:20], plain[1] + b"\x00"
    for odd in ([None], [nan], [srid], [big_endian], [b"\x01" * 21], [short, long], [b""]):
        fast, slow = _arrow_and_bytes([*plain[:70], *odd, *plain[70:]])
        assert fast is None and slow is None, odd
    assert _arrow_and_bytes([]) == (None, None)


def test_a_chunk_read_from_geoparquet_keeps_its_arrow_array_and_its_points_facts(
    tmp_path: Path,
) -> None:
    xy = np.random.default_rng(3).uniform(-10, 10, size=(200, 2))
    path = tmp_path / "points.parquet"
    geo = {"version": "1.0.0", "primary_column": "geometry",
           "columns": {"geometry": {"encoding": "WKB", "geometry_types": ["Point"]}}}  # fmt: skip
    table = pa.table({"code": ["a"] * 200, "geometry": pa.array(_points(xy), pa.binary())})
    pq.write_table(table.replace_schema_metadata({"geo": json.dumps(geo)}), path)
    batch = read_batch_file(path, layer="points")
    assert isinstance(batch.geometries_wkb, WkbTuple)
    fast = BatchFacts(batch)
    assert fast.points_xy is not None and np.array_equal(fast.points_xy, xy)
    plain = replace(batch, geometries_wkb=tuple(batch.geometries_wkb))
    assert not isinstance(plain.geometries_wkb, WkbTuple)
    assert_same_facts(fast, general_facts(plain))


def test_a_wkb_tuple_copies_and_pickles_as_the_plain_tuple_of_its_values() -> None:
    values = WkbTuple(pa.array([b"ab", None, b"c"], pa.binary()))
    for copied in (copy.copy(values), copy.deepcopy(values), pickle.loads(pickle.dumps(values))):
        assert type(copied) is tuple and copied == (b"ab", None, b"c") == values
    with pytest.raises(TypeError, match="binary wanted"):
        WkbTuple(pa.array(["text"]))


def _pt(x: float, y: float, order: int) -> bytes:
    return bytes(shapely.to_wkb(shapely.Point(x, y), byte_order=order))


#: Values that are not plain 2D points, hostile ones among them: none, truncated and padded
#: points, MultiPoints of zero parts (both byte orders), NaN and infinite coordinates, a
#: bad byte order flag, EWKB points with an SRID flag (whole, and cut to 21 bytes), Z and
#: M flags (ISO and EWKB, whole and truncated), POINT EMPTY, a bowtie, a collection.
_ODD = [
    None, b"", b"\x01", _pt(1, 2, 1)[:20], _pt(1, 2, 1) + b"\x00",
    b"\x01\x04\x00\x00\x00\x00\x00\x00\x00", b"\x00\x00\x00\x00\x04\x00\x00\x00\x00",
    struct.pack("<BIdd", 1, 1, float("nan"), 1.0), struct.pack(">BIdd", 0, 1, 1.0, float("inf")),
    struct.pack("<BIdd", 2, 1, 1.0, 1.0), struct.pack("<BIdd", 1, 0x20000001, 1.0, 1.0),
    struct.pack("<BIIdd", 1, 0x20000001, 4326, 1.0, 2.0),
    struct.pack(">BIIdd", 0, 0x20000001, 3857, 1.0, 2.0),
    struct.pack("<BIddd", 1, 1001, 1, 2, 3), struct.pack("<BIddd", 1, 0x80000001, 1, 2, 3),
    struct.pack("<BIddd", 1, 2001, 1, 2, 3), struct.pack("<BIdd", 1, 1001, 1.0, 2.0),
    struct.pack("<BIdd", 1, 0x40000001, 1.0, 2.0), shapely.to_wkb(shapely.Point()),
    shapely.to_wkb(shapely.MultiPoint([(1, 2), (3, 4)]), byte_order=0),
    shapely.to_wkb(shapely.Polygon([(0, 0), (1, 1), (1, 0), (0, 1), (0, 0)])),
    struct.pack("<BIdd", 1, 1, 1e308, -1e308), struct.pack("<BIdd", 1, 1, -0.0, 5e-324),
    struct.pack("<BII", 1, 7, 0), struct.pack("<BII", 1, 4, 1) + struct.pack("<BIdd", 0, 1, 1, 2),
]  # fmt: skip
_POINT = st.builds(_pt, coords, coords, st.sampled_from([0, 1]))


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(
    st.lists(
        st.one_of(_POINT, _POINT, _POINT, st.sampled_from(_ODD), st.binary(max_size=30)),
        min_size=64,
        max_size=120,
    ),
    st.sampled_from(["east_north", "north_east"]),
    st.sampled_from(["EPSG:4326", "EPSG:3857", None]),
)
def test_points_among_any_other_values_give_every_fact_of_the_general_path(
    values: list[bytes | None], axis_order: str, crs: str | None
) -> None:
    # stop 35: plain points of both byte orders among several hostile values; the mixed
    # path (or the points path, or the general one) gives the general path's facts, invalid
    # reasons and geometries, and nothing raises
    batch = batch_of(values, crs=crs, axis_order=axis_order)
    fast = BatchFacts(batch)
    general = general_facts(batch)
    assert_same_facts(fast, general)
    for i in np.flatnonzero(~general.is_valid).tolist():
        assert fast.invalid_reason(i) == general.invalid_reason(i), i
    assert [g if g is None else g.wkb for g in fast.geometries] == [
        g if g is None else g.wkb for g in general.geometries
    ]
