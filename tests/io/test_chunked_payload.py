"""By-reference GeoParquet payloads evaluated chunk by chunk (io.features.payload
``load_payload_chunked`` with core.chunked): the decision equals the whole-batch one.

Every comparison reads a real file twice, whole (:func:`load_payload`) and in chunks of a
few rows (so features of one clause fall in several chunks), and evaluates both against
real contracts, some of whose clauses break (extent with diagnoses, domain, validity,
schema nulls, geometry types, coverage, counts).
"""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.catalogue import ADMIN_BOUNDARIES, NYC_BOROUGHS, active, clause, contract_of
from worker.core import chunk_sample
from worker.core.chunks import ChunkedBatch, evaluate_chunked
from worker.core.errors import PayloadCorrupt
from worker.core.evaluate import evaluate
from worker.core.facts.batch import BatchFacts
from worker.core.model import Batch, Decision
from worker.io.contract_files import load_contract
from worker.io.payloads import load_payload
from worker.io.payloads.chunks import load_payload_chunked
from worker.io.payloads.policy import UNRESTRICTED, PayloadPolicy

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "tests" / "cases"
GEOPARQUET = REPO / "tests" / "data" / "geoparquet"
CONTRACTS = REPO / "worker" / "data" / "contracts"
NOW = datetime(2026, 11, 29, 7, 0, tzinfo=timezone.utc)


def _event(path: Path, layer: str, crs: str | None = "EPSG:4326", count: int = 0) -> Batch:
    return Batch(
        batch_id="b-1",
        layer=layer,
        producer="test",
        data_time=datetime(2026, 11, 29, 6, 0, tzinfo=timezone.utc),
        produced_at=NOW,
        declared_crs=crs,
        axis_order="east_north",
        schema_fields=(),
        feature_count=count or pq.ParquetFile(path).metadata.num_rows,
        geometries_wkb=(),
        attributes=pa.table({}),
        payload_uri=path.as_uri(),
    )


