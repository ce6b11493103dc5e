"""Chunked evaluation (core.chunked, core.tally): in-memory batches split into chunks of a
few features are judged exactly as whole, including invalid, unparseable, missing and
empty geometries, feature ids and indices of offenders, spherical edges of an undeclared
CRS and a clause that raises."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest
import shapely

from tests.catalogue import (
    ADMIN_BOUNDARIES,
    BOWTIE,
    EMPTY_POLYGON,
    NAN_VERTEX_WKB,
    NOW,
    PARIS,
    UNPARSEABLE_WKB,
    VALID_POLYGON,
    active,
    batch_of,
    clause,
    contract_of,
    read_geoparquet,
)
from worker.core.chunks import ChunkedBatch, evaluate_chunked
from worker.core.clauses.tally import Bounds, Distinct, First, Union, merge
from worker.core.evaluate import evaluate
from worker.core.model import Batch


def split(batch: Batch, rows: int) -> ChunkedBatch:
    """``batch`` as chunks of ``rows`` features (the metadata batch holds none)."""
    n = len(batch.geometries_wkb)
    meta = dataclasses.replace(
        batch, geometries_wkb=(), attributes=batch.attributes.slice(0, 0), geometry_errors={}
    )

    def chunks():  # type: ignore[no-untyped-def]
        for start in range(0, n, rows):
            stop = min(n, start + rows)
            yield dataclasses.replace(
                batch,
                geometries_wkb=batch.geometries_wkb[start:stop],
                attributes=batch.attributes.slice(start, stop - start),
                geometry_errors={
                    i - start: e for i, e in batch.geometry_errors.items() if start <= i < stop
                },
                feature_ids=None if batch.feature_ids is None else batch.feature_ids[start:stop],
            )

    return ChunkedBatch(meta, chunks)


EVERYTHING = contract_of(
    clause("ext", "extent", region=[-5.0, -5.0, 5.0, 50.0], min_fraction_inside=0.6),
    clause("types", "geometry_type", allowed=["Polygon"], allow_empty=False),
    clause("valid", "validity"),
    clause("dom", "domain", column="code", values=["a", "b"]),
    clause("cov", "coverage", region=[-1.0, -1.0, 2.0, 2.0], min_fraction=0.5),
    clause("schema", "schema", fields=[{"name": "code", "type": "string"}]),
    clause("count", "feature_count", min=1, max=5),
    clause("bad", "geometry_type", allowed=["Triangle"]),
    clause("srid", "crs", expect="EPSG:4326"),
)


def _mixed() -> Batch:
    geoms = [VALID_POLYGON, BOWTIE, None, UNPARSEABLE_WKB, EMPTY_POLYGON, NAN_VERTEX_WKB, PARIS]
    geoms += [shapely.box(3.0, 3.0, 4.0, 4.0), shapely.box(100.0, 0.0, 101.0, 1.0)]
    codes = ["a", "z", None, "b", "a", "y", "a", "\u00e9", "a"]
    table = pa.table({"code": codes, "fid": [f"f{i}" for i in range(len(geoms))]})
    return dataclasses.replace(batch_of(geoms, attributes=table), id_column="fid")


@pytest.mark.parametrize("rows", [1, 2, 4, 100])
def test_mixed_batch_chunked_equals_whole(rows: int) -> None:
    batch = _mixed()
    versions = [active(EVERYTHING), active(EVERYTHING, mode="observing")]
    whole = evaluate(batch, versions, now=NOW)
    assert evaluate_chunked(split(batch, rows), versions, now=NOW) == whole
    results = {r.name: r for r in whole.verdicts[0].clauses}
    assert {n for n, r in results.items() if r.broke} == {
        "ext",
        "types",
        "valid",
        "dom",
        "cov",
        "schema",
        "count",
        "bad",
    }
    assert results["bad"].message.startswith("gate error (contract-gate 0.1.0): ValueError")
    assert results["bad"].gate_error is not None
    offenders = results["valid"].offenders
    assert offenders is not None
    assert [(o.index, o.id) for o in offenders.features][:2] == [(1, "f1"), (2, "f2")]
    assert results["dom"].measured["unknown"] == ["z", "y", "\u00e9"]


def test_real_countries_in_chunks_equal_whole_with_diagnosis() -> None:
    _, table, wkb = read_geoparquet(ADMIN_BOUNDARIES)
    batch = dataclasses.replace(batch_of(wkb, attributes=table), axis_order="north_east")
    c = contract_of(
        clause("ext", "extent", region=[-10.0, 35.0, 40.0, 70.0], min_fraction_inside=0.15),
        clause("dom", "domain", column="continent", values=["Europe"]),
    )
    whole = evaluate(batch, [active(c)], now=NOW)
    assert whole.diagnoses == (
        "axis order looks swapped: the coordinates fit the extent with x and y exchanged "
        "(or the region is written y first: the contract gives it as minx, miny, maxx, maxy)",
    )
    assert evaluate_chunked(split(batch, 13), [active(c)], now=NOW) == whole


def test_spherical_edges_of_an_undeclared_crs_are_judged_over_every_chunk() -> None:
    """Chunk 1 is lon/lat, chunk 2 is not: the whole batch cannot be read as spherical,
    so no chunk may be."""
    geoms = [shapely.box(0.0, 0.0, 1.0, 1.0), shapely.box(500.0, 0.0, 501.0, 1.0)]
    batch = dataclasses.replace(batch_of(geoms, crs=None), edges="spherical")
    c = contract_of(
        clause("ext", "extent", region=[-180.0, -90.0, 180.0, 90.0]),
        clause("valid", "validity"),
    )
    whole = evaluate(batch, [active(c)], now=NOW)
    assert "spherical edges need longitude/latitude" in whole.verdicts[0].clauses[0].message
    assert evaluate_chunked(split(batch, 1), [active(c)], now=NOW) == whole


def test_an_empty_batch_is_judged_as_whole() -> None:
    batch = batch_of([], attributes=pa.table({"code": pa.array([], pa.string())}))
    versions = [active(EVERYTHING)]
    assert evaluate_chunked(split(batch, 3), versions, now=NOW) == evaluate(
        batch, versions, now=NOW
    )


def test_bounds_of_rows_is_the_total_bounds_of_the_geometries() -> None:
    """Per-feature bounds reduced column by column give shapely's total bounds; rows of
    NaN (empty geometries) are left out, and all-NaN rows give a box of NaN."""
    rng = np.random.default_rng(27)
    xy = rng.uniform((-180, -90), (180, 90), size=(5000, 2))
    geoms = shapely.points(xy)
    geoms[[3, 4000]] = shapely.from_wkt("POINT EMPTY")
    geoms[17] = shapely.box(-200.5, 1.0, 0.0, 95.25)
    want = tuple(float(v) for v in shapely.total_bounds(geoms))
    assert Bounds.of_rows(shapely.bounds(geoms)).box == want == Bounds.of(geoms).box
    assert want[0] == -200.5 and want[3] == 95.25
    empty = Bounds.of_rows(shapely.bounds(shapely.from_wkt(["POINT EMPTY"] * 2))).box
    assert empty is not None and all(np.isnan(empty))
    assert Bounds.of_rows(np.empty((0, 4))).box is None


def test_tally_merges() -> None:
    assert merge({"n": 2, "all": True}, {"n": 3, "all": False}) == {"n": 5, "all": False}
    b = Bounds((0.0, 1.0, 2.0, 3.0)) | Bounds(None) | Bounds((-1.0, 2.0, 1.0, np.nan))
    assert b.box == (-1.0, 1.0, 2.0, 3.0)
    assert (First((1, 2), 3) | First((3, 4), 3)).items == (1, 2, 3)
    nan = float("nan")
    assert len((Distinct((1.0, nan), 10) | Distinct((nan, 1.0, 2.0), 10)).items) == 3
    u = Union(shapely.box(0, 0, 1, 1)) | Union(None) | Union(shapely.box(1, 0, 2, 1))
    assert u.geom is not None and u.geom.area == 2.0
