"""A broken extent's diagnosis readings on a batch of plain 2D points are read from their
coordinate arrays (core.clauses.diagnose_points): every reading must be what the general
path (point geometries swapped, wrapped and reprojected by shapely) gives on the same
points, for lon/lat and projected contract CRSs, declared or not, in a rectangle and in a
region that is not one."""

from __future__ import annotations

import numpy as np
import pytest
import shapely
from pyproj import Transformer

from tests.catalogue import batch_of
from tests.fast_paths import general_path
from worker.core.clauses import diagnose_points
from worker.core.clauses.diagnose_readings import diagnose_tally
from worker.core.facts.batch import BatchFacts
from worker.core.spatial import resolve_crs

BOX = shapely.box(-10.0, 35.0, 30.0, 70.0)  # lon/lat, the peers benchmark's extent
NOT_A_BOX = shapely.Polygon([(-10, 35), (30, 35), (30, 70), (0, 60)])


def _points(kind: str, n: int = 400) -> np.ndarray:
    """float (n, 2) lon/lat points in and around :data:`BOX`, some read in another way:
    x and y exchanged, longitudes past 180, Web Mercator metres, far out of any CRS."""
    rng = np.random.default_rng(27)
    xy = np.column_stack((rng.uniform(-12, 32, n), rng.uniform(33, 72, n)))
    if kind == "swapped":
        xy[: n // 2] = xy[: n // 2, ::-1]
    elif kind == "wrapped":
        xy[: n // 3, 0] += 360.0
        xy[n // 3 : n // 2, 0] -= 360.0
    elif kind == "mercator":
        x, y = Transformer.from_crs(4326, 3857, always_xy=True).transform(xy[:, 0], xy[:, 1])
        xy = np.column_stack((x, y))
        xy[:5] = [1e279, 1e9]  # beyond every area of use
    return xy


def _general(batch: object, monkeypatch: pytest.MonkeyPatch, *args: object) -> object:
    """The readings by the general path: the batch's points built as geometries."""
    general_path(monkeypatch)
    facts = BatchFacts(batch)  # type: ignore[arg-type]
    assert facts.points_xy is None
    out = diagnose_tally(facts, *args)  # type: ignore[arg-type]
    monkeypatch.undo()
    return out


@pytest.mark.parametrize("kind", ["swapped", "wrapped", "mercator", "plain"])
@pytest.mark.parametrize(
    ("declared", "contract"),
    [(None, "OGC:CRS84"), ("EPSG:4326", "OGC:CRS84"), (None, None), ("EPSG:3857", "EPSG:3857")],
)
@pytest.mark.parametrize("region", [BOX, NOT_A_BOX], ids=["box", "not-a-box"])
def test_point_readings_are_those_of_the_general_path(
    kind: str,
    declared: str | None,
    contract: str | None,
    region: shapely.Geometry,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    xy = _points(kind)
    batch = batch_of(list(shapely.to_wkb(shapely.points(xy))), crs=declared)
    crs = None if contract is None else resolve_crs(contract)
    if crs is not None and crs.is_projected:
        to = Transformer.from_crs(4326, crs, always_xy=True)
        region = shapely.transform(region, lambda c: np.column_stack(to.transform(*c.T)))
    calls: list[int] = []
    real = diagnose_points.point_readings
    monkeypatch.setattr(
        "worker.core.clauses.diagnose_readings.point_readings",
        lambda facts, *a: calls.append(facts.count) or real(facts, *a),
    )
    fast = diagnose_tally(BatchFacts(batch), region, crs)
    assert calls == [len(xy)]  # the points were read as arrays
    assert fast == _general(batch, monkeypatch, region, crs)
    assert fast["count"] == len(xy) and isinstance(fast["swapped"], int)
    if region is BOX and contract == "OGC:CRS84":  # the swapped reading, counted here
        x, y = xy[:, 1], xy[:, 0]
        want = (x >= -10) & (x <= 30) & (y >= 35) & (y <= 70)
        assert fast["swapped"] == int(want.sum()) > (100 if kind == "swapped" else -1)
