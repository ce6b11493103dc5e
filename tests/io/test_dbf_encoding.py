"""Shapefile text decoded by the format's rule (issue 26, T05 kind), as GDAL's regular API
does: the .cpg, else the DBF's LDID byte, else ISO-8859-1 (GDAL Shapefile driver,
"Encoding"); the rule is said, and undecodable bytes never reach an evaluator."""

from __future__ import annotations

import logging
import shutil
import zipfile
from pathlib import Path

import pytest

from worker.io.formats.canonical import UndecodableText
from worker.io.formats.dbf_encoding import UnknownCodePage, cpg_encoding
from worker.io.payloads import read_features

pytest.importorskip("pyogrio", reason="pyogrio (extra 'formats') is not installed")

T05 = Path(__file__).resolve().parents[1] / "cases" / "T05"
UTF8 = "Forêt".encode()  # b"For\xc3\xaat", as T05's DBF holds it


def _shapefile(tmp: Path, text: bytes = UTF8, ldid: int = 0, cpg: str | None = None) -> Path:
    """T05's shapefile with the first value's bytes, the LDID byte and a .cpg replaced."""
    for part in T05.glob("batch.*"):
        shutil.copy(part, tmp / part.name)
    dbf = bytearray((tmp / "batch.dbf").read_bytes())
    at = dbf.index(UTF8)
    dbf[at : at + len(UTF8)] = text.ljust(len(UTF8))
    dbf[29] = ldid
    (tmp / "batch.dbf").write_bytes(bytes(dbf))
    if cpg is not None:
        (tmp / "batch.cpg").write_text(cpg)
    return tmp / "batch.shp"


def _first(path: Path) -> str:
    return str(read_features(path).attributes.column("landcover")[0].as_py()).rstrip()


