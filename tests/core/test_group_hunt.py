"""Stop 36's hunt on small events measured per group (evaluate_group, grouped.py,
tally_key, extent_group.py, shared.group_attributes): generated groups of one- to
three-feature events, whose geometries carry signed zeros, NaN and bad values and whose
attribute tables differ in type, nullability and field metadata and hold -0.0, 0.0 and NaN,
decide each event as :func:`~worker.core.evaluate.evaluate` decides it alone, to its text."""

from __future__ import annotations

import dataclasses
import struct
from datetime import timedelta

import numpy as np
import pyarrow as pa
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.catalogue import (
    BOWTIE,
    EMPTY_POLYGON,
    NAN_VERTEX_WKB,
    NOW,
    UNPARSEABLE_WKB,
    active,
    batch_of,
    clause,
    contract_of,
)
from worker.core.columns import derive_schema
from worker.core.evaluate import evaluate
from worker.core.evaluate_group import evaluate_group
from worker.core.model import Batch


def _ring(xy: list[tuple[float, float]]) -> bytes:
    return struct.pack("<BIII", 1, 3, 1, len(xy)) + np.asarray(xy, dtype="<f8").tobytes()


GEOMS = [
    _ring([(1, 1), (-0.0, 1), (0.0, -0.0), (1, 0), (1, 1)]),
    _ring([(1, 1), (0.0, 1), (-0.0, -0.0), (1, 0), (1, 1)]),
    _ring([(-0.0, -0.0), (-1, 0.0), (-1, -1), (0.0, -1), (-0.0, -0.0)]),
    shapely.to_wkb(shapely.box(0.0, 0.0, 1.0, 1.0)), shapely.to_wkb(shapely.box(3, 3, 4, 4)),
    shapely.to_wkb(shapely.box(100.0, 0.0, 101.0, 1.0)), shapely.to_wkb(shapely.Point(-0.0, 0.0)),
    shapely.to_wkb(BOWTIE), shapely.to_wkb(EMPTY_POLYGON), NAN_VERTEX_WKB, UNPARSEABLE_WKB, None,
]  # fmt: skip
CONTRACT = contract_of(
    clause("ext", "extent", region=[-5.0, -5.0, 5.0, 50.0], min_fraction_inside=0.5),
    clause("ext_wkt", "extent", region="POLYGON ((-2 -2, 4 -2, 4 4, -2 0.5, -2 -2))"),
    clause("types", "geometry_type", allowed=["Polygon"]),
    clause("valid", "validity"),
    clause("dom", "domain", column="code", values=["a", "b", 1, 2]),
    clause("fresh", "freshness", max_age="PT1H"),
    clause("schema", "schema", fields=[{"name": "code", "type": "string"}], allow_extra=True),
    clause("count", "feature_count", min=1, max=2),
)
CODES = st.sampled_from(["a", "b", "z", None])
NUMBERS = st.sampled_from([0.0, -0.0, float("nan"), 1.0, None])


@st.composite
def _event(draw: st.DrawFn, n: int) -> Batch:
    k = draw(st.integers(1, 3))
    geoms = [draw(st.sampled_from(GEOMS)) for _ in range(k)]
    as_int = draw(st.integers(0, 5)) == 0
    codes = [draw(st.sampled_from([1, 2, 7, None])) if as_int else draw(CODES) for _ in range(k)]
    code = pa.field("code", pa.int64() if as_int else pa.string(), nullable=draw(st.booleans()),
                    metadata={b"note": b"x"} if draw(st.booleans()) else None)  # fmt: skip
    schema = pa.schema([code, pa.field("v", pa.float64()), pa.field("fid", pa.string())])
    values = [draw(NUMBERS) for _ in range(k)]
    table = pa.table([codes, values, [f"e{n}.{i}" for i in range(k)]], schema=schema)
    age = timedelta(minutes=draw(st.sampled_from([10, 70])))  # either side of the limit
    b = batch_of(geoms, attributes=table, data_time=NOW - age, schema_fields=derive_schema(table))
    return dataclasses.replace(b, batch_id=f"e{n}", id_column="fid")


@st.composite
def _events(draw: st.DrawFn) -> list[Batch]:
    return [draw(_event(n)) for n in range(draw(st.integers(2, 8)))]


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(_events())
def test_a_generated_group_decides_each_event_as_alone(batches: list[Batch]) -> None:
    versions = [active(CONTRACT), active(CONTRACT, mode="observing")]
    alone = [repr(evaluate(b, versions, now=NOW)) for b in batches]
    assert [repr(d) for d in evaluate_group(batches, versions, now=NOW)] == alone