def _same(a: Any, b: Any, where: str, loose: bool = False) -> None:
    """Equal, field by field; floats of coverage results (``loose``) to 1e-9 relative."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), where
        measured = getattr(a, "measured", None)
        loose = (
            loose
            or getattr(a, "kind", None) == "coverage"
            or (isinstance(measured, dict) and "covered_area" in measured)
        )
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}", loose)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]", loose)
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]", loose)
    elif isinstance(a, float) and loose:
        assert math.isclose(a, b, rel_tol=1e-9), where
    else:
        assert a == b or (a != a and b != b), f"{where}: {a!r} != {b!r}"


def _both(path: Path, contracts: list[Any], event: Batch, rows: int) -> tuple[Decision, Decision]:
    policy = PayloadPolicy.from_strings([str(path.parent)])
    versions = [active(c) for c in contracts]
    whole = evaluate(load_payload(event.payload_uri or "", event, policy=policy), versions, now=NOW)
    chunked = load_payload_chunked(event.payload_uri or "", event, policy=policy, chunk_rows=rows)
    assert isinstance(chunked, ChunkedBatch)
    assert len(list(chunked.chunks())) > 1 or chunked.batch.feature_count <= rows
    return whole, evaluate_chunked(chunked, versions, now=NOW)


BROKEN = contract_of(
    clause("ext", "extent", region=[-10.0, 35.0, 40.0, 70.0], min_fraction_inside=0.9),
    clause("types", "geometry_type", allowed=["Polygon"]),
    clause("valid", "validity"),
    clause("dom", "domain", column="continent", values=["Europe", "Asia"], allow_null=False),
    clause("cov", "coverage", region=[-10.0, 35.0, 40.0, 70.0], min_fraction=0.99),
    clause("schema", "schema", fields=[{"name": "name", "type": "string"}], allow_extra=False),
    clause("count", "feature_count", min=1, max=100),
    version="v9.0",
    layer="admin_boundaries",
)


@pytest.mark.parametrize("rows", [1, 7, 50])
def test_admin_boundaries_chunked_equals_whole(rows: int) -> None:
    contracts = [load_contract(p) for p in sorted(CONTRACTS.glob("admin_boundaries*.yaml"))]
    whole, chunked = _both(
        ADMIN_BOUNDARIES, [*contracts, BROKEN], _event(ADMIN_BOUNDARIES, "admin_boundaries"), rows
    )
    _same(whole, chunked, "decision")
    assert whole.decision == "quarantined"
    clauses = {r.name: r for v in whole.verdicts for r in v.clauses if v.version == "v9.0"}
    broken = {n for n, r in clauses.items() if r.result == "break"}
    assert broken == {"ext", "types", "dom", "cov", "schema", "count"}
    assert clauses["ext"].offenders is not None and clauses["ext"].offenders.total > 100
    assert clauses["count"].measured == 177


def test_extent_diagnosis_from_a_second_pass_equals_whole() -> None:
    """Degrees declared as EPSG:3857 (metres: every country lands near 0, 0), and degrees
    stored latitude first: the extent (Europe) breaks, and the diagnosis is reached in
    chunks as on the whole batch."""
    c = contract_of(
        clause("ext", "extent", region=[-10.0, 35.0, 40.0, 70.0], min_fraction_inside=0.15),
        clause("srid", "crs", expect="EPSG:4326"),
        layer="admin_boundaries",
    )
    event = _event(ADMIN_BOUNDARIES, "admin_boundaries", crs="EPSG:3857")
    whole, chunked = _both(ADMIN_BOUNDARIES, [c], event, 20)
    _same(whole, chunked, "decision")
    assert whole.diagnoses == (
        "coordinates fit the extent as EPSG:4326: the declared CRS EPSG:3857 looks wrong",
    )
    event = dataclasses.replace(event, declared_crs="EPSG:4326", axis_order="north_east")
    whole, chunked = _both(ADMIN_BOUNDARIES, [c], event, 20)
    _same(whole, chunked, "decision")
    assert whole.diagnoses == (
        "axis order looks swapped: the coordinates fit the extent with x and y exchanged "
        "(or the region is written y first: the contract gives it as minx, miny, maxx, maxy)",
    )


def test_nyc_boroughs_chunked_equals_whole() -> None:
    contracts = [load_contract(CONTRACTS / "nyc_boroughs.v1.yaml")]
    event = _event(NYC_BOROUGHS, contracts[0].layer, crs="EPSG:2263")
    whole, chunked = _both(NYC_BOROUGHS, contracts, event, 2)
    _same(whole, chunked, "decision")


@pytest.mark.parametrize("case", ["N01", "N04a", "S10c", "S17a", "S20c", "S21b", "T02"])
def test_field_cases_chunked_equal_whole(case: str) -> None:
    path = CASES / case / "batch.parquet"
    c = load_contract(CASES / case / "contract.yaml")
    event = _event(path, c.layer, crs=None)
    # the file's CRS claim, as `check` reads it
    whole_file = load_payload(path.as_uri(), layer=c.layer, policy=UNRESTRICTED)
    event = dataclasses.replace(event, declared_crs=whole_file.declared_crs)
    whole, chunked = _both(path, [c], event, 1)
    _same(whole, chunked, "decision")


@pytest.mark.parametrize("name", sorted(p.name for p in GEOPARQUET.glob("*.parquet")))
def test_geoparquet_examples_chunked_equal_whole(name: str) -> None:
    path = GEOPARQUET / name
    c = contract_of(
        clause("ext", "extent", region=[-10.0, -10.0, 10.0, 10.0], min_fraction_inside=0.5),
        clause("types", "geometry_type", allowed=["Polygon", "Point"], allow_empty=False),
        clause("valid", "validity", max_invalid_fraction=0.1),
        clause("cov", "coverage", region=[-10.0, -10.0, 10.0, 10.0], min_fraction=0.01),
        layer="examples",
    )
    whole, chunked = _both(path, [c], _event(path, "examples"), 2)
    _same(whole, chunked, "decision")


def test_a_file_changed_between_passes_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "b.parquet"
    pq.write_table(pq.read_table(ADMIN_BOUNDARIES), path)
    chunked = load_payload_chunked(
        path.as_uri(),
        _event(path, "admin_boundaries"),
        policy=PayloadPolicy.from_strings([str(tmp_path)]),
    )
    assert isinstance(chunked, ChunkedBatch)
    pq.write_table(pq.read_table(ADMIN_BOUNDARIES).slice(0, 10), path)
    with pytest.raises(PayloadCorrupt, match="10 rows read, the footer read before said 177"):
        list(chunked.chunks())


def test_a_geojson_payload_is_read_in_chunks(tmp_path: Path) -> None:
    """Issue 27: GeoJSON is streamed too; a file the stream cannot vouch for (NaN) is read
    whole, so it is refused as it always was."""
    path = tmp_path / "b.geojson"
    features = ",".join(
        f'{{"type": "Feature", "properties": {{"n": {i}}},'
        f' "geometry": {{"type": "Point", "coordinates": [{i}, 2]}}}}'
        for i in range(5)
    )
    path.write_text(f'{{"type": "FeatureCollection", "features": [{features}]}}')
    policy = PayloadPolicy.from_strings([str(tmp_path)])
    got = load_payload_chunked(
        path.as_uri(), _event(ADMIN_BOUNDARIES, "x"), policy=policy, chunk_rows=2
    )
    assert isinstance(got, ChunkedBatch)
    chunks = list(got.chunks())
    assert [len(c.geometries_wkb) for c in chunks] == [2, 2, 1]
    assert chunks[2].geometries_wkb == (shapely.Point(4, 2).wkb,)
    assert chunks[1].attributes.column("n").to_pylist() == [2, 3]
    path.write_text(path.read_text().replace('"n": 3', '"n": NaN'))
    with pytest.raises(PayloadCorrupt, match=r"features\[3\]\.properties\.n: NaN"):
        load_payload_chunked(path.as_uri(), _event(ADMIN_BOUNDARIES, "x"), policy=policy)


def test_a_transient_read_error_resumes_at_the_chunk_that_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A read that fails transiently (an S3 hiccup) on the 4th chunk: the payload is
    opened again and read on from that chunk; the decision is the whole batch's, and
    features already evaluated are not evaluated again."""
    from worker.core.errors import PayloadUnavailable
    from worker.io.formats import geoparquet

    real = geoparquet._features
    calls: list[int] = []

    def flaky(path: Any, table: pa.Table, geo: Any) -> Any:
        calls.append(table.num_rows)
        if len(calls) == 4:
            raise PayloadUnavailable("s3://x: read failed (AWS Error NETWORK)", transient=True)
        return real(path, table, geo)

    monkeypatch.setattr(geoparquet, "_features", flaky)
    path = ADMIN_BOUNDARIES
    policy = dataclasses.replace(PayloadPolicy.from_strings([str(path.parent)]), backoff_s=0.01)
    event = _event(path, "admin_boundaries")
    versions = [active(BROKEN)]
    chunked = load_payload_chunked(path.as_uri(), event, policy=policy, chunk_rows=50)
    assert isinstance(chunked, ChunkedBatch)
    got = evaluate_chunked(chunked, versions, now=NOW)
    # 177 rows in chunks of 50: 4 chunks, the 4th (27 rows) failed once and was read
    # again; the broken extent clause's diagnosis reads the sample the first pass kept
    # (the footer gave the row count), not the file again
    assert calls == [50, 50, 50, 27, 27]
    monkeypatch.setattr(geoparquet, "_features", real)
    whole = evaluate(load_payload(path.as_uri(), event, policy=policy), versions, now=NOW)
    _same(whole, got, "decision")


