"""CRS resolution/equivalence, transformers, regions and areas (worker.core.spatial)."""

from __future__ import annotations

import math
import zipfile
from pathlib import Path

import numpy as np
import pyproj
import pytest
import shapely
from hypothesis import given
from hypothesis import strategies as st
from pyproj import CRS

from worker.core.errors import CrsError
from worker.core.spatial import (
    area_m2_or_units,
    cached_transformer,
    crs_equivalent,
    crs_label,
    fraction_covered,
    region_geometry,
    reproject,
    resolve_crs,
    swap_xy,
)

SHARED = Path("/work/shared/data")


def _prj(kind: str) -> str:
    if kind == "nybb":
        with zipfile.ZipFile(SHARED / "nybb_16a.zip") as z:
            return z.read("nybb.prj").decode()
    return (SHARED / "naturalearth_lowres" / "naturalearth_lowres.prj").read_text()


@pytest.mark.parametrize(
    ("a", "b", "equivalent"),
    [
        ("OGC:CRS84", "EPSG:4326", True),
        ("ESRI:102100", "EPSG:3857", True),
        ("EPSG:2263", "EPSG:4326", False),
        ("EPSG:4269", "EPSG:4326", False),
        ("EPSG:3857", "EPSG:4326", False),
        ("EPSG:2263", "EPSG:2263", True),
    ],
)
def test_crs_equivalence_pairs(a: str, b: str, equivalent: bool) -> None:
    assert crs_equivalent(a, b) is equivalent
    assert crs_equivalent(b, a) is equivalent


@pytest.mark.skipif(not SHARED.exists(), reason="shared data folder not present")
def test_esri_wkt_from_prj_files() -> None:
    nybb, ne = _prj("nybb"), _prj("naturalearth")
    assert nybb.startswith("PROJCS[") and ne.startswith("GEOGCS[")
    assert crs_equivalent(nybb, "EPSG:2263")
    assert crs_equivalent(ne, "EPSG:4326")
    assert crs_equivalent(ne, "OGC:CRS84")
    assert not crs_equivalent(nybb, "EPSG:4326")


def test_projjson_string_and_dict() -> None:
    crs = CRS.from_epsg(2263)
    as_dict = crs.to_json_dict()
    assert crs_equivalent(resolve_crs(as_dict), "EPSG:2263")
    assert crs_equivalent(resolve_crs(crs.to_json()), "EPSG:2263")
    assert resolve_crs(as_dict) is resolve_crs(dict(as_dict))  # cached on canonical JSON


def test_resolve_crs_is_cached() -> None:
    assert resolve_crs("EPSG:2263") is resolve_crs("EPSG:2263")
    assert resolve_crs(" EPSG:2263 ") is resolve_crs("EPSG:2263")


@pytest.mark.parametrize("text", ["EPSG:999999", "not a crs", ""])
def test_unresolvable_crs_raises_crs_error_naming_text(text: str) -> None:
    with pytest.raises(CrsError) as info:
        resolve_crs(text)
    assert repr(text) in str(info.value)
    if text:
        assert "EPSG:2263" in str(info.value)  # the message shows the fix


def test_crs_label() -> None:
    assert crs_label(resolve_crs("EPSG:2263")) == "EPSG:2263"
    assert crs_label(resolve_crs(_prj("nybb"))) == "EPSG:2263"


def test_cached_transformer_one_per_pair_and_always_xy() -> None:
    t1 = cached_transformer("EPSG:4326", "EPSG:3857")
    assert t1 is cached_transformer("EPSG:4326", "EPSG:3857")
    assert t1 is not cached_transformer("EPSG:3857", "EPSG:4326")
    x, y = t1.transform(2.3522, 48.8566)  # lon, lat in: always_xy
    assert x == pytest.approx(261845.7, abs=1.0)
    assert y == pytest.approx(6250564.3, abs=1.0)


def test_reproject_vectorized_and_out_of_range_is_not_finite() -> None:
    geoms = np.array([shapely.Point(2.3522, 48.8566), shapely.Point(0.0, 95.0)])
    out = reproject(geoms, "EPSG:4326", "EPSG:3857")
    assert out[0].x == pytest.approx(261845.7, abs=1.0)
    assert not np.isfinite(shapely.get_coordinates(out[1])).all()


def test_swap_xy_keeps_z_and_none() -> None:
    geoms = np.array([shapely.Point(1, 2, 3), shapely.Point(4, 5), None], dtype=object)
    out = swap_xy(geoms)
    assert shapely.equals_exact(out[0], shapely.Point(2, 1, 3), tolerance=0)
    assert out[0].has_z and out[0].z == 3
    assert shapely.equals_exact(out[1], shapely.Point(5, 4), tolerance=0)
    assert out[2] is None


@given(
    st.lists(
        st.tuples(st.floats(-1e6, 1e6, allow_nan=False), st.floats(-1e6, 1e6, allow_nan=False)),
        min_size=1,
        max_size=20,
    )
)
def test_swapping_twice_is_identity(coords: list[tuple[float, float]]) -> None:
    geoms = shapely.points(np.array(coords))
    twice = swap_xy(swap_xy(geoms))
    assert np.array_equal(shapely.get_coordinates(twice), np.array(coords))


def test_region_bbox_and_wkt() -> None:
    assert region_geometry([0, 0, 2, 1]).equals(shapely.box(0, 0, 2, 1))
    assert region_geometry("POLYGON ((0 0, 2 0, 2 1, 0 0))").area == pytest.approx(1.0)


