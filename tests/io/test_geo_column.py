"""GeoParquet ``geo`` metadata of any shape a producer wrote (io/formats/geo_column.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import shapely

from worker.cli.main import main
from worker.cli.scenario import data_file
from worker.core.errors import ContractGateError
from worker.io.payloads import read_batch_file
from worker.io.payloads.chunks import read_batch_file_chunked

COLUMN = {"encoding": "WKB", "geometry_types": ["Polygon"]}


def _geo(**column: object) -> bytes:
    return json.dumps(
        {"version": "1.1.0", "primary_column": "geometry", "columns": {"geometry": column}}
    ).encode()


#: (geo metadata bytes, what the refusal must say)
HOSTILE = {
    "nested 5000 deep": (b"[" * 5000 + b"]" * 5000, "the 'geo' metadata nests deeper than"),
    "an array": (b"[1, 2]", "the 'geo' metadata is an array, not a JSON object"),
    "a string": (b'"geometry"', "the 'geo' metadata is a string, not a JSON object"),
    "columns an array": (
        json.dumps({"primary_column": "geometry", "columns": ["geometry"]}).encode(),
        "'geo' metadata: columns is an array, not a JSON object",
    ),
    "column metadata a string": (
        json.dumps({"primary_column": "geometry", "columns": {"geometry": "WKB"}}).encode(),
        "'geo' metadata: columns.geometry is a string, not a JSON object",
    ),
    "covering an array": (
        _geo(encoding="WKB", covering=["bbox"]),
        "'geo' metadata: columns.geometry.covering is an array, not a JSON object",
    ),
    "covering bbox a number": (
        _geo(encoding="WKB", covering={"bbox": 4}),
        "'geo' metadata: columns.geometry.covering.bbox is a number, not a JSON object",
    ),
}


@pytest.fixture
def write(tmp_path: Path):  # type: ignore[no-untyped-def]
    def _write(geo: bytes) -> Path:
        wkb = [shapely.to_wkb(shapely.box(0, 0, 1, 1))]
        table = pa.table({"geometry": pa.array(wkb, pa.binary()), "a": [1]})
        path = tmp_path / "batch.parquet"
        pq.write_table(table.replace_schema_metadata({b"geo": geo}), path)
        return path

    return _write


@pytest.mark.parametrize(
    "read", [read_batch_file, read_batch_file_chunked], ids=["whole", "chunked"]
)
@pytest.mark.parametrize("case", list(HOSTILE))
def test_geo_metadata_of_the_wrong_shape_is_refused_naming_the_member(  # type: ignore[no-untyped-def]
    write, read, case: str
) -> None:
    # found by a new-user session: 'geo' metadata nested 5,000 deep crashed `check` with a
    # RecursionError traceback and exit 1 (the code of a quarantined batch); an array or a
    # string where an object belongs gave "TypeError: 'list' object is not a mapping"
    geo, says = HOSTILE[case]
    path = write(geo)
    with pytest.raises(ContractGateError) as err:
        data = read(path, layer="t")
        if not hasattr(data, "features"):  # the chunked reader reads on iteration
            list(data)
    assert says in str(err.value) and str(path) in str(err.value)


@pytest.mark.parametrize("case", list(HOSTILE))
def test_check_of_such_a_file_is_exit_2_with_one_line(  # type: ignore[no-untyped-def]
    write, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(HOSTILE[case][0])
    contract = str(data_file("contracts/admin_boundaries.v1.yaml"))
    assert main(["check", str(path), "--contract", contract, "--now", "2026-12-05T00:00:00Z"]) == 2
    err = capsys.readouterr().err
    assert HOSTILE[case][1] in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_a_well_shaped_covering_is_still_read(write) -> None:  # type: ignore[no-untyped-def]
    data = read_batch_file(write(_geo(**COLUMN, covering={"bbox": {}})), layer="t")
    assert data.feature_count == 1