NATIVE = sorted(GEOPARQUET.glob("*native.parquet"))


@pytest.mark.parametrize("path", NATIVE, ids=[p.name for p in NATIVE])
def test_geoarrow_envelope_is_the_geometries_bounds(path: Path) -> None:
    """The envelope read from a GeoArrow native column's coordinate arrays equals the
    total bounds of the geometries parsed (over the rows that have one)."""
    batch = load_payload(path.as_uri(), layer="x", policy=UNRESTRICTED)
    geoms = shapely.from_wkb([w for w in batch.geometries_wkb if w is not None])
    assert batch.coordinate_bounds is not None
    if all(w is not None for w in batch.geometries_wkb):
        assert batch.coordinate_bounds == tuple(shapely.total_bounds(geoms))


@pytest.mark.parametrize("path", NATIVE, ids=[p.name for p in NATIVE])
@pytest.mark.parametrize("region", [[-180.0, -90.0, 180.0, 90.0], [0.0, 0.0, 35.0, 35.0]])
def test_extent_from_the_envelope_equals_extent_from_the_geometries(
    path: Path, region: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the coordinate arrays' envelope (every feature present) the extent clause
    judges as without it; a region covering the envelope tests no feature with GEOS."""
    from worker.core.clauses import extent as clauses_spatial

    c = contract_of(clause("ext", "extent", region=region), layer="x")
    batch = load_payload(path.as_uri(), layer="x", policy=UNRESTRICTED)
    # each example holds an empty geometry (no coordinates, so the envelope stays right):
    # left out, every feature is usable and the envelope applies
    kept = tuple(w for w in batch.geometries_wkb if w and not shapely.from_wkb(w).is_empty)
    batch = dataclasses.replace(batch, geometries_wkb=kept, feature_count=len(kept))
    assert BatchFacts(batch).envelope == batch.coordinate_bounds
    without = evaluate(dataclasses.replace(batch, coordinate_bounds=None), [active(c)], now=NOW)
    if region[0] == -180.0:  # covers everything: covered_by must not be asked
        real = clauses_spatial.covered_mask
        monkeypatch.setattr(clauses_spatial, "covered_mask", None)
        with_env = evaluate(batch, [active(c)], now=NOW)
        monkeypatch.setattr(clauses_spatial, "covered_mask", real)
    else:
        with_env = evaluate(batch, [active(c)], now=NOW)
    _same(without, with_env, "decision")


@pytest.mark.parametrize("how", ["whole", "chunked"])
def test_a_payload_stating_another_crs_than_its_event_breaks_the_crs_clause(how: str) -> None:
    # found by a new-user session: a GeoParquet in EPSG:3857 (here the NYC boroughs, whose
    # geo metadata states EPSG:2263) was admitted by reference under an EPSG:4326 contract
    # because its event declared EPSG:4326; `check` of the same file broke the clause
    contract = load_contract(CONTRACTS / "nyc_boroughs.v1.yaml")
    lying = _event(NYC_BOROUGHS, "nyc_boroughs", crs="EPSG:4326")
    honest = _event(NYC_BOROUGHS, "nyc_boroughs", crs="EPSG:2263")

    def decide(event: Batch) -> Decision:
        if how == "whole":
            return evaluate(load_payload(event.payload_uri or "", event, policy=UNRESTRICTED),
                            [active(contract)], now=NOW)  # fmt: skip
        loaded = load_payload_chunked(event.payload_uri or "", event, policy=UNRESTRICTED)
        assert isinstance(loaded, ChunkedBatch)
        return evaluate_chunked(loaded, [active(contract)], now=NOW)

    crs_clause = next(c.name for c in contract.clauses if c.kind == "crs")
    lied = {r.name: r for r in decide(lying).verdicts[0].clauses}[crs_clause]
    assert lied.result == "break"
    assert lied.message.endswith(
        "but the payload's GeoParquet metadata states EPSG:2263, not the EPSG:4326 the event "
        "declares: fix the event's declared_crs or the file's CRS"
    )
    told = {r.name: r for r in decide(honest).verdicts[0].clauses}[crs_clause]
    assert told.result == "pass" and "but" not in told.message


@settings(max_examples=10, deadline=None, derandomize=True, database=None)
@given(
    st.integers(1, 180),
    st.sampled_from(["EPSG:4326", "EPSG:3857"]),
    st.sampled_from(["east_north", "north_east"]),
    st.floats(0.05, 1.0),
    st.sampled_from(
        [[-10.0, 35.0, 40.0, 70.0], [170.0, -50.0, -170.0, 50.0], [0.0, 0.0, 1.0, 1.0]]
    ),
    st.sampled_from([0, 1000, 32 * 1024**2]),
)
def test_the_kept_diagnosis_sample_decides_as_rereading_and_as_the_whole_read(
    rows: int, crs: str, axis_order: str, fraction: float, region: list, keep_bytes: int
) -> None:
    """Stop 35's differential: chunk sizes, declared CRS, axis order, extent regions (one
    across the antimeridian) and a kept sample that is whole, dropped after 1,000 bytes,
    or never kept (re-read): the decision, diagnoses included, is the whole read's."""
    c = contract_of(
        clause("ext", "extent", region=region, min_fraction_inside=fraction),
        layer="admin_boundaries",
    )
    event = dataclasses.replace(
        _event(ADMIN_BOUNDARIES, "admin_boundaries", crs=crs), axis_order=axis_order
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(chunk_sample, "KEEP_SAMPLE_BYTES", keep_bytes)
        whole, chunked = _both(ADMIN_BOUNDARIES, [c], event, rows)
    _same(whole, chunked, "decision")
