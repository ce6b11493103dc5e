"""The reader registry (issue 26, section 1; docs/architecture.md, "Where a change goes"):
dispatch, size limits, --max-payload-bytes, help texts and format lists read FORMATS, so a new
format is one module and one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from worker.cli.main import build_parser
from worker.cli.parser_tree import subcommands
from worker.core.errors import PayloadCorrupt, PayloadTooLarge
from worker.io.formats import FORMATS, FeatureData, batch_files, canonical_table, formats_read
from worker.io.formats.base import Source
from worker.io.payloads import read_features
from worker.io.payloads.base import sniff_format
from worker.io.payloads.policy import PayloadPolicy, parse_limits

T05 = Path(__file__).resolve().parents[1] / "cases" / "T05"


class CsvPoints:
    """A toy reader: ``x,y,name`` lines after a ``#points`` line."""

    name = "points"
    title = "points text"
    described: tuple[str, ...] = ("points text (.pts)",)
    magic = "points text starts with #points"
    suffixes: tuple[str, ...] = (".pts",)
    default_limit_bytes = 1000
    by_reference = True
    chunked = False

    def sniff(self, head: bytes, tail: bytes, name: str) -> bool:
        return head.startswith(b"#points")

    def read(self, src: Source) -> FeatureData:
        import shapely

        rows = [line.split(",") for line in src.read_all().decode().splitlines()[1:] if line]
        wkb = tuple(shapely.to_wkb(shapely.Point(float(x), float(y))) for x, y, _ in rows)
        names = pa.array([n for *_, n in rows], pa.string_view())
        return FeatureData(wkb, canonical_table(pa.table({"name": names}), src.uri), "EPSG:4326")

    def chunks(self, src: Source, count_nulls: bool = True) -> None:
        return None


def test_a_new_reader_is_one_registry_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(FORMATS, "points", CsvPoints())
    path = tmp_path / "b.pts"
    path.write_text("#points\n10,50,a\n11,51,b\n")
    data = read_features(path)
    assert data.attributes.column("name").to_pylist() == ["a", "b"]
    assert data.attributes.schema.field("name").type == pa.string()  # canonical
    assert parse_limits("points=10")["points"] == 10 and PayloadPolicy().limit("points") == 1000
    with pytest.raises(PayloadTooLarge, match=r"limit of 10 bytes for points text"):
        read_features(path, policy=PayloadPolicy(None, {"points": 10}))
    assert formats_read().endswith("FlatGeobuf (.fgb) and points text (.pts)")
    help_text = build_parser().format_help() + _check_help()
    assert "points=SIZE" in help_text and "points=1000" in help_text.replace("\n", "")
    (tmp_path / "b.txt").write_text("not a batch file")
    assert batch_files(tmp_path, "b") == [path]  # found by the reader's own suffixes


def _check_help() -> str:
    parser = build_parser()
    return subcommands(parser)["check"].format_help()


def test_every_reader_has_the_protocol_and_a_limit_name() -> None:
    for name, reader in FORMATS.items():
        assert reader.name == name and reader.default_limit_bytes > 0
        assert reader.described and reader.magic and reader.title
        assert reader.suffixes and all(
            s.startswith(".") and s == s.lower() for s in reader.suffixes
        )
    assert list(parse_limits("1MiB")) == list(FORMATS)
    text = _check_help().replace("\n", " ")
    assert "parquet=SIZE,geojson=SIZE,ogr=SIZE" in " ".join(text.split())


def test_sniffing_asks_every_reader() -> None:
    assert sniff_format(b"SQLite format 3\x00", b"", 1000, "x.gpkg") == "ogr"
    assert sniff_format(b"\x00\x00\x27\x0a", b"", 1000, "x.bin") == "ogr"
    with pytest.raises(PayloadCorrupt, match="does not start with the PAR1 magic"):
        sniff_format(b'{"type"', b"]}", 1000, "x.parquet")  # whatever the order


def test_a_shapefile_by_reference_is_refused_and_its_size_is_limited(tmp_path: Path) -> None:
    pytest.importorskip("pyogrio")
    for part in T05.glob("batch.*"):
        shutil.copy(part, tmp_path / part.name)
    shp = tmp_path / "batch.shp"
    roots = PayloadPolicy.from_strings([tmp_path.as_uri()])
    with pytest.raises(PayloadCorrupt) as info:
        read_features(shp.as_uri(), policy=roots)
    assert "a Shapefile, GeoPackage or FlatGeobuf file, which is read from an operator's own" in (
        str(info.value)
    )
    assert str(info.value).endswith("the formats read by reference are GeoParquet and GeoJSON")
    with pytest.raises(PayloadTooLarge, match=r"above the limit of 100 bytes for Shapefile"):
        read_features(shp, policy=PayloadPolicy(None, {"ogr": 100}))
