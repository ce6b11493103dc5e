"""What a broken extent's diagnosis measures (core.clauses.extent, diagnose_readings):
the candidate CRSs' readings only when a diagnosis may name a candidate (most features
outside), and a candidate's fit densified only for the features whose vertices fit; the
decisions equal those of measuring every reading of every feature, densified."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import shapely
from pyproj import Transformer

from tests.catalogue import NAN_VERTEX_WKB, NOW, active, batch_of, clause, contract_of
from tests.core.test_chunked import split
from worker.core.chunks import evaluate_chunked
from worker.core.clauses import diagnose_readings, extent
from worker.core.evaluate import evaluate
from worker.core.facts.batch import BatchFacts, nonfinite_mask
from worker.core.spatial import (
    covered_mask,
    outside_area_of_use,
    reproject,
    resolve_crs,
    swap_xy,
)

FRANCE = [-5.0, 42.0, 8.0, 51.0]  # lon/lat box
EMPTY = shapely.from_wkt("POLYGON EMPTY")


def _boxes(n: int, x0: float, y0: float, x1: float, y1: float) -> list[shapely.Geometry]:
    """``n`` small lon/lat boxes spread inside (x0, y0, x1, y1), seeded."""
    rng = np.random.default_rng(38)
    x = rng.uniform(x0, x1 - 0.01, n)
    y = rng.uniform(y0, y1 - 0.01, n)
    return list(shapely.box(x, y, x + 0.01, y + 0.01))


def _metres(geoms: list[shapely.Geometry]) -> list[shapely.Geometry]:
    """``geoms`` (lon/lat) in Web Mercator metres."""
    to_3857 = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    return [shapely.transform(g, lambda c: np.column_stack(to_3857.transform(*c.T))) for g in geoms]


def _recorded(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The diagnosis tallies :func:`extent.sampled_tally` gives from now on."""
    out: list[dict[str, Any]] = []
    real = extent.sampled_tally

    def recording(*args: Any, **kwargs: Any) -> Any:
        out.append(tally := real(*args, **kwargs))
        return tally

    monkeypatch.setattr(extent, "sampled_tally", recording)
    return out


