"""A NaN attribute value is a missing value in a field the contract makes non-nullable, in
every reader that can carry one (T07 kind: non-finite attribute values). GeoJSON refuses
the token itself (not JSON, :mod:`tests.io.test_strict_json`); GeoParquet, FlatGeobuf, a
shapefile's DBF and the Avro event's inline attributes carry a float NaN to the schema
clause, which counted only Arrow nulls and admitted it. (A GeoPackage stores NaN as NULL:
it broke already.) Infinity is a value, not a missing one: the schema clause passes it."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import shapely

from tests.catalogue import NOW, active, batch_of, clause, contract_of
from worker.core.chunks import ChunkedBatch, evaluate_chunked
from worker.core.evaluate import evaluate
from worker.core.evaluate_group import evaluate_group
from worker.core.model import Batch, Decision, FieldSpec
from worker.io.payloads import read_batch_file
from worker.io.payloads.chunks import read_batch_file_chunked

pyogrio = pytest.importorskip("pyogrio")

NAN = float("nan")
FIELDS = (FieldSpec("depth_m", "double"),)
SCHEMA = contract_of(
    clause("schema", "schema", allow_extra=True,
           fields=[{"name": "depth_m", "type": "double", "nullable": False}]),
)  # fmt: skip


def _table(depths: list[float | None], typ: pa.DataType) -> pa.Table:
    wkb = shapely.to_wkb([shapely.Point(i, 50.0) for i in range(len(depths))]).tolist()
    return pa.table({"depth_m": pa.array(depths, typ), "geometry": pa.array(wkb, pa.binary())})


def _geoparquet(tmp: Path, depths: list[float | None], typ: pa.DataType) -> Path:
    geo = {"version": "1.1.0", "primary_column": "geometry",
           "columns": {"geometry": {"encoding": "WKB", "geometry_types": ["Point"]}}}  # fmt: skip
    path = tmp / "b.parquet"
    table = _table(depths, typ).replace_schema_metadata({"geo": json.dumps(geo)})
    pq.write_table(table, path, row_group_size=2)
    return path


def _ogr(suffix: str, driver: str) -> Callable[[Path, list[float | None], pa.DataType], Path]:
    def make(tmp: Path, depths: list[float | None], typ: pa.DataType) -> Path:
        path = tmp / f"b{suffix}"
        pyogrio.write_arrow(_table(depths, typ), path, driver=driver, geometry_name="geometry",
                            geometry_type="Point", crs="OGC:CRS84")  # fmt: skip
        return path

    return make


def _decide(batch: Batch) -> Decision:
    return evaluate(batch, [active(SCHEMA)], now=NOW)


def _file(make: Callable[..., Path]) -> Callable[[Path, list[float | None], pa.DataType], Decision]:
    def run(tmp: Path, depths: list[float | None], typ: pa.DataType) -> Decision:
        return _decide(read_batch_file(make(tmp, depths, typ), layer="parcels"))

    return run


def _chunks(tmp: Path, depths: list[float | None], typ: pa.DataType) -> Decision:
    loaded = read_batch_file_chunked(_geoparquet(tmp, depths, typ), layer="parcels", chunk_rows=2)
    assert isinstance(loaded, ChunkedBatch)
    return evaluate_chunked(loaded, [active(SCHEMA)], now=NOW)


def _inline(tmp: Path, depths: list[float | None], typ: pa.DataType) -> Decision:
    from worker.io.codec.event_writer import encode_batch
    from worker.io.codec.events import batch_from_event, decode_event

    table = pa.table({"depth_m": pa.array(depths, typ)})
    batch = batch_of([shapely.Point(i, 50.0) for i in range(len(depths))], attributes=table,
                     schema_fields=FIELDS)  # fmt: skip
    return _decide(batch_from_event(decode_event(encode_batch(batch))))


def _group(tmp: Path, depths: list[float | None], typ: pa.DataType) -> Decision:
    """One-feature events judged together (the worker's poll batch): the NaN one's."""
    table = _table(depths, typ).drop_columns(["geometry"])
    batches = [
        dataclasses.replace(
            batch_of([shapely.Point(i, 50.0)], attributes=table.slice(i, 1), schema_fields=FIELDS),
            batch_id=f"b{i}",
        )
        for i in range(len(depths))
    ]
    decisions = evaluate_group(batches, [active(SCHEMA)], now=NOW)
    bad = [d for d in decisions if d.decision != "admitted"]
    return bad[0] if bad else decisions[0]


READERS = {
    "geoparquet": _file(_geoparquet),
    "geoparquet-chunks": _chunks,
    "flatgeobuf": _file(_ogr(".fgb", "FlatGeobuf")),
    "shapefile": _file(_ogr(".shp", "ESRI Shapefile")),
    "geopackage": _file(_ogr(".gpkg", "GPKG")),
    "avro-event": _inline,
    "one-feature-events": _group,
}


def _problems(decision: Decision) -> list[str]:
    (result,) = decision.verdicts[0].clauses
    return list(result.measured["problems"])


@pytest.mark.parametrize("typ", [pa.float64(), pa.float32()], ids=["double", "float"])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_nan_in_a_non_nullable_field_breaks_schema(
    tmp_path: Path, reader: str, typ: pa.DataType
) -> None:
    decision = READERS[reader](tmp_path, [1.5, 2.0, NAN, 3.0], typ)
    assert decision.decision == "quarantined"
    problems = _problems(decision)
    assert "field 'depth_m' has 1 null (a NaN counts as missing)" in problems, problems
    assert READERS[reader](tmp_path, [1.5, 2.0, 2.5, 3.0], typ).decision == "admitted"


@pytest.mark.parametrize("reader", ["geoparquet", "avro-event"])
def test_infinity_is_a_value_not_a_missing_one(tmp_path: Path, reader: str) -> None:
    depths = [1.5, float("inf"), float("-inf"), 3.0]
    assert READERS[reader](tmp_path, depths, pa.float64()).decision == "admitted"
