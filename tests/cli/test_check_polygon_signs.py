"""`contract-gate check` of a GeoParquet file of one-ring polygons prints the same decision
JSON and offenders, byte for byte, whether the star polygons path (``star_rings``) or
GEOS measures them: signed zeros included (stop 36: the extent's bounds printed ``0.0``
on the fast path where GEOS's envelope, kept by the general path, gave ``-0.0``)."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.fast_paths import general_path
from worker.cli.main import main

CONTRACT = """layer: signs
version: v1
cadence: P1D
objective: 0.99
owner: qa
changelog: t
clauses:
  - {name: extent, kind: extent, region: "POLYGON ((-0.5 -0.5, 3 -0.5, 3 3, -0.5 0.8, -0.5 -0.5))"}
  - {name: valid, kind: validity, max_invalid_fraction: 0.0}
"""
TIMES = ["--data-time", "2026-12-03T06:00:00Z", "--now", "2026-12-03T07:00:00Z"]


def _ring_wkb(xy: np.ndarray) -> bytes:
    return struct.pack("<BIII", 1, 3, 1, len(xy)) + np.asarray(xy, dtype="<f8").tobytes()


def _file(path: Path, rows_per_group: int, orientation: bool) -> Path:
    """600 one-ring squares, each corner 0.0 or -0.0 in either order, some moved south, out."""
    rng = np.random.default_rng(36)
    values = []
    for i in range(600):
        z = rng.choice([0.0, -0.0], 4)
        ring = np.array([(1, 1), (z[0], 1), (z[1], z[2]), (1, z[3]), (1, 1)], dtype=float)
        if i % 7 == 3:
            ring = ring[::-1]
        values.append(_ring_wkb(ring - ((0.0, 2.0) if i % 50 == 9 else (0.0, 0.0))))
    column = {"encoding": "WKB", "geometry_types": ["Polygon"]}
    if orientation:
        column["orientation"] = "counterclockwise"
    geo = {"version": "1.1.0", "primary_column": "geometry", "columns": {"geometry": column}}
    table = pa.table({"id": pa.array(range(600), pa.int64()), "geometry": pa.array(values)})
    pq.write_table(table.replace_schema_metadata({"geo": json.dumps(geo)}), path,
                   row_group_size=rows_per_group)  # fmt: skip
    return path


def _check(
    tmp_path: Path, batch: Path, capsys: pytest.CaptureFixture[str], tag: str
) -> tuple[str, str]:
    contract = tmp_path / "signs.yaml"
    contract.write_text(CONTRACT, "utf-8")
    offenders = tmp_path / f"offenders-{tag}.geojson"
    argv = ["check", str(batch), "--contract", str(contract), "--format", "json",
            "--offenders", str(offenders), *TIMES]  # fmt: skip
    assert main(argv) == 1
    out = capsys.readouterr().out
    same_id = re.compile(r'"batch_id": "[^"]*"')
    return same_id.sub("", out), same_id.sub("", offenders.read_text("utf-8"))


@pytest.mark.parametrize(("rows_per_group", "orientation"), [(600, False), (512, True)])
def test_signed_zero_polygons_check_the_same_on_both_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    rows_per_group: int, orientation: bool,
) -> None:  # fmt: skip
    batch = _file(tmp_path / "signs.parquet", rows_per_group, orientation)
    fast = _check(tmp_path, batch, capsys, "fast")
    general_path(monkeypatch)
    general = _check(tmp_path, batch, capsys, "general")
    assert fast == general
    # the offenders' bounds (moved south: x from a signed zero to 1) print both zeros
    assert '"bounds": [' in fast[0] and "[-0.0, -2.0, 1.0, -1.0]" in fast[1]
    assert "[0.0, -2.0, 1.0, -1.0]" in fast[1]