def test_t05_utf8_without_cpg_is_read_as_gdal_reads_it(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        data = read_features(T05 / "batch.shp")
    assert data.attributes.column("landcover").to_pylist() == ["ForÃªt", "Marais", "Prairie"]
    assert data.attributes.schema.metadata[b"text_encoding"].startswith(b"ISO-8859-1: no .cpg")
    (note,) = [r.getMessage() for r in caplog.records if "decoded as" in r.getMessage()]
    assert "text decoded as ISO-8859-1 (no .cpg file and the DBF's language driver id" in note
    assert "(LDID) is 0, naming none: GDAL's default)" in note
    assert note.endswith(
        "its bytes are also valid UTF-8: if the text is UTF-8, add batch.cpg holding UTF-8"
    )


@pytest.mark.parametrize("cpg", ["UTF-8", "utf8", "65001", "UTF-8\r\n"])
def test_a_cpg_naming_utf8_decides(
    tmp_path: Path, cpg: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        assert _first(_shapefile(tmp_path, cpg=cpg)) == "Forêt"
    assert not [r for r in caplog.records if "decoded as" in r.getMessage()]


def test_latin1_without_cpg_is_iso_8859_1_not_an_evaluation_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # "a latin-1 shapefile is 'evaluation error: UnicodeDecodeError'" (issue 26)
    with caplog.at_level(logging.WARNING):
        assert _first(_shapefile(tmp_path, "Forêt".encode("latin-1"))) == "Forêt"
    (note,) = [r.getMessage() for r in caplog.records if "decoded as" in r.getMessage()]
    assert "also valid UTF-8" not in note and "add batch.cpg naming the encoding" in note


@pytest.mark.parametrize(
    ("ldid", "text", "rule"),
    [
        (87, "Forêt".encode("latin-1"), "LDID) is 87, ISO-8859-1"),
        (3, "Forêt".encode("cp1252"), "LDID) is 3, CP1252"),
        (201, "Лес".encode("cp1251"), "LDID) is 201, CP1251"),
        (2, "Forêt".encode("cp850"), "LDID) is 2, CP850"),
    ],
)
def test_the_ldid_byte_decides_without_a_cpg(
    tmp_path: Path, ldid: int, text: bytes, rule: str
) -> None:
    data = read_features(_shapefile(tmp_path, text, ldid=ldid))
    meta = data.attributes.schema.metadata[b"text_encoding"].decode()
    assert rule in meta
    assert data.attributes.column("landcover")[0].as_py().rstrip() == text.decode(
        meta.split(":")[0]
    )


def test_a_cpg_wins_over_the_ldid(tmp_path: Path) -> None:
    assert _first(_shapefile(tmp_path, "Лес".encode("cp1251"), ldid=87, cpg="1251")) == "Лес"


def test_a_cpg_that_does_not_fit_the_bytes_is_bad_input(tmp_path: Path) -> None:
    path = _shapefile(tmp_path, "Forêt".encode("latin-1"), cpg="UTF-8")
    with pytest.raises(UndecodableText) as info:
        read_features(path)
    text = str(info.value)
    assert "column 'landcover' holds text that is not UTF-8 at row 0 (b'For\\xeat" in text
    assert "decoded as UTF-8 (the .cpg file says UTF-8)" in text and "into the .cpg file" in text


def test_an_unknown_cpg_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(
        UnknownCodePage, match=r"names the encoding 'KLINGON-7', which is not known"
    ):
        read_features(_shapefile(tmp_path, cpg="KLINGON-7"))


def test_a_zipped_shapefile_reads_its_cpg(tmp_path: Path) -> None:
    shp = _shapefile(tmp_path, "Forêt".encode("cp1252"), cpg="1252")
    out = tmp_path / "layer.zip"
    with zipfile.ZipFile(out, "w") as z:
        for part in shp.parent.glob("batch.*"):
            z.write(part, f"layer/{part.name.upper()}")
    assert _first(out) == "Forêt"


@pytest.mark.parametrize(
    ("text", "encoding"),
    [("UTF-8", "UTF-8"), ("1252", "CP1252"), ("88591", "ISO-8859-1"), ("8859-15", "ISO-8859-15"),
     ("utf8", "utf8"), ("Big5", "Big5"), ("", None), ("65001", "UTF-8"), ("88592", "ISO-8859-2")],
)  # fmt: skip
def test_cpg_texts_read_as_gdal_reads_them(text: str, encoding: str | None) -> None:
    assert cpg_encoding(text) == encoding


def _geojson(tmp: Path, data: bytes) -> Path:
    path = tmp / "batch.geojson"
    feature = b'{"type": "Feature", "properties": {"landcover": "%s"}, ' % data
    geometry = b'"geometry": {"type": "Point", "coordinates": [2.0, 48.0]}}'
    path.write_bytes(b'{"type": "FeatureCollection", "features": [' + feature + geometry + b"]}")
    return path


def _geopackage(tmp: Path, data: bytes) -> Path:
    import sqlite3

    import pyarrow as pa
    import pyogrio
    import shapely

    path = tmp / "batch.gpkg"
    table = pa.table({"landcover": ["Marais"], "geometry": [shapely.Point(2, 48).wkb]})
    pyogrio.write_arrow(table, path, driver="GPKG", geometry_name="geometry", layer="b",
                        geometry_type="Point", crs="EPSG:4326",
                        layer_options={"SPATIAL_INDEX": "NO"})  # fmt: skip
    with sqlite3.connect(path) as con:
        con.execute("UPDATE b SET landcover = CAST(? AS TEXT)", (data,))
    return path


@pytest.mark.parametrize(
    ("make", "where"),
    [
        (_geojson, "at byte 95"),
        (_geopackage, "column 'landcover' holds text that is not UTF-8 at row 0"),
    ],
    ids=["geojson", "geopackage"],
)
@pytest.mark.parametrize("how", ["read", "check"])
def test_text_in_another_encoding_than_the_format_says_is_named_in_every_utf8_format(
    tmp_path: Path, make: object, where: str, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """GeoJSON (RFC 8259 section 8.1) and GeoPackage text is UTF-8 by the format: Latin-1
    bytes are bad input saying the text is not UTF-8 and where, never "not a JSON document
    ... the formats read are" (the GeoJSON reader said so: the fix named other formats)."""
    path = make(tmp_path, "Forêt".encode("latin-1"))  # type: ignore[operator]
    if how == "read":
        with pytest.raises(UndecodableText) as info:
            read_features(path)
        text = str(info.value)
    else:
        from worker.cli.main import main

        contract = tmp_path / "c.yaml"
        contract.write_text(
            "layer: x\nversion: v1\ncadence: P1D\nobjective: 0.99\nowner: o\nchangelog: c\n"
            'clauses:\n- {name: srid, kind: crs, expect: "EPSG:4326"}\n'
        )
        assert main(["check", str(path), "--contract", str(contract)]) == 2
        text = capsys.readouterr().err
    assert "not UTF-8" in text and where in text and "For\\xeat" in text, text
    assert "formats read are" not in text, text
