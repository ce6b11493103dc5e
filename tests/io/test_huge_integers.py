"""Integer literals beyond a double in GeoJSON (stop 39, a new user's attempts).

``json.loads`` keeps an integer literal exact, so ``[99...9, 1]`` with 400 digits reached
the WKB writer as a Python int that ``float()`` refuses (OverflowError): the whole file was
refused as "cannot read the batch file: OverflowError", with GEOS's RuntimeWarning on
stderr. ``1e400`` written as a float was already refused with its JSON path. Now such a
coordinate makes its feature's geometry unreadable (validity names the position), in every
geometry type and dimension, in the streamed and the whole read; an integer longer than
Python converts (4,300 digits) is refused with its path instead of Python's hint.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.catalogue import active, clause, contract_of
from worker.cli.main import main
from worker.core.evaluate import evaluate
from worker.io.formats.strict_json import NotStrictJson
from worker.io.formats.wkb_writer import geojson_to_wkb
from worker.io.payloads import read_batch_file, read_features

BIG = "9" * 400  # about 1e400: no double holds it
CONTRACT = (
    "layer: t\nversion: v1\ncadence: P1D\nobjective: 0.9\nowner: me\nchangelog: t\n"
    "clauses:\n  - {name: v, kind: validity, max_invalid_fraction: 0.0}\n"
)
GOOD = '{"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": [1, 2]}}'
#: One geometry of every GeoJSON type and dimension, with the huge integer somewhere in it.
GEOMETRIES = {
    "Point": '{"type": "Point", "coordinates": [BIG, 1]}',
    "Point Z": '{"type": "Point", "coordinates": [1, 2, BIG]}',
    "negative": '{"type": "Point", "coordinates": [1, -BIG]}',
    "LineString": '{"type": "LineString", "coordinates": [[0, 0], [1, BIG]]}',
    "MultiPoint": '{"type": "MultiPoint", "coordinates": [[0, 0], [BIG, 1]]}',
    "Polygon": '{"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [BIG, 1], [0, 0]]]}',
    "MultiLineString": '{"type": "MultiLineString", "coordinates": [[[0, 0], [1, BIG]]]}',
    "MultiPolygon": (
        '{"type": "MultiPolygon", "coordinates": [[[[0, 0], [1, 0], [1, BIG], [0, 0]]]]}'
    ),
    "GeometryCollection": (
        '{"type": "GeometryCollection", "geometries": [{"type": "Point", "coordinates": [1, BIG]}]}'
    ),
}


def _file(tmp_path: Path, geometry: str) -> Path:
    good = GOOD
    bad = f'{{"type": "Feature", "properties": {{}}, "geometry": {geometry}}}'
    path = tmp_path / "b.geojson"
    path.write_text(f'{{"type": "FeatureCollection", "features": [{good}, {bad}]}}')
    return path


@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_a_coordinate_beyond_a_double_is_one_unreadable_geometry(tmp_path: Path, name: str) -> None:
    path = _file(tmp_path, GEOMETRIES[name].replace("BIG", BIG))
    batch = read_batch_file(path, layer="t")
    assert batch.geometries_wkb[0] is not None and batch.geometries_wkb[1] is None
    assert "an integer of about 1e400" in batch.geometry_errors[1]
    versions = [active(contract_of(clause("v", "validity", max_invalid_fraction=0.0)))]
    verdict = evaluate(batch, versions, now=datetime(2026, 11, 29, tzinfo=timezone.utc))
    message = verdict.verdicts[0].clauses[0].message
    assert verdict.decision == "quarantined" and "1 of 2 geometries invalid" in message
    assert "an integer of about 1e400, beyond double precision" in message
    assert BIG not in message  # GEOS's echo of the number is clipped


@pytest.mark.parametrize("name", list(GEOMETRIES))
@pytest.mark.parametrize("whole", [False, True], ids=["streamed", "whole"])
def test_check_quarantines_it_in_the_streamed_and_the_whole_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, whole: bool
) -> None:
    path = _file(tmp_path, GEOMETRIES[name].replace("BIG", BIG))
    contract = tmp_path / "c.yaml"
    contract.write_text(CONTRACT)
    extra = ["--offenders", str(tmp_path / "o.geojson")] if whole else []
    argv = ["check", str(path), "--contract", str(contract), "--format", "json", *extra]
    assert main(argv) == 1  # quarantined, not exit 2 "cannot read the batch file"
    out = json.loads(capsys.readouterr().out)
    assert out["features"] == 2 and out["decision"] == "quarantined"


def test_the_wkb_writer_names_the_position() -> None:
    with pytest.raises(ValueError, match=r"coordinates\[1\]\[1\] is an integer of about 1e400"):
        geojson_to_wkb(json.loads(GEOMETRIES["LineString"].replace("BIG", BIG)))
    assert geojson_to_wkb({"type": "Point", "coordinates": [2**1000, 1]})  # within a double


@pytest.mark.parametrize(
    ("where", "geometry", "props"),
    [
        ("features[1].geometry.coordinates[1]", '{"type": "Point", "coordinates": [1, BIG]}', "{}"),
        (
            "features[1].properties.p",
            '{"type": "Point", "coordinates": [1, 2]}',
            '{"p": -BIG}',
        ),
    ],
)
def test_an_integer_longer_than_python_reads_is_refused_with_its_path(
    tmp_path: Path, where: str, geometry: str, props: str
) -> None:
    big = "9" * 5000
    good = GOOD
    bad = f'{{"type": "Feature", "properties": {props}, "geometry": {geometry}}}'.replace(
        "BIG", big
    )
    path = tmp_path / "b.geojson"
    path.write_text(f'{{"type": "FeatureCollection", "features": [{good}, {bad}]}}')
    with pytest.raises(NotStrictJson) as info:
        read_features(path)
    assert f"at {where}: an integer of 5000 digits" in str(info.value)
    assert "set_int_max_str_digits" not in str(info.value)
