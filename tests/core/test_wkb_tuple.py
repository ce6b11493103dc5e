"""A GeoParquet chunk's WKB values (WkbTuple) are bytes objects built only when read: a
chunk of star-shaped polygons is judged from its Arrow buffers without building them, and
decides as the plain tuple of its values does (issue 27, stop 43)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.catalogue import batch_of
from tests.core.test_polygons_path import _batch_values, _ring_wkb, _star
from tests.fast_paths import general_facts
from worker.core.chunks import ChunkedBatch, evaluate_chunked
from worker.core.clauses.sample import take_features
from worker.core.contracts.parse import parse_contract
from worker.core.evaluate import evaluate
from worker.core.facts import polygons_mixed as polygons_module
from worker.core.facts.batch import BatchFacts
from worker.core.facts.wkb_arrow import WkbTuple, wkb_bytes
from worker.core.model import ActiveVersion, Batch
from worker.io.payloads import read_batch_file, read_batch_file_chunked

NOW = datetime(2026, 12, 4, 23, 0, tzinfo=timezone.utc)
CONTRACT = """layer: parcels
version: v1
cadence: PT6H
objective: 0.99
owner: tests
changelog: the peers benchmark's checks
clauses:
  - {name: extent, kind: extent, region: [-180.0, -90.0, 180.0, 90.0], min_fraction_inside: 0.9}
  - {name: geometry_types, kind: geometry_type, allowed: [Polygon]}
  - {name: valid, kind: validity, max_invalid_fraction: 0.0}
  - {name: size, kind: feature_count, min: 1, max: 100000}
"""


def test_a_wkb_tuple_builds_its_bytes_only_when_read() -> None:
    values = [b"ab", None, b"cde", b"", b"f"]
    array = pa.array(values, pa.binary()).slice(1)  # sliced: offsets do not start at 0
    wkb = WkbTuple(array)
    assert len(wkb) == 4 and bool(wkb)
    assert (wkb[0], wkb[1], wkb[-1], wkb[np.int64(2)]) == (None, b"cde", b"f", b"")
    assert wkb.take([3, 0, 1]) == (b"f", None, b"cde")
    with pytest.raises(IndexError):
        wkb[4]
    with pytest.raises(IndexError):
        wkb[-5]
    assert not wkb.built  # read one value at a time: nothing else built
    assert wkb == tuple(values[1:]) and wkb == WkbTuple(array) and wkb != (None,)
    assert wkb.built
    assert wkb[1:3] == (b"cde", b"")
    assert wkb + (b"x",) == (None, b"cde", b"", b"f", b"x")  # noqa: RUF005 (the operator)
    assert wkb * 1 == tuple(values[1:])
    assert hash(wkb) == hash(tuple(values[1:]))


def _polygons_file(path: Path) -> Path:
    rng = np.random.default_rng(43)
    # star rings among odd values (GEOS judges those); no null (an Arrow array with nulls
    # is read as the tuple of its values: wkb_rings.wkb_buffers)
    values = [v for v in _batch_values(7, 600) if v is not None]
    values += [_ring_wkb(_star(rng, 30, (12.0, 50.0), 0.01)) for _ in range(300)]
    values.insert(5, _ring_wkb(_star(rng, 30, (190.0, 50.0), 0.01)))  # outside the extent
    geo = {"version": "1.0.0", "primary_column": "geometry",
           "columns": {"geometry": {"encoding": "WKB", "geometry_types": []}}}  # fmt: skip
    table = pa.table({"geometry": pa.array(values, pa.binary())})
    pq.write_table(table.replace_schema_metadata({"geo": json.dumps(geo)}), path)
    return path


def test_a_chunk_of_star_polygons_is_judged_without_building_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(polygons_module, "POLYGONS_WITHOUT_GEOMETRIES_MIN", 64)
    path = _polygons_file(tmp_path / "polygons.parquet")
    loaded = read_batch_file_chunked(path, layer="parcels", chunk_rows=256, data_time=NOW)
    assert isinstance(loaded, ChunkedBatch)
    seen: list[Batch] = []

    def chunks() -> list[Batch]:
        seen[:] = list(loaded.chunks())
        return seen

    versions = [ActiveVersion(parse_contract(CONTRACT), "enforcing")]
    chunked = evaluate_chunked(replace(loaded, chunks=chunks), versions, now=NOW)
    assert len(seen) == 4 and all(isinstance(c.geometries_wkb, WkbTuple) for c in seen)
    assert not any(c.geometries_wkb.built for c in seen)  # type: ignore[attr-defined]
    # the same decision as the plain tuple of the batch's values, read whole
    whole = read_batch_file(path, layer="parcels", data_time=NOW)
    plain = replace(whole, geometries_wkb=tuple(whole.geometries_wkb))
    assert chunked == evaluate(plain, versions, now=NOW)
    results = {c.name: c.result for c in chunked.verdicts[0].clauses}
    # the extent passes: a broken one's diagnosis reads the batch's sample (here every
    # row) in a second pass, which builds the values it reads
    assert (results["extent"], results["valid"], results["geometry_types"]) == (
        "pass",
        "break",
        "break",
    )


def test_the_rows_taken_of_a_wkb_tuple_are_its_values_at_those_rows() -> None:
    values = _batch_values(3, 40)
    whole = _batch(values)
    rows = np.array([0, 3, 4, len(values) - 1])
    taken = take_features(whole, rows)
    assert type(taken.geometries_wkb) is tuple
    assert taken.geometries_wkb == tuple(values[i] for i in rows.tolist())
    assert not whole.geometries_wkb.built  # type: ignore[attr-defined]


def test_the_bytes_of_a_wkb_tuple_are_counted_without_building_it() -> None:
    values = _batch_values(5, 20)
    wkb = WkbTuple(pa.array(values, pa.binary()))
    assert wkb_bytes(wkb) == wkb_bytes(tuple(values)) == sum(len(v) for v in values if v)
    assert not wkb.built


def _batch(values: list[bytes | None]) -> Batch:
    batch = batch_of([])
    return replace(batch, geometries_wkb=WkbTuple(pa.array(values, pa.binary())),
                   attributes=pa.table({"i": list(range(len(values)))}),
                   feature_count=len(values))  # fmt: skip


def test_the_geometries_of_a_chunks_plain_polygons_are_read_without_building_its_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a clause that asks for geometries (a region that is not a rectangle, a reprojection,
    # coverage) reads the plain rows' values through WkbTuple.take, not one at a time
    monkeypatch.setattr(polygons_module, "POLYGONS_WITHOUT_GEOMETRIES_MIN", 64)
    values = [v for v in _batch_values(11, 300) if v is not None]
    batch = _batch(values)
    facts = BatchFacts(batch)
    assert facts.mixed is not None  # the plain polygons' path
    got = facts.raw_geometries
    assert not batch.geometries_wkb.built  # type: ignore[attr-defined]
    want = general_facts(replace(batch, geometries_wkb=tuple(values)), ("raw_geometries",))
    assert [None if g is None else g.wkb for g in got] == [
        None if g is None else g.wkb for g in want.raw_geometries
    ]
