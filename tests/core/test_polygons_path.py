"""Star-shaped one-ring polygons are judged from their coordinates (star_rings,
polygons_mixed): a ring proven there must be GEOS-valid, and every fact and clause result
of a batch must be what the general path gives on the same batch."""

from __future__ import annotations

import struct
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.catalogue import batch_of
from tests.fast_paths import FACTS, assert_same_facts, general_facts, general_path
from worker.cli.scenario import data_file
from worker.core.contracts.parse import parse_contract
from worker.core.evaluate import evaluate
from worker.core.facts import polygons_mixed as polygons_module
from worker.core.facts import star_rings as star_module
from worker.core.facts import wkb_rings as rings_module
from worker.core.facts.batch import BatchFacts
from worker.core.facts.polygons_mixed import MixedPolygons
from worker.core.facts.star_rings import star_rings
from worker.core.facts.wkb_arrow import WkbTuple
from worker.core.facts.wkb_rings import wkb_buffers
from worker.core.model import ActiveVersion

NOW = datetime.now(timezone.utc)
V1 = data_file("contracts/admin_boundaries.v1.yaml").read_text("utf-8")


@pytest.fixture(autouse=True)
def _small_batches_take_the_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # the path starts at 512 features; these batches of 64 to 300 take it too
    monkeypatch.setattr(polygons_module, "POLYGONS_WITHOUT_GEOMETRIES_MIN", 64)


def _star(rng: np.random.Generator, n: int, centre: tuple[float, float], size: float,
          clockwise: bool = False) -> np.ndarray:  # fmt: skip
    """A closed star-shaped ring about ``centre`` (the peers benchmark's kind)."""
    t = np.sort(rng.uniform(0.0, 2 * np.pi, n))
    r = size * rng.uniform(0.6, 1.0, n)
    xy = np.column_stack([np.cos(t) * r, np.sin(t) * r]) + centre
    if clockwise:
        xy = xy[::-1]
    return np.vstack([xy, xy[:1]])


def _ring_wkb(xy: np.ndarray, byte_order: str = "<") -> bytes:
    """A one-ring WKB Polygon written as given (open rings and NaN included)."""
    head = struct.pack(f"{byte_order}BIII", 1 if byte_order == "<" else 0, 3, 1, len(xy))
    return head + np.asarray(xy, dtype=f"{byte_order}f8").tobytes()


def _odd_values(rng: np.random.Generator) -> list[bytes | None]:
    """Values the path must leave to GEOS, or prove exactly as GEOS judges them."""
    star = _star(rng, 30, (10.0, 50.0), 0.01)
    bowtie = np.array([(0, 0), (1, 1), (1, 0), (0, 1), (0, 0)], dtype=float)
    square = np.array([(0, 0), (1, 0), (1, 1), (0, 1), (0, 0)], dtype=float)
    spike = np.array([(0, 0), (2, 0), (2, 1), (1, 1), (1, 3), (1, 1), (0, 1), (0, 0)], float)
    repeated = np.array([(0, 0), (1, 0), (1, 0), (1, 1), (0, 1), (0, 0)], dtype=float)
    collinear = np.array([(0, 0), (1, 0), (2, 0), (2, 2), (0, 2), (0, 0)], dtype=float)
    twice = np.vstack([_star(rng, 12, (0, 0), 1)[:-1]] * 2 + [_star(rng, 12, (0, 0), 1)[:1]])
    open_ring = star[:-1]
    nan = star.copy()
    nan[3, 0] = np.nan
    inf = star.copy()
    inf[5, 1] = np.inf
    tiny = square * 1e-300
    huge = square * 1e300
    l_shape = np.array([(0, 0), (3, 0), (3, 1), (1, 1), (1, 3), (0, 3), (0, 0)], dtype=float)
    hole = shapely.Polygon(square * 10, [square + 4])
    return [
        None, b"", b"\x01\x03\x00", _ring_wkb(bowtie), _ring_wkb(square), _ring_wkb(spike),
        _ring_wkb(repeated), _ring_wkb(collinear), _ring_wkb(twice), _ring_wkb(open_ring),
        _ring_wkb(nan), _ring_wkb(inf), _ring_wkb(tiny), _ring_wkb(huge), _ring_wkb(l_shape),
        _ring_wkb(square[:3]), _ring_wkb(star, ">"), _ring_wkb(star) + b"\x00",
        _ring_wkb(star)[:-8], shapely.to_wkb(hole), shapely.to_wkb(shapely.Polygon()),
        shapely.to_wkb(shapely.Polygon(np.column_stack([star, np.ones(len(star))]))),
        shapely.to_wkb(shapely.MultiPolygon([shapely.Polygon(star)])),
        shapely.to_wkb(shapely.Point(1, 2)), _ring_wkb(star[::-1]),
    ]  # fmt: skip


