"""`contract-gate check` of a GeoParquet file streams it chunk by chunk, as the worker
evaluates a by-reference payload (issue 27): its JSON output equals the decision of
:func:`worker.core.evaluate.evaluate` on the whole file, for a generated multi-row-group
file (a broken extent diagnosed from a sample spanning the row groups, offenders named by
an id column, claims the geometries contradict) and for the shipped batches."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import shapely

from worker.cli.main import main
from worker.core.chunks import ChunkedBatch
from worker.core.clauses import diagnose_readings
from worker.core.errors import PayloadCorrupt
from worker.core.evaluate import evaluate
from worker.core.facts.batch import BatchFacts
from worker.core.facts.claims import claim_disagreements
from worker.core.model import ActiveVersion
from worker.io.contract_files import load_contract
from worker.io.payloads import read_batch_file, read_batch_file_chunked
from worker.io.reports.text import decision_to_json

DATA = Path(__file__).resolve().parents[2] / "worker" / "data"
DATA_TIME, NOW = "2026-11-29T06:00:00Z", "2026-11-29T07:00:00Z"
TIMES = ["--data-time", DATA_TIME, "--now", NOW]

CONTRACT = """layer: parcels
version: v1
cadence: P1D
objective: 0.99
owner: qa
changelog: t
clauses:
  - {name: srid, kind: crs, expect: 'OGC:CRS84'}
  - {name: extent, kind: extent, region: [0, 40, 10, 50]}
  - {name: types, kind: geometry_type, allowed: [Polygon]}
  - {name: valid, kind: validity, max_invalid_fraction: 0.0}
  - {name: kind, kind: domain, column: kind, values: {a: first, b: second}}
  - {name: size, kind: feature_count, min: 1, max: 10000}
