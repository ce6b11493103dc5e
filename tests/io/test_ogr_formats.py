"""Shapefile (plain and zipped), GeoPackage and FlatGeobuf through pyogrio
(worker.io.formats.ogr), and the messages when pyogrio is missing or the format unknown."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pyarrow as pa
import pytest

from tests.catalogue import NYC_BOROUGHS, read_geoparquet
from worker.core.errors import PayloadError
from worker.core.spatial.crs import crs_equivalent
from worker.io.payloads import read_features

pyogrio = pytest.importorskip("pyogrio", reason="pyogrio (extra 'formats') is not installed")


def _write(path: Path, driver: str) -> Path:
    geoms, table, _wkb = read_geoparquet(NYC_BOROUGHS)
    import shapely

    data = table.append_column("geometry", pa.array(shapely.to_wkb(geoms).tolist(), pa.binary()))
    pyogrio.write_arrow(
        data, path, driver=driver, geometry_name="geometry", geometry_type="MultiPolygon",
        crs="EPSG:2263",
    )  # fmt: skip
    return path


def _zipped_shapefile(tmp: Path) -> Path:
    shp = _write(tmp / "nybb.shp", "ESRI Shapefile")
    out = tmp / "nybb_16a.zip"
    with zipfile.ZipFile(out, "w") as z:
        for part in shp.parent.glob("nybb.*"):
            z.write(part, f"nybb_16a/{part.name}")
    return out


@pytest.mark.parametrize("kind", ["shp", "zip", "gpkg", "fgb"])
def test_vector_formats_read_the_five_boroughs_in_ny_long_island_feet(
    tmp_path: Path, kind: str
) -> None:
    if kind == "zip":
        path = _zipped_shapefile(tmp_path)
    else:
        driver = {"shp": "ESRI Shapefile", "gpkg": "GPKG", "fgb": "FlatGeobuf"}[kind]
        path = _write(tmp_path / f"nybb.{kind}", driver)
    data = read_features(path)
    assert len(data.geometries_wkb) == 5 and all(g is not None for g in data.geometries_wkb)
    assert data.declared_crs is not None and crs_equivalent(data.declared_crs, "EPSG:2263")
    names = set(data.attributes.column("BoroName").to_pylist())
    assert names == {"Bronx", "Brooklyn", "Manhattan", "Queens", "Staten Island"}
    import shapely

    area = sum(shapely.area(shapely.from_wkb(g)) for g in data.geometries_wkb)
    assert 8.4e9 < area < 8.5e9  # US survey ft², the five boroughs' land area


def test_check_reads_a_zipped_shapefile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from worker.cli.main import main
    from worker.cli.scenario import data_file

    path = _zipped_shapefile(tmp_path)
    contract = data_file("contracts/nyc_boroughs.v1.yaml")
    code = main(
        [
            "check",
            str(path),
            "--contract",
            str(contract),
            "--data-time",
            "2026-11-29T06:00:00Z",
            "--now",
            "2026-11-29T07:00:00Z",
        ]
    )
    out = capsys.readouterr().out
    assert "5 features" in out.splitlines()[0]
    assert code == 0, out


def test_missing_pyogrio_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "nybb.gpkg", "GPKG")
    monkeypatch.setitem(sys.modules, "pyogrio", None)  # import fails as if not installed
    with pytest.raises(
        PayloadError,
        match=r"nybb\.gpkg: reading GeoPackage needs the optional pyogrio package: "
        r"pip install 'spatial-contract-gate\[formats\]'",
    ):
        read_features(path)


def test_a_zip_without_a_vector_file_and_an_unknown_format_say_what_is_read(tmp_path: Path) -> None:
    bad_zip = tmp_path / "notes.zip"
    with zipfile.ZipFile(bad_zip, "w") as z:
        z.writestr("readme.txt", "hello")
    with pytest.raises(PayloadError, match=r"the zip holds no \.shp, \.gpkg or \.fgb file"):
        read_features(bad_zip)
    unknown = tmp_path / "batch.xyz"
    unknown.write_bytes(b"\x89PNG\r\n\x1a\n....")
    with pytest.raises(
        PayloadError,
        match=r"the formats read are GeoParquet, GeoJSON, Shapefile \(\.shp, or a \.zip "
        r"holding one\), GeoPackage \(\.gpkg\) and FlatGeobuf \(\.fgb\)",
    ):
        read_features(unknown)


def test_a_geopackage_of_several_layers_is_refused_naming_them(tmp_path: Path) -> None:
    # found by a new-user session: the first layer was read without a word
    import shapely

    path = _write(tmp_path / "two.gpkg", "GPKG")
    geoms, table, _wkb = read_geoparquet(NYC_BOROUGHS)
    data = table.append_column("geometry", pa.array(shapely.to_wkb(geoms).tolist(), pa.binary()))
    pyogrio.write_arrow(
        data, path, driver="GPKG", layer="boroughs_2", geometry_name="geometry",
        geometry_type="MultiPolygon", crs="EPSG:2263", append=True,
    )  # fmt: skip
    assert len(pyogrio.list_layers(path)) == 2
    with pytest.raises(PayloadError, match=r"GeoPackage holds 2 layers \('two', 'boroughs_2'\); a"):
        read_features(path)


@pytest.mark.parametrize("kind", ["shp", "zip"])
@pytest.mark.parametrize(
    "prj",
    ["GARBAGE[[[", "EPSG:99999", "\ufeffnot a CRS\n"],
    ids=["garbage", "a code, not WKT", "BOM and text"],
)
def test_a_prj_gdal_cannot_read_is_the_declared_crs_as_written(
    tmp_path: Path, kind: str, prj: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # found by a new-user session: a shapefile whose .prj GDAL cannot parse was checked as
    # one that "declares no CRS" (GDAL drops it with a warning), sending its owner looking
    # for a missing .prj instead of the broken one
    from worker.cli.main import main

    shp = _write(tmp_path / "nybb.shp", "ESRI Shapefile")
    shp.with_suffix(".prj").write_text(prj, encoding="utf-8")
    path = shp
    if kind == "zip":
        path = tmp_path / "nybb_16a.zip"
        with zipfile.ZipFile(path, "w") as z:
            for part in shp.parent.glob("nybb.*"):
                z.write(part, f"nybb_16a/{part.name}")
    data = read_features(path)
    assert data.declared_crs == prj.strip().lstrip("\ufeff")
    assert (data.crs_stated, data.crs_source) == (True, ".prj")
    contract = tmp_path / "c.yaml"
    contract.write_text(
        "layer: nybb\nversion: v1\ncadence: PT6H\nobjective: 0.99\nowner: o\nchangelog: c\n"
        'clauses:\n  - {name: srid, kind: crs, expect: "EPSG:2263"}\n'
    )
    assert (
        main(["check", str(path), "--contract", str(contract), "--now", "2026-12-05T00:00:00Z"])
        == 1
    )
    out = capsys.readouterr().out
    assert "cannot resolve CRS" in out and "declares no CRS" not in out


@pytest.mark.parametrize("kind", ["shp", "zip"])
def test_a_prj_gdal_refuses_outright_is_named_in_the_refusal(tmp_path: Path, kind: str) -> None:
    # found by a new-user session: a truncated WKT .prj gave "GDAL cannot read a
    # shapefile: missing ]", naming neither the .prj nor what to do
    shp = _write(tmp_path / "nybb.shp", "ESRI Shapefile")
    shp.with_suffix(".prj").write_text('PROJCS["NAD83 / New York Long Island (ftUS)",GEOGCS[')
    path = shp
    if kind == "zip":
        path = tmp_path / "nybb_16a.zip"
        with zipfile.ZipFile(path, "w") as z:
            for part in shp.parent.glob("nybb.*"):
                z.write(part, f"nybb_16a/{part.name}")
    with pytest.raises(PayloadError) as err:
        read_features(path)
    text = str(err.value)
    assert text.startswith(f"{path}: its .prj is not a CRS GDAL reads (missing ]): ")
    assert "write the layer's CRS there as WKT, or remove the .prj" in text