def _batch_values(seed: int, n_star: int = 80) -> list[bytes | None]:
    rng = np.random.default_rng(seed)
    values: list[bytes | None] = [
        _ring_wkb(_star(rng, int(rng.integers(5, 60)), (rng.uniform(-170, 170),
                  rng.uniform(-80, 80)), rng.uniform(0.001, 5), clockwise=bool(i % 3 == 0)))
        for i in range(n_star)
    ]  # fmt: skip
    for v in _odd_values(rng):
        values.insert(int(rng.integers(0, len(values) + 1)), v)
    return values


def test_every_proven_ring_is_geos_valid_with_its_envelope_and_orientation() -> None:
    rng = np.random.default_rng(3)
    rings = [_star(rng, int(rng.integers(4, 90)), (rng.uniform(-1e6, 1e6), 0.0),
                   rng.uniform(1e-6, 1e3), clockwise=bool(rng.integers(2)))
             for _ in range(3000)]  # fmt: skip
    values = np.array([_ring_wkb(r) for r in rings] + _odd_values(rng), dtype=object)
    found = star_rings(values, 64)
    assert found is not None
    geoms = shapely.from_wkb(values[found.plain])
    assert shapely.is_valid(geoms).all()
    assert np.array_equal(found.bounds, shapely.bounds(geoms))
    assert np.array_equal(np.signbit(found.bounds), np.signbit(shapely.bounds(geoms)))
    assert np.array_equal(found.ccw, shapely.is_ccw(shapely.get_exterior_ring(geoms)))
    # nearly all of the star-shaped rings are proven (the rest go to GEOS)
    assert found.plain[:3000].sum() >= 2900


def test_the_odd_values_are_never_proven_unless_geos_finds_them_valid() -> None:
    rng = np.random.default_rng(5)
    odd = _odd_values(rng)
    values = np.array([_ring_wkb(_star(rng, 20, (0, 0), 1)) for _ in range(70)] + odd, object)
    found = star_rings(values, 64)
    assert found is not None
    proven_odd = [v for v, p in zip(odd, found.plain[70:], strict=True) if p]
    # only the square, the tiny and huge squares, the L (star about its centroid's
    # relaxation) and the reversed star may be proven; each is valid for GEOS
    for v in proven_odd:
        assert shapely.is_valid(shapely.from_wkb(v)), v
    assert _ring_wkb(np.array([(0, 0), (1, 1), (1, 0), (0, 1), (0, 0)], float)) not in proven_odd


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    st.lists(
        st.tuples(st.integers(-4, 4).map(float), st.integers(-4, 4).map(float)),
        min_size=3,
        max_size=9,
    ),
    st.sampled_from([1.0, 1e-9, 1e12, 3.7]),
)
def test_a_ring_of_any_grid_points_is_proven_only_when_geos_finds_it_valid(
    points: list[tuple[float, float]], scale: float
) -> None:
    # grid points make collinear edges, repeated vertices, touching and crossing rings
    ring = np.array([*points, points[0]], dtype=float) * scale
    values = np.array([_ring_wkb(ring)] * 64, dtype=object)
    found = star_rings(values, 1)
    if found is not None and found.plain[0]:
        assert shapely.is_valid(shapely.from_wkb(values[0]))


