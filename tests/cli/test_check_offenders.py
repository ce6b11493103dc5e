"""`check --offenders FILE`, `--id-column` and the offenders in text and JSON output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import shapely

from tests.catalogue import PARIS
from worker.cli.main import main


def _geojson(path: Path) -> Path:
    feats = [
        {
            "type": "Feature",
            "id": "in",
            "geometry": shapely.geometry.mapping(PARIS),
            "properties": {"n": 1},
        },
        {
            "type": "Feature",
            "id": "out",
            "geometry": {"type": "Point", "coordinates": [100.0, 10.0]},
            "properties": {"n": 2},
        },
    ]
    path.write_text(json.dumps({"type": "FeatureCollection", "features": feats}))
    return path


CONTRACT = """layer: places
version: v1
cadence: P1D
objective: 0.99
owner: tests
changelog: europe only
clauses:
  - {name: extent, kind: extent, region: [-10, 40, 10, 55]}
"""


def test_check_names_offenders_by_geojson_id_in_text_json_and_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = _geojson(tmp_path / "b.geojson")
    (tmp_path / "c.yaml").write_text(CONTRACT)
    args = [
        str(batch),
        "--contract",
        str(tmp_path / "c.yaml"),
        "--data-time",
        "2026-11-29T06:00:00Z",
    ]
    out_file = tmp_path / "off.geojson"
    assert main(["check", *args, "--offenders", str(out_file)]) == 1
    captured = capsys.readouterr()
    text = captured.out
    assert "1 offending feature" in text and "#1 (id 'out'): [100, 10, 100, 10]" in text
    assert f"wrote 1 offending feature to {out_file}" in captured.err  # no "1 ... features"
    assert "decision: quarantined (enforcing v1.0 extent)" in text
    doc = json.loads(out_file.read_text())
    assert [f["id"] for f in doc["features"]] == ["out"]
    assert doc["features"][0]["geometry"] == {"type": "Point", "coordinates": [100.0, 10.0]}
    assert "crs" not in doc  # OGC:CRS84, as RFC 7946 wants
    assert main(["check", *args, "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    extent = out["versions"][0]["clauses"][0]
    assert extent["offenders"]["total"] == 1
    assert extent["offenders"]["features"] == [
        {"index": 1, "id": "out", "value": [100.0, 10.0, 100.0, 10.0]}
    ]


def test_check_refuses_an_unknown_id_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = _geojson(tmp_path / "b.geojson")
    (tmp_path / "c.yaml").write_text(CONTRACT)
    assert (
        main(["check", str(batch), "--contract", str(tmp_path / "c.yaml"), "--id-column", "pid"])
        == 2
    )
    assert "--id-column 'pid' is not a column" in capsys.readouterr().err


def test_check_warns_when_the_contracts_id_column_is_not_in_the_batch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a fresh-user finding: a contract's `id_column: nope` was silently ignored
    batch = _geojson(tmp_path / "b.geojson")
    (tmp_path / "c.yaml").write_text(CONTRACT.replace("clauses:", "id_column: nope\nclauses:"))
    argv = ["check", str(batch), "--contract", str(tmp_path / "c.yaml")]
    assert main([*argv, "--data-time", "2026-11-29T06:00:00Z"]) == 1
    captured = capsys.readouterr()
    assert (
        "warning: places/v1.0 names id_column 'nope', which is not a column of "
        f"{batch}: offending features are named by the file's feature ids where it has "
        "them, else by index"
    ) in captured.err
    assert "#1 (id 'out'): [100, 10, 100, 10]" in captured.out  # the GeoJSON ids still


def test_check_html_writes_one_self_contained_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = _geojson(tmp_path / "b.geojson")
    (tmp_path / "c.yaml").write_text(CONTRACT)
    page = tmp_path / "page.html"
    argv = ["check", str(batch), "--contract", str(tmp_path / "c.yaml"), "--html", str(page)]
    assert main([*argv, "--data-time", "2026-11-29T06:00:00Z"]) == 1
    assert f"wrote {page}; open it in a browser" in capsys.readouterr().err
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<script" not in text
    assert 'class="feature offender" data-index="1" data-clause="v1.0:extent"' in text
    assert 'class="region" data-clause="v1.0:extent"' in text


@pytest.mark.parametrize(
    ("flag", "target", "what"),
    [
        ("--offenders", "b.geojson", "the batch file"),
        ("--html", "c.yaml", "a --contract file"),
        ("--html", "sub/../b.geojson", "the batch file"),  # another spelling of the path
        ("--html", "off.geojson", "the --offenders file"),
    ],
)
def test_check_refuses_an_output_that_would_overwrite_an_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, target: str, what: str
) -> None:
    # a fresh-user session replaced its batch file by the offenders file (exit 1, no word)
    batch = _geojson(tmp_path / "b.geojson")
    (tmp_path / "c.yaml").write_text(CONTRACT)
    (tmp_path / "sub").mkdir()
    before = batch.read_bytes(), (tmp_path / "c.yaml").read_bytes()
    args = ["check", str(batch), "--contract", str(tmp_path / "c.yaml")]
    args += ["--offenders", str(tmp_path / "off.geojson")] if flag == "--html" else []
    assert main([*args, flag, str(tmp_path / target)]) == 2
    err = capsys.readouterr().err
    assert f"{flag} {tmp_path / target} is {what}: it would be overwritten" in err
    assert (batch.read_bytes(), (tmp_path / "c.yaml").read_bytes()) == before
    assert not (tmp_path / "off.geojson").exists()  # refused before anything is written