@pytest.mark.parametrize(
    ("geoms", "diagnosed"),
    [
        # 38 of 40 inside: the two outside are single offenders, no candidate is named
        (_boxes(38, *FRANCE) + _boxes(2, 20.0, 60.0, 21.0, 61.0), False),
        # Web Mercator metres declared as degrees: none inside, EPSG:3857 named
        (_metres(_boxes(40, *FRANCE)), True),
    ],
    ids=["most-inside", "metres"],
)
def test_candidate_readings_are_measured_only_when_a_diagnosis_may_name_one(
    geoms: list[shapely.Geometry], diagnosed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = batch_of(geoms, crs="EPSG:4326")
    c = contract_of(clause("ext", "extent", region=FRANCE))
    tallies = _recorded(monkeypatch)
    whole = evaluate(batch, [active(c)], now=NOW)
    assert whole.decision == "quarantined"
    assert bool(whole.diagnoses) is diagnosed
    assert whole.diagnoses[:1] == (
        ("coordinates look like EPSG:3857: they fit the extent after reprojecting from "
         "EPSG:3857 to EPSG:4326",) if diagnosed else ()
    )  # fmt: skip
    assert ("in_aou_0" in tallies[-1]) is diagnosed and ("fit_0" in tallies[-1]) is diagnosed
    assert evaluate_chunked(split(batch, 7), [active(c)], now=NOW) == whole
    # every reading measured (as before): the same decision, diagnoses included
    monkeypatch.setattr(extent, "names_candidates", lambda inside_frac: True)
    every = evaluate(batch, [active(c)], now=NOW)
    assert "fit_0" in tallies[-1] and tallies[-1]["fit_0"] == (40 if diagnosed else 0)
    assert every == whole
    assert evaluate_chunked(split(batch, 7), [active(c)], now=NOW) == whole


def _fit_densified(facts: BatchFacts, cand: Any, crs: Any, region: shapely.Geometry) -> int:
    """The fit reading as it was measured: every usable feature densified, reprojected
    and tested."""
    moved = np.asarray(reproject(facts.geometries, cand, crs), dtype=object)
    ok = facts.usable & ~nonfinite_mask(moved)
    return int(np.count_nonzero(covered_mask(moved, ok, region)))


def _bulging() -> tuple[list[Any], shapely.Geometry]:
    """Lon/lat polygons and a box in EPSG:3035 (Europe, Lambert equal area) whose south
    edge lies between the image of the first polygon's vertices and that of its long
    southern edge (a parallel, which bulges south in EPSG:3035, away from the pole):
    covered vertex by vertex, not densified. With boxes inside and outside, a NaN vertex,
    a missing and an empty geometry."""
    long_edge = shapely.box(-20.0, 55.0, 40.0, 60.0)
    to_3035 = Transformer.from_crs("EPSG:4326", "EPSG:3035", always_xy=True)
    vx, vy = to_3035.transform(*np.asarray(long_edge.exterior.coords).T)
    _, y = to_3035.transform(np.linspace(-20.0, 40.0, 601), np.full(601, 55.0))
    low_vertices, low_edge = float(np.min(vy)), float(np.min(y))
    assert low_edge < low_vertices - 1000.0  # the bulge: more than a kilometre
    region = shapely.box(
        float(np.min(vx)) - 1e5, (low_vertices + low_edge) / 2, float(np.max(vx)) + 1e5,
        float(np.max(vy)) + 1e5,
    )  # fmt: skip
    geoms = [
        long_edge,
        *_boxes(6, 0.0, 59.0, 10.0, 60.0),  # inside
        *_boxes(3, 100.0, 10.0, 110.0, 20.0),  # outside
        NAN_VERTEX_WKB,
        None,
        EMPTY,
        shapely.box(0.0, 56.0, 1.0, 89.9),  # reaches beyond the box
    ]
    return geoms, region


@pytest.mark.parametrize("shape", ["box", "not-a-box"])
def test_a_candidate_fit_densifies_only_the_features_whose_vertices_fit(shape: str) -> None:
    geoms, region = _bulging()
    if shape == "not-a-box":  # a region decided by GEOS, not by envelopes
        region = shapely.Polygon([*region.exterior.coords[:-2], region.centroid])
    facts = BatchFacts(batch_of(geoms, crs="EPSG:3035"))
    crs = resolve_crs("EPSG:3035")
    tally = diagnose_readings.sampled_tally(facts, region, crs, len(geoms))
    # the candidates of EPSG:3035: EPSG:3857, EPSG:4326 and its base, ETRS89
    names = ["EPSG:3857", "EPSG:4326", crs.geodetic_crs]
    assert [k for k in tally if k.startswith("fit_")] == ["fit_0", "fit_1", "fit_2"]
    for k, cand in enumerate(names):
        assert tally[f"fit_{k}"] == 1 + _fit_densified(facts, cand, crs, region)  # 1 empty
    bare = np.asarray(reproject(facts.geometries, "EPSG:4326", crs, densify=False), dtype=object)
    by_vertices = covered_mask(bare, facts.usable & ~nonfinite_mask(bare), region)
    if shape == "box":
        # the long edge's vertices fit and its densified image does not: without the
        # densified test the reading would count it; the six boxes at 59-60N fit
        assert by_vertices[0] and tally["fit_1"] - 1 == int(np.count_nonzero(by_vertices)) - 1
        assert tally["fit_1"] == 1 + 6


def _swapped_reference(facts: BatchFacts, region: shapely.Geometry) -> int:
    """The swapped reading as it was measured, as stored: every geometry's x and y
    exchanged, twice (for the cover test and for the declared CRS's area of use)."""
    swapped = np.asarray(swap_xy(facts.geometries), dtype=object)
    usable = facts.usable & ~nonfinite_mask(swapped)
    if facts.declared_crs is not None:
        usable &= ~outside_area_of_use(np.asarray(swap_xy(facts.geometries)), facts.declared_crs)
    return int(np.count_nonzero(covered_mask(swapped, usable, region)))


@pytest.mark.parametrize("declared", ["EPSG:4326", None, "EPSG:3857"])
@pytest.mark.parametrize("shape", ["box", "not-a-box"])
def test_the_swapped_reading_from_envelopes_equals_swapping_every_geometry(
    declared: str | None, shape: str
) -> None:
    """Latitude-first boxes, boxes whose exchanged y reaches just within (5e-10) and just
    beyond (1e-8) latitude 90 (the area of use's tolerance is 1e-9), a NaN vertex, a
    missing and an empty geometry, against a rectangle and a region that is not one."""
    lat_first = [shapely.transform(g, lambda c: c[:, ::-1]) for g in _boxes(8, *FRANCE)]
    edge = [shapely.box(80.0, 40.0, 90.0 + d, 41.0) for d in (5e-10, 1e-8, -1.0)]
    geoms = [*lat_first, *edge, *_boxes(4, *FRANCE), NAN_VERTEX_WKB, None, EMPTY]
    region = shapely.box(-10.0, 30.0, 60.0, 91.0)
    if shape == "not-a-box":
        region = shapely.Polygon([(-10.0, 30.0), (60.0, 30.0), (60.0, 91.0), (-10.0, 60.0)])
    facts = BatchFacts(batch_of(geoms, crs=declared))
    tally = diagnose_readings.sampled_tally(facts, region, None, len(geoms))
    assert tally["swapped"] == 1 + _swapped_reference(facts, region)  # 1 empty
    if shape == "box" and declared != "EPSG:3857":
        # the 8 latitude-first boxes and the 3 edge boxes fit exchanged, but 90 + 1e-8 is
        # beyond EPSG:4326's latitudes
        assert tally["swapped"] == 1 + 8 + 3 - (declared == "EPSG:4326")