@pytest.mark.parametrize("axis_order", ["east_north", "north_east"])
@pytest.mark.parametrize("crs", ["EPSG:4326", "EPSG:3857", None])
@pytest.mark.parametrize("orientation", [None, "counterclockwise"])
def test_star_polygons_among_other_values_give_every_fact_of_the_general_path(
    axis_order: str, crs: str | None, orientation: str | None
) -> None:
    batch = replace(batch_of(_batch_values(11), crs=crs, axis_order=axis_order),
                    orientation=orientation)  # fmt: skip
    fast = BatchFacts(batch)
    assert isinstance(fast.mixed, MixedPolygons)
    general = general_facts(batch)
    assert_same_facts(fast, general)
    for i in np.flatnonzero(~general.is_valid).tolist():
        assert fast.invalid_reason(i) == general.invalid_reason(i), i
    assert [g if g is None else g.wkb for g in fast.geometries] == [
        g if g is None else g.wkb for g in general.geometries
    ]


def test_no_geometry_object_is_built_for_the_plain_polygons_of_a_geographic_batch() -> None:
    batch = batch_of(_batch_values(12))
    fast = BatchFacts(batch)
    for name in FACTS:
        getattr(fast, name)
    assert "raw_geometries" not in fast.__dict__ and "_strict" not in fast.__dict__
    m = fast.mixed
    assert isinstance(m, MixedPolygons) and m.sub.count == len(m.rest) < fast.count / 2


