"""`contract-gate contract classify` (offline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from worker.cli.main import main
from worker.cli.scenario import data_file

V1 = str(data_file("contracts/admin_boundaries.v1.yaml"))
V1_1 = str(data_file("contracts/admin_boundaries.v1.1.yaml"))


def test_classify_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["contract", "classify", V1, V1_1, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["class"] == "tightening"
    assert {
        "clause": "continent",
        "kind": "domain",
        "class": "tightening",
        "reason": "domain codes removed: 'Seven seas (open ocean)'",
    } in out["differences"]


def test_classify_text_and_identical(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["contract", "classify", V1, V1]) == 0
    out = capsys.readouterr().out
    assert "change class none" in out and "identical content" in out
    assert main(["contract", "classify", V1_1, V1]) == 0
    assert "change class minor" in capsys.readouterr().out


def test_classify_bad_file_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["contract", "classify", V1, "/nonexistent.yaml"]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_classify_of_two_layers_is_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # found by a fresh-user session: two layers were "classified" as a major change
    nyc = str(data_file("contracts/nyc_boroughs.v1.yaml"))
    assert main(["contract", "classify", V1, nyc]) == 2
    assert (
        "different layers: admin_boundaries vs nyc_boroughs; classification compares "
        "versions of one layer"
    ) in capsys.readouterr().err


def test_classify_crs_respelled_is_minor_listing_a_none_difference(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = Path(V1).read_text()
    assert 'expect: "EPSG:4326"' in text
    respelled = tmp_path / "v1.1.yaml"
    respelled.write_text(
        text.replace('expect: "EPSG:4326"', 'expect: "urn:ogc:def:crs:EPSG::4326"').replace(
            "\nversion: v1\n", "\nversion: v1.1\n"
        )
    )
    assert main(["contract", "classify", V1, str(respelled), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["class"] == "minor"
    assert [(d["kind"], d["class"]) for d in out["differences"]] == [("crs", "none")]
    assert out["differences"][0]["reason"].startswith("equivalent CRS, spelling changed")


def test_classify_a_dimension_added_then_removed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = Path(V1).read_text()
    assert "allowed: [Polygon, MultiPolygon]" in text
    with_z = tmp_path / "v1.1.yaml"
    with_z.write_text(
        text.replace(
            "allowed: [Polygon, MultiPolygon]", "allowed: [Polygon, MultiPolygon Z]"
        ).replace("\nversion: v1\n", "\nversion: v1.1\n")
    )
    assert main(["contract", "classify", V1, str(with_z), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["class"] == "tightening"
    assert [(d["class"], d["reason"]) for d in out["differences"]] == [
        (
            "tightening",
            "geometry types removed: MultiPolygon (XY; MultiPolygon stays allowed as XYZ)",
        ),
        ("minor", "geometry types added: MultiPolygon Z (XYZ)"),
    ]
