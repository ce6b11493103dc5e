"""CRS resolution/equivalence, transformers, regions and areas (worker.core.spatial)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyproj
import pytest
import shapely
from hypothesis import given
from hypothesis import strategies as st
from pyproj import CRS

from worker.core.errors import ContractError, CrsError
from worker.core.spatial.crs import (
    area_of_use,
    cached_transformer,
    crs_equivalent,
    crs_label,
    outside_area_of_use,
    resolve_crs,
)
from worker.core.spatial.regions import area_m2_or_units, fraction_covered, region_geometry
from worker.core.spatial.reproject import (
    densify_for_transform,
    reproject,
    reproject_to_lonlat,
    swap_xy,
)
from worker.core.spatial.spherical import densify_spherical

#: ESRI .prj files of the shipped data's sources, kept in the repository (tests/data/prj).
PRJ = Path(__file__).resolve().parents[1] / "data" / "prj"


def _prj(kind: str) -> str:
    name = "nybb.prj" if kind == "nybb" else "naturalearth_lowres.prj"
    return (PRJ / name).read_text()


@pytest.mark.parametrize(
    ("a", "b", "equivalent"),
    [
        ("OGC:CRS84", "EPSG:4326", True),
        ("ESRI:102100", "EPSG:3857", True),
        ("EPSG:2263", "EPSG:4326", False),
        ("EPSG:4269", "EPSG:4326", False),
        ("EPSG:3857", "EPSG:4326", False),
        ("EPSG:2263", "EPSG:2263", True),
        ("EPSG:3857", "OGC:CRS84", False),  # projected / geographic: no EPSG query
        ("EPSG:4978", "EPSG:4326", False),  # geocentric / geographic
        ("EPSG:7405", "EPSG:27700", False),  # compound (projected + height) / projected
    ],
)
def test_crs_equivalence_pairs(a: str, b: str, equivalent: bool) -> None:
    assert crs_equivalent(a, b) is equivalent
    assert crs_equivalent(b, a) is equivalent


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
    # a ContractError (stop 39): the contract cannot be applied, a clause break not a gate error
    with pytest.raises(ContractError, match="geographic"):
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


# -- area of use, densified edges, poles, spherical edges (issue 9 sections 4, 5) ---------

WEB_MERCATOR_Y_LIMIT = 20048966.1  # y of latitude 85.06, EPSG:3857's area of use


def _circle_ring(lat: float, n: int = 720) -> np.ndarray:
    lon = np.linspace(-180.0, 180.0, n, endpoint=False)
    return np.column_stack([lon, np.full(n, lat)])


def _projected_polygon(
    dst: str, shell_lat: float, hole_lat: float | None = None
) -> shapely.Polygon:
    """A polygon around a pole, built from parallels (lon/lat) transformed into ``dst``."""
    t = pyproj.Transformer.from_crs("OGC:CRS84", dst, always_xy=True)

    def ring(lat: float) -> np.ndarray:
        c = _circle_ring(lat)
        return np.column_stack(t.transform(c[:, 0], c[:, 1]))

    return shapely.Polygon(ring(shell_lat), [] if hole_lat is None else [ring(hole_lat)])


def test_area_of_use_of_web_mercator_and_of_a_geographic_crs() -> None:
    aou = area_of_use(resolve_crs("EPSG:3857"))
    assert aou is not None and not aou.geographic and aou.full_longitude
    assert aou.lonlat == pytest.approx((-180.0, -85.07, 180.0, 85.07))
    x0, y0, x1, y1 = aou.bounds
    # EPSG bounds 85.06 plus the 0.01 degree margin; x allows one wrap each side
    assert WEB_MERCATOR_Y_LIMIT < y1 < 20_070_000 and y0 == pytest.approx(-y1)
    assert x1 == pytest.approx(3 * 20037508.34, rel=1e-9) and x0 == pytest.approx(-x1)
    world = area_of_use(resolve_crs("OGC:CRS84"))
    assert world is not None and world.bounds == (-180.0, -90.0, 180.0, 90.0)
    assert area_of_use(resolve_crs("EPSG:3857")) is aou  # cached per CRS


def test_outside_area_of_use_is_tested_before_reprojection_wraps_values() -> None:
    merc = resolve_crs("EPSG:3857")
    pts = np.array(
        [
            shapely.Point(261845.7, 6250564.3),  # Paris
            shapely.Point(0, 30240971.96),  # latitude 89: a Mercator position, beyond 85.06
            shapely.Point(0, 1e9),  # inverse Mercator says latitude 90
            shapely.Point(1e279, 0),  # inverse Mercator says longitude -180
            shapely.Point(20_200_000, 0),  # 181.5 E written continuously: allowed
            shapely.Point(np.nan, 0),  # non-finite: validity's business, not this test
            None,
        ],
        dtype=object,
    )
    got = outside_area_of_use(pts, merc).tolist()
    assert got == [False, True, True, True, False, False, False]
    # a UTM zone's area of use is 6 degrees wide: 25 E is not in zone 33N (12..18 E)
    utm = resolve_crs("EPSG:32633")
    to_utm = pyproj.Transformer.from_crs("OGC:CRS84", utm, always_xy=True)
    inside, beyond = (
        shapely.Point(to_utm.transform(15, 60)),
        shapely.Point(to_utm.transform(25, 60)),
    )
    assert outside_area_of_use(np.array([inside, beyond]), utm).tolist() == [False, True]
    lonlat = np.array([shapely.Point(180, 90), shapely.Point(180.5, 0), shapely.Point(0, -91)])
    assert outside_area_of_use(lonlat, resolve_crs("EPSG:4326")).tolist() == [False, True, True]
    assert not outside_area_of_use(pts, None).any()


def test_reprojection_densifies_so_a_long_edge_keeps_its_bulge() -> None:
    ups = resolve_crs("EPSG:32661")
    to_ups = pyproj.Transformer.from_crs("OGC:CRS84", ups, always_xy=True)
    a, b = to_ups.transform(-60, 60), to_ups.transform(60, 60)
    edge = shapely.LineString([a, b])  # straight in UPS North: passes nearer the pole
    mid = to_ups.transform(*edge.interpolate(0.5, normalized=True).coords[0], direction="INVERSE")
    assert mid[1] > 64  # the true image of the edge's middle
    dense = reproject(np.array([edge]), ups, "OGC:CRS84")[0]
    sparse = reproject(np.array([edge]), ups, "OGC:CRS84", densify=False)[0]
    assert sparse.bounds[3] == pytest.approx(60.0)  # vertex by vertex: the bulge is lost
    assert dense.bounds[3] == pytest.approx(mid[1], abs=1e-9)
    assert len(densify_for_transform(np.array([edge]))[0].coords) == 65
    point = shapely.Point(1, 2)
    assert densify_for_transform(np.array([point, None], dtype=object))[0] is point


@pytest.mark.parametrize(
    ("crs", "cap_lat", "pole_lat"), [("EPSG:32661", 87.5, 90.0), ("EPSG:3031", -80.0, -90.0)]
)
def test_a_polygon_around_a_pole_reaches_it_in_lon_lat(
    crs: str, cap_lat: float, pole_lat: float
) -> None:
    cap = _projected_polygon(crs, cap_lat)
    (out,) = reproject_to_lonlat(np.array([cap]), resolve_crs(crs), resolve_crs("OGC:CRS84"))
    x0, y0, x1, y1 = out.bounds
    assert (x0, x1) == pytest.approx((-180.0, 180.0))
    assert (max(y0, y1) if pole_lat > 0 else min(y0, y1)) == pole_lat
    wgs84 = resolve_crs("OGC:CRS84")
    lo, hi = sorted((cap_lat, pole_lat))
    expected = area_m2_or_units(shapely.box(-180, lo, 180, hi), wgs84)  # exact for boxes
    assert area_m2_or_units(out, wgs84) == pytest.approx(expected, rel=1e-4)


def test_a_ring_around_the_pole_with_a_polar_hole_is_a_band() -> None:
    annulus = _projected_polygon("EPSG:32661", 70.0, hole_lat=80.0)
    ups, wgs84 = resolve_crs("EPSG:32661"), resolve_crs("OGC:CRS84")
    (out,) = reproject_to_lonlat(np.array([annulus]), ups, wgs84)
    assert out.bounds[1] == pytest.approx(70.0, abs=0.01)
    assert out.bounds[3] == pytest.approx(80.0, abs=0.01)
    expected = area_m2_or_units(shapely.box(-180, 70, 180, 80), wgs84)
    assert area_m2_or_units(out, wgs84) == pytest.approx(expected, rel=1e-4)


def test_a_polygon_crossing_the_antimeridian_and_the_crs_limit() -> None:
    merc, wgs84 = resolve_crs("EPSG:3857"), resolve_crs("OGC:CRS84")
    to_merc = pyproj.Transformer.from_crs(wgs84, merc, always_xy=True)
    (x0, y0), (x1, y1) = to_merc.transform(178, 10), to_merc.transform(-178, 20)
    x1 += 2 * 20037508.342789244  # 182 E, written continuously beyond the antimeridian
    (_, y_polar) = to_merc.transform(0, 86)
    pacific = shapely.box(x0, y0, x1, y1)  # x beyond 20037508: one continuous polygon
    polar = shapely.box(x0, y0, x1, y_polar)  # also beyond latitude 85.06
    assert outside_area_of_use(np.array([pacific, polar]), merc).tolist() == [False, True]
    out = reproject_to_lonlat(np.array([pacific, polar]), merc, wgs84)
    assert out[0].geom_type == "MultiPolygon"  # split at the antimeridian (RFC 7946 3.1.9)
    assert out[0].bounds == pytest.approx((-180.0, 10.0, 180.0, 20.0))
    assert shapely.area(out[0]) == pytest.approx(4 * 10, rel=1e-6)  # square degrees


def test_spherical_edges_follow_great_circles() -> None:
    band = shapely.Polygon([(-60, 55), (60, 55), (60, 60), (-60, 60), (-60, 55)])
    (out,) = densify_spherical(np.array([band]))
    # the great circle through two points at latitude 60, 120 degrees apart, peaks at
    # atan(tan(60) / cos(60)) = 73.898 degrees; the southern edge peaks at 70.71
    peak = math.degrees(math.atan(math.tan(math.radians(60)) / math.cos(math.radians(60))))
    assert out.bounds[3] == pytest.approx(peak, abs=1e-3)
    assert out.bounds[1] == pytest.approx(55.0)  # the corners stay where they are
    assert out.is_valid and shapely.get_num_coordinates(out) > 100
    # an arc across the antimeridian is 20 degrees long, split there, not 340 degrees
    (line,) = densify_spherical(np.array([shapely.LineString([(170, 0, 5), (-170, 0, 25)])]))
    assert line.geom_type == "MultiLineString" and line.length == pytest.approx(20.0)
    assert line.has_z and set(np.round(shapely.get_coordinates(line, include_z=True)[:, 2])) > {
        5.0,
        25.0,
    }
    # short edges and points pass unchanged
    small = shapely.box(0, 0, 0.01, 0.01)
    assert densify_spherical(np.array([small, shapely.Point(1, 1), None], dtype=object))[0].equals(
        small
    )


@pytest.mark.parametrize(
    "wkt",
    [
        "MULTILINESTRING ((0 30, 40 30), EMPTY)",
        "MULTIPOLYGON (((0 0, 40 0, 40 30, 0 30, 0 0)), EMPTY)",
        "GEOMETRYCOLLECTION (MULTILINESTRING ((0 30, 40 30), EMPTY), POINT EMPTY)",
    ],
)
def test_collections_with_an_empty_part_are_densified_keeping_the_part(wkt: str) -> None:
    """A fresh-user session: ``MULTILINESTRING ((1 1, 2 2), EMPTY)`` under spherical edges
    made the rebuild raise (shapely's MultiLineString class refuses an empty part), an
    evaluation error in every geometry clause; the MultiPolygon class dropped one."""
    g = shapely.from_wkt(wkt)
    (out,) = densify_spherical(np.array([g]))
    assert out.geom_type == g.geom_type and out.is_valid
    assert shapely.get_num_geometries(out) == shapely.get_num_geometries(g)
    assert shapely.get_num_coordinates(out) > shapely.get_num_coordinates(g)  # densified
    assert out.bounds[3] > g.bounds[3]  # the 40-degree edge bulges poleward on the sphere
    assert "EMPTY" in out.wkt


def test_a_geometry_geos_cannot_densify_is_left_as_it_is_and_the_others_densified() -> None:
    """A fresh-user session: a LineString at x = 1e279 made ``shapely.segmentize`` raise
    for the whole array (its squared length overflows), and the broken extent clause's
    diagnosis lost every figure to "evaluation error: GEOSException"."""
    huge = shapely.LineString([(1e279, 0), (1.1e279, 1)])
    line = shapely.LineString([(0, 0), (64, 0)])
    out = densify_for_transform(np.array([line, huge], dtype=object))
    assert shapely.get_num_coordinates(out[0]) == 65  # 64 pieces
    assert out[1] is huge


def test_a_geometry_geos_cannot_cut_does_not_stop_the_others() -> None:
    # found reprojecting the shipped Natural Earth countries to EPSG:3857 and back: one
    # geometry made GEOS raise "side location conflict" for the whole array
    import pyarrow.parquet as pq

    table = pq.read_table(
        Path(__file__).resolve().parents[2] / "worker/data/admin_boundaries.parquet"
    )
    names = table.column("name").to_pylist()
    geoms = shapely.from_wkb(np.asarray(table.column("geometry").to_pylist(), dtype=object))
    merc, wgs84 = resolve_crs("EPSG:3857"), resolve_crs("OGC:CRS84")
    back = reproject_to_lonlat(reproject(geoms, wgs84, merc), merc, wgs84)
    fiji = back[names.index("Fiji")]
    assert fiji.geom_type == "MultiPolygon"
    assert fiji.bounds[0] == pytest.approx(-180.0) and fiji.bounds[2] == pytest.approx(180.0)
    # the east-west extent of Fiji's parts is a few degrees, not 360
    assert sum(p.bounds[2] - p.bounds[0] for p in fiji.geoms) < 10


def test_a_proj_string_crs_is_labelled_by_its_text_not_unknown() -> None:
    # found by a new-user session: "declared CRS unknown is equivalent to EPSG:4326"
    from worker.core.spatial.crs import crs_label, resolve_crs

    assert crs_label(resolve_crs("+proj=longlat +datum=WGS84")).startswith(
        "+proj=longlat +datum=WGS84"
    )
    assert crs_label(resolve_crs("EPSG:2263")) == "EPSG:2263"
    long = crs_label(resolve_crs("+proj=tmerc +lat_0=0 +lon_0=9 +k=0.9996 +x_0=500000 "
                                 "+y_0=0 +ellps=GRS80 +units=m"))  # fmt: skip
    assert len(long) == 80 and long.endswith("…")


EMPTY_PART_WKT = (
    "GEOMETRYCOLLECTION (POINT EMPTY, POINT (1 1))",
    "MULTIPOLYGON (EMPTY, ((0 0, 1 0, 1 1, 0 1, 0 0)))",
    "MULTILINESTRING (EMPTY, (0 0, 10 10))",
    "MULTIPOINT (EMPTY, (1 1))",
    "GEOMETRYCOLLECTION (MULTIPOINT (EMPTY, (1 1)), POINT (2 2))",
)


def test_geometries_with_an_empty_part_are_reprojected_undensified_not_crashed() -> None:
    # a new-user finding: shapely.segmentize (GEOS 3.14) ends the process with SIGSEGV on
    # a multi-part geometry or collection with an empty part; one such feature killed the
    # worker whenever its batch was reprojected (a broken extent's diagnosis, an extent
    # with its own crs)
    geoms = np.array(
        [shapely.from_wkt(w) for w in EMPTY_PART_WKT]
        + [shapely.from_wkt("MULTIPOLYGON (((0 0, 10 0, 10 10, 0 10, 0 0)))")],
        dtype=object,
    )
    dense = densify_for_transform(geoms)
    counts = shapely.get_num_coordinates(dense).tolist()
    assert counts == [1, 5, 2, 1, 2, 257]  # only the last one is densified
    moved = reproject(geoms, "EPSG:4326", "EPSG:3857")
    assert shapely.get_num_coordinates(moved).tolist() == counts
    assert shapely.get_coordinates(moved[3]).round(3).tolist() == [[111319.491, 111325.143]]