@pytest.mark.parametrize("kind", ["extent", "reprojected", "north_east"])
def test_star_polygons_evaluated_decide_as_the_general_path(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = V1
    if kind == "reprojected":
        text = V1.replace("crs: EPSG:4326", "crs: EPSG:3857")
    contract = parse_contract(text)
    versions = [ActiveVersion(contract, "enforcing")]
    batch = replace(batch_of(_batch_values(13, 200),
                             axis_order="north_east" if kind == "north_east" else "east_north"),
                    layer="admin_boundaries")  # fmt: skip
    fast = evaluate(batch, versions, now=NOW)
    general_path(monkeypatch)
    general = evaluate(batch, versions, now=NOW)
    assert fast == general
    validity = next(r for r in fast.verdicts[0].clauses if r.kind == "validity")
    assert validity.result == "break"


@pytest.mark.parametrize("n_star", [100, 600])  # 600: a probe first (256 candidates or more)
@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("nulls", [False, True])
def test_wkb_read_from_arrow_buffers_is_read_as_from_bytes(
    large: bool, nulls: bool, n_star: int
) -> None:
    # the coordinates of an Arrow array are cut by Arrow (binary_slice of the rows taken),
    # those of an object array joined and cut by numpy: the same rings, the same facts
    values = _batch_values(14, n_star)
    if not nulls:
        values = [v for v in values if v is not None]
    array = pa.array(values, type=pa.large_binary() if large else pa.binary())
    for sliced in (array, array.slice(7)):
        tuple_ = WkbTuple(sliced)
        assert tuple(tuple_) == tuple(sliced.to_pylist())  # the values, None for null
        offsets, raw = wkb_buffers(tuple_)  # type: ignore[misc]
        got = [None if sliced[i].as_py() is None else bytes(raw[offsets[i]:offsets[i + 1]])
               for i in range(len(sliced))]  # fmt: skip
        assert got == sliced.to_pylist()
        a = star_rings(tuple_, 8)
        b = star_rings(np.array(sliced.to_pylist(), dtype=object), 8)
        assert a is not None and b is not None
        assert np.array_equal(a.plain, b.plain) and np.array_equal(a.bounds, b.bounds)
        assert np.array_equal(a.ccw, b.ccw)
        assert np.count_nonzero(a.plain) >= n_star * 0.9


_FLOAT = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, width=64)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(st.tuples(_FLOAT, _FLOAT), min_size=3, max_size=12))
def test_a_ring_of_any_float_points_is_proven_only_when_geos_finds_it_valid(
    points: list[tuple[float, float]],
) -> None:
    ring = np.array([*points, points[0]], dtype=float)
    values = np.array([_ring_wkb(ring)] * 64, dtype=object)
    found = star_rings(values, 1)
    if found is not None and found.plain[0]:
        assert shapely.is_valid(shapely.from_wkb(values[0]))


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.integers(0, 2**32 - 1), st.integers(4, 40), st.sampled_from([1e-13, 1e-15, 1e-9, 0.0]))
def test_a_star_ring_with_a_vertex_pushed_onto_an_edge_is_judged_as_geos_judges_it(
    seed: int, n: int, gap: float
) -> None:
    # a vertex moved to within ``gap`` (relative) of a non-adjacent edge, or past it: the
    # rings floating point can hardly decide are left to GEOS, never proven invalidly
    rng = np.random.default_rng(seed)
    ring = _star(rng, n, (rng.uniform(-100, 100), rng.uniform(-100, 100)), rng.uniform(1e-3, 10))
    i = int(rng.integers(1, n - 1))
    j = (i + n // 2) % (n - 1)
    a, b = ring[j], ring[j + 1]
    t = rng.uniform(0.1, 0.9)
    target = a + t * (b - a)
    ring[i] = target + gap * (ring[i] - target) * float(rng.choice([-1, 1]))
    if i == 0:
        ring[-1] = ring[0]
    values = np.array([_ring_wkb(ring)] * 64, dtype=object)
    found = star_rings(values, 1)
    if found is not None and found.plain[0]:
        assert shapely.is_valid(shapely.from_wkb(values[0]))


_STAR = st.integers(0, 2**32 - 1).map(
    lambda s: _ring_wkb(_star(np.random.default_rng(s), 8 + s % 40, (s % 360 - 180.0, 10.0), 0.5))
)


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(
    st.lists(
        st.one_of(
            _STAR,
            _STAR,
            _STAR,
            st.sampled_from(_odd_values(np.random.default_rng(9))),
            st.binary(max_size=90),
        ),
        min_size=64,
        max_size=120,
    ),
    st.sampled_from(["east_north", "north_east"]),
    st.sampled_from(["EPSG:4326", "EPSG:3857", None]),
    st.sampled_from([None, "counterclockwise"]),
)
def test_star_polygons_among_any_other_values_give_every_fact_of_the_general_path(
    values: list[bytes | None], axis_order: str, crs: str | None, orientation: str | None
) -> None:
    batch = replace(batch_of(values, crs=crs, axis_order=axis_order), orientation=orientation)
    fast = BatchFacts(batch)
    general = general_facts(batch)
    assert_same_facts(fast, general)
    for i in np.flatnonzero(~general.is_valid).tolist():
        assert fast.invalid_reason(i) == general.invalid_reason(i), i


def test_a_batch_of_countries_is_left_to_geos() -> None:
    # Natural Earth's countries: most are one-ring polygons, fewer than half star-shaped
    # about a point the relaxation finds; the probe of 64 tells, and the batch is read as
    # before (no second pass over its rings)
    from worker.io.payloads import read_batch_file

    batch = read_batch_file(data_file("admin_boundaries.parquet"), layer="admin_boundaries")
    values = np.array(batch.geometries_wkb * 2, dtype=object)  # 354 values, 4 x the probe
    read: list[int] = []
    candidates = rings_module.one_ring_candidates

    def counted(source: Any, among: Any = None) -> Any:
        read.append(len(source.lengths) if among is None else len(among))
        return candidates(source, among)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(star_module, "one_ring_candidates", counted)
        assert star_rings(values, 64) is None
    assert read == [64]  # the probe's rows' headers alone (issue 27)
    assert BatchFacts(replace(batch, geometries_wkb=tuple(values))).mixed is None
