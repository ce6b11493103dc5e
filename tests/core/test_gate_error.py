"""A gate failure is not the producer's fault (issue 26 part 3): an exception inside an
evaluator is reason ``gate_error`` (the library's message and the gate version), counted by
``gis.contract.gate_errors_total``, quarantined and replayable; no ordinary Arrow type, and
no type GDAL gives an attribute, reaches it."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import shapely
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tests.catalogue import NOW, active, batch_of, clause, contract_of
from tests.ops.test_metrics import points
from worker.core.evaluate import evaluate
from worker.core.model import FieldSpec
from worker.io.codec import decode_quarantine
from worker.io.formats.base import canonical_table, derive_schema
from worker.ops.metrics import GateMetrics

PTS = [shapely.Point(2.35 + i / 100, 48.85) for i in range(3)]

#: one column of every Arrow type family a reader can hand over (3 rows, one null)
COLUMNS: dict[str, pa.Array] = {
    "int8": pa.array([1, None, 3], pa.int8()),
    "uint64": pa.array([1, None, 2**63], pa.uint64()),
    "float16": pa.array([1.5, None, 2.5], pa.float32()).cast(pa.float16()),
    "float64": pa.array([1.5, None, float("nan")]),
    "bool": pa.array([True, None, False]),
    "string": pa.array(["a", None, "b"]),
    "large_string": pa.array(["a", None, "b"], pa.large_string()),
    "string_view": pa.array(["a", None, "b"], pa.string_view()),
    "dictionary": pa.array(["a", None, "a"]).dictionary_encode(),
    "binary": pa.array([b"\x00", None, b"\xff"]),
    "large_binary": pa.array([b"\x00", None, b"\xff"], pa.large_binary()),
    "fixed_binary": pa.array([b"ab", None, b"cd"], pa.binary(2)),
    "decimal128": pa.array([decimal.Decimal("1.10"), None, decimal.Decimal("2.20")]),
    "date32": pa.array([dt.date(2026, 1, 1), None, dt.date(2026, 1, 2)]),
    "timestamp_tz": pa.array(
        [dt.datetime(2026, 1, 1), None, dt.datetime(2026, 1, 2)], pa.timestamp("us", "UTC")
    ),
    "time64": pa.array([dt.time(1, 2), None, dt.time(3, 4)], pa.time64("us")),
    "duration": pa.array([1, None, 2], pa.duration("s")),
    "interval": pa.array(
        [pa.scalar((1, 2, 3), pa.month_day_nano_interval()).as_py(), None, None],
        pa.month_day_nano_interval(),
    ),
    "struct": pa.array([{"a": 1}, None, {"a": 2}]),
    "list": pa.array([[1], None, [2, 3]]),
    "large_list": pa.array([[1], None, [2]], pa.large_list(pa.int64())),
    "fixed_list": pa.array([[1, 2], None, [3, 4]], pa.list_(pa.int64(), 2)),
    "list_view": pa.array([[1], None, [2]], pa.list_view(pa.int64())),
    "map": pa.array([[("k", 1)], None, [("j", 2)]], pa.map_(pa.string(), pa.int64())),
    "null": pa.nulls(3),
    "run_end": pa.array([1, 1, 2]).cast(pa.int64()),
}


def _all_clauses(columns: list[str], schema: tuple[FieldSpec, ...]) -> list[Any]:
    out = [
        clause(f"dom_{c}", "domain", column=c, values={"a": "A", "1": "one"}, allow_null=True)
        for c in columns
    ]
    out.append(
        clause("schema", "schema", allow_extra=True, fields=[
            {"name": f.name, "type": "string", "nullable": True} for f in schema
        ])
    )  # fmt: skip
    out += [
        clause("srid", "crs", expect="EPSG:4326"),
        clause("ext", "extent", region=[-180, -90, 180, 90]),
        clause("types", "geometry_type", allowed=["Point"]),
        clause("valid", "validity", max_invalid_fraction=0.0),
        clause("count", "feature_count", min=1),
        clause("cov", "coverage", region=[2, 48, 3, 49], min_fraction=0.0),
    ]
    return out


def _gate_errors(table: pa.Table) -> list[tuple[str, str | None]]:
    attrs = canonical_table(table, "mem")
    schema = derive_schema(attrs)
    contract = contract_of(*_all_clauses(attrs.column_names, schema))
    batch = batch_of(PTS, attributes=attrs, schema_fields=schema)
    decision = evaluate(batch, [active(contract)], now=NOW)
    return [(r.name, r.gate_error) for r in decision.verdicts[0].clauses if r.gate_error]


@pytest.mark.parametrize("name", sorted(COLUMNS))
def test_no_arrow_type_reaches_a_gate_error(name: str) -> None:
    col = COLUMNS[name]
    if name == "run_end":
        col = pa.compute.run_end_encode(col)
    assert _gate_errors(pa.table({name: col})) == []


def test_no_gdal_attribute_type_reaches_a_gate_error(tmp_path: Path) -> None:
    pyogrio = pytest.importorskip("pyogrio")
    from worker.io.payloads import read_features

    table = pa.table({
        "i": pa.array([1, None, 3], pa.int32()), "l": pa.array([1, None, 2**40]),
        "f": pa.array([1.5, None, 2.5]), "s": pa.array(["a", None, "b"]),
        "b": pa.array([True, None, False]), "d": pa.array([dt.date(2026, 1, 1), None, None]),
        "t": pa.array([dt.datetime(2026, 1, 1), None, None], pa.timestamp("ms")),
        "bin": pa.array([b"\x00", None, b"\x01"]),
        "geometry": pa.array(shapely.to_wkb(PTS).tolist()),
    })  # fmt: skip
    for suffix, driver in ((".gpkg", "GPKG"), (".fgb", "FlatGeobuf"), (".shp", "ESRI Shapefile")):
        path = tmp_path / f"all{suffix}"
        keep = table.drop_columns(["bin", "t"]) if driver == "ESRI Shapefile" else table
        pyogrio.write_arrow(
            keep, path, driver=driver, geometry_name="geometry", geometry_type="Point",
            crs="EPSG:4326",
        )  # fmt: skip
        assert _gate_errors(read_features(path).attributes) == [], driver


def test_gate_error_is_its_own_reason_record_and_metric() -> None:
    broken = contract_of(clause("weird", "no_such_kind"), layer="parcels")
    decision = evaluate(batch_of(PTS), [active(broken)], now=NOW)
    (reason,) = decision.reasons
    assert (reason.code, reason.clause) == ("gate_error", "weird")
    assert "contract-gate 0.1.0" in reason.message and "not the data" in reason.message
    reader = InMemoryMetricReader()
    metrics = GateMetrics(MeterProvider(metric_readers=[reader]).get_meter("t"))
    metrics.record_decision("parcels", decision, 0.01)
    assert points(reader)["gis.contract.gate_errors_total"] == [
        (
            {"layer": "parcels", "version": "v1.0", "clause": "weird", "kind": "no_such_kind",
             "mode": "enforcing"},
            1,
        )
    ]  # fmt: skip


def test_a_gate_error_is_quarantined_with_the_original_bytes_for_replay() -> None:
    from tests.gate.test_route import NOW as ROUTE_NOW
    from tests.gate.test_route import REAL_EVENT, TOPICS
    from worker.gate.route import Source, route

    broken = contract_of(clause("weird", "no_such_kind"), layer="admin_boundaries")
    out = route(
        Source("gis.batches", 2, 41, b"admin_boundaries", REAL_EVENT),
        lambda layer: (active(broken),),
        TOPICS,
        now=ROUTE_NOW,
        worker_id="w",
    )
    q = out.records[-1]
    assert q.topic == TOPICS.quarantine
    rec = decode_quarantine(q.value)
    assert rec["reason_code"] == "gate_error" and dict(q.headers)["dlq.reason"] == b"gate_error"
    assert rec["original"] == REAL_EVENT  # replayable once the gate is fixed
    assert "ValueError: unknown clause kind 'no_such_kind'" in rec["reasons"][0]["message"]