"""


def _parcels(path: Path, n: int = 1200, group_rows: int = 250) -> Path:
    """``n`` small seeded lon/lat boxes in [0, 10] x [40, 50], every fifth written latitude
    first (outside), one unknown domain value, in row groups of ``group_rows``; the
    ``geo`` metadata claims a bbox and types the features contradict."""
    rng = np.random.default_rng(27)
    x, y = rng.uniform(0.5, 9.0, n), rng.uniform(40.5, 49.0, n)
    boxes = shapely.box(x, y, x + 0.2, y + 0.2)
    swapped = np.arange(n) % 5 == 2
    boxes[swapped] = shapely.transform(boxes[swapped], lambda c: c[:, ::-1])
    kinds = np.where(np.arange(n) % 2 == 0, "a", "b").astype(object)
    kinds[7] = "z"
    geo = {
        "version": "1.1.0",
        "primary_column": "geometry",
        "columns": {
            "geometry": {
                "encoding": "WKB",
                "geometry_types": ["Point"],
                "bbox": [0.0, 40.0, 1.0, 41.0],
            }
        },
    }
    table = pa.table(
        {
            "geometry": pa.array(shapely.to_wkb(boxes).tolist(), type=pa.binary()),
            "parcel_id": [f"p{i:05d}" for i in range(n)],
            "kind": pa.array(kinds.tolist(), type=pa.string()),
        }
    )
    pq.write_table(
        table.replace_schema_metadata({"geo": json.dumps(geo)}), path, row_group_size=group_rows
    )
    return path


def _whole(batch: Path, contract: Path, id_column: str | None = None) -> tuple[dict, list[str]]:
    """The JSON decision and claim warnings of the whole file, as `check` gave before."""
    versions = [ActiveVersion(load_contract(contract), "enforcing")]
    data_time = datetime.fromisoformat(DATA_TIME.replace("Z", "+00:00"))
    whole = read_batch_file(batch, layer=versions[0].contract.layer, data_time=data_time)
    if id_column is not None:
        whole = dataclasses.replace(whole, id_column=id_column)
    now = datetime.fromisoformat(NOW.replace("Z", "+00:00")).astimezone(timezone.utc)
    facts = BatchFacts(whole)
    decision = evaluate(whole, versions, now=now, facts=facts)
    return json.loads(json.dumps(decision_to_json(decision), default=str)), claim_disagreements(
        facts
    )


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict, list[str]]:
    code = main(["check", *args, "--format", "json", *TIMES])
    captured = capsys.readouterr()
    warnings = [line[len("warning: ") :] for line in captured.err.splitlines()]
    doc = json.loads(captured.out)
    # what was judged (issue 28) precedes the decision, which is compared here
    judged = {k: doc.pop(k) for k in ("layer", "batch_file", "features", "contracts", "notes")}
    assert judged["batch_file"] == args[0] and judged["notes"] == []
    return code, doc, warnings


def test_a_geoparquet_file_is_read_in_chunks(tmp_path: Path) -> None:
    batch = _parcels(tmp_path / "parcels.parquet")
    loaded = read_batch_file_chunked(batch, layer="parcels", chunk_rows=100)
    assert isinstance(loaded, ChunkedBatch)
    assert loaded.batch.feature_count == 1200 and loaded.batch.geometries_wkb == ()
    sizes = [len(c.geometries_wkb) for c in loaded.chunks()]
    assert sizes == [100, 100, 50] * 4 + [100, 100]  # chunks never span the 250-row groups
    geojson = tmp_path / "one.geojson"
    geojson.write_text('{"type": "FeatureCollection", "features": []}')
    empty = read_batch_file_chunked(geojson, layer="parcels")  # GeoJSON too (issue 27)
    assert isinstance(empty, ChunkedBatch) and empty.batch.feature_count == 0
    assert list(empty.chunks()) == []
    geojson.write_text('{"type": "FeatureCollection", "features": [], "features": []}')
    with pytest.raises(PayloadCorrupt, match="appears more than once"):  # read whole
        read_batch_file_chunked(geojson, layer="parcels")


def test_check_of_a_multi_row_group_file_equals_the_whole_decision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = _parcels(tmp_path / "parcels.parquet")
    contract = tmp_path / "parcels.yaml"
    contract.write_text(CONTRACT)
    # a sample of 7 features, one in 172, spread over the five row groups
    monkeypatch.setattr(diagnose_readings, "DIAGNOSIS_SAMPLE", 7)
    code, doc, warnings = _check(
        capsys, str(batch), "--contract", str(contract), "--id-column", "parcel_id"
    )
    expected, claims = _whole(batch, contract, id_column="parcel_id")
    assert code == 1 and doc == expected
    extent = next(c for c in doc["versions"][0]["clauses"] if c["name"] == "extent")
    assert extent["measured"]["outside"] == 240 and extent["measured"]["features"] == 1200
    assert [f["id"] for f in extent["offenders"]["features"][:3]] == ["p00002", "p00007", "p00012"]
    # sampled features 0, 172, ..., 1032: 172 and 1032 are written latitude first, so 5 of
    # 7 fit swapped, short of 1.0
    assert doc["diagnoses"] == []
    assert warnings == claims and len(claims) == 2
    assert claims[0].startswith("the file's bbox [0, 40, 1, 41] does not contain its features")
    assert claims[1] == (
        "the file's geometry_types [Point] leave out types its features have: Polygon (1200)"
    )


def test_check_diagnoses_swapped_axes_of_a_file_from_a_sample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    contract = tmp_path / "parcels.yaml"
    contract.write_text(CONTRACT.replace("[0, 40, 10, 50]", "[40, 0, 50, 10]"))  # y first
    batch = _parcels(tmp_path / "parcels.parquet")
    monkeypatch.setattr(diagnose_readings, "DIAGNOSIS_SAMPLE", 10)
    code, doc, _ = _check(capsys, str(batch), "--contract", str(contract))
    assert code == 1 and doc == _whole(batch, contract)[0]
    # 960 of 1200 fit swapped, short of 1.0; the sample (stride 120: features 0, 120, ...,
    # 1080) holds none written latitude first, so every sampled feature fits swapped
    assert doc["diagnoses"] == [
        "axis order looks swapped: the coordinates fit the extent with x and y exchanged (or "
        "the region is written y first: the contract gives it as minx, miny, maxx, maxy) "
        "(from an evenly spaced sample of 10 of 1,200 features)"
    ]


@pytest.mark.parametrize(
    ("name", "contract"),
    [
        ("admin_boundaries.parquet", "admin_boundaries.v1.1.yaml"),
        ("admin_boundaries.parquet", "admin_boundaries.v1.yaml"),
        ("nyc_boroughs.parquet", "nyc_boroughs.v1.yaml"),
    ],
)
def test_check_of_the_shipped_batches_equals_the_whole_decision(
    name: str, contract: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path, spec = DATA / name, DATA / "contracts" / contract
    code, doc, warnings = _check(capsys, str(path), "--contract", str(spec))
    expected, claims = _whole(path, spec)
    assert doc == expected and code == (0 if expected["decision"] == "admitted" else 1)
    assert warnings == claims


@pytest.mark.parametrize("threads", ["1", "3"])
def test_check_on_threads_prints_what_one_thread_prints(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    threads: str,
) -> None:
    """``--eval-threads`` changes who measures the chunks, not the output (issue 27)."""
    batch = _parcels(tmp_path / "parcels.parquet", group_rows=100)
    contract = tmp_path / "parcels.yaml"
    contract.write_text(CONTRACT.replace("[0, 40, 10, 50]", "[40, 0, 50, 10]"))
    monkeypatch.setattr(diagnose_readings, "DIAGNOSIS_SAMPLE", 10)
    args = (str(batch), "--contract", str(contract), "--id-column", "parcel_id")
    code, doc, warnings = _check(capsys, *args, "--eval-threads", threads)
    assert (code, doc, warnings) == _check(capsys, *args, "--eval-threads", "2")
    assert code == 1 and doc == _whole(batch, contract, id_column="parcel_id")[0]
    assert doc["diagnoses"][0].startswith("axis order looks swapped")
    assert len(warnings) == 2  # the claims, tallied in batch order on the caller's thread


@pytest.mark.parametrize("bad", ["0", "9", "two"])
def test_check_refuses_an_eval_threads_outside_1_to_8(
    bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check", "x.parquet", "--contract", "c.yaml", "--eval-threads", bad])
    assert exc.value.code == 2
    assert "--eval-threads" in capsys.readouterr().err