def test_region_antimeridian_bbox_becomes_two_parts() -> None:
    region = region_geometry([170, -10, -170, 10], resolve_crs("EPSG:4326"))
    assert region.geom_type == "MultiPolygon"
    assert region.bounds == (-180.0, -10.0, 180.0, 10.0)
    assert region.area == pytest.approx(2 * 10 * 20)
    assert region.covers(shapely.Point(179.5, 0)) and region.covers(shapely.Point(-179.5, 0))
    assert not region.covers(shapely.Point(0, 0))


@pytest.mark.parametrize("bad", [[1, 2, 3], [0, 5, 1, 1], "POLYGON ((0 0", "x", [0, 0, "a", 1]])
def test_region_rejects_bad_input(bad: object) -> None:
    with pytest.raises(ValueError):
        region_geometry(bad)


def test_region_minx_gt_maxx_rejected_in_projected_crs() -> None:
    with pytest.raises(ValueError, match="geographic"):
        region_geometry([1_000_000, 0, 900_000, 10], resolve_crs("EPSG:2263"))


def test_area_planar_in_projected_units() -> None:
    sq = shapely.box(0, 0, 1000, 2000)
    assert area_m2_or_units(sq, resolve_crs("EPSG:2263")) == pytest.approx(2_000_000.0)
    assert area_m2_or_units(sq, None) == pytest.approx(2_000_000.0)


def test_area_geodesic_for_geographic_crs_in_m2() -> None:
    # one degree cell at the equator bounded by the parallels 0 and 1 N: computed
    # independently with pyproj.Geod on the ring densified to 0.0005 degrees (so its top
    # edge follows the parallel): 12,308,463,894 m2 on WGS84
    cell = shapely.box(0, 0, 1, 1)
    geod = pyproj.Geod(ellps="WGS84")
    dense = shapely.orient_polygons(shapely.segmentize(cell, 0.0005))
    reference = abs(geod.geometry_area_perimeter(dense)[0])
    assert reference == pytest.approx(1.2308463894e10, rel=1e-9)
    assert area_m2_or_units(cell, resolve_crs("EPSG:4326")) == pytest.approx(reference, rel=1e-8)
    # orientation does not matter (clockwise ring gives the same positive area)
    cw = shapely.Polygon([(0, 0), (0, 1), (1, 1), (1, 0)])
    assert area_m2_or_units(cw, resolve_crs("EPSG:4326")) == pytest.approx(reference, rel=1e-8)
    # band 0..30 N is sin(30°)/sin(60°) of band 0..60 N on a sphere; ellipsoid is close
    ratio = area_m2_or_units(shapely.box(0, 0, 10, 30), resolve_crs("EPSG:4326")) / (
        area_m2_or_units(shapely.box(0, 0, 10, 60), resolve_crs("EPSG:4326"))
    )
    assert ratio == pytest.approx(math.sin(math.radians(30)) / math.sin(math.radians(60)), rel=0.01)
    assert area_m2_or_units(shapely.from_wkt("POLYGON EMPTY"), resolve_crs("EPSG:4326")) == 0.0


@given(
    st.lists(
        st.tuples(
            st.floats(-200, 200, allow_nan=False),
            st.floats(-100, 100, allow_nan=False),
            st.booleans(),
        ),
        max_size=30,
    )
)
def test_fraction_covered_is_a_fraction(points: list[tuple[float, float, bool]]) -> None:
    geoms = np.array([shapely.Point(x, y) for x, y, _ in points], dtype=object)
    usable = np.array([u for _, _, u in points], dtype=bool)
    frac = fraction_covered(geoms, usable, region_geometry([-50, -50, 50, 50]))
    assert 0.0 <= frac <= 1.0
    expected = sum(u and -50 <= x <= 50 and -50 <= y <= 50 for x, y, u in points)
    assert frac == pytest.approx(expected / len(points) if points else 1.0)


def test_area_geodesic_whole_world_and_antimeridian_region() -> None:
    wgs84 = resolve_crs("EPSG:4326")
    # a 360°-wide ring is ambiguous for a single geodesic polygon: strips make it exact
    world = area_m2_or_units(region_geometry([-180, -90, 180, 90], wgs84), wgs84)
    assert world == pytest.approx(5.10065622e14, rel=1e-6)
    across = area_m2_or_units(region_geometry([170, -10, -170, 10], wgs84), wgs84)
    plain = area_m2_or_units(region_geometry([0, -10, 20, 10], wgs84), wgs84)
    assert across == pytest.approx(plain, rel=1e-9)


def test_an_exact_tiling_covers_its_region_exactly_and_lines_have_no_area() -> None:
    # found by a data-path review: 1-degree densified geodesic edges gave 0.99998 for an
    # exact tiling of a lon/lat box, and lines got an area
    wgs84 = resolve_crs("EPSG:4326")
    region = shapely.box(0, 0, 1, 1)
    tiles = shapely.union_all([shapely.box(i / 3, 0, (i + 1) / 3, 1) for i in range(3)])
    assert area_m2_or_units(tiles, wgs84) == pytest.approx(
        area_m2_or_units(region, wgs84), rel=1e-12
    )
    assert area_m2_or_units(shapely.LineString([(0, 0), (10, 10)]), wgs84) == 0.0
