"""worker.control.publish: what a by-reference batch announces (no broker needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.control.publish import _reference_uri


@pytest.mark.parametrize("form", ["{p}", "file:{p}", "file://{p}", "file://localhost{p}"])
def test_every_local_form_is_announced_as_the_absolute_file_uri(tmp_path: Path, form: str) -> None:
    # found by a new-user session: `file:/abs/x.geojson` was announced as
    # file:///<cwd>/file:/abs/x.geojson, which no worker can read
    batch = tmp_path / "dir with space" / "b.geojson"
    batch.parent.mkdir()
    batch.write_text("{}")
    assert _reference_uri(form.format(p=batch)) == batch.as_uri()
    assert batch.as_uri().startswith("file:///") and "%20" in batch.as_uri()


def test_a_relative_path_is_resolved_against_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _reference_uri("b.geojson") == (tmp_path / "b.geojson").as_uri()


def test_an_s3_uri_is_announced_as_given() -> None:
    assert _reference_uri("s3://bucket/in/b.parquet") == "s3://bucket/in/b.parquet"


def test_an_inline_event_above_the_producer_limit_says_to_send_it_by_reference() -> None:
    # found by a new-user session: a 55 MB GeoJSON published inline gave MSG_SIZE_TOO_LARGE
    # and nothing more; librdkafka refuses it locally, before any broker is contacted
    from worker.cli.scenario import data_file
    from worker.control.publish import publish_batch
    from worker.core.errors import BrokerError
    from worker.io.payloads import read_batch_file
    from worker.kafka.settings import Settings

    nyc = read_batch_file(data_file("nyc_boroughs.parquet"), layer="nyc_boroughs")
    settings = Settings(bootstrap_servers="127.0.0.1:1", extra={"message.max.bytes": "100000"})
    with pytest.raises(BrokerError) as err:
        publish_batch(settings, nyc)
    text = str(err.value)
    assert "the event with its 5 features inline is" in text
    assert "--by-reference" in text and "--upload s3://bucket/prefix/" in text


@pytest.mark.parametrize(
    ("batch_id", "refusal"),
    [
        # found by a new-user session: --batch-id 1@2 was published; `quarantine show 1@2`
        # then showed another batch, and replay would have replayed it
        ("1@2", r"--batch-id '1@2' reads as PARTITION@OFFSET"),
        # an empty id names no batch (a fresh-user finding; the worker refuses it too)
        (" ", r"--batch-id is empty"),
    ],
)
def test_a_batch_id_no_command_could_name_is_refused_before_publishing(
    batch_id: str, refusal: str
) -> None:
    from worker.cli.scenario import data_file
    from worker.control.publish import publish_batch_file
    from worker.core.errors import ContractGateError
    from worker.kafka.settings import Settings

    with pytest.raises(ContractGateError, match=refusal):
        publish_batch_file(
            Settings(bootstrap_servers="127.0.0.1:1"),
            data_file("nyc_boroughs.parquet"),
            layer="nyc_boroughs",
            batch_id=batch_id,
        )


def test_geometries_that_cannot_travel_as_wkb_are_named_before_publishing_inline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a GeoJSON "Circle" travelled as a null geometry without a word, and the worker then
    # said "missing geometry" (a fresh-user finding); the file itself is read for real here
    import json

    from worker.control import publish
    from worker.kafka.settings import Settings

    doc = {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "properties": {},
                "geometry": {"type": "Point", "coordinates": [1, 2]},
            },
            {
                "type": "Feature",
                "properties": {},
                "geometry": {"type": "Circle", "coordinates": [1, 2]},
            },
        ],
    }
    path = tmp_path / "cities.geojson"
    path.write_text(json.dumps(doc))
    sent: list[object] = []
    monkeypatch.setattr(
        publish, "publish_batch", lambda s, b, payload_uri: sent.append(payload_uri) or (0, 7)
    )
    warnings: list[str] = []
    done = publish.publish_batch_file(Settings(), path, layer="cities", warn=warnings.append)
    assert done.summary.endswith("[0]@7") and (done.partition, done.offset) == (0, 7)
    assert sent == [None] and done.features == 2
    (line,) = warnings
    assert line.startswith("warning: 1 feature's geometry cannot be written as WKB")
    assert "feature 1: ParseException: Unknown geometry type" in line
    publish.publish_batch_file(
        Settings(), path, layer="cities", by_reference=True, warn=warnings.append
    )
    assert len(warnings) == 1  # by reference the worker reads the file and its reasons


def test_a_contract_whose_clauses_contradict_is_refused_before_the_config_topic(
    tmp_path: Path,
) -> None:
    from worker.cli.scenario import data_file
    from worker.control.publish import publish_contract
    from worker.core.errors import ContractError
    from worker.kafka.settings import Settings

    text = (
        data_file("contracts/nyc_boroughs.v1.yaml").read_text().replace("      1: ", "      '1': ")
    )
    for code in range(2, 6):
        text = text.replace(f"      {code}: ", f"      '{code}': ")
    path = tmp_path / "quoted.yaml"
    path.write_text(text)
    with pytest.raises(ContractError, match=r"domain clause 'boro_code' lists only text codes"):
        publish_contract(Settings(bootstrap_servers="127.0.0.1:1"), path)  # no broker needed


def test_a_crs_that_does_not_resolve_is_refused_or_said_before_publishing(
    tmp_path: Path,
) -> None:
    """A fresh-user session: `batch publish --crs bogus` published (exit 0) what `check
    --crs bogus` refuses, and a file declaring "bogus" went out without a word."""
    import json

    from worker.cli.scenario import data_file
    from worker.control.publish import publish_batch_file, unresolvable_crs
    from worker.core.errors import CrsError
    from worker.io.payloads import read_batch_file
    from worker.kafka.settings import Settings

    with pytest.raises(CrsError, match="cannot resolve CRS 'bogus'"):
        publish_batch_file(
            Settings(bootstrap_servers="127.0.0.1:1"),
            data_file("nyc_boroughs.parquet"),
            layer="nyc_boroughs",
            crs="bogus",
        )
    point = {"type": "Point", "coordinates": [1, 2]}
    declared = tmp_path / "declared.geojson"
    declared.write_text(
        json.dumps(
            {
                "type": "FeatureCollection",
                "crs": {"type": "name", "properties": {"name": "bogus"}},
                "features": [{"type": "Feature", "properties": {}, "geometry": point}],
            }
        )
    )
    warning = unresolvable_crs(read_batch_file(declared, layer="t"))
    assert warning is not None and warning.startswith(
        "warning: the file declares a CRS that cannot be resolved (cannot resolve CRS 'bogus'"
    )
    assert unresolvable_crs(read_batch_file(data_file("nyc_boroughs.parquet"), layer="t")) is None


def _batch_file(tmp_path: Path, driver: str) -> Path:
    """The NYC boroughs (a shipped GeoParquet batch) written by ``driver``: ``parquet``
    (the shipped file itself), ``GeoJSON``, or a GDAL driver (GeoPackage, shapefile,
    FlatGeobuf)."""
    import shutil

    import pyarrow as pa
    import shapely

    from tests.catalogue import NYC_BOROUGHS, read_geoparquet

    shipped = NYC_BOROUGHS
    if driver == "parquet":
        return Path(shutil.copy(shipped, tmp_path / "nybb.parquet"))
    pyogrio = pytest.importorskip("pyogrio", reason="pyogrio (extra 'formats') is not installed")
    geoms, table, _ = read_geoparquet(shipped)
    data = table.append_column("geometry", pa.array(shapely.to_wkb(geoms).tolist(), pa.binary()))
    suffix = {
        "GeoJSON": ".geojson",
        "GPKG": ".gpkg",
        "ESRI Shapefile": ".shp",
        "FlatGeobuf": ".fgb",
    }
    path = tmp_path / f"nybb{suffix[driver]}"
    pyogrio.write_arrow(data, path, driver=driver, geometry_name="geometry",
                        geometry_type="MultiPolygon", crs="EPSG:2263")  # fmt: skip
    return path


@pytest.mark.parametrize("driver", ["parquet", "GeoJSON", "GPKG", "ESRI Shapefile", "FlatGeobuf"])
@pytest.mark.parametrize("flag", ["--by-reference", "--upload"])
def test_by_reference_only_a_format_the_workers_read_by_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, driver: str, flag: str
) -> None:
    """A payload_uri is read by the workers only in a format read by reference (the
    registry's ``by_reference``); one in another format was published, and every worker
    then quarantined the batch ("read from an operator's own file only"). It is refused
    before anything is copied or published, naming the flag and the fix; inline it goes."""
    from worker.control import publish
    from worker.core.errors import ContractGateError
    from worker.io.formats import FORMATS
    from worker.io.payloads.base import sniff_format
    from worker.kafka.settings import Settings

    path = _batch_file(tmp_path, driver)
    raw = path.read_bytes()
    fmt = sniff_format(raw[:4096], raw[-4:], len(raw), path.name)
    sent: list[object] = []
    monkeypatch.setattr(
        publish, "publish_batch", lambda s, b, payload_uri: sent.append(payload_uri) or (0, 1)
    )
    out = tmp_path / "out"
    out.mkdir()
    kwargs = {"upload": out.as_uri() + "/"} if flag == "--upload" else {"by_reference": True}
    if FORMATS[fmt].by_reference:
        publish.publish_batch_file(Settings(), path, layer="nyc_boroughs", **kwargs)
        assert sent and sent[0] is not None
        return
    refusal = "which the workers do not read by reference"
    with pytest.raises(ContractGateError, match=refusal) as caught:
        publish.publish_batch_file(Settings(), path, layer="nyc_boroughs", **kwargs)
    assert caught.value.field == flag
    assert f"publish it inline (without {flag}), or write it as " in (caught.value.fix or "")
    assert not sent and not list(out.iterdir())
    publish.publish_batch_file(Settings(), path, layer="nyc_boroughs")  # inline
    assert sent == [None]
