"""Benchmarks without a broker: ``evaluate`` against the GEOS floor, the cost of more
active versions, and the vectorized evaluation against a per-feature Python loop."""

from __future__ import annotations

import numpy as np
import shapely

from benchmarks.common import (
    NOW,
    Row,
    countries,
    interleaved_median_s,
    take,
    with_geometries,
    world,
)
from worker.cli.scenario import data_file
from worker.core.contracts.parse import parse_contract
from worker.core.evaluate import evaluate
from worker.core.model import ActiveVersion, Batch, Contract

V1 = data_file("contracts/admin_boundaries.v1.yaml").read_text("utf-8")
V1_1 = data_file("contracts/admin_boundaries.v1.1.yaml").read_text("utf-8")


def _contract(text: str, version: str | None = None, **edits: str) -> Contract:
    """A contract parsed from its own text (as the registry would: no object shared with
    another version); ``edits`` replace exact substrings of the YAML."""
    for old, new in edits.items():
        text = text.replace(old, new)
    if version is not None:
        text = text.replace("version: v1\n", f"version: {version}\n", 1)
        text = text.replace("version: v1.1\n", f"version: {version}\n", 1)
    return parse_contract(text)


def geos_floor(batch: Batch) -> None:
    """The least spatial work any gate does: parse every WKB, validity, bounds."""
    geoms = shapely.from_wkb(np.array(batch.geometries_wkb, dtype=object))
    shapely.is_valid(geoms)
    shapely.bounds(geoms)


def evaluate_vs_floor(quick: bool) -> list[Row]:
    """One 10,000-polygon batch (the countries repeated: about 602k vertices) evaluated
    with v1, against the GEOS floor; then 2 and 4 active versions against 1."""
    n = 500 if quick else 10_000
    repeat = 1 if quick else 7
    batch = countries(world(), n, batch_id="big")
    v1 = [ActiveVersion(_contract(V1), "enforcing")]
    two = [*v1, ActiveVersion(_contract(V1_1), "observing")]
    four = [
        *two,
        ActiveVersion(_contract(V1, "v1.2"), "observing"),
        ActiveVersion(_contract(V1_1, "v1.3"), "observing"),
    ]
    floor_s, one_s, two_s, four_s = interleaved_median_s(
        [
            lambda: geos_floor(batch),
            lambda: evaluate(batch, v1, now=NOW),
            lambda: evaluate(batch, two, now=NOW),
            lambda: evaluate(batch, four, now=NOW),
        ],
        repeat,
    )
    return [
        Row(f"evaluate v1, {n} polygons (features/s)", n / one_s, n / floor_s, "features/s", 0.8),
        Row("cost of 2 active versions / 1 (v1 + v1.1)", two_s * 1000, one_s * 1000, "ms", 1.15,
            higher_is_better=False),
        Row("cost of 4 active versions / 1", four_s * 1000, one_s * 1000, "ms", 1.4,
            higher_is_better=False),
    ]  # fmt: skip


def python_loop(batch: Batch, contract: Contract) -> bool:
    """What a hand-written gate does feature by feature with shapely objects: parse,
    validity, bounds inside the extent, type, the domain value and the schema types."""
    allowed = {
        c.params["allowed"][i]
        for c in contract.clauses
        if c.kind == "geometry_type"
        for i in range(len(c.params["allowed"]))
    }
    domain = next(c for c in contract.clauses if c.kind == "domain")
    codes = set(domain.params["values"])
    column = batch.attributes.column(domain.params["column"]).to_pylist()
    pops = batch.attributes.column("pop_est").to_pylist()
    names = batch.attributes.column("name").to_pylist()
    ok = True
    for i, wkb in enumerate(batch.geometries_wkb):
        g = shapely.from_wkb(wkb)
        x0, y0, x1, y1 = g.bounds
        ok &= g.is_valid and g.geom_type in allowed
        ok &= x0 >= -180 and x1 <= 180 and y0 >= -90 and y1 <= 90
        ok &= column[i] in codes and isinstance(pops[i], int) and isinstance(names[i], str)
    return ok


def vs_python_loop(quick: bool) -> list[Row]:
    """Vectorized evaluation against :func:`python_loop` on 20-vertex polygons and on
    points (each country's point on surface, and its 0.5 degree buffer with 5 segments a
    quarter: 20 vertices and the closing one), 100,000 features."""
    n = 2_000 if quick else 100_000
    repeat = 1 if quick else 3
    base = countries(world(), n, batch_id="small")
    points = shapely.point_on_surface(shapely.from_wkb(np.array(base.geometries_wkb, object)))
    rings = shapely.buffer(points, 0.5, quad_segs=5)
    rows = []
    for what, geoms, allowed, target in (
        ("20-vertex polygons", rings, "[Polygon, MultiPolygon]", 3.0),
        ("points", points, "[Point]", 10.0),
    ):
        batch = with_geometries(base, geoms)
        contract = _contract(
            V1, **{"[Polygon, MultiPolygon]": allowed, "max: 1000": "max: 1000000"}
        )
        gate_s, loop_s = interleaved_median_s(
            [
                lambda b=batch, c=contract: evaluate(b, [ActiveVersion(c, "enforcing")], now=NOW),
                lambda b=batch, c=contract: python_loop(b, c),
            ],
            repeat,
        )
        rows.append(Row(f"evaluate vs per-feature Python loop, {n} {what}", n / gate_s,
                        n / loop_s, "features/s", target))  # fmt: skip
    return rows


__all__ = ["evaluate_vs_floor", "geos_floor", "python_loop", "take", "vs_python_loop"]
